import { describe, expect, it } from 'vitest';
import { readerOf, type TenantSession } from '../sessions/tenants.ts';
import type { KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import type { ResourcePlugin } from '../plugins/contract.ts';
import { PodAdmission, superWriteBytes } from './admission.ts';
import { BytePacer } from './bytepacer.ts';
import { sizeOf } from './caps.ts';
import { CreatePacer } from './pacer.ts';
import type { Step } from './plan.ts';
import { makeKey, parseKey } from './routing.ts';
import { SchedulingWindow } from './window.ts';

const TENANT = 't1';
const key = makeKey(TENANT, 'pods', 'default', 'p');
const k = parseKey(key);
const session = { tenant: { key: TENANT } } as unknown as TenantSession;

const podsPlugin = { manifest: { name: 'pods', resource: R.pods, direction: 'both' } } as unknown as ResourcePlugin;

/** pod is a super Pod named `name` whose JSON is about `pad` bytes longer than an empty one. */
const pod = (name: string, pad = 0): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { containers: [{ name: 'c', image: 'x'.repeat(pad) }] },
});

/** creates are the steps of a plan that creates the super Pods `names`. */
const creates = (names: string[], pad = 0): Step[] => names.map((n) => ({ op: 'createSuper', obj: pod(n, pad) }));

/**
 * admission is a PodAdmission on a stopped clock (no refill), with a window of `window` Pods (0: none), a create burst
 * of `burst` and a byte burst of `byteBurst`.
 */
function admission(window: number, burst: number, byteBurst = 1024 * 1024) {
  const w = window > 0 ? new SchedulingWindow({ size: window, wake: () => {}, now: () => 0 }) : undefined;
  const pacer = new CreatePacer({ wake: () => {}, now: () => 0 });
  const bytes = new BytePacer({ wake: () => {}, now: () => 0 });
  const a = new PodAdmission(w, pacer, { perSecond: 1, burst }, readerOf(new Map()), {
    pacer: bytes,
    rate: { perSecond: 1024, burst: byteBurst },
  });
  /** tokensLeft counts the creates the tenant's bucket still allows now (taking them). */
  const tokensLeft = (): number => {
    let n = 0;
    while (n < 100 && pacer.take(TENANT, `probe-${n}`, { perSecond: 1, burst })) n++;
    return n;
  };
  /** bytesLeft tells whether the tenant's byte bucket still holds `n` bytes now (taking them). */
  const bytesLeft = (n: number): boolean => bytes.take(TENANT, 'probe', n, { perSecond: 1024, burst: byteBurst });
  return { a, w, tokensLeft, bytesLeft };
}

/**
 * PodAdmission.reserve: the super Pods a plan creates take room in the tenant's scheduling window and tokens of its
 * create rate, all or none. A parked key holds nothing: what it took before parking is given back.
 */
describe('PodAdmission.reserve', () => {
  it.each([
    {
      name: 'room and tokens for both',
      window: 2,
      burst: 5,
      created: ['a', 'b'],
      want: ['a', 'b'],
      inWindow: 2,
      left: 3,
    },
    {
      name: 'window full at the second',
      window: 1,
      burst: 5,
      created: ['a', 'b'],
      want: undefined,
      inWindow: 0,
      left: 5,
    },
    {
      name: 'tokens short at the second',
      window: 3,
      burst: 1,
      created: ['a', 'b'],
      want: undefined,
      inWindow: 0,
      left: 1,
    },
    {
      name: 'no window, tokens short',
      window: 0,
      burst: 1,
      created: ['a', 'b'],
      want: undefined,
      inWindow: 0,
      left: 1,
    },
    { name: 'no window, tokens enough', window: 0, burst: 2, created: ['a'], want: [], inWindow: 0, left: 1 },
    { name: 'nothing created', window: 2, burst: 1, created: [], want: [], inWindow: 0, left: 1 },
  ])('$name', ({ window, burst, created, want, inWindow, left }) => {
    const { a, w, tokensLeft } = admission(window, burst);
    expect(a.reserve(session, podsPlugin, k, key, creates(created))).toEqual(want);
    expect(w?.waitingOf(TENANT) ?? 0).toBe(inWindow);
    expect(tokensLeft()).toBe(left);
  });

  it("a tenant's own create rate wins over the syncer's", () => {
    const { a } = admission(0, 5);
    const own = { tenant: { key: TENANT, podCreateRate: { perSecond: 1, burst: 1 } } } as unknown as TenantSession;
    expect(a.createRateOf(own)).toEqual({ perSecond: 1, burst: 1 });
    expect(a.createRateOf(session)).toEqual({ perSecond: 1, burst: 5 });
    expect(a.reserve(own, podsPlugin, k, key, creates(['a', 'b']))).toBeUndefined();
  });

  it.each([
    // the byte bucket holds both Pods: everything is taken
    { name: 'bytes for both', window: 2, spent: 0, want: ['a', 'b'], inWindow: 2, left: 3, untouched: false },
    // the bucket does not hold them: parked before the window and the create rate are asked
    { name: 'bytes short', window: 2, spent: 15_000, want: undefined, inWindow: 0, left: 5, untouched: true },
    // the window refuses the second: the bytes taken are given back
    { name: 'window full', window: 1, spent: 0, want: undefined, inWindow: 0, left: 5, untouched: true },
  ])('byte rate: $name', ({ window, spent, want, inWindow, left, untouched }) => {
    const byteBurst = 20_000;
    const { a, w, tokensLeft, bytesLeft } = admission(window, 5, byteBurst);
    if (spent) expect(bytesLeft(spent)).toBe(true);
    // two Pods of about 4 KiB each
    expect(a.reserve(session, podsPlugin, k, key, creates(['a', 'b'], 4000))).toEqual(want);
    expect(w?.waitingOf(TENANT) ?? 0).toBe(inWindow);
    expect(tokensLeft()).toBe(left);
    // the byte bucket still holds all it held before, when nothing was taken
    expect(bytesLeft(byteBurst - spent)).toBe(untouched);
  });

  it("a tenant's own byte rate wins over the syncer's", () => {
    const { a } = admission(0, 5);
    const own = { tenant: { key: TENANT, byteRate: { perSecond: 2048, burst: 4096 } } } as unknown as TenantSession;
    expect(a.byteRateOf(own)).toEqual({ perSecond: 2048, burst: 4096 });
    expect(a.byteRateOf(session)).toEqual({ perSecond: 1024, burst: 1024 * 1024 });
    expect(a.reserve(own, podsPlugin, k, key, creates(['a'], 4000))).toEqual([]);
    expect(a.reserve(own, podsPlugin, k, key, creates(['b'], 10))).toBeUndefined();
  });
});

/** superWriteBytes: what a plan's super writes count against the byte rate. */
describe('superWriteBytes', () => {
  const big = pod('big', 50_000);
  const sizeNow = (_ns: string | undefined, name: string) => (name === 'big' ? sizeOf(big) : 0);
  it.each<{ name: string; steps: Step[]; want: number }>([
    { name: 'a create counts the object', steps: [{ op: 'createSuper', obj: big }], want: sizeOf(big) },
    {
      name: 'a small patch of a large object counts the object after it',
      steps: [{ op: 'patchSuper', name: 'big', ops: [{ op: 'add', path: '/metadata/labels', value: { a: 'b' } }] }],
      want: sizeOf(big),
    },
    {
      name: 'a large patch of a small object counts the patch',
      steps: [{ op: 'patchSuper', name: 'small', ops: [{ op: 'add', path: '/data', value: { v: 'x'.repeat(9000) } }] }],
      want: Buffer.byteLength(JSON.stringify([{ op: 'add', path: '/data', value: { v: 'x'.repeat(9000) } }])),
    },
    { name: 'a delete counts nothing', steps: [{ op: 'deleteSuper', name: 'big', uid: 'u' }], want: 0 },
    {
      name: 'tenant-side writes count nothing',
      steps: [{ op: 'patchTenantStatus', name: 'p', ops: [{ op: 'add', path: '/status', value: { phase: 'x' } }] }],
      want: 0,
    },
    { name: 'two creates add up', steps: creates(['a', 'b'], 100), want: 2 * sizeOf(pod('a', 100)) },
  ])('$name', ({ steps, want }) => {
    expect(superWriteBytes(steps, sizeNow)).toBe(want);
  });
});
