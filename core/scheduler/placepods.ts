/**
 * The Pods of a sliced namespace: the scheduler places each new one in one of the namespace's slices (pod.ts decides),
 * keeps the signed SUPER_CLUSTER it wrote, evicts the Pods left on a super cluster the namespace was drained or
 * rebalanced off, and, where a rebalance took some of its slices on a super cluster, the newest Pods there that no
 * longer fit in those left (rebalance.ts decides).
 */
import { isNotFound } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import type { Result } from '../controller/runner.ts';
import type { Clock } from '../queue/clock.ts';
import type { TenantSession } from '../sessions/tenants.ts';
import type { ClusterState } from '../superclusters/registration.ts';
import { SUPER_CLUSTER, type Placements, type Resources } from './annotations.ts';
import { ResourceError } from './capacity.ts';
import type { Policy } from './namespace.ts';
import type { SchedulerOptions, SchedulerStats } from './options.ts';
import { placePod, podRequests, type PlacedPod, type PodSpecResources } from './pod.ts';
import { excessPods, type RunningPod } from './rebalance.ts';
import { olderThan, terminal, type Obj } from './records.ts';
import { signedValue } from './signature.ts';
import type { SchedulerWriter } from './writer.ts';

/** PodContext is what placing the Pods of a namespace needs of the scheduler. */
export interface PodContext {
  /** the placed Pods per namespace key: pod uid -> super cluster and the resourceVersion of the scheduler's write */
  pods: Map<string, Map<string, { superCluster: string; rv?: string }>>;
  signingKey: Uint8Array;
  writer: SchedulerWriter;
  clock: Clock;
  policy: Policy;
  stats: SchedulerStats;
  observe?: SchedulerOptions['observe'];
  clusterState(name: string): ClusterState | undefined;
}

// reconcilePods places the new Pods of a sliced namespace and evicts those left on super clusters it was drained or
// rebalanced off, and those over the slices left on the super clusters in `trim` (where a rebalance took slices).
// Pods of a namespace placed whole follow the namespace and carry no annotation.
export async function reconcilePods(
  ctx: PodContext,
  s: TenantSession,
  key: string,
  name: string,
  ns: { slice?: Resources; placements: Placements },
  evictFrom: Set<string>,
  trim: ReadonlySet<string> = new Set(),
): Promise<Result> {
  const pods = s.cache.list<Obj>(R.pods, name);
  if (!ns.slice) {
    // A namespace placed whole and moved off a draining super cluster: its Pods there go, to be recreated.
    if (evictFrom.size) for (const p of pods) if (!terminal(p)) await ctx.writer.evict(s, p, [...evictFrom][0]!);
    return;
  }
  const placed: PlacedPod[] = [];
  const running: Array<RunningPod & { pod: Obj }> = [];
  const todo: Array<{ pod: Obj; requests: Resources; forged?: string }> = [];
  let known = ctx.pods.get(key);
  if (!known) ctx.pods.set(key, (known = new Map()));
  const seen = new Set<string>();
  let failed: unknown;
  for (const p of pods) {
    const m = p.metadata!;
    seen.add(m.uid!);
    if (terminal(p)) {
      known.delete(m.uid!);
      continue;
    }
    let requests: Resources;
    try {
      requests = podRequests(`pod ${name}/${m.name}`, p.spec as unknown as PodSpecResources);
    } catch (e) {
      if (!(e instanceof ResourceError)) throw e;
      await ctx.writer.warn(s, p, 'InvalidRequests', e.message);
      continue;
    }
    const signed = signedValue(ctx.signingKey, s.tenant.key, p, SUPER_CLUSTER, 'Pod');
    let mine = known.get(m.uid!);
    if (!mine && signed !== undefined) known.set(m.uid!, (mine = { superCluster: signed }));
    if (!mine) {
      if (!m.deletionTimestamp) todo.push({ pod: p, requests, forged: m.annotations?.[SUPER_CLUSTER] });
      continue;
    }
    const sc = mine.superCluster;
    placed.push({ superCluster: sc, requests });
    if (!m.deletionTimestamp && ns.placements.has(sc) && !evictFrom.has(sc))
      running.push({ pod: p, name: m.name!, created: String(m.creationTimestamp ?? ''), superCluster: sc, requests });
    // A placed Pod never moves: an annotation changed since the scheduler wrote it is put back.
    const stale = mine.rv !== undefined && olderThan(m.resourceVersion, mine.rv);
    if (signed !== sc && !stale && !m.deletionTimestamp) {
      try {
        mine.rv = await ctx.writer.writePod(s, p, sc);
        await ctx.writer.warn(
          s,
          p,
          'PlacementOverwritten',
          `pod ${name}/${m.name}: ${SUPER_CLUSTER} ${m.annotations?.[SUPER_CLUSTER] ?? '(none)'} was not written by the scheduler; restored to ${sc}`,
        );
      } catch (e) {
        if (!isNotFound(e)) failed = e;
      }
    }
    // No slice of the namespace is left where the Pod runs: drained or rebalanced off.
    if (evictFrom.has(sc) || !ns.placements.has(sc))
      try {
        await ctx.writer.evict(s, p, sc, why(ctx, sc));
      } catch (e) {
        failed = e;
      }
  }
  for (const sc of trim) {
    const slices = ns.placements.get(sc) ?? 0;
    if (slices === 0) continue;
    const over = new Set(excessPods(running, ns.slice, sc, slices));
    for (const r of running)
      if (over.has(r.name))
        try {
          await ctx.writer.evict(
            s,
            r.pod,
            sc,
            `super cluster ${sc}: a rebalance moved some of the namespace's slices off it and the Pods there no longer fit in the ${slices} left`,
          );
        } catch (e) {
          failed = e;
        }
  }
  for (const uid of known.keys()) if (!seen.has(uid)) known.delete(uid);
  todo.sort(
    (a, b) =>
      String(a.pod.metadata!.creationTimestamp ?? '').localeCompare(String(b.pod.metadata!.creationTimestamp ?? '')) ||
      a.pod.metadata!.name!.localeCompare(b.pod.metadata!.name!),
  );
  for (const { pod, requests, forged } of todo) {
    const m = pod.metadata!;
    const decidedAt = ctx.clock.now();
    const d = placePod(
      { key: `${s.tenant.key}/${name}`, slice: ns.slice, placements: ns.placements },
      placed,
      { key: `${name}/${m.name}`, requests },
      ctx.policy,
    );
    ctx.stats.podDecisions++;
    if (d.kind === 'pending') {
      ctx.stats.pending++;
      if (forged !== undefined) await ctx.writer.writePod(s, pod, undefined).catch((e: unknown) => (failed = e));
      await ctx.writer.warn(s, pod, d.reason, d.message);
      await ctx.writer.podUnschedulable(s, pod, d.message);
      continue;
    }
    const mine: { superCluster: string; rv?: string } = { superCluster: d.superCluster };
    known.set(m.uid!, mine);
    placed.push({ superCluster: d.superCluster, requests });
    try {
      mine.rv = await ctx.writer.writePod(s, pod, d.superCluster);
      ctx.observe?.({ kind: 'pod', key: `${key}/${m.name}`, superClusters: [d.superCluster], decidedAt });
      if (forged !== undefined && forged !== d.superCluster)
        await ctx.writer.warn(
          s,
          pod,
          'PlacementOverwritten',
          `pod ${name}/${m.name}: ${SUPER_CLUSTER} ${forged} was not written by the scheduler; replaced by ${d.superCluster}`,
        );
    } catch (e) {
      known.delete(m.uid!);
      placed.pop();
      if (isNotFound(e)) continue;
      failed = e;
    }
  }
  if (failed) throw failed;
}

function why(ctx: PodContext, sc: string): string {
  return ctx.clusterState(sc) === 'draining'
    ? `draining super cluster ${sc}`
    : `super cluster ${sc}, which a rebalance moved the namespace's slices off`;
}
