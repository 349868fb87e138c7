/**
 * The health of what a GitSource applied, and the GitSource's readiness from it (in the manner of kstatus: an applied
 * object is Healthy, Progressing or Failed, and a source is Ready only once everything it applied is Healthy). Pure:
 * the controller reads the live objects and the clock, this module decides.
 */
import { nextCondition, type Condition, type ConditionInput } from '../core/controller/status.ts';
import type { KubeObject } from '../core/kube/client.ts';
import type { GitSource, GitSourceRef, GitSourceStatus, InventoryStatus } from './applier/gitsource.ts';
import type { InventoryEntry } from './applier/objects.ts';

/** Health is how an applied object is doing, as the GitSource status reports it per inventory entry. */
export type Health = 'Healthy' | 'Progressing' | 'Failed' | 'Unknown';

/** ObjectHealth is one object's health and, unless Healthy, why. */
export interface ObjectHealth {
  health: Health;
  message?: string;
}

/** HEALTH_TIMEOUT_DEFAULT_MS is spec.healthTimeout's default (10m), as in the GitSource schema. */
export const HEALTH_TIMEOUT_DEFAULT_MS = 10 * 60_000;

/**
 * The phases a VirtualCluster does not leave without a change of its spec or of the platform. Degraded is not one: the
 * manager restarts the failing component, so it counts as Progressing, against spec.healthTimeout.
 */
const FAILED_PHASES = new Set(['Error']);

/**
 * objectHealth judges one applied object from its live state: a VirtualCluster is Healthy when the manager has acted
 * on its current generation, it is Running and no Ready condition says False; Failed in phase Error; Progressing
 * otherwise (Degraded included) (and while it is gone, until the next apply makes it again). A ClusterVersion has no status:
 * Healthy once it exists.
 */
export function objectHealth(kind: string, live: KubeObject | undefined): ObjectHealth {
  if (!live) return { health: 'Progressing', message: 'not found; the next apply creates it' };
  if (kind !== 'VirtualCluster') return { health: 'Healthy' };
  const status = (live as { status?: { phase?: string; message?: string; observedGeneration?: number } }).status;
  const conditions = (live as { status?: { conditions?: Condition[] } }).status?.conditions ?? [];
  if (live.metadata?.deletionTimestamp) return { health: 'Progressing', message: 'being deleted' };
  const generation = live.metadata?.generation;
  if (generation !== undefined && (status?.observedGeneration ?? 0) < generation)
    return { health: 'Progressing', message: `generation ${generation} not yet acted on` };
  const phase = status?.phase ?? 'Pending';
  const ready = conditions.find((c) => c.type === 'Ready');
  const why = ready?.message ?? status?.message;
  if (FAILED_PHASES.has(phase)) return { health: 'Failed', message: `phase ${phase}${why ? `: ${why}` : ''}` };
  if (phase !== 'Running') return { health: 'Progressing', message: `phase ${phase}` };
  if (ready?.status === 'False')
    return {
      health: 'Progressing',
      message: `Ready False (${ready.reason})${ready.message ? `: ${ready.message}` : ''}`,
    };
  return { health: 'Healthy' };
}

/** describe names an inventory entry as the condition messages do. */
function describe(e: InventoryEntry): string {
  return `${e.kind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
}

/** withHealth is an inventory with each entry's health and message (none when Healthy). */
export function withHealth(
  inventory: readonly InventoryEntry[],
  healthOf: (e: InventoryEntry) => ObjectHealth,
): InventoryStatus[] {
  return inventory.map((e) => {
    const { uid, apiVersion, kind, name, namespace } = e;
    const h = healthOf(e);
    return {
      apiVersion,
      kind,
      ...(namespace !== undefined ? { namespace } : {}),
      name,
      uid,
      health: h.health,
      ...(h.message ? { message: h.message.slice(0, 1024) } : {}),
    };
  });
}

/**
 * readiness is the Ready condition of a source whose revision was applied in full at appliedAt: True when every
 * inventory entry is Healthy; False (HealthCheckFailed) when one Failed, or when one is still Progressing after the
 * timeout; Unknown (Progressing) before it.
 */
export function readiness(
  inventory: readonly InventoryStatus[],
  revision: string,
  appliedAt: number,
  now: number,
  timeoutMs: number,
): ConditionInput {
  const short = revision.slice(0, 12);
  const failed = inventory.filter((e) => e.health === 'Failed');
  const waiting = inventory.filter((e) => e.health !== 'Healthy' && e.health !== 'Failed');
  const list = (xs: readonly InventoryStatus[]) =>
    xs
      .slice(0, 5)
      .map((e) => `${describe(e)}${e.message ? ` (${e.message})` : ''}`)
      .join('; ') + (xs.length > 5 ? `; and ${xs.length - 5} more` : '');
  if (failed.length)
    return {
      type: 'Ready',
      status: 'False',
      reason: 'HealthCheckFailed',
      message: `revision ${short} applied; failed: ${list(failed)}`,
    };
  if (waiting.length) {
    const waited = now - appliedAt;
    if (waited >= timeoutMs)
      return {
        type: 'Ready',
        status: 'False',
        reason: 'HealthCheckFailed',
        message: `revision ${short} applied; not healthy after ${Math.round(timeoutMs / 1000)}s (spec.healthTimeout): ${list(waiting)}`,
      };
    return {
      type: 'Ready',
      status: 'Unknown',
      reason: 'Progressing',
      message: `revision ${short} applied; waiting for ${list(waiting)}`,
    };
  }
  return {
    type: 'Ready',
    status: 'True',
    reason: 'Succeeded',
    message: `revision ${short} applied; ${inventory.length} object(s) healthy`,
  };
}

/** dependencyRefs are the GitSources a source depends on, namespaces filled in. */
export function dependencyRefs(gs: GitSource): GitSourceRef[] {
  return (gs.spec.dependsOn ?? []).map((d) => ({ namespace: d.namespace ?? gs.metadata.namespace, name: d.name }));
}

/** refKey is a GitSource's informer key. */
const refKey = (r: GitSourceRef): string => `${r.namespace}/${r.name}`;

/**
 * dependencyCycle is the cycle through gs among the known sources, as its keys from gs back to gs, or undefined.
 * A dependency that does not exist ends its path (it is waited for, not a cycle).
 */
export function dependencyCycle(gs: GitSource, sources: (key: string) => GitSource | undefined): string[] | undefined {
  const start = refKey(gs.metadata);
  const onPath: string[] = [start];
  const done = new Set<string>();
  const visit = (cur: GitSource): string[] | undefined => {
    for (const d of dependencyRefs(cur)) {
      const k = refKey(d);
      if (k === start) return [...onPath, k];
      if (done.has(k) || onPath.includes(k)) continue;
      const next = sources(k);
      if (!next) continue;
      onPath.push(k);
      const found = visit(next);
      onPath.pop();
      if (found) return found;
      done.add(k);
    }
    return undefined;
  };
  return visit(gs);
}

/** unreadyDependencies names each dependency that is missing or not Ready on its current generation, and why. */
export function unreadyDependencies(gs: GitSource, sources: (key: string) => GitSource | undefined): string[] {
  const out: string[] = [];
  for (const d of dependencyRefs(gs)) {
    const dep = sources(refKey(d));
    if (!dep) {
      out.push(`GitSource ${refKey(d)} does not exist`);
      continue;
    }
    const ready = dep.status?.conditions?.find((c) => c.type === 'Ready');
    const current = (dep.status?.observedGeneration ?? 0) >= (dep.metadata.generation ?? 0);
    if (ready?.status !== 'True' || !current)
      out.push(
        `GitSource ${refKey(d)} is not Ready${ready ? ` (${ready.reason}${current ? '' : ', older generation'})` : ''}`,
      );
  }
  return out;
}

/**
 * withReadiness is a status after a full apply with its Ready condition replaced by the health verdict (transition
 * times kept against the status before), Reconciling True while the verdict waits, and each entry's health.
 */
export function withReadiness(
  before: readonly Condition[] | undefined,
  status: GitSourceStatus,
  inventory: InventoryStatus[],
  ready: ConditionInput,
  now: Date = new Date(),
): GitSourceStatus {
  const generation = status.observedGeneration;
  const at = (c: ConditionInput) => nextCondition(before, { ...c, observedGeneration: generation }, now);
  const conditions = (status.conditions ?? []).filter((c) => c.type !== 'Ready' && c.type !== 'Reconciling');
  conditions.push(at(ready));
  conditions.push(
    at(
      ready.status === 'Unknown'
        ? { type: 'Reconciling', status: 'True', reason: 'Progressing', message: ready.message }
        : { type: 'Reconciling', status: 'False', reason: ready.reason, message: ready.message },
    ),
  );
  return { ...status, conditions, inventory };
}

/**
 * dependencyGate says why a source may not apply yet: a cycle through it (which only a spec change ends) or the
 * dependencies that are not Ready; undefined when it may go on.
 */
export function dependencyGate(
  gs: GitSource,
  sources: (key: string) => GitSource | undefined,
): { cycle: boolean; message: string } | undefined {
  const cycle = dependencyCycle(gs, sources);
  if (cycle) return { cycle: true, message: `spec.dependsOn makes a cycle: ${cycle.join(' -> ')}` };
  const unready = unreadyDependencies(gs, sources);
  if (unready.length) return { cycle: false, message: `waiting for spec.dependsOn: ${unready.join('; ')}` };
  return undefined;
}

/**
 * healthRecheck is how long until a source still waiting for what it applied at `appliedAt` to be healthy (Ready
 * Unknown, Progressing) must be judged again because its health timeout runs out: nothing else need change by then (a
 * tenant stuck Pending writes no new status), yet the verdict must turn False on time. Undefined when it is not waiting.
 */
export function healthRecheck(
  status: GitSourceStatus,
  appliedAt: number,
  now: number,
  timeoutMs: number,
): number | undefined {
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'Unknown' || ready.reason !== 'Progressing') return undefined;
  return Math.max(appliedAt + timeoutMs - now, 0) + HEALTH_RECHECK_SLACK_MS;
}

/** HEALTH_RECHECK_SLACK_MS is added to a recheck so that it lands just past the timeout, not a moment before it. */
export const HEALTH_RECHECK_SLACK_MS = 100;
