import { describe, expect, it } from 'vitest';
import { scanProcs, treeCpuSeconds, treePids, treeTicks, waitOutside } from './procstat.ts';

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

describe('waitOutside', () => {
  const w = (rows: Record<string, number>) => new Map(Object.entries(rows));
  it.each<{ name: string; before: Record<string, number>; after: Record<string, number>; run: number[]; want: number }>(
    [
      {
        name: 'threads of the run do not count, others count what they waited since the first scan',
        before: { '10/10': 5, '10/11': 1, '20/20': 2, '20/21': 3 },
        after: { '10/10': 9, '10/11': 4, '20/20': 2.5, '20/21': 4 },
        run: [10],
        want: 1.5,
      },
      {
        name: 'a thread born between the scans counts all its wait, one that ended nothing',
        before: { '20/20': 2, '30/30': 7 },
        after: { '20/20': 2, '20/22': 0.75 },
        run: [10],
        want: 0.75,
      },
      {
        name: 'a process the run started between the scans is the run’s (classified by the later scan)',
        before: {},
        after: { '40/40': 3 },
        run: [10, 40],
        want: 0,
      },
      {
        name: 'a reused id that waited less is no negative wait',
        before: { '20/20': 9 },
        after: { '20/20': 1 },
        run: [],
        want: 0,
      },
    ],
  )('$name', ({ before, after, run, want }) => expect(waitOutside(w(before), w(after), new Set(run))).toBe(want));
});

describe('scanProcs', () => {
  it('finds this process under its parent, and each of its threads’ wait', () => {
    const s = scanProcs(true);
    expect(s.procs.get(process.pid)?.ppid).toBe(process.ppid);
    expect(s.threadWaitSeconds.get(`${process.pid}/${process.pid}`)).toBeGreaterThanOrEqual(0);
  });
});

describe('treeCpuSeconds', () => {
  it('counts at least this process', () => {
    const busyUntil = performance.now() + 50;
    while (performance.now() < busyUntil);
    expect(treeCpuSeconds()).toBeGreaterThan(0);
  });
});
