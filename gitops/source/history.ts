/**
 * No silent rollback: a new revision must descend from the last applied one. The walk over the commits between them
 * is pure, given a way to read a commit's parents, so it can be tested from tables; the fetcher deepens its shallow
 * cache while the walk reports missing commits.
 */
import { ANN } from '../../core/names/names.ts';

/**
 * ALLOW_REVISION_ANNOTATION, set on a GitSource to a revision, lets that revision (and no other) be applied although
 * it does not descend from the last applied one (the manager's record, gitops/record.ts; status only reports it): a
 * rollback or a rewritten history someone decided on.
 */
export const ALLOW_REVISION_ANNOTATION = ANN.allowRevision;

/** HISTORY_CAP_DEFAULT is how many commits at most are walked from a new revision to find the last applied one. */
export const HISTORY_CAP_DEFAULT = 1000;

/** ParentsOf reads the parents of a commit, or undefined when the commit is not in the cache (a shallow boundary). */
export type ParentsOf = (oid: string) => Promise<readonly string[] | undefined>;

/**
 * CommitRange is the outcome of a walk from a new revision towards the last applied one:
 * - `found`: the revision descends from the base; `commits` are those between them (the new revision first, the base
 *   left out), each of which a signature check must cover;
 * - `incomplete`: the walk reached commits the cache does not hold; deepen and walk again;
 * - `notDescendant`: the whole history of the revision is known and the base is not in it;
 * - `capExceeded`: more than `cap` commits were walked without settling the question.
 */
export type CommitRange =
  | { kind: 'found'; commits: string[] }
  | { kind: 'incomplete'; walked: number }
  | { kind: 'notDescendant'; walked: number }
  | { kind: 'capExceeded'; cap: number };

/**
 * commitsSince walks the history of `tip` breadth first, not beyond `base`, and tells whether `tip` descends from
 * `base` and which commits lie between them. On a linear history the range is exact; a merge of an old side branch
 * adds that branch's commits down to the root of what is walked (so a signature check covers more, never less).
 */
export async function commitsSince(
  tip: string,
  base: string,
  parentsOf: ParentsOf,
  cap: number = HISTORY_CAP_DEFAULT,
): Promise<CommitRange> {
  if (tip === base) return { kind: 'found', commits: [] };
  const seen = new Set<string>([tip]);
  const queue: string[] = [tip];
  const commits: string[] = [];
  let found = false;
  let missing = false;
  while (queue.length) {
    const oid = queue.shift()!;
    if (oid === base) {
      found = true;
      continue;
    }
    const parents = await parentsOf(oid);
    if (parents === undefined) {
      missing = true;
      continue;
    }
    commits.push(oid);
    if (commits.length > cap) return { kind: 'capExceeded', cap };
    for (const p of parents) {
      if (seen.has(p)) continue;
      seen.add(p);
      queue.push(p);
    }
  }
  if (missing) return { kind: 'incomplete', walked: commits.length };
  return found ? { kind: 'found', commits } : { kind: 'notDescendant', walked: commits.length };
}
