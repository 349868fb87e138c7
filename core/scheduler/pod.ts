// Pod placement: on which of its namespace's placed super clusters a new tenant Pod runs. A Pod must fit in one
// slice, and the Pods on a super cluster together fit in the slices placed there (slices x count, resource by
// resource; resources the slice does not name are not counted). Among super clusters with room the policy decides
// as for slices: spread takes the one with the most room left after the Pod lands (in slices, by the scarcest
// resource), pack the one with the least, then by name. A Pod that already carries the annotation is kept where it
// is: a placed Pod never moves.

import { formatResources, parseSuperCluster, SUPER_CLUSTER, type Placements, type Resources } from './annotations.ts';
import { addTimes, ResourceError } from './capacity.ts';
import type { Policy } from './namespace.ts';
import { parseQuantity, QuantityError, type Milli } from './quantity.ts';

/** PlacedPod is a Pod of the namespace with a super cluster annotation that still holds its requests (not Succeeded or Failed). */
export interface PlacedPod {
  superCluster: string;
  requests: Resources;
}

/** PodRequest is the Pod to place: its requests, and its super cluster annotation if it has one. */
export interface PodRequest {
  key: string;
  requests: Resources;
  superCluster?: string;
}

/** PodNamespace is what Pod placement needs of the namespace: its slice (absent: placed whole) and placements. */
export interface PodNamespace {
  key: string;
  slice?: Resources;
  placements: Placements;
}

/** PENDING_REASONS are the machine-readable reasons a Pod stays Pending. */
export const PENDING_REASONS = ['NamespaceNotPlaced', 'NotPlacedThere', 'LargerThanSlice', 'NoFreeSlice'] as const;

/** PodDecision is the scheduler's answer for one Pod: keep it, place it, or leave it Pending with a reason. */
export type PodDecision =
  | { kind: 'kept' | 'placed'; superCluster: string }
  | { kind: 'pending'; reason: (typeof PENDING_REASONS)[number]; message: string };

function sorted(p: Placements): string[] {
  return [...p.keys()].sort();
}

// A ratio n/d with d > 0, compared exactly.
type Ratio = readonly [bigint, bigint];

function less(a: Ratio, b: Ratio): boolean {
  return a[0] * b[1] < b[0] * a[1];
}

// roomAfter is the room left on a super cluster in slices, by its scarcest resource: min over r of free[r]/slice[r].
function roomAfter(free: Resources, slice: Resources): Ratio {
  let least: Ratio | undefined;
  for (const [k, v] of Object.entries(slice)) {
    const r: Ratio = [free[k] ?? 0n, v];
    if (!least || less(r, least)) least = r;
  }
  return least ?? [0n, 1n];
}

/** placePod decides the super cluster of one Pod, given the namespace and its Pods already placed. */
export function placePod(ns: PodNamespace, placed: readonly PlacedPod[], pod: PodRequest, policy: Policy): PodDecision {
  const pending = (reason: (typeof PENDING_REASONS)[number], message: string): PodDecision => ({
    kind: 'pending',
    reason,
    message: `pod ${pod.key}: ${message}`,
  });
  if (pod.superCluster !== undefined) {
    if ((ns.placements.get(pod.superCluster) ?? 0) > 0) return { kind: 'kept', superCluster: pod.superCluster };
    return pending(
      'NotPlacedThere',
      `its ${SUPER_CLUSTER} ${pod.superCluster} is not among namespace ${ns.key}'s placements (${sorted(ns.placements).join(', ') || 'none'})`,
    );
  }
  const clusters = sorted(ns.placements);
  if (clusters.length === 0) return pending('NamespaceNotPlaced', `namespace ${ns.key} is not placed yet`);
  if (!ns.slice) return { kind: 'placed', superCluster: clusters[0]! };
  const slice = ns.slice;
  const demand: Record<string, Milli> = {};
  for (const k of Object.keys(slice)) demand[k] = pod.requests[k] ?? 0n;
  for (const [k, v] of Object.entries(demand))
    if (v > slice[k]!)
      return pending(
        'LargerThanSlice',
        `requests ${formatResources(demand)} exceed one slice ${formatResources(slice)} of namespace ${ns.key} (${k})`,
      );
  let best: { name: string; room: Ratio } | undefined;
  const left: string[] = [];
  for (const name of clusters) {
    let free = addTimes({}, slice, BigInt(ns.placements.get(name)!));
    for (const p of placed) if (p.superCluster === name) free = addTimes(free, p.requests, -1n);
    left.push(`${name} left ${formatResources(free)}`);
    if (Object.entries(demand).some(([k, v]) => v > (free[k] ?? 0n))) continue;
    const room = roomAfter(addTimes(free, demand, -1n), slice);
    const better = best && (policy === 'spread' ? less(best.room, room) : less(room, best.room));
    if (!best || better) best = { name, room };
  }
  if (!best)
    return pending(
      'NoFreeSlice',
      `requests ${formatResources(demand)} fit no placed slice of namespace ${ns.key} (${left.join('; ')})`,
    );
  return { kind: 'placed', superCluster: best.name };
}

/** PodSpecResources is the part of a Pod spec that sets its requests. */
export interface PodSpecResources {
  containers: ReadonlyArray<{ name: string; resources?: { requests?: Readonly<Record<string, string>> } }>;
  initContainers?: ReadonlyArray<{ name: string; resources?: { requests?: Readonly<Record<string, string>> } }>;
  overhead?: Readonly<Record<string, string>>;
}

function requestsOf(object: string, field: string, r: Readonly<Record<string, string>> | undefined): Resources {
  const out: Record<string, Milli> = {};
  for (const [k, v] of Object.entries(r ?? {})) {
    try {
      out[k] = parseQuantity(v);
    } catch (e) {
      if (e instanceof QuantityError) throw new ResourceError(`${object}: ${field}.${k}: ${e.message}`);
      throw e;
    }
  }
  return out;
}

/**
 * podRequests is a Pod's effective requests as the Kubernetes scheduler counts them: the sum over containers, at
 * least the largest init container, plus the overhead.
 */
export function podRequests(object: string, spec: PodSpecResources): Resources {
  let sum: Resources = {};
  spec.containers.forEach((c, i) => {
    sum = addTimes(sum, requestsOf(object, `spec.containers[${i}].resources.requests`, c.resources?.requests), 1n);
  });
  const out: Record<string, Milli> = { ...sum };
  (spec.initContainers ?? []).forEach((c, i) => {
    const r = requestsOf(object, `spec.initContainers[${i}].resources.requests`, c.resources?.requests);
    for (const [k, v] of Object.entries(r)) if (v > (out[k] ?? 0n)) out[k] = v;
  });
  return addTimes(out, requestsOf(object, 'spec.overhead', spec.overhead), 1n);
}

/** podAnnotation reads a Pod's super cluster annotation, or undefined when absent; malformed is an AnnotationError. */
export function podAnnotation(
  object: string,
  annotations: Readonly<Record<string, string>> | undefined,
): string | undefined {
  const v = annotations?.[SUPER_CLUSTER];
  return v === undefined ? undefined : parseSuperCluster(object, v);
}
