// Draining a super cluster: its namespaces' slices move to other ready super clusters where room allows, one slice at
// a time under the same policy as new slices. A slice that finds no room stays where it is (and so do the Pods in
// it); the controller evicts the Pods left on a drained super cluster only once no slice of their namespace remains
// there, so their controllers recreate them on the slices' new super clusters.

import type { Placements, Resources } from './annotations.ts';
import { reserve, type Capacity } from './capacity.ts';
import { choose, type Policy } from './namespace.ts';

/** DrainResult is one namespace's placements after moving what could move off draining super clusters. */
export interface DrainResult {
  placements: Placements;
  /** moved counts the slices taken off each draining super cluster. */
  moved: ReadonlyMap<string, number>;
  /** stuck counts the slices left on each draining super cluster for want of room elsewhere. */
  stuck: ReadonlyMap<string, number>;
  /** capacity is the cache with the moves applied. */
  capacity: Capacity;
}

/**
 * drainPlacements moves a namespace's slices off draining super clusters (the cache already counts them where they
 * are). A pinned namespace may only go to its pinned super cluster, so its slices on a drained one stay.
 */
export function drainPlacements(
  capacity: Capacity,
  unit: Resources,
  placements: Placements,
  policy: Policy,
  pinned?: string,
): DrainResult {
  const mine = new Map(placements);
  const moved = new Map<string, number>();
  const stuck = new Map<string, number>();
  let cache = capacity;
  for (const [from, n] of [...placements].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (cache.get(from)?.state !== 'draining') continue;
    for (let i = 0; i < n; i++) {
      const to = choose(cache, unit, policy, without(mine, from), pinned);
      if (!to) {
        stuck.set(from, n - i);
        break;
      }
      cache = reserve(reserve(cache, unit, new Map([[to.name, 1]])), unit, new Map([[from, -1]]));
      mine.set(to.name, (mine.get(to.name) ?? 0) + 1);
      const left = mine.get(from)! - 1;
      if (left > 0) mine.set(from, left);
      else mine.delete(from);
      moved.set(from, (moved.get(from) ?? 0) + 1);
    }
  }
  return { placements: mine, moved, stuck, capacity: cache };
}

// Spread counts this namespace's slices per super cluster; those still on the drained one must not hold new ones back.
function without(p: Placements, name: string): Placements {
  const out = new Map(p);
  out.delete(name);
  return out;
}
