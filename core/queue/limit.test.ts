import { describe, expect, it } from 'vitest';
import { AdaptiveLimit } from './limit.ts';

/** feed gives the limiter `windows` windows of 4 samples, each sample the given latency; it returns the limits seen. */
function feed(l: AdaptiveLimit, latencies: number[]): number[] {
  const seen: number[] = [];
  for (const ms of latencies) {
    for (let i = 0; i < 4; i++) l.observe(ms);
    seen.push(l.limit);
  }
  return seen;
}

describe('AdaptiveLimit', () => {
  const limiter = (o: { min?: number; max?: number; baselineWindows?: number } = {}) =>
    new AdaptiveLimit({ min: o.min ?? 1, max: o.max ?? 8, samplesPerWindow: 4, baselineWindows: o.baselineWindows });

  it.each([
    // latency at the baseline: the limit stays at max
    { name: 'steady latency', windows: [10, 10, 10, 10], want: [8, 8, 8, 8] },
    // queueing (3x the baseline) takes a quarter off per window, down to min
    { name: 'queueing', windows: [10, 30, 30, 30, 30, 30, 30, 30], want: [8, 6, 5, 4, 3, 2, 1, 1] },
    // between 1.5x and 2x: the limit holds
    { name: 'mild rise', windows: [10, 30, 18, 18, 18], want: [8, 6, 6, 6, 6] },
    // back near the baseline: one more per window, up to max
    { name: 'recovery', windows: [10, 30, 30, 10, 10, 10, 10], want: [8, 6, 5, 6, 7, 8, 8] },
  ])('$name: window medians $windows give limits $want', ({ windows, want }) => {
    expect(feed(limiter(), windows)).toEqual(want);
  });

  it('judges a window by its median: one slow request among quick ones is not queueing', () => {
    const l = limiter();
    feed(l, [10]);
    for (const ms of [10, 10, 500, 10]) l.observe(ms);
    expect(l.limit).toBe(8);
    for (const ms of [40, 40, 10, 40]) l.observe(ms);
    expect(l.limit).toBe(6);
  });

  it('forgets a baseline older than baselineWindows: a server slower for good is measured again', () => {
    const l = limiter({ baselineWindows: 3 });
    expect(feed(l, [10, 50, 50, 50, 50, 50])).toEqual([8, 6, 5, 6, 7, 8]);
    expect(l.baseline).toBe(50);
  });

  it('ignores samples that are not latencies', () => {
    const l = limiter();
    for (const ms of [Number.NaN, -1, Number.POSITIVE_INFINITY]) expect(l.observe(ms)).toBe(false);
    expect(l.baseline).toBeUndefined();
  });

  it.each([
    { o: { min: 0, max: 4 }, error: /min must be a positive integer, got 0/ },
    { o: { min: 3, max: 2 }, error: /max \(2\) is below min \(3\)/ },
    { o: { min: 1, max: 4, tolerance: 1 }, error: /tolerance must be above 1, got 1/ },
    { o: { min: 1, max: 4, samplesPerWindow: 0 }, error: /samplesPerWindow must be a positive integer/ },
  ])('refuses $o', ({ o, error }) => {
    expect(() => new AdaptiveLimit(o)).toThrow(error);
  });
});
