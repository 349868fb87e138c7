import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { diffStatus } from './diff.ts';
import type { Plan } from './plan.ts';
import { RecentTenantWrites, statusAfter } from './recent.ts';

const T = 'tenant-a';
const running = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] };
const pending = { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] };
const succeeded = { phase: 'Succeeded' };

/** pod is a tenant Pod as the cache may hold it: bound to `node` or not, with `status`. */
const pod = (rv: string, node?: string, status?: unknown): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default', uid: 'u1', resourceVersion: rv },
    spec: { containers: [{ name: 'c', image: 'i' }], ...(node && { nodeName: node }) },
    ...(status !== undefined && { status }),
  }) as KubeObject;

const bind = (node: string) => ({ type: 'bind' as const, namespace: 'default', name: 'p', uid: 'u1', node });
/** the status write that follows a bind in the same pass (plan.ts statusAfterBind) */
const statusAfterBindStep = (status: unknown) => ({
  op: 'patchTenantStatus' as const,
  namespace: 'default',
  name: 'p',
  ops: [
    { op: 'test' as const, path: '/metadata/uid', value: 'u1' },
    { op: 'add' as const, path: '/status', value: status },
  ],
});
/** the status write of a pass on a bound Pod (plan.ts tenantDiff) */
const statusDiffStep = (from: KubeObject, status: unknown) => ({
  op: 'patchTenantStatus' as const,
  namespace: 'default',
  name: 'p',
  ops: diffStatus(from, { ...from, status } as KubeObject),
});

describe('RecentTenantWrites.filter', () => {
  it.each<{
    name: string;
    /** what the syncer wrote before, in order */
    wrote: Array<['bound', string] | ['status', unknown]>;
    cached: KubeObject;
    plan: (cached: KubeObject) => Plan;
    /** what is left of the plan: its bind effects' nodes and its status steps' count */
    want: { binds: string[]; statusSteps: number };
  }>([
    {
      name: 'a stale cache (not bound yet) asks for the same bind and status again: both dropped',
      wrote: [
        ['bound', 'n1'],
        ['status', running],
      ],
      cached: pod('10'),
      plan: () => ({ steps: [], effects: [bind('n1')], afterEffects: [statusAfterBindStep(running)] }),
      want: { binds: [], statusSteps: 0 },
    },
    {
      name: 'stale, but the super Pod moved on: the bind is dropped, the new status kept',
      wrote: [
        ['bound', 'n1'],
        ['status', running],
      ],
      cached: pod('10'),
      plan: () => ({ steps: [], effects: [bind('n1')], afterEffects: [statusAfterBindStep(succeeded)] }),
      want: { binds: [], statusSteps: 1 },
    },
    {
      name: 'bound (the cache has the Binding) but not the status yet: the same status is not written again',
      wrote: [
        ['bound', 'n1'],
        ['status', running],
      ],
      cached: pod('11', 'n1', pending),
      plan: (c) => ({ steps: [statusDiffStep(c, running)], effects: [] }),
      want: { binds: [], statusSteps: 0 },
    },
    {
      name: 'the cache shows what was written: forgotten, the plan kept as it is',
      wrote: [
        ['bound', 'n1'],
        ['status', running],
      ],
      cached: pod('12', 'n1', running),
      plan: (c) => ({ steps: [statusDiffStep(c, succeeded)], effects: [] }),
      want: { binds: [], statusSteps: 1 },
    },
    {
      name: 'a bind to another node than the one remembered is kept',
      wrote: [['bound', 'n1']],
      cached: pod('10'),
      plan: () => ({ steps: [], effects: [bind('n2')] }),
      want: { binds: ['n2'], statusSteps: 0 },
    },
    {
      name: 'nothing remembered: the plan as it is',
      wrote: [],
      cached: pod('10'),
      plan: () => ({ steps: [], effects: [bind('n1')], afterEffects: [statusAfterBindStep(running)] }),
      want: { binds: ['n1'], statusSteps: 1 },
    },
  ])('$name', ({ wrote, cached, plan, want }) => {
    const r = new RecentTenantWrites(() => 0);
    for (const [what, v] of wrote) {
      if (what === 'bound') r.bound(T, 'u1', v);
      else r.statusWritten(T, 'u1', v);
    }
    const out = r.filter(T, cached, plan(cached));
    expect(out.effects.filter((e) => e.type === 'bind').map((e) => (e as { node: string }).node)).toEqual(want.binds);
    const statusSteps = [...out.steps, ...(out.afterEffects ?? [])].filter((s) => s.op === 'patchTenantStatus');
    expect(statusSteps).toHaveLength(want.statusSteps);
  });

  it('forgets a write after the TTL: a later pass writes again', () => {
    let now = 0;
    const r = new RecentTenantWrites(() => now, 1000);
    r.bound(T, 'u1', 'n1');
    const plan: Plan = { steps: [], effects: [bind('n1')] };
    expect(r.filter(T, pod('10'), plan).effects).toHaveLength(0);
    now = 1000;
    expect(r.filter(T, pod('10'), plan).effects).toHaveLength(1);
    expect(r.size).toBe(0);
  });

  it('keeps writes of another tenant or object apart', () => {
    const r = new RecentTenantWrites(() => 0);
    r.bound('other-tenant', 'u1', 'n1');
    const plan: Plan = { steps: [], effects: [bind('n1')] };
    expect(r.filter(T, pod('10'), plan).effects).toHaveLength(1);
  });

  it('drops expired entries as new ones come, so memory stays bounded by the TTL', () => {
    let now = 0;
    const r = new RecentTenantWrites(() => now, 1000);
    for (let i = 0; i < 5; i++) r.bound(T, `u${i}`, 'n1');
    now = 2000;
    r.bound(T, 'u9', 'n1');
    expect(r.size).toBe(1);
  });

  it('records the status a pass wrote, from its steps', () => {
    const r = new RecentTenantWrites(() => 0);
    const c = pod('11', 'n1', pending);
    r.recordSteps(T, c, [statusDiffStep(c, running)]);
    // The cache still at the version planned from: the same write is dropped.
    expect(r.filter(T, c, { steps: [statusDiffStep(c, running)], effects: [] }).steps).toHaveLength(0);
  });
});

describe('statusAfter', () => {
  it.each([
    { name: 'a whole-status write', from: pod('1'), step: statusAfterBindStep(running), want: running },
    {
      name: 'a diff from pending',
      from: pod('2', 'n1', pending),
      step: statusDiffStep(pod('2', 'n1', pending), running),
      want: running,
    },
    {
      name: 'a diff onto no status',
      from: pod('3', 'n1'),
      step: statusDiffStep(pod('3', 'n1'), running),
      want: running,
    },
  ])('$name', ({ from, step, want }) => {
    expect(statusAfter(from, step)).toEqual({ ok: true, status: want });
  });

  it('a step planned from another version does not apply', () => {
    const step = statusDiffStep(pod('2', 'n1', pending), running);
    expect(statusAfter(pod('3', 'n1', pending), step)).toEqual({ ok: false });
  });
});
