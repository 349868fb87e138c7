// The scheduler's capacity cache: for each super cluster, what its nodes can hold (allocatable) and what the
// placements already take. It is a pure function of the registrations, the nodes and the namespaces' annotations,
// so a scheduler that restarts rebuilds exactly the state it had: nothing lives only in memory.

import type { ClusterState } from '../superclusters/registration.ts';
import { type Placements, type Resources } from './annotations.ts';
import { ceilDiv, parseQuantity, QuantityError, type Milli } from './quantity.ts';

/** SuperCluster is what the scheduler knows of one registered super cluster. */
export interface SuperCluster {
  name: string;
  state: ClusterState;
  /** allocatable is the sum of its nodes' status.allocatable (see sumAllocatable). */
  allocatable: Resources;
}

/** NamespaceRecord is a tenant namespace as the scheduler reads it back from its annotations and ResourceQuota. */
export interface NamespaceRecord {
  /** key names the namespace in messages, e.g. "<vc-ns>/<vc>/<namespace>". */
  key: string;
  /** slice is the parsed slice annotation; absent means the namespace is placed whole. */
  slice?: Resources;
  /** quota is the namespace's ResourceQuota hard values (see quotaResources); absent when it has none. */
  quota?: Resources;
  placements: Placements;
}

/** ClusterCapacity is one super cluster in the cache; free may go negative if nodes shrank under placements. */
export interface ClusterCapacity {
  name: string;
  state: ClusterState;
  allocatable: Resources;
  used: Resources;
  free: Resources;
  /** placed counts the slices and whole namespaces placed, so spread can also even out those that take nothing. */
  placed: number;
}

/** Capacity is the cache: every registered super cluster, plus any a placement still names after it was removed. */
export type Capacity = ReadonlyMap<string, ClusterCapacity>;

/** unitOf is what one placement of a namespace takes: its slice, or the whole quota when it has no slice. */
export function unitOf(ns: Pick<NamespaceRecord, 'slice' | 'quota'>): Resources {
  return ns.slice ?? ns.quota ?? {};
}

/** addTimes is a + n * b, resource by resource. */
export function addTimes(a: Resources, b: Resources, n: bigint): Resources {
  const out: Record<string, Milli> = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0n) + n * v;
  return out;
}

function freeOf(allocatable: Resources, used: Resources): Resources {
  const out: Record<string, Milli> = { ...allocatable };
  for (const [k, v] of Object.entries(used)) out[k] = (out[k] ?? 0n) - v;
  return out;
}

function entry(
  name: string,
  state: ClusterState,
  allocatable: Resources,
  used: Resources,
  placed: number,
): ClusterCapacity {
  return { name, state, allocatable, used, free: freeOf(allocatable, used), placed };
}

/** buildCapacity rebuilds the cache from the registrations and every namespace's placements. */
export function buildCapacity(clusters: readonly SuperCluster[], namespaces: readonly NamespaceRecord[]): Capacity {
  let out: Capacity = new Map(clusters.map((c) => [c.name, entry(c.name, c.state, c.allocatable, {}, 0)]));
  for (const ns of namespaces) out = reserve(out, unitOf(ns), ns.placements);
  return out;
}

/** reserve returns the cache with `placements` more units taken; a cluster it does not know enters as deregistered. */
export function reserve(capacity: Capacity, unit: Resources, placements: Placements): Capacity {
  const out = new Map(capacity);
  for (const [name, n] of placements) {
    const c = out.get(name) ?? entry(name, 'deregistered', {}, {}, 0);
    out.set(name, entry(name, c.state, c.allocatable, addTimes(c.used, unit, BigInt(n)), c.placed + n));
  }
  return out;
}

/** fits is how many more units fit in `free` (null when the unit is empty and so takes nothing). */
export function fits(free: Resources, unit: Resources): bigint | null {
  let least: bigint | null = null;
  for (const [k, v] of Object.entries(unit)) {
    if (v === 0n) continue;
    const f = free[k] ?? 0n;
    const n = f <= 0n ? 0n : f / v;
    if (least === null || n < least) least = n;
  }
  return least;
}

/** sumAllocatable adds up nodes' status.allocatable; a bad quantity is an error naming the node and resource. */
export function sumAllocatable(
  nodes: ReadonlyArray<{ name: string; allocatable: Readonly<Record<string, string>> }>,
): Resources {
  let out: Resources = {};
  for (const node of nodes) {
    const one: Record<string, Milli> = {};
    for (const [k, v] of Object.entries(node.allocatable))
      one[k] = parsed(`node ${node.name}`, `status.allocatable.${k}`, v);
    out = addTimes(out, one, 1n);
  }
  return out;
}

/** ResourceError is a quantity in a node, ResourceQuota or Pod that does not parse; it names the object and field. */
export class ResourceError extends Error {}

function parsed(object: string, field: string, value: string): Milli {
  try {
    return parseQuantity(value);
  } catch (e) {
    if (e instanceof QuantityError) throw new ResourceError(`${object}: ${field}: ${e.message}`);
    throw e;
  }
}

/**
 * quotaResources reads a ResourceQuota's spec.hard as the resources a namespace may request: `cpu` and
 * `requests.cpu` both mean requested CPU (the larger wins if both are set); `limits.*` and object counts
 * (`pods`, `count/...`, `services`...) stay, harmlessly, since only the resources a slice names are compared.
 */
export function quotaResources(object: string, hard: Readonly<Record<string, string>>): Resources {
  const out: Record<string, Milli> = {};
  for (const [key, value] of Object.entries(hard)) {
    if (key.startsWith('limits.')) continue;
    const name = key.startsWith('requests.') ? key.slice('requests.'.length) : key;
    const v = parsed(object, `spec.hard.${key}`, value);
    if (out[name] === undefined || v > out[name]) out[name] = v;
  }
  return out;
}

/**
 * slicesFor is how many slices a quota needs: the most, over the slice's resources, of ceil(quota / slice); null
 * when the quota limits none of the slice's resources.
 */
export function slicesFor(slice: Resources, quota: Resources): bigint | null {
  let most: bigint | null = null;
  for (const [k, v] of Object.entries(slice)) {
    const q = quota[k];
    if (q === undefined) continue;
    const n = ceilDiv(q, v);
    if (most === null || n > most) most = n;
  }
  return most;
}
