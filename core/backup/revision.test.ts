import fs, { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SnapshotMeta } from './catalog.ts';
import { NoSnapshotAtRevision, pickByRevision, revisionHistory, sameRevision } from './revision.ts';

const snap = (id: string, gitRevision: string | undefined, createdAt: string): SnapshotMeta => ({
  id,
  tenant: { namespace: 'n', name: 't', uid: 'u' },
  spec: {},
  ...(gitRevision && { gitRevision }),
  createdAt,
  reason: 'revision',
  sizeBytes: 1,
  sha256: '0'.repeat(64),
});

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);
const catalog = [
  snap('s1', A, '2026-01-01T00:00:00Z'),
  snap('s2', A, '2026-01-02T00:00:00Z'),
  snap('s3', B, '2026-01-03T00:00:00Z'),
  snap('s4', undefined, '2026-01-04T00:00:00Z'),
];

describe('pickByRevision', () => {
  it.each([
    { name: 'exact revision: the newest snapshot at it', rev: A, history: undefined, want: 's2' },
    { name: 'abbreviated revision', rev: 'bbbbbbb', history: undefined, want: 's3' },
    { name: 'a later commit without snapshots: its nearest ancestor with one', rev: C, history: [C, B, A], want: 's3' },
    { name: 'history skipping a commit', rev: C, history: [C, A], want: 's2' },
  ])('$name', ({ rev, history, want }) => {
    expect(pickByRevision(catalog, rev, history).id).toBe(want);
  });

  it.each([
    {
      name: 'unknown revision without history',
      rev: C,
      history: undefined,
      msg: /at c{40}; .*aaaaaaaaaaaa, bbbbbbbbbbbb.*--repo/,
    },
    { name: 'no ancestor has a snapshot', rev: C, history: [C], msg: /no snapshot was taken at c{40}/ },
    { name: 'too short to be a revision', rev: 'aaa', history: undefined, msg: /no snapshot was taken at aaa/ },
  ])('$name', ({ rev, history, msg }) => {
    const e = (() => {
      try {
        pickByRevision(catalog, rev, history);
      } catch (x) {
        return x;
      }
    })();
    expect(e).toBeInstanceOf(NoSnapshotAtRevision);
    expect((e as Error).message).toMatch(msg);
  });

  it('sameRevision refuses non-hex and empty revisions', () => {
    expect(sameRevision(A, 'aaaaaaaz')).toBe(false);
    expect(sameRevision(undefined, A)).toBe(false);
    expect(sameRevision(A, A.toUpperCase())).toBe(true);
  });
});

describe('revisionHistory on a real repository', () => {
  let dir: string;
  const commits: string[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-revision-'));
    await git.init({ fs, dir, defaultBranch: 'main' });
    for (let i = 0; i < 3; i++) {
      writeFileSync(join(dir, 'vc.yaml'), `i: ${i}\n`);
      await git.add({ fs, dir, filepath: 'vc.yaml' });
      commits.push(
        await git.commit({
          fs,
          dir,
          message: `c${i}`,
          author: { name: 't', email: 't@example.com', timestamp: 1e9 + i },
        }),
      );
    }
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lists a commit and its ancestors, newest first, from a full or short id', async () => {
    expect(await revisionHistory(dir, commits[2]!)).toEqual([...commits].reverse());
    expect(await revisionHistory(dir, commits[1]!.slice(0, 8))).toEqual([commits[1], commits[0]]);
    const picked = pickByRevision(
      [snap('old', commits[0], '2026-01-01T00:00:00Z')],
      commits[2]!,
      await revisionHistory(dir, commits[2]!),
    );
    expect(picked.id).toBe('old');
  }, 60_000);
});
