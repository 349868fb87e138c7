import { describe, expect, it } from 'vitest';
import { treeCpuSeconds, treeTicks } from './procstat.ts';

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

describe('treeCpuSeconds', () => {
  it('counts at least this process', () => {
    const busyUntil = performance.now() + 50;
    while (performance.now() < busyUntil);
    expect(treeCpuSeconds()).toBeGreaterThan(0);
  });
});
