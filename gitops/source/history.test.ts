import { describe, expect, it } from 'vitest';
import { commitsSince, type CommitRange } from './history.ts';

/** graph maps each commit the cache holds to its parents; a commit not in it lies beyond the shallow boundary. */
const parentsOf = (graph: Record<string, string[]>) => async (oid: string) => graph[oid];

// a <- b <- c <- d (linear), e <- f (unrelated), m merges d and x, x's side branch forks from a.
const full = { a: [], b: ['a'], c: ['b'], d: ['c'], e: [], f: ['e'], x: ['a'], m: ['d', 'x'] };

describe('commitsSince', () => {
  const cases: Array<{
    name: string;
    graph: Record<string, string[]>;
    tip: string;
    base: string;
    cap?: number;
    want: CommitRange;
  }> = [
    { name: 'the same commit', graph: full, tip: 'c', base: 'c', want: { kind: 'found', commits: [] } },
    {
      name: 'a descendant: the commits in between, newest first, base left out',
      graph: full,
      tip: 'd',
      base: 'b',
      want: { kind: 'found', commits: ['d', 'c'] },
    },
    {
      name: 'an older commit (rollback)',
      graph: full,
      tip: 'b',
      base: 'd',
      want: { kind: 'notDescendant', walked: 2 },
    },
    { name: 'an unrelated history', graph: full, tip: 'f', base: 'd', want: { kind: 'notDescendant', walked: 2 } },
    {
      name: 'a merge covers the side branch too, down to where it forked and below (more, never less)',
      graph: full,
      tip: 'm',
      base: 'c',
      want: { kind: 'found', commits: ['m', 'd', 'x', 'a'] },
    },
    {
      name: 'a shallow cache: deepen',
      graph: { d: ['c'], c: ['b'] },
      tip: 'd',
      base: 'a',
      want: { kind: 'incomplete', walked: 2 },
    },
    {
      name: 'found although shallow below the base',
      graph: { d: ['c'], c: ['b'], b: ['a'] },
      tip: 'd',
      base: 'b',
      want: { kind: 'found', commits: ['d', 'c'] },
    },
    { name: 'the cap', graph: full, tip: 'd', base: 'zzz', cap: 2, want: { kind: 'capExceeded', cap: 2 } },
  ];
  it.each(cases)('$name', async (c) =>
    expect(await commitsSince(c.tip, c.base, parentsOf(c.graph), c.cap)).toEqual(c.want),
  );
});
