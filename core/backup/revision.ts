import fs from 'node:fs';
import git from 'isomorphic-git';
import type { SnapshotMeta } from './catalog.ts';

/** NoSnapshotAtRevision is thrown when no snapshot was taken at or before a git revision. */
export class NoSnapshotAtRevision extends Error {
  readonly reason = 'NoSnapshotAtRevision';
}

/** sameRevision tells whether a recorded revision is rev, which may be abbreviated (7 hex digits or more). */
export function sameRevision(recorded: string | undefined, rev: string): boolean {
  if (!recorded) return false;
  const r = rev.toLowerCase();
  return r.length >= 7 && /^[0-9a-f]+$/.test(r) && recorded.toLowerCase().startsWith(r);
}

/**
 * pickByRevision chooses the snapshot to restore for `--to-revision REV`: the newest snapshot taken at the first
 * commit of history (REV, then its ancestors, newest first) at which any snapshot was taken. Without history only a
 * snapshot taken at REV itself qualifies. It throws NoSnapshotAtRevision naming the revisions that do have snapshots.
 */
export function pickByRevision(
  catalog: readonly SnapshotMeta[],
  rev: string,
  history: readonly string[] = [rev],
): SnapshotMeta {
  for (const commit of history) {
    const at = catalog
      .filter((s) => sameRevision(s.gitRevision, commit))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id));
    if (at[0]) return at[0];
  }
  const known = [...new Set(catalog.map((s) => s.gitRevision?.slice(0, 12)).filter(Boolean))];
  const looked = history.length > 1 ? `at ${rev} or any of its ${history.length - 1} ancestors` : `at ${rev}`;
  throw new NoSnapshotAtRevision(
    `no snapshot was taken ${looked}; ` +
      (known.length ? `snapshots were taken at revisions ${known.join(', ')}` : 'no snapshot records a git revision') +
      (history.length > 1 ? '' : ' (give --repo DIR, a clone of the tenant repository, to look at ancestors too)'),
  );
}

/** revisionHistory returns rev and its ancestors, newest first, from the git repository at dir (a clone). */
export async function revisionHistory(dir: string, rev: string, depth = 10_000): Promise<string[]> {
  let ref = rev;
  if (/^[0-9a-f]{4,39}$/i.test(rev)) ref = await git.expandOid({ fs, dir, oid: rev.toLowerCase() });
  const commits = await git.log({ fs, dir, ref, depth });
  return commits.map((c) => c.oid);
}
