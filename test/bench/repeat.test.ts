import { describe, expect, it } from 'vitest';
import { formatSpread, interleave, ratioSpread, type RepRun, spread, spreadFigures } from './repeat.ts';

describe('spread', () => {
  it.each([
    { values: [3, 1, 2], want: { median: 2, min: 1, max: 3, n: 3 } },
    { values: [4, 1, 3, 2], want: { median: 2.5, min: 1, max: 4, n: 4 } },
    { values: [NaN, 5], want: { median: 5, min: 5, max: 5, n: 1 } },
    { values: [], want: { median: NaN, min: NaN, max: NaN, n: 0 } },
  ])('$values', ({ values, want }) => expect(spread(values)).toEqual(want));
});

describe('interleave', () => {
  it('runs the arms in turn, repetition after repetition', async () => {
    const order: string[] = [];
    const arm = (name: string) => ({
      name,
      run: (rep: number) => {
        order.push(`${name}${rep}`);
        return Promise.resolve({ value: rep, load: { hostPercent: 0, otherPercent: 0 } });
      },
    });
    const runs = await interleave([arm('a'), arm('b'), arm('c')], 2);
    expect(order).toEqual(['a0', 'b0', 'c0', 'a1', 'b1', 'c1']);
    expect(runs.map((r) => `${r.arm}${r.rep}`)).toEqual(order);
  });
});

describe('ratioSpread', () => {
  const run = (rep: number, arm: string, value: number, otherPercent: number): RepRun<number> => ({
    rep,
    arm,
    value,
    load: { hostPercent: 100, otherPercent },
  });
  it.each([
    {
      name: 'all repetitions under like load count',
      runs: [run(0, 's', 10, 5), run(0, 'd', 20, 10), run(1, 's', 12, 0), run(1, 'd', 20, 0)],
      want: { perRep: [0.5, 0.6], median: 0.55, refused: 0 },
    },
    {
      name: 'a repetition whose arms ran under other loads apart by more than the bound is left out',
      runs: [run(0, 's', 10, 80), run(0, 'd', 20, 10), run(1, 's', 12, 30), run(1, 'd', 20, 10)],
      want: { perRep: [null, 0.6], median: 0.6, refused: 1 },
    },
    {
      name: 'an arm that did not run leaves its repetition out',
      runs: [run(0, 's', 10, 0)],
      want: { perRep: [null], median: NaN, refused: 1 },
    },
  ])('$name', ({ runs, want }) => {
    const r = ratioSpread(runs, 's', 'd', (v) => v, 25);
    expect(r.perRep).toEqual(want.perRep);
    if (Number.isNaN(want.median)) expect(r.median).toBeNaN();
    else expect(r.median).toBeCloseTo(want.median);
    expect(r.refused).toHaveLength(want.refused);
  });

  it('says why instead of a ratio when no repetition counted', () => {
    const r = ratioSpread([run(0, 's', 10, 90), run(0, 'd', 20, 0)], 's', 'd', (v) => v, 25);
    expect(formatSpread('syncer/direct', r)).toMatch(/not reported.*other load 90% \(s\) vs 0% \(d\)/);
    expect(spreadFigures('throughputRatio', r)).toEqual({});
  });

  it('prints median, min, max and how many repetitions counted', () => {
    const r = ratioSpread(
      [run(0, 's', 1, 0), run(0, 'd', 2, 0), run(1, 's', 3, 0), run(1, 'd', 4, 0)],
      's',
      'd',
      (v) => v,
    );
    expect(formatSpread('x', r)).toBe('x: 0.63 (min 0.50, max 0.75, 2 of 2 repetitions)');
    expect(spreadFigures('x', r)).toEqual({ x: 0.625, xMin: 0.5, xMax: 0.75 });
  });
});
