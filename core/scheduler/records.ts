/**
 * The namespace scheduler's records and the pure predicates its reconcile asks of cached objects: queue keys, equal
 * placements and resources, ready Nodes, finished Pods and the order of resourceVersions.
 */
import type { KubeObject } from '../kube/client.ts';
import { formatPlacements, type Placements, type Resources } from './annotations.ts';

/** NamespaceRec is what the scheduler holds of one tenant namespace: its unit and where its slices are placed. */
export interface NamespaceRec {
  uid: string;
  /** rv is the resourceVersion of the scheduler's last write of the placements, while the cache may lag behind it */
  rv?: string;
  sliced: boolean;
  unit: Resources;
  placements: Placements;
}

/** Obj is a cached tenant or super object with the spec and status fields the scheduler reads. */
export type Obj = KubeObject & {
  spec?: Record<string, unknown>;
  status?: { phase?: string; conditions?: Array<Record<string, unknown>>; allocatable?: Record<string, string> };
};

/** CLUSTERS_KEY is the queue key that re-reads the super cluster registrations. */
export const CLUSTERS_KEY = '@clusters/all';
/** REBALANCE_KEY is the queue key that reads the rebalance request on the state ConfigMap. */
export const REBALANCE_KEY = '@rebalance/request';
/** clusterKey is the queue key that re-reads the Nodes of one super cluster. */
export const clusterKey = (name: string) => `@cluster/${name}`;

/** splitKey splits a `<tenant>/<namespace>` key at its first slash (the tenant key holds none). */
export function splitKey(key: string): [string, string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}

/** samePlacements tells whether two placements are the same. */
export function samePlacements(a: Placements, b: Placements): boolean {
  return formatPlacements(a) === formatPlacements(b);
}

/** sameResources tells whether two resource lists hold the same amounts. */
export function sameResources(a: Resources, b: Resources): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k] === b[k]);
}

/** isReadyNode tells whether a Node takes new Pods: Ready and not cordoned. */
export function isReadyNode(n: Obj): boolean {
  if ((n.spec as { unschedulable?: boolean } | undefined)?.unschedulable) return false;
  return (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** olderThan reports a resourceVersion older than another (both etcd revisions); unknown ones are not older. */
export function olderThan(rv: string | undefined, than: string): boolean {
  if (rv === undefined || !/^\d+$/.test(rv) || !/^\d+$/.test(than)) return false;
  return BigInt(rv) < BigInt(than);
}

/** terminal tells whether a Pod has finished (Succeeded or Failed). */
export function terminal(p: Obj): boolean {
  return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
}
