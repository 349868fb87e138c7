// Rebalancing placed slices: when asked (a request annotation on the scheduler's state ConfigMap), the scheduler
// moves some slices of sliced namespaces between ready super clusters, under the active policy, and then evicts the
// Pods that no longer fit where they run, exactly as a drain does, so their controllers recreate them in the slices'
// new places. This file holds the pure parts: the request, the plan and the Pods to evict.
//
// The plan moves one slice at a time, updating the cache after each move, and stops at the request's bound:
// - spread evens out free room: a slice moves from a super cluster to the one with the most room for it, when that
//   has at least two slices' more room than the source (so each move narrows the gap and none undoes another);
// - pack consolidates: a slice moves from the emptiest super cluster that holds one to the fullest that still has
//   room for it, when that is fuller than the source.
// Only ready super clusters give or take slices (a draining one is emptied by the drain, and an unreachable one can
// neither start nor stop Pods). Namespaces pinned by spec.superCluster and namespaces placed whole (which keep with
// their tenant's home, see namespace.ts) never move; a slice moved once in a plan does not move again in it.

import { AnnotationError, type Placements, type Resources } from './annotations.ts';
import { addTimes, fits, reserve, type Capacity, type ClusterCapacity } from './capacity.ts';
import type { Policy } from './namespace.ts';

/** REBALANCE_REQUEST is the annotation on the state ConfigMap asking for a rebalance, a JSON RebalanceRequest. */
export const REBALANCE_REQUEST = 'scheduler.tenancy.x-k8s.io/rebalance-request';

/**
 * REBALANCE_REASONS are the reasons of a rebalance's Events: `Rebalanced` (on the state ConfigMap and on each moved
 * namespace), `RebalancePlanned` (a dry run), `InvalidRebalanceRequest` (a request that does not parse).
 */
export const REBALANCE_REASONS = ['Rebalanced', 'RebalancePlanned', 'InvalidRebalanceRequest'] as const;

/** DEFAULT_MAX_MOVES bounds the slices one request moves when it names no bound. */
export const DEFAULT_MAX_MOVES = 10;
/** MAX_MOVES bounds the slices any request moves (and the plan the scheduler computes to report what is left). */
export const MAX_MOVES = 1000;

/** RebalanceRequest is one request: any fresh requestedAt is a new request (as Flux's requestedAt annotation). */
export interface RebalanceRequest {
  requestedAt: string;
  /** maxMoves bounds the slices moved by this request (1..MAX_MOVES). */
  maxMoves: number;
  /** dryRun plans and reports the moves without making them. */
  dryRun: boolean;
}

/** parseRebalanceRequest reads the request annotation strictly; errors name the object, annotation and field. */
export function parseRebalanceRequest(object: string, value: string): RebalanceRequest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (e) {
    throw new AnnotationError(object, REBALANCE_REQUEST, undefined, `not JSON (${(e as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new AnnotationError(object, REBALANCE_REQUEST, undefined, 'must be a JSON object');
  const o = parsed as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!['requestedAt', 'maxMoves', 'dryRun'].includes(k))
      throw new AnnotationError(object, REBALANCE_REQUEST, k, 'is not a field (requestedAt, maxMoves, dryRun)');
  if (typeof o.requestedAt !== 'string' || o.requestedAt === '')
    throw new AnnotationError(object, REBALANCE_REQUEST, 'requestedAt', 'must be a non-empty string');
  const maxMoves = o.maxMoves ?? DEFAULT_MAX_MOVES;
  if (typeof maxMoves !== 'number' || !Number.isSafeInteger(maxMoves) || maxMoves < 1 || maxMoves > MAX_MOVES)
    throw new AnnotationError(
      object,
      REBALANCE_REQUEST,
      'maxMoves',
      `must be a whole number from 1 to ${MAX_MOVES}, not ${JSON.stringify(maxMoves)}`,
    );
  const dryRun = o.dryRun ?? false;
  if (typeof dryRun !== 'boolean')
    throw new AnnotationError(
      object,
      REBALANCE_REQUEST,
      'dryRun',
      `must be true or false, not ${JSON.stringify(dryRun)}`,
    );
  return { requestedAt: o.requestedAt, maxMoves, dryRun };
}

/** RebalanceNamespace is what planning needs of one placed namespace. */
export interface RebalanceNamespace {
  key: string;
  /** sliced namespaces may move; whole ones keep with their tenant's home */
  sliced: boolean;
  /** unit is one slice (or the whole quota of a namespace placed whole) */
  unit: Resources;
  placements: Placements;
  /** pinned is the tenant's spec.superCluster: such a namespace never moves */
  pinned?: string;
}

/** Move is one slice of a namespace moved from one super cluster to another. */
export interface Move {
  key: string;
  from: string;
  to: string;
}

/** RebalancePlan is the moves in order, the namespaces' placements after them, and the cache with them applied. */
export interface RebalancePlan {
  moves: Move[];
  placements: Map<string, Placements>;
  capacity: Capacity;
}

interface Candidate {
  ns: RebalanceNamespace;
  from: ClusterCapacity;
  to: ClusterCapacity;
  roomFrom: bigint;
  roomTo: bigint;
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

// better orders two candidate moves: the one to make first sorts first.
function better(policy: Policy, placements: Map<string, Placements>) {
  const on = (c: Candidate, name: string) => placements.get(c.ns.key)!.get(name) ?? 0;
  return (a: Candidate, b: Candidate): number => {
    let d: number;
    if (policy === 'spread') {
      // the widest gap first; then the namespace with the most of its slices on the source against the target
      const ga = a.roomTo - a.roomFrom;
      const gb = b.roomTo - b.roomFrom;
      d = ga === gb ? 0 : ga > gb ? -1 : 1;
      d ||= on(b, b.from.name) - on(b, b.to.name) - (on(a, a.from.name) - on(a, a.to.name));
    } else {
      // the emptiest source first (it is the one to empty), then the fullest target
      d = a.roomFrom === b.roomFrom ? 0 : a.roomFrom > b.roomFrom ? -1 : 1;
      d ||= a.roomTo === b.roomTo ? 0 : a.roomTo < b.roomTo ? -1 : 1;
      d ||= a.from.placed - b.from.placed;
    }
    return d || byName(a.ns.key, b.ns.key) || byName(a.from.name, b.from.name) || byName(a.to.name, b.to.name);
  };
}

/**
 * planRebalance plans up to `limit` single-slice moves under the policy (see the head of this file). The cache
 * already counts every namespace's placements.
 */
export function planRebalance(
  capacity: Capacity,
  namespaces: readonly RebalanceNamespace[],
  policy: Policy,
  limit: number,
): RebalancePlan {
  const placements = new Map(namespaces.map((ns) => [ns.key, new Map(ns.placements) as Placements]));
  const movable = namespaces.filter((ns) => ns.sliced && ns.pinned === undefined && fits({}, ns.unit) !== null);
  // arrived: `<key>\0<cluster>` slices a move of this plan put there, which do not move again
  const arrived = new Map<string, number>();
  const moves: Move[] = [];
  let cache = capacity;
  const cmp = better(policy, placements);
  while (moves.length < limit) {
    const ready = [...cache.values()].filter((c) => c.state === 'ready');
    let best: Candidate | undefined;
    for (const ns of movable) {
      const mine = placements.get(ns.key)!;
      for (const [fromName, n] of mine) {
        const from = cache.get(fromName);
        if (from?.state !== 'ready' || n - (arrived.get(`${ns.key}\0${fromName}`) ?? 0) < 1) continue;
        const roomFrom = fits(from.free, ns.unit)!;
        for (const to of ready) {
          if (to.name === fromName) continue;
          const roomTo = fits(to.free, ns.unit)!;
          if (roomTo < 1n) continue;
          const gains = policy === 'spread' ? roomTo >= roomFrom + 2n : roomTo < roomFrom;
          if (!gains) continue;
          const c = { ns, from, to, roomFrom, roomTo };
          if (!best || cmp(c, best) < 0) best = c;
        }
      }
    }
    if (!best) break;
    const { ns, from, to } = best;
    cache = reserve(reserve(cache, ns.unit, new Map([[to.name, 1]])), ns.unit, new Map([[from.name, -1]]));
    const next = new Map(placements.get(ns.key)!);
    next.set(to.name, (next.get(to.name) ?? 0) + 1);
    if (next.get(from.name)! > 1) next.set(from.name, next.get(from.name)! - 1);
    else next.delete(from.name);
    placements.set(ns.key, next);
    const k = `${ns.key}\0${to.name}`;
    arrived.set(k, (arrived.get(k) ?? 0) + 1);
    moves.push({ key: ns.key, from: from.name, to: to.name });
  }
  return { moves, placements, capacity: cache };
}

/** RunningPod is a Pod of a sliced namespace placed on a super cluster, for trimming. */
export interface RunningPod {
  name: string;
  /** created orders Pods: the newest are evicted first */
  created: string;
  superCluster: string;
  requests: Resources;
}

/**
 * excessPods names the Pods to evict from super cluster `on` so that those left fit in the slices the namespace
 * still has there (`slices` x slice, resource by resource over the slice's resources): the newest go first, none
 * when they fit. With no slice left there every Pod on it goes.
 */
export function excessPods(pods: readonly RunningPod[], slice: Resources, on: string, slices: number): string[] {
  const here = pods
    .filter((p) => p.superCluster === on)
    .sort((a, b) => byName(b.created, a.created) || byName(b.name, a.name));
  const room = addTimes({}, slice, BigInt(slices));
  let used: Resources = {};
  for (const p of here) used = addTimes(used, p.requests, 1n);
  const over = () => Object.keys(slice).some((k) => (used[k] ?? 0n) > room[k]!);
  const out: string[] = [];
  for (const p of here) {
    if (slices > 0 && !over()) break;
    out.push(p.name);
    used = addTimes(used, p.requests, -1n);
  }
  return out;
}
