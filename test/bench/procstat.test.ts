import { describe, expect, it } from 'vitest';
import { scanProcs, treeCpuSeconds, treePids, treeTicks, wantedWaitOutside } from './procstat.ts';

describe('treeTicks', () => {
  // pid -> [ppid, ticks]
  const table = (rows: Record<number, [number, number]>) =>
    new Map(Object.entries(rows).map(([pid, [ppid, ticks]]) => [Number(pid), { ppid, ticks }]));
  it.each([
    { name: 'a process alone', rows: { 10: [1, 7] as [number, number] }, root: 10, want: 7 },
    {
      name: 'children and grandchildren count, siblings of the root do not',
      rows: { 10: [1, 5], 11: [10, 3], 12: [11, 2], 20: [1, 100] } as Record<number, [number, number]>,
      root: 10,
      want: 10,
    },
    {
      name: 'a root that is gone counts nothing',
      rows: { 20: [1, 100] } as Record<number, [number, number]>,
      root: 10,
      want: 0,
    },
  ])('$name', ({ rows, root, want }) => expect(treeTicks(table(rows), root)).toBe(want));
});

describe('treePids', () => {
  const table = (rows: Record<number, number>) =>
    new Map(Object.entries(rows).map(([pid, ppid]) => [Number(pid), { ppid }]));
  it.each<{ name: string; rows: Record<number, number>; want: number[] }>([
    {
      name: 'the root and all below it',
      rows: { 10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20 },
      want: [10, 11, 12, 13],
    },
    { name: 'a process re-parented to init is outside', rows: { 10: 1, 11: 1 }, want: [10] },
    { name: 'a root that is gone has no tree, its orphans none either', rows: { 11: 10, 20: 1 }, want: [] },
  ])('$name', ({ rows, want }) => expect([...treePids(table(rows), 10)].sort()).toEqual(want));
});

describe('wantedWaitOutside', () => {
  // `<pid>/<tid>` -> [run, wait] in seconds; the scans are 10 s apart; pid 10 is the run
  const t = (rows: Record<string, [number, number]>) => new Map(Object.entries(rows));
  it.each<{
    name: string;
    before: Record<string, [number, number]>;
    after: Record<string, [number, number]>;
    run: number[];
    want: number;
  }>([
    {
      name: 'a thread runnable all along counts all its wait; the run’s threads count nothing',
      before: { '10/10': [0, 0], '20/20': [1, 1] },
      after: { '10/10': [5, 5], '20/20': [3, 9] },
      run: [10],
      want: 8,
    },
    {
      name: 'a thread that mostly slept counts its wait by the share of its time off a CPU it wanted one',
      before: { '20/20': [0, 0] },
      after: { '20/20': [1, 1] },
      run: [10],
      want: 1 / 9,
    },
    {
      name: 'a thread born between the scans counts from 0, one that ended not at all',
      before: { '30/30': [2, 7] },
      after: { '20/22': [2, 8] },
      run: [10],
      want: 8,
    },
    {
      name: 'a process the run started between the scans is the run’s (classified by the later scan)',
      before: {},
      after: { '40/40': [2, 8] },
      run: [10, 40],
      want: 0,
    },
    {
      name: 'a reused id that ran and waited less counts nothing',
      before: { '20/20': [5, 9] },
      after: { '20/20': [1, 1] },
      run: [],
      want: 0,
    },
  ])('$name', ({ before, after, run, want }) =>
    expect(wantedWaitOutside(t(before), t(after), new Set(run), 10)).toBeCloseTo(want, 9),
  );
});

describe('scanProcs', () => {
  it('finds this process under its parent, and its main thread’s run and wait', () => {
    const s = scanProcs(true);
    expect(s.procs.get(process.pid)?.ppid).toBe(process.ppid);
    const [run, wait] = s.threads.get(`${process.pid}/${process.pid}`)!;
    expect(run).toBeGreaterThan(0);
    expect(wait).toBeGreaterThanOrEqual(0);
  });
});

describe('treeCpuSeconds', () => {
  it('counts at least this process', () => {
    const busyUntil = performance.now() + 50;
    while (performance.now() < busyUntil);
    expect(treeCpuSeconds()).toBeGreaterThan(0);
  });
});
