import { describe, it, expect } from 'vitest';
import { FakeClock } from './clock.ts';
import {
  BucketRateLimiter,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  defaultControllerRateLimiter,
  type RateLimiter,
} from './ratelimiter.ts';

describe('ItemExponentialFailureRateLimiter', () => {
  it.each([
    { base: 5, max: 1000, want: [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000] },
    { base: 1, max: 4, want: [1, 2, 4, 4] },
    { base: 100, max: 100, want: [100, 100, 100] },
    { base: 0, max: 50, want: [0, 0, 0] },
  ])('base $base max $max gives $want', ({ base, max, want }) => {
    const limiter = new ItemExponentialFailureRateLimiter(base, max);
    expect(want.map(() => limiter.when('a'))).toEqual(want);
    expect(limiter.retries('a')).toBe(want.length);
  });

  it('counts items separately and starts over after forget', () => {
    const limiter = new ItemExponentialFailureRateLimiter(5, 1000);
    expect([limiter.when('a'), limiter.when('a'), limiter.when('b')]).toEqual([5, 10, 5]);
    limiter.forget('a');
    expect(limiter.retries('a')).toBe(0);
    expect(limiter.retries('b')).toBe(1);
    expect(limiter.when('a')).toBe(5);
  });

  it('stays at the cap after very many failures', () => {
    const limiter = new ItemExponentialFailureRateLimiter(3, 60_000);
    let last = 0;
    for (let i = 0; i < 2000; i++) last = limiter.when('a');
    expect(last).toBe(60_000);
  });

  it.each([
    [-1, 10],
    [10, 5],
    [Number.NaN, 10],
  ])('rejects base %d, max %d', (base, max) => {
    expect(() => new ItemExponentialFailureRateLimiter(base, max)).toThrow(RangeError);
  });
});

describe('BucketRateLimiter', () => {
  it('lets a burst through, then spaces reservations at 1/qps', () => {
    const clock = new FakeClock();
    const limiter = new BucketRateLimiter(10, 3, clock);
    expect(['a', 'b', 'c', 'd', 'e'].map((item) => limiter.when(item))).toEqual([0, 0, 0, 100, 200]);
    expect(limiter.retries('a')).toBe(0);
  });

  it('refills at qps, part tokens included', () => {
    const clock = new FakeClock();
    const limiter = new BucketRateLimiter(10, 3, clock);
    for (let i = 0; i < 5; i++) limiter.when('x');
    // -2 tokens + 250ms * 10/s = 0.5 tokens; the next reservation owes half a token.
    clock.step(250);
    expect(limiter.when('x')).toBeCloseTo(50);
  });

  it('refills no further than the burst', () => {
    const clock = new FakeClock();
    const limiter = new BucketRateLimiter(10, 3, clock);
    for (let i = 0; i < 3; i++) limiter.when('x');
    clock.step(60_000);
    expect([1, 2, 3, 4].map(() => limiter.when('x'))).toEqual([0, 0, 0, 100]);
  });

  it.each([
    [0, 1],
    [-1, 1],
    [Number.POSITIVE_INFINITY, 1],
    [10, 0],
    [10, 1.5],
  ])('rejects qps %d, burst %d', (qps, burst) => {
    expect(() => new BucketRateLimiter(qps, burst, new FakeClock())).toThrow(RangeError);
  });
});

describe('MaxOfRateLimiter', () => {
  it('waits for the longest delay and reports the most retries', () => {
    const clock = new FakeClock();
    const limiter = new MaxOfRateLimiter(
      new ItemExponentialFailureRateLimiter(10, 100_000),
      new BucketRateLimiter(1, 2, clock),
    );
    expect(limiter.when('a')).toBe(10);
    expect(limiter.when('b')).toBe(10);
    expect(limiter.when('a')).toBe(1000);
    expect(limiter.retries('a')).toBe(2);
    limiter.forget('a');
    expect(limiter.retries('a')).toBe(0);
    expect(limiter.when('a')).toBe(2000);
  });

  it('tells every limiter about each failure and each forget', () => {
    const calls: string[] = [];
    const recorder = (name: string, delay: number): RateLimiter => ({
      when: (item) => (calls.push(`${name}.when(${item})`), delay),
      forget: (item) => void calls.push(`${name}.forget(${item})`),
      retries: () => 0,
    });
    const limiter = new MaxOfRateLimiter(recorder('big', 50), recorder('small', 1));
    expect(limiter.when('k')).toBe(50);
    limiter.forget('k');
    expect(calls).toEqual(['big.when(k)', 'small.when(k)', 'big.forget(k)', 'small.forget(k)']);
  });
});

describe('defaultControllerRateLimiter', () => {
  it('backs off per item from 5ms and holds all items to 10 qps after a burst of 100', () => {
    const limiter = defaultControllerRateLimiter(new FakeClock());
    const first = Array.from({ length: 100 }, (_, i) => limiter.when(`item-${i}`));
    expect(new Set(first)).toEqual(new Set([5]));
    expect(limiter.when('item-100')).toBe(100);
    expect(limiter.when('item-0')).toBe(200);
    expect(limiter.retries('item-0')).toBe(2);
  });

  it('caps the per-item backoff at 1000s', () => {
    const clock = new FakeClock();
    const limiter = defaultControllerRateLimiter(clock);
    let last = 0;
    for (let i = 0; i < 40; i++) {
      last = limiter.when('a');
      clock.step(1_000_000);
    }
    expect(last).toBe(1_000_000);
  });
});
