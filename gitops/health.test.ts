import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../core/kube/client.ts';
import type { GitSource, InventoryStatus } from './applier/gitsource.ts';
import {
  dependencyCycle,
  dependencyGate,
  HEALTH_RECHECK_SLACK_MS,
  healthRecheck,
  objectHealth,
  readiness,
  withHealth,
  withReadiness,
} from './health.ts';

const vc = (status: Record<string, unknown> | undefined, meta: Record<string, unknown> = {}): KubeObject => ({
  metadata: { name: 'a', namespace: 'n', generation: 1, ...meta },
  ...(status ? { status } : {}),
});
const ready = (status: 'True' | 'False' | 'Unknown', reason = 'R', message?: string) => ({
  type: 'Ready',
  status,
  reason,
  ...(message ? { message } : {}),
  lastTransitionTime: '2026-01-01T00:00:00Z',
});

describe('objectHealth', () => {
  it.each<[string, string, KubeObject | undefined, string, string | undefined]>([
    [
      'a VirtualCluster Running, acted on',
      'VirtualCluster',
      vc({ phase: 'Running', observedGeneration: 1 }),
      'Healthy',
      undefined,
    ],
    [
      'Running and Ready True',
      'VirtualCluster',
      vc({ phase: 'Running', observedGeneration: 1, conditions: [ready('True')] }),
      'Healthy',
      undefined,
    ],
    [
      'Running but Ready False',
      'VirtualCluster',
      vc({ phase: 'Running', observedGeneration: 1, conditions: [ready('False', 'ApiserverDown', 'readyz failed')] }),
      'Progressing',
      'Ready False (ApiserverDown): readyz failed',
    ],
    [
      'Provisioning',
      'VirtualCluster',
      vc({ phase: 'Provisioning', observedGeneration: 1 }),
      'Progressing',
      'phase Provisioning',
    ],
    ['no status yet', 'VirtualCluster', vc(undefined), 'Progressing', 'generation 1 not yet acted on'],
    [
      'Running, but an older generation',
      'VirtualCluster',
      vc({ phase: 'Running', observedGeneration: 1 }, { generation: 2 }),
      'Progressing',
      'generation 2 not yet acted on',
    ],
    [
      'Error with a message',
      'VirtualCluster',
      vc({ phase: 'Error', observedGeneration: 1, message: 'policy refuses spec.apiServer' }),
      'Failed',
      'phase Error: policy refuses spec.apiServer',
    ],
    [
      'Degraded while a component restarts',
      'VirtualCluster',
      vc({ phase: 'Degraded', observedGeneration: 1 }),
      'Progressing',
      'phase Degraded',
    ],
    [
      'being deleted',
      'VirtualCluster',
      vc({ phase: 'Running', observedGeneration: 1 }, { deletionTimestamp: '2026-01-01T00:00:00Z' }),
      'Progressing',
      'being deleted',
    ],
    ['gone', 'VirtualCluster', undefined, 'Progressing', 'not found; the next apply creates it'],
    ['a ClusterVersion that exists', 'ClusterVersion', { metadata: { name: 'v' } }, 'Healthy', undefined],
  ])('%s', (_what, kind, live, health, message) => {
    expect(objectHealth(kind, live)).toEqual({ health, ...(message ? { message } : {}) });
  });
});

describe('readiness', () => {
  const entry = (name: string, health: InventoryStatus['health'], message?: string): InventoryStatus => ({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    namespace: 'team-a',
    name,
    uid: `uid-${name}`,
    health,
    ...(message ? { message } : {}),
  });
  const rev = 'abcdef0123456789abcdef0123456789abcdef01';

  it.each<[string, InventoryStatus[], number, string, string, RegExp]>([
    ['all healthy', [entry('a', 'Healthy'), entry('b', 'Healthy')], 0, 'True', 'Succeeded', /2 object\(s\) healthy/],
    ['nothing applied', [], 0, 'True', 'Succeeded', /0 object\(s\) healthy/],
    [
      'one progressing, within the timeout',
      [entry('a', 'Healthy'), entry('b', 'Progressing', 'phase Provisioning')],
      59_000,
      'Unknown',
      'Progressing',
      /waiting for VirtualCluster team-a\/b \(phase Provisioning\)/,
    ],
    [
      'one progressing past the timeout',
      [entry('b', 'Progressing', 'phase Provisioning')],
      60_000,
      'False',
      'HealthCheckFailed',
      /not healthy after 60s \(spec.healthTimeout\): VirtualCluster team-a\/b/,
    ],
    [
      'one failed, at once',
      [entry('a', 'Progressing'), entry('b', 'Failed', 'phase Error: boom')],
      0,
      'False',
      'HealthCheckFailed',
      /failed: VirtualCluster team-a\/b \(phase Error: boom\)/,
    ],
  ])('%s', (_what, inventory, waited, status, reason, message) => {
    const c = readiness(inventory, rev, 1_000, 1_000 + waited, 60_000);
    expect(c).toMatchObject({ type: 'Ready', status, reason });
    expect(c.message).toMatch(message);
    expect(c.message).toContain('abcdef012345');
  });

  it('names at most five objects and counts the rest', () => {
    const many = Array.from({ length: 8 }, (_, i) => entry(`t${i}`, 'Progressing'));
    expect(readiness(many, rev, 0, 0, 60_000).message).toMatch(/t4; and 3 more$/);
  });
});

describe('withHealth and withReadiness', () => {
  const inv = [
    { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster', namespace: 'n', name: 'a', uid: 'u' },
  ];

  it('adds each entry health, and a message only when not Healthy', () => {
    expect(withHealth(inv, () => ({ health: 'Healthy' }))[0]).toEqual({ ...inv[0], health: 'Healthy' });
    expect(withHealth(inv, () => ({ health: 'Failed', message: 'x'.repeat(2000) }))[0]!.message).toHaveLength(1024);
  });

  it('replaces Ready, sets Reconciling True while waiting, keeps the transition time of an unchanged Ready', () => {
    const before = [{ ...ready('Unknown', 'Progressing'), lastTransitionTime: '2026-01-01T00:00:00Z' }];
    const status = {
      observedGeneration: 3,
      conditions: [ready('True', 'Succeeded'), { ...ready('False'), type: 'Stalled' }],
    };
    const waitingNow = withReadiness(before, status, [], {
      type: 'Ready',
      status: 'Unknown',
      reason: 'Progressing',
      message: 'waiting',
    });
    const byType = Object.fromEntries(waitingNow.conditions!.map((c) => [c.type, c]));
    expect(byType.Ready).toMatchObject({ status: 'Unknown', observedGeneration: 3 });
    expect(byType.Ready!.lastTransitionTime).toBe('2026-01-01T00:00:00Z');
    expect(byType.Reconciling).toMatchObject({ status: 'True', reason: 'Progressing' });
    expect(byType.Stalled).toMatchObject({ status: 'False' });
    const done = withReadiness(before, status, [], { type: 'Ready', status: 'True', reason: 'Succeeded' });
    expect(done.conditions!.find((c) => c.type === 'Reconciling')).toMatchObject({ status: 'False' });
    expect(done.conditions!.find((c) => c.type === 'Ready')!.lastTransitionTime).not.toBe('2026-01-01T00:00:00Z');
  });
});

describe('dependencies', () => {
  const source = (ns: string, name: string, deps: Array<{ name: string; namespace?: string }>, ok?: boolean) =>
    ({
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      metadata: { namespace: ns, name, generation: 2 },
      spec: { url: 'https://git.example.com/x.git', ref: { branch: 'main' }, dependsOn: deps },
      status:
        ok === undefined
          ? undefined
          : { observedGeneration: 2, conditions: [ready(ok ? 'True' : 'Unknown', ok ? 'Succeeded' : 'Progressing')] },
    }) as GitSource;
  const world = (...all: GitSource[]) => {
    const m = new Map(all.map((g) => [`${g.metadata.namespace}/${g.metadata.name}`, g]));
    return (k: string) => m.get(k);
  };

  it('finds a cycle through the source, across namespaces, and only through it', () => {
    const a = source('p', 'a', [{ name: 'b' }]);
    const b = source('p', 'b', [{ name: 'c', namespace: 'q' }]);
    const c = source('q', 'c', [{ name: 'a', namespace: 'p' }]);
    expect(dependencyCycle(a, world(a, b, c))).toEqual(['p/a', 'p/b', 'q/c', 'p/a']);
    const d = source('p', 'd', [{ name: 'a' }]);
    // d waits on a cycle it is not part of: it is not stalled by it, it waits.
    expect(dependencyCycle(d, world(a, b, c, d))).toBeUndefined();
    const self = source('p', 's', [{ name: 's' }]);
    expect(dependencyCycle(self, world(self))).toEqual(['p/s', 'p/s']);
  });

  it('waits for a dependency that is missing, not Ready, or Ready on an older generation', () => {
    const policies = source('platform', 'policies', [], true);
    const stale = {
      ...source('platform', 'versions', [], true),
      metadata: { namespace: 'platform', name: 'versions', generation: 3 },
    };
    const busy = source('platform', 'busy', [], false);
    const t = source('team', 't', [
      { name: 'policies', namespace: 'platform' },
      { name: 'versions', namespace: 'platform' },
      { name: 'busy', namespace: 'platform' },
      { name: 'nowhere' },
    ]);
    const gate = dependencyGate(t, world(policies, stale as GitSource, busy, t));
    expect(gate?.cycle).toBe(false);
    expect(gate?.message).toBe(
      'waiting for spec.dependsOn: GitSource platform/versions is not Ready (Succeeded, older generation); ' +
        'GitSource platform/busy is not Ready (Progressing); GitSource team/nowhere does not exist',
    );
    expect(dependencyGate(source('team', 'u', [{ name: 'policies', namespace: 'platform' }]), world(policies))).toBe(
      undefined,
    );
  });
});

describe('healthRecheck', () => {
  const at = 1_000_000;
  it.each<[string, ReturnType<typeof ready> | undefined, number, number | undefined]>([
    ['waiting, 60 s timeout, 20 s in: at the timeout', ready('Unknown', 'Progressing'), at + 20_000, 40_000],
    ['waiting, the timeout already passed: at once', ready('Unknown', 'Progressing'), at + 90_000, 0],
    ['Ready True: nothing to wait for', ready('True', 'Succeeded'), at + 20_000, undefined],
    ['Ready False: already judged', ready('False', 'HealthCheckFailed'), at + 20_000, undefined],
    ['suspended: not a health wait', ready('Unknown', 'Suspended'), at + 20_000, undefined],
    ['no Ready condition', undefined, at + 20_000, undefined],
  ])('%s', (_, condition, now, wait) => {
    const status = { conditions: condition ? [condition] : [] };
    expect(healthRecheck(status, at, now, 60_000)).toBe(
      wait === undefined ? undefined : wait + HEALTH_RECHECK_SLACK_MS,
    );
  });
});
