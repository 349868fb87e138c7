import { describe, expect, it } from 'vitest';
import {
  figureSpreads,
  formatSpread,
  interleave,
  loadBetween,
  meanLoad,
  ratioSpread,
  type RepRun,
  repeatedFigures,
  repetitionsLine,
  repsOf,
  reportRatios,
  spread,
  spreadFigures,
} from './repeat.ts';

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

  it('runs `after` after each arm, before the next one starts', async () => {
    const order: string[] = [];
    const arm = (name: string) => ({
      name,
      run: (rep: number) => {
        order.push(`${name}${rep}`);
        return Promise.resolve({ value: rep, load: { hostPercent: 0, otherPercent: 0 } });
      },
    });
    await interleave([arm('a'), arm('b')], 2, (rep, name) => {
      order.push(`after ${name}${rep}`);
      return Promise.resolve();
    });
    expect(order).toEqual(['a0', 'after a0', 'b0', 'after b0', 'a1', 'after a1', 'b1', 'after b1']);
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

describe('loadBetween', () => {
  // pid 10 is the run, 20 something else on the host; threads are `<pid>/<tid>` -> [run, wait] seconds
  const at = (
    wallSeconds: number,
    hostCpuSeconds: number,
    runCpuSeconds: number,
    threads: Record<string, [number, number]> = {},
  ) => ({
    wallSeconds,
    hostCpuSeconds,
    runCpuSeconds,
    runPids: new Set([10]),
    threads: new Map(Object.entries(threads)),
  });
  const load = (hostPercent: number, otherCpuPercent: number, otherWaitPercent: number) => ({
    hostPercent,
    otherPercent: otherCpuPercent + otherWaitPercent,
    otherCpuPercent,
    otherWaitPercent,
  });
  it.each([
    { name: 'the run alone', a: at(0, 0, 0), b: at(10, 15, 15), want: load(150, 0, 0) },
    { name: 'half a core of other work', a: at(0, 0, 0), b: at(10, 20, 15), want: load(200, 50, 0) },
    {
      name: 'the run read above the host (two reads a moment apart) is no negative other load',
      a: at(5, 100, 50),
      b: at(15, 110, 61),
      want: load(100, 0, 0),
    },
    {
      // Two always-runnable threads of other work beside a run that takes 1.5 of the 2 cores: they get half a core.
      name: 'a saturated host: what the others waited counts, what the run waited does not',
      a: at(0, 0, 0, { '10/10': [0, 0], '20/20': [0, 0], '20/21': [0, 0] }),
      b: at(10, 20, 15, { '10/10': [6, 4], '20/20': [2.5, 7.5], '20/21': [2.5, 7.5] }),
      want: load(200, 50, 150),
    },
    {
      // The same two beside a run that takes half a core: they use more and wait less, their demand is the same.
      name: 'the same others beside a lighter run have the same demand',
      a: at(0, 0, 0, { '20/20': [0, 0], '20/21': [0, 0] }),
      b: at(10, 20, 5, { '20/20': [7.5, 2.5], '20/21': [7.5, 2.5] }),
      want: load(200, 150, 50),
    },
  ])('$name', ({ a, b, want }) => expect(loadBetween(a, b)).toEqual(want));

  it('no time between the readings gives no load', () => {
    const r = loadBetween(at(1, 0, 0), at(1, 5, 0));
    expect(r.hostPercent).toBeNaN();
    expect(r.otherPercent).toBeNaN();
  });
});

describe('reportRatios', () => {
  const run = (rep: number, arm: string, value: number, otherPercent: number): RepRun<number> => ({
    rep,
    arm,
    value,
    load: { hostPercent: 150, otherPercent },
  });
  const runs = [
    run(0, 'direct', 10, 0),
    run(0, 'git', 11, 10),
    run(1, 'direct', 10, 0),
    run(1, 'git', 13, 90),
    run(2, 'direct', 10, 5),
    run(2, 'git', 12, 6),
  ];
  it.each([
    {
      name: 'a ratio over the repetitions under like load, the refused one named',
      bound: 25,
      want: {
        figures: { r: 1.15, rMin: 1.1, rMax: 1.2 },
        note: /^r: 1\.15 \(min 1\.10, max 1\.20, 2 of 3.*left out: repetition 2/,
      },
    },
    {
      name: 'no repetition within the bound: no figure, and the note says so',
      bound: 0,
      want: { figures: {}, note: /^r: not reported, no repetition counted/ },
    },
  ])('$name', ({ bound, want }) => {
    const figures: Record<string, number> = {};
    const notes: string[] = [];
    reportRatios(runs, { r: { numerator: 'git', denominator: 'direct', f: (v) => v } }, figures, notes, bound);
    expect(Object.keys(figures).sort()).toEqual(Object.keys(want.figures).sort());
    for (const [k, v] of Object.entries(want.figures)) expect(figures[k]).toBeCloseTo(v);
    expect(notes[0]).toMatch(want.note);
    expect(notes[1]).toContain('git r2 90% (host 150%)');
  });
});

describe('repsOf', () => {
  it.each<[string, string | undefined, number | string]>([
    ['unset: the default', undefined, 3],
    ['empty: the default', '', 3],
    ['one', '1', 1],
    ['five', '5', 5],
    ['zero is refused', '0', 'must be a whole number'],
    ['a fraction is refused', '2.5', 'must be a whole number'],
    ['words are refused', 'three', 'must be a whole number'],
  ])('%s', (_, raw, want) => {
    if (typeof want === 'number') expect(repsOf({ BENCH_REPS: raw })).toBe(want);
    else expect(() => repsOf({ BENCH_REPS: raw })).toThrow(want);
  });
});

describe('ratioSpread with a denominator figure of its own', () => {
  it("divides the numerator arm's figure by the denominator arm's, each read by its own name", () => {
    type V = Record<string, number>;
    const load = { hostPercent: 100, otherPercent: 0 };
    const runs: Array<RepRun<V>> = [
      { rep: 0, arm: 'upgrade', value: { seconds: 9 }, load },
      { rep: 0, arm: 'byHand', value: { byHandSeconds: 3 }, load },
      { rep: 1, arm: 'upgrade', value: { seconds: 8 }, load },
      { rep: 1, arm: 'byHand', value: { byHandSeconds: 4 }, load },
    ];
    const r = ratioSpread(
      runs,
      'upgrade',
      'byHand',
      (v) => v.seconds!,
      25,
      (v) => v.byHandSeconds!,
    );
    expect(r.perRep).toEqual([3, 2]);
    expect(r.median).toBe(2.5);
  });
});

describe('meanLoad', () => {
  it.each([
    {
      name: 'the mean of each',
      loads: [
        { hostPercent: 100, otherPercent: 10 },
        { hostPercent: 151, otherPercent: 41 },
      ],
      want: { hostPercent: 126, otherPercent: 26 },
    },
    {
      name: 'a stretch with no time between its readings is left out',
      loads: [
        { hostPercent: NaN, otherPercent: NaN },
        { hostPercent: 80, otherPercent: 5 },
      ],
      want: { hostPercent: 80, otherPercent: 5 },
    },
  ])('$name', ({ loads, want }) => expect(meanLoad(loads)).toEqual(want));

  it('no stretch gives no load', () => expect(meanLoad([]).otherPercent).toBeNaN());
});

describe('figureSpreads', () => {
  it('takes each figure over the repetitions of the arms that report it', () => {
    const load = { hostPercent: 0, otherPercent: 0 };
    const runs: Array<RepRun<Record<string, number>>> = [
      { rep: 0, arm: 'kill', value: { 'etcd.restoreSeconds': 6 }, load },
      { rep: 0, arm: 'byHand', value: { 'etcd.byHandRestartSeconds': 1 }, load },
      { rep: 1, arm: 'kill', value: { 'etcd.restoreSeconds': 9 }, load },
      { rep: 1, arm: 'byHand', value: { 'etcd.byHandRestartSeconds': 0.8 }, load },
      { rep: 2, arm: 'kill', value: { 'etcd.restoreSeconds': 7 }, load },
      { rep: 2, arm: 'byHand', value: { 'etcd.byHandRestartSeconds': 0.9 }, load },
    ];
    const figures: Record<string, number> = {};
    figureSpreads(runs, (v) => v, figures);
    expect(figures).toEqual({
      'etcd.restoreSeconds': 7,
      'etcd.restoreSecondsMin': 6,
      'etcd.restoreSecondsMax': 9,
      'etcd.byHandRestartSeconds': 0.9,
      'etcd.byHandRestartSecondsMin': 0.8,
      'etcd.byHandRestartSecondsMax': 1,
    });
  });
});

describe('repeatedFigures', () => {
  const run = (rep: number, arm: string, figures: Record<string, number>, otherPercent: number) => ({
    rep,
    arm,
    value: { figures, detail: {} },
    load: { hostPercent: 180, otherPercent, otherCpuPercent: otherPercent - 10, otherWaitPercent: 10 },
  });
  it('gives every figure its median, min and max over the repetitions, and every arm’s load', () => {
    const r = repeatedFigures([
      run(0, 'standby', { standbyMs: 400 }, 30),
      run(0, 'spawn', { spawnMs: 900 }, 40),
      run(1, 'standby', { standbyMs: 600 }, 50),
      run(1, 'spawn', { spawnMs: 700 }, 60),
      run(2, 'standby', { standbyMs: 500 }, 70),
      run(2, 'spawn', { spawnMs: 2000 }, 80),
    ]);
    expect(r.figures).toEqual({
      standbyMs: 500,
      standbyMsMin: 400,
      standbyMsMax: 600,
      spawnMs: 900,
      spawnMsMin: 700,
      spawnMsMax: 2000,
    });
    expect(r.notes[0]).toBe('3 repetitions, each figure their median (min, max)');
    expect(r.notes[1]).not.toContain('bound');
    expect(r.notes[1]).toContain('standby r1 30% (used 20%, waited 10%; host 180%)');
    expect(r.notes[1]).toContain('spawn r3 80% (used 70%, waited 10%; host 180%)');
  });
});

describe('repetitionsLine', () => {
  it.each([
    [1, '1 repetition: each figure is its one value'],
    [3, '3 repetitions, each figure their median (min, max)'],
  ])('%i', (n, want) => expect(repetitionsLine(n)).toBe(want));
});
