import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { CreateRate } from '../api/tenantpolicy.ts';
import { checkCreateRate, checkYieldShare, CreatePacer } from './pacer.ts';

function newPacer(yieldShare?: number) {
  const woken: string[] = [];
  const p = new CreatePacer({ wake: (k) => woken.push(k), ...(yieldShare !== undefined && { yieldShare }) });
  return { p, woken };
}

describe('CreatePacer', () => {
  beforeEach(() => vi.useFakeTimers({ now: 0 }));
  afterEach(() => vi.useRealTimers());

  it.each([
    { rate: { perSecond: 10, burst: 3 }, creates: 5, sent: 3 },
    { rate: { perSecond: 10, burst: 1 }, creates: 5, sent: 1 },
    { rate: { perSecond: 0, burst: 1 }, creates: 50, sent: 50 },
    { rate: { perSecond: 1000, burst: 20 }, creates: 25, sent: 20 },
  ])('$rate: $creates creates at once send $sent and park the rest', ({ rate, creates, sent }) => {
    const { p } = newPacer();
    const got = Array.from({ length: creates }, (_, i) => p.take('a', `a/pods/default/p${i}`, rate));
    expect(got.filter(Boolean).length).toBe(sent);
    expect(p.parkedOf('a')).toBe(creates - sent);
  });

  it('wakes parked keys in the order they came, one per token as the bucket refills', () => {
    const { p, woken } = newPacer();
    const rate: CreateRate = { perSecond: 10, burst: 2 };
    for (let i = 0; i < 6; i++) p.take('a', `k${i}`, rate);
    expect(woken).toEqual([]);
    vi.advanceTimersByTime(100);
    expect(woken).toEqual(['k2']);
    // the woken key spends its token when it runs
    expect(p.take('a', 'k2', rate)).toBe(true);
    vi.advanceTimersByTime(100);
    expect(p.take('a', 'k3', rate)).toBe(true);
    vi.advanceTimersByTime(200);
    expect(woken).toEqual(['k2', 'k3', 'k4', 'k5']);
    expect(p.parkedOf('a')).toBe(0);
  });

  it('paces each tenant on its own: a tenant over its rate does not hold back another', () => {
    const { p } = newPacer();
    const rate: CreateRate = { perSecond: 5, burst: 1 };
    expect(p.take('a', 'a0', rate)).toBe(true);
    expect(p.take('a', 'a1', rate)).toBe(false);
    expect(p.take('b', 'b0', rate)).toBe(true);
    expect([p.parkedOf('a'), p.parkedOf('b')]).toEqual([1, 0]);
  });

  it('parkIfEmpty parks without spending, only when no token is left', () => {
    const { p, woken } = newPacer();
    const rate: CreateRate = { perSecond: 10, burst: 1 };
    expect(p.parkIfEmpty('a', 'k0', rate)).toBe(false);
    expect(p.take('a', 'k0', rate)).toBe(true);
    expect(p.parkIfEmpty('a', 'k1', rate)).toBe(true);
    vi.advanceTimersByTime(100);
    expect(woken).toEqual(['k1']);
  });

  it('giveBack returns a token spent on a create that was not sent', () => {
    const { p } = newPacer();
    const rate: CreateRate = { perSecond: 1, burst: 1 };
    expect(p.take('a', 'k0', rate)).toBe(true);
    p.giveBack('a');
    expect(p.take('a', 'k1', rate)).toBe(true);
    expect(p.take('a', 'k2', rate)).toBe(false);
  });

  it('forget and clear drop parked keys and their timers', () => {
    const { p, woken } = newPacer();
    const rate: CreateRate = { perSecond: 10, burst: 1 };
    p.take('a', 'a0', rate);
    p.take('a', 'a1', rate);
    p.take('b', 'b0', rate);
    p.take('b', 'b1', rate);
    p.forget('a');
    expect(p.parkedOf('a')).toBe(0);
    p.clear();
    vi.advanceTimersByTime(1000);
    expect(woken).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a lower rate set while keys are parked applies to the next wake', () => {
    const { p, woken } = newPacer();
    p.take('a', 'k0', { perSecond: 10, burst: 1 });
    p.take('a', 'k1', { perSecond: 10, burst: 1 });
    vi.advanceTimersByTime(100);
    expect(woken).toEqual(['k1']);
    expect(p.take('a', 'k1', { perSecond: 1, burst: 1 })).toBe(true);
    expect(p.take('a', 'k2', { perSecond: 1, burst: 1 })).toBe(false);
    vi.advanceTimersByTime(500);
    expect(woken).toEqual(['k1']);
    vi.advanceTimersByTime(500);
    expect(woken).toEqual(['k1', 'k2']);
  });
});

describe('checkCreateRate', () => {
  it.each([
    { rate: { perSecond: 20, burst: 10 }, error: undefined },
    { rate: { perSecond: 0, burst: 1 }, error: undefined },
    { rate: { perSecond: -1, burst: 1 }, error: 'perSecond must be a number >= 0, got -1' },
    { rate: { perSecond: Number.NaN, burst: 1 }, error: 'perSecond must be a number >= 0, got NaN' },
    { rate: { perSecond: 5, burst: 0 }, error: 'burst must be an integer >= 1, got 0' },
    { rate: { perSecond: 5, burst: 1.5 }, error: 'burst must be an integer >= 1, got 1.5' },
  ])('$rate: $error', ({ rate, error }) => {
    if (error) expect(() => checkCreateRate(rate, 'syncer.podCreateRate')).toThrow(`syncer.podCreateRate: ${error}`);
    else expect(checkCreateRate(rate, 'x')).toEqual(rate);
  });
});

describe('CreatePacer wakes', () => {
  beforeEach(() => vi.useFakeTimers({ now: 0 }));
  afterEach(() => vi.useRealTimers());

  it('a woken key that has not run yet holds its token: the next key is woken a token later, not at once', () => {
    const { p, woken } = newPacer();
    const rate: CreateRate = { perSecond: 10, burst: 1 };
    for (let i = 0; i < 4; i++) p.take('a', `k${i}`, rate);
    vi.advanceTimersByTime(100);
    expect(woken).toEqual(['k1']);
    // k1 has not run (the queue is busy): 50 ms later nothing more is woken
    vi.advanceTimersByTime(50);
    expect(woken).toEqual(['k1']);
    vi.advanceTimersByTime(50);
    expect(woken).toEqual(['k1', 'k2']);
  });
});

describe('CreatePacer yields to tenants creating at their own pace', () => {
  beforeEach(() => vi.useFakeTimers({ now: 0 }));
  afterEach(() => vi.useRealTimers());
  const rate: CreateRate = { perSecond: 10, burst: 1 };

  it('a tenant with parked keys refills at the yield share while another creates, and at its whole rate alone', () => {
    const { p, woken } = newPacer(0.25);
    expect(p.take('a', 'a0', rate)).toBe(true);
    expect(p.take('a', 'a1', rate)).toBe(false);
    expect(p.take('b', 'b0', rate)).toBe(true);
    expect(p.yielding('a')).toBe(true);
    // 2.5 per second: a token every 400 ms instead of every 100 ms
    vi.advanceTimersByTime(399);
    expect(woken).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(woken).toEqual(['a1']);
    expect(p.take('a', 'a1', rate)).toBe(true);
    // b's last create was 1 s ago: a has its whole rate back
    vi.advanceTimersByTime(600);
    expect(p.yielding('a')).toBe(false);
    expect(p.take('a', 'a2', rate)).toBe(true);
    expect(p.take('a', 'a3', rate)).toBe(false);
    vi.advanceTimersByTime(100);
    expect(woken).toEqual(['a1', 'a3']);
  });

  it.each([
    { case: 'two tenants both with parked keys keep their whole rates', bParks: true, share: 0.25, yielding: false },
    { case: 'a tenant without parked keys never yields', bParks: false, share: 0.25, yielding: false, aParks: false },
    { case: 'a share of 1 turns yielding off', bParks: false, share: 1, yielding: false },
    { case: 'the default share yields', bParks: false, share: undefined, yielding: true },
  ])('$case', ({ bParks, share, yielding, aParks = true }) => {
    const { p } = newPacer(share);
    p.take('a', 'a0', rate);
    if (aParks) p.take('a', 'a1', rate);
    p.take('b', 'b0', rate);
    if (bParks) p.take('b', 'b1', rate);
    expect(p.yielding('a')).toBe(yielding);
  });

  it('a tenant that stopped creating a second ago no longer makes others yield', () => {
    const { p } = newPacer(0.25);
    p.take('b', 'b0', rate);
    vi.advanceTimersByTime(999);
    p.take('a', 'a0', rate);
    p.take('a', 'a1', rate);
    expect(p.yielding('a')).toBe(true);
    vi.advanceTimersByTime(1);
    expect(p.yielding('a')).toBe(false);
  });

  it('a tenant whose rate paces nothing makes others yield while it creates, and not once forgotten', () => {
    const { p, woken } = newPacer(0.25);
    const unpaced: CreateRate = { perSecond: 0, burst: 1 };
    p.take('a', 'a0', rate);
    p.take('a', 'a1', rate);
    expect(p.yielding('a')).toBe(false);
    expect(p.take('u', 'u0', unpaced)).toBe(true);
    expect(p.yielding('a')).toBe(true);
    expect(p.yielding('u')).toBe(false);
    vi.advanceTimersByTime(100);
    expect(woken).toEqual([]);
    p.forget('u');
    expect(p.yielding('a')).toBe(false);
  });
});

describe('checkYieldShare', () => {
  it.each([
    { share: 0.25, error: undefined },
    { share: 1, error: undefined },
    { share: 0, error: 'must be a number > 0 and <= 1, got 0' },
    { share: 1.5, error: 'must be a number > 0 and <= 1, got 1.5' },
    { share: Number.NaN, error: 'must be a number > 0 and <= 1, got NaN' },
  ])('$share: $error', ({ share, error }) => {
    if (error) expect(() => checkYieldShare(share, 'syncer.podCreateYield')).toThrow(`syncer.podCreateYield: ${error}`);
    else expect(checkYieldShare(share, 'x')).toBe(share);
  });
});
