// Namespace placement: how many slices a tenant namespace needs and on which super clusters they go. A pure
// decision over the capacity cache; the controller that will call it writes the placements annotation, or an Event
// and a condition for an unschedulable result. Placements only grow here: a slice once placed is never taken back,
// since Pods may run in it; only a drain (drain.ts) or a rebalance asked for (rebalance.ts) moves it.
//
// Policy, for each new slice in turn (the cache is updated after each):
// - spread: among ready super clusters with room for one more slice, the one holding the fewest of this namespace's
//   slices (round-robin), then the one with room for the most slices, then the one with the fewest placements of
//   any namespace (this evens out namespaces with neither slice nor quota, which take no capacity), then by name;
// - pack: the ready super cluster with room for the fewest slices (but at least one), then the one with the most
//   placements, then by name.
// Unreachable, draining and deregistered super clusters take no new slices; their existing ones stay. A namespace
// with spec.superCluster (pinning) considers that super cluster only. A namespace without a slice goes to its
// tenant's home super cluster (homeOf) when that one is ready and has room, before the policy is asked: a tenant's
// whole namespaces then share one super cluster, and with it the tenant DNS of its kube-system namespace, which every
// ClusterFirst Pod needs a copy of where it runs. Placement is all-or-nothing: if the slices still needed do not all
// fit, none is added and the result is unschedulable.

import { formatResources, type Placements, type Resources } from './annotations.ts';
import { fits, reserve, slicesFor, unitOf, type Capacity, type ClusterCapacity } from './capacity.ts';

/** POLICIES are the placement policies: spread slices over super clusters, or pack them into the fullest. */
export const POLICIES = ['spread', 'pack'] as const;
/** Policy is one of POLICIES. */
export type Policy = (typeof POLICIES)[number];

/** MAX_SLICES bounds one namespace's slices, so a tiny slice against a huge quota is refused, not looped over. */
export const MAX_SLICES = 10_000;

/** NamespaceRequest is one tenant namespace to place. */
export interface NamespaceRequest {
  key: string;
  /** slice is the parsed slice annotation; absent means the namespace is placed whole, on one super cluster. */
  slice?: Resources;
  /** quota is the ResourceQuota's hard resources (quotaResources); a sliced namespace needs one. */
  quota?: Resources;
  /** pinned is the VirtualCluster's spec.superCluster, when set. */
  pinned?: string;
  /** placements is what the namespace's placements annotation already says. */
  placements: Placements;
  /** home is the tenant's home super cluster (homeOf), tried first for a namespace without a slice. */
  home?: string;
}

/** DNS_NAMESPACE is the tenant namespace that holds the tenant's DNS (kube-dns), the anchor of its home. */
export const DNS_NAMESPACE = 'kube-system';

/**
 * homeOf is a tenant's home super cluster, from its other namespaces placed whole (name -> placements): where its
 * DNS_NAMESPACE is, else where most of them are (ties by name); undefined when none is placed yet.
 */
export function homeOf(whole: ReadonlyMap<string, Placements>): string | undefined {
  const dns = whole.get(DNS_NAMESPACE);
  if (dns?.size === 1) return [...dns.keys()][0];
  const count = new Map<string, number>();
  for (const p of whole.values()) if (p.size === 1) for (const c of p.keys()) count.set(c, (count.get(c) ?? 0) + 1);
  return [...count].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))[0]?.[0];
}

/** UNSCHEDULABLE_REASONS are the machine-readable reasons a namespace stays (partly) unplaced. */
export const UNSCHEDULABLE_REASONS = [
  'NoQuota',
  'QuotaOutsideSlice',
  'TooManySlices',
  'PinnedUnavailable',
  'NoRoom',
] as const;

/** NamespaceDecision is the scheduler's answer for one namespace. */
export type NamespaceDecision =
  | {
      kind: 'placed';
      /** placements is the full annotation value to write (unchanged when added is empty). */
      placements: Placements;
      /** added is what this decision placed; the caller reserves it in the cache. */
      added: Placements;
    }
  | {
      kind: 'unschedulable';
      reason: (typeof UNSCHEDULABLE_REASONS)[number];
      message: string;
      /** placements is what stays placed: the existing placements, untouched. */
      placements: Placements;
    };

function total(p: Placements): bigint {
  let n = 0n;
  for (const v of p.values()) n += BigInt(v);
  return n;
}

function describe(c: ClusterCapacity): string {
  return c.state === 'ready' ? `${c.name} free ${formatResources(c.free)}` : `${c.name} ${c.state}`;
}

function byName(a: ClusterCapacity, b: ClusterCapacity): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function compare(a: bigint | null, b: bigint | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}

/** choose picks the super cluster for one more unit under the policy, or undefined when none has room. */
export function choose(
  capacity: Capacity,
  unit: Resources,
  policy: Policy,
  mine: Placements,
  only?: string,
): ClusterCapacity | undefined {
  const candidates = [...capacity.values()]
    .filter((c) => c.state === 'ready' && (only === undefined || c.name === only))
    .map((c) => ({ c, room: fits(c.free, unit) }))
    .filter(({ room }) => room === null || room >= 1n);
  candidates.sort((a, b) => {
    if (policy === 'spread') {
      const d = (mine.get(a.c.name) ?? 0) - (mine.get(b.c.name) ?? 0);
      return d || compare(b.room, a.room) || a.c.placed - b.c.placed || byName(a.c, b.c);
    }
    return compare(a.room, b.room) || b.c.placed - a.c.placed || byName(a.c, b.c);
  });
  return candidates[0]?.c;
}

/** placeNamespace decides the placements of one namespace against the cache (which already counts its own). */
export function placeNamespace(capacity: Capacity, ns: NamespaceRequest, policy: Policy): NamespaceDecision {
  const kept = ns.placements;
  const unschedulable = (reason: (typeof UNSCHEDULABLE_REASONS)[number], message: string): NamespaceDecision => ({
    kind: 'unschedulable',
    reason,
    message: `namespace ${ns.key}: ${message}`,
    placements: kept,
  });
  let needed = 1n;
  if (ns.slice) {
    if (!ns.quota) return unschedulable('NoQuota', 'a sliced namespace needs a ResourceQuota to count its slices');
    const n = slicesFor(ns.slice, ns.quota);
    if (n === null)
      return unschedulable(
        'QuotaOutsideSlice',
        `its ResourceQuota limits none of the slice's resources (${Object.keys(ns.slice).sort().join(', ')})`,
      );
    if (n > BigInt(MAX_SLICES))
      return unschedulable('TooManySlices', `its quota needs ${n} slices, more than ${MAX_SLICES}; use a larger slice`);
    needed = n;
  }
  const have = total(kept);
  if (have >= needed) return { kind: 'placed', placements: kept, added: new Map() };
  if (ns.pinned !== undefined) {
    const pin = capacity.get(ns.pinned);
    if (pin?.state !== 'ready')
      return unschedulable(
        'PinnedUnavailable',
        `spec.superCluster ${ns.pinned} ${pin ? `is ${pin.state}` : 'is not registered'} and takes no new placements`,
      );
  }
  const unit = unitOf(ns);
  const mine = new Map(kept);
  const added = new Map<string, number>();
  let cache = capacity;
  const home = !ns.slice && ns.pinned === undefined ? ns.home : undefined;
  for (let i = have; i < needed; i++) {
    const c =
      (home !== undefined ? choose(cache, unit, policy, mine, home) : undefined) ??
      choose(cache, unit, policy, mine, ns.pinned);
    if (!c) {
      const what = ns.slice ? `${needed} slices of ${formatResources(unit)}` : `its quota ${formatResources(unit)}`;
      const clusters = [...capacity.values()]
        .filter((x) => ns.pinned === undefined || x.name === ns.pinned)
        .sort(byName)
        .map(describe);
      return unschedulable(
        'NoRoom',
        `needs ${what}, ${have} placed; no ready super cluster has room for ${needed - have} more (${clusters.join('; ') || 'none registered'})`,
      );
    }
    const one = new Map([[c.name, 1]]);
    cache = reserve(cache, unit, one);
    mine.set(c.name, (mine.get(c.name) ?? 0) + 1);
    added.set(c.name, (added.get(c.name) ?? 0) + 1);
  }
  return { kind: 'placed', placements: mine, added };
}
