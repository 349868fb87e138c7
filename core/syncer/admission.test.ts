import { describe, expect, it } from 'vitest';
import { readerOf, type TenantSession } from '../sessions/tenants.ts';
import { PodAdmission } from './admission.ts';
import { CreatePacer } from './pacer.ts';
import { makeKey, parseKey } from './routing.ts';
import { SchedulingWindow } from './window.ts';

const TENANT = 't1';
const key = makeKey(TENANT, 'pods', 'default', 'p');
const k = parseKey(key);
const session = { tenant: { key: TENANT } } as unknown as TenantSession;

/** admission is a PodAdmission on a stopped clock (no refill), with a window of `window` Pods (0: none). */
function admission(window: number, burst: number) {
  const w = window > 0 ? new SchedulingWindow({ size: window, wake: () => {}, now: () => 0 }) : undefined;
  const pacer = new CreatePacer({ wake: () => {}, now: () => 0 });
  const a = new PodAdmission(w, pacer, { perSecond: 1, burst }, readerOf(new Map()));
  /** tokensLeft counts the creates the tenant's bucket still allows now (taking them). */
  const tokensLeft = (): number => {
    let n = 0;
    while (n < 100 && pacer.take(TENANT, `probe-${n}`, { perSecond: 1, burst })) n++;
    return n;
  };
  return { a, w, tokensLeft };
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
    expect(a.reserve(session, k, key, created)).toEqual(want);
    expect(w?.waitingOf(TENANT) ?? 0).toBe(inWindow);
    expect(tokensLeft()).toBe(left);
  });

  it("a tenant's own create rate wins over the syncer's", () => {
    const { a } = admission(0, 5);
    const own = { tenant: { key: TENANT, podCreateRate: { perSecond: 1, burst: 1 } } } as unknown as TenantSession;
    expect(a.createRateOf(own)).toEqual({ perSecond: 1, burst: 1 });
    expect(a.createRateOf(session)).toEqual({ perSecond: 1, burst: 5 });
    expect(a.reserve(own, k, key, ['a', 'b'])).toBeUndefined();
  });
});
