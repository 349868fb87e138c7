// The scheduler's published summary: per super cluster, what is placed on it and what is left. The manager writes it
// as the ConfigMap `vc-scheduler-state` in its namespace of the meta cluster; `vc superclusters` reads it.

import type { Placements, Resources } from './annotations.ts';
import type { ClusterState } from '../superclusters/registration.ts';
import type { Capacity } from './capacity.ts';
import { formatMilli } from './quantity.ts';

/** STATE_CONFIGMAP names the summary ConfigMap and its data key. */
export const STATE_CONFIGMAP = { name: 'vc-scheduler-state', key: 'state.json' } as const;

/**
 * ClusterSummary is one super cluster in the summary; allocatable is that of its Ready nodes, free is allocatable
 * less what is placed, as quantities.
 */
export interface ClusterSummary {
  state: ClusterState;
  placedSlices: number;
  placedNamespaces: number;
  allocatable: Record<string, string>;
  free: Record<string, string>;
}

/**
 * TenantPlacements is where one tenant's namespaces are placed: per super cluster, how many of its namespaces have a
 * placement there, and how many slices of its sliced namespaces.
 */
export interface TenantPlacements {
  namespaces: Record<string, number>;
  slices: Record<string, number>;
}

/** RebalanceMove is one slice a rebalance moved (or, in a dry run, would move). */
export interface RebalanceMove {
  /** tenant is the tenant's root namespace, namespace the tenant namespace whose slice moves */
  tenant: string;
  namespace: string;
  from: string;
  to: string;
}

/**
 * RebalanceReport is the answer to the last rebalance request: `request` is the request annotation's value it
 * answers (so a restarted scheduler does not run it again), `moves` what it moved (or would move, in a dry run),
 * `remaining` how many more moves the policy would still make past the request's bound, `error` why it did nothing.
 */
export interface RebalanceReport {
  request: string;
  requestedAt?: string;
  handledAt: string;
  policy: string;
  dryRun: boolean;
  maxMoves?: number;
  moves: RebalanceMove[];
  remaining: number;
  error?: string;
}

/**
 * SchedulerState is the summary's JSON: {clusters: {<name>: ClusterSummary}, tenants: {<root namespace>:
 * TenantPlacements}, rebalance?: RebalanceReport}; a tenant is named by its root namespace (the VirtualCluster's
 * status.clusterNamespace).
 */
export interface SchedulerState {
  clusters: Record<string, ClusterSummary>;
  tenants: Record<string, TenantPlacements>;
  rebalance?: RebalanceReport;
}

/**
 * PlacedNamespace is what the summary needs of one namespace: its tenant's root namespace, whether it is sliced, and
 * its placements.
 */
export interface PlacedNamespace {
  tenant: string;
  sliced: boolean;
  placements: Placements;
}

function quantities(r: Resources): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(r).sort()) out[k] = r[k]! < 0n ? `-${formatMilli(-r[k]!)}` : formatMilli(r[k]!);
  return out;
}

/**
 * summarize builds the summary from the cache and the namespaces: placedSlices counts the slices of sliced
 * namespaces, placedNamespaces every namespace with at least one placement there (sliced or whole).
 */
export function summarize(capacity: Capacity, namespaces: Iterable<PlacedNamespace>): SchedulerState {
  const clusters: Record<string, ClusterSummary> = {};
  const tenants: Record<string, TenantPlacements> = {};
  for (const name of [...capacity.keys()].sort()) {
    const c = capacity.get(name)!;
    clusters[name] = {
      state: c.state,
      placedSlices: 0,
      placedNamespaces: 0,
      allocatable: quantities(c.allocatable),
      free: quantities(c.free),
    };
  }
  for (const ns of namespaces)
    for (const [name, n] of ns.placements) {
      if (n <= 0) continue;
      const t = (tenants[ns.tenant] ??= { namespaces: {}, slices: {} });
      t.namespaces[name] = (t.namespaces[name] ?? 0) + 1;
      if (ns.sliced) t.slices[name] = (t.slices[name] ?? 0) + n;
      const c = clusters[name];
      if (!c) continue;
      c.placedNamespaces += 1;
      if (ns.sliced) c.placedSlices += n;
    }
  return { clusters, tenants: sortedKeys(tenants) };
}

function sortedKeys<T>(r: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
