import { createHash } from 'node:crypto';
import type { KubeClient, KubeObject } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { childLogger } from '../../log.ts';
import { IDENTITY, LABEL } from '../../names/names.ts';
import { stableJson, type RollComponent, type RollFailure } from '../roll.ts';

const log = childLogger({ controller: 'provisioner-native' });

/**
 * This module rolls a running native tenant's StatefulSets one component at a time, in ROLL_ORDER (etcd, then the
 * apiserver, then the controller manager): each is applied only once the one before it has rolled out, that is all its
 * replicas run the new pod template and are ready (what `kubectl rollout status statefulset/<name>` waits for). A
 * component that does not roll out in time stops the roll with the component and what its new Pods show (a container's
 * waiting reason, the scheduler's message); later components keep their old template, and the StatefulSet
 * controller's one-Pod-at-a-time update leaves the replicas not yet replaced serving.
 */

/** NATIVE_WORKLOADS maps each rolled component to its StatefulSet's name, in the order they roll. */
export const NATIVE_WORKLOADS: ReadonlyArray<readonly [RollComponent, string]> = [
  ['etcd', 'etcd'],
  ['kube-apiserver', 'apiserver'],
  ['kube-controller-manager', 'controller-manager'],
];

/** DEFAULT_ROLL_STEP_TIMEOUT_MS is how long one component may take to roll out (images pulled, probes passed). */
export const DEFAULT_ROLL_STEP_TIMEOUT_MS = 300_000;
/** ROLL_POLL_MS is how often a rolling StatefulSet is read. */
const ROLL_POLL_MS = 1000;

/** RolledStatefulSet is as much of a StatefulSet as its rollout is read from. */
export interface RolledStatefulSet extends KubeObject {
  spec?: { replicas?: number };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    readyReplicas?: number;
    updatedReplicas?: number;
    currentRevision?: string;
    updateRevision?: string;
  };
}

/** RolledPod is as much of a Pod as a stalled rollout is explained from. */
export interface RolledPod extends KubeObject {
  status?: {
    phase?: string;
    conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }>;
    containerStatuses?: Array<{
      name?: string;
      ready?: boolean;
      restartCount?: number;
      state?: {
        waiting?: { reason?: string; message?: string };
        terminated?: { reason?: string; exitCode?: number; message?: string };
      };
    }>;
  };
}

/**
 * rolloutDone tells whether a StatefulSet has rolled out its current spec: the controller has seen this generation,
 * every replica runs the update revision and is ready, and the update revision has become the current one.
 */
export function rolloutDone(sts: RolledStatefulSet): boolean {
  const want = sts.spec?.replicas ?? 1;
  const s = sts.status ?? {};
  return (
    (s.observedGeneration ?? 0) >= (sts.metadata?.generation ?? 0) &&
    (s.updatedReplicas ?? 0) >= want &&
    (s.readyReplicas ?? 0) >= want &&
    (!s.updateRevision || s.currentRevision === s.updateRevision)
  );
}

/** rolloutInProgress tells whether a StatefulSet is still moving to its spec (an unfinished roll found on a reconcile). */
export function rolloutInProgress(sts: RolledStatefulSet): boolean {
  const s = sts.status ?? {};
  return (
    (s.observedGeneration ?? 0) < (sts.metadata?.generation ?? 0) ||
    (!!s.updateRevision && s.currentRevision !== s.updateRevision)
  );
}

/**
 * stalledBecause says why a StatefulSet has not rolled out, from its counts and its Pods on the update revision: the
 * first such Pod that is not ready, by a container's waiting or terminated reason and message, or the scheduler's
 * PodScheduled message, or its phase; no such Pod yet: the counts.
 */
export function stalledBecause(sts: RolledStatefulSet, pods: readonly RolledPod[]): string {
  const want = sts.spec?.replicas ?? 1;
  const s = sts.status ?? {};
  const counts = `${s.updatedReplicas ?? 0}/${want} replicas updated, ${s.readyReplicas ?? 0}/${want} ready`;
  const revision = s.updateRevision;
  const fresh = pods.filter((p) => !revision || p.metadata?.labels?.['controller-revision-hash'] === revision);
  for (const p of [...fresh].sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))) {
    if (p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) continue;
    const name = p.metadata?.name;
    const unscheduled = p.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
    if (unscheduled)
      return `${counts}; Pod ${name} is not scheduled (${unscheduled.reason}): ${unscheduled.message ?? ''}`.trim();
    for (const c of p.status?.containerStatuses ?? []) {
      const w = c.state?.waiting;
      if (w?.reason)
        return `${counts}; Pod ${name} container ${c.name} is waiting (${w.reason})${w.message ? `: ${w.message}` : ''}`;
      const t = c.state?.terminated;
      if (t)
        return `${counts}; Pod ${name} container ${c.name} terminated (${t.reason ?? `exit ${t.exitCode}`})${t.message ? `: ${t.message}` : ''}`;
    }
    return `${counts}; Pod ${name} is ${p.status?.phase ?? 'not started'} and not ready`;
  }
  return counts;
}

/**
 * waitRolledOut reads a StatefulSet every ROLL_POLL_MS until it has rolled out (resolves undefined) or timeoutMs has
 * passed (resolves why not, from stalledBecause, and whether some replica is still ready and serving).
 */
export async function waitRolledOut(
  client: KubeClient,
  root: string,
  name: string,
  timeoutMs: number,
): Promise<undefined | { message: string; serving: boolean }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const sts = await client.get<RolledStatefulSet>(R.statefulsets, root, name);
    if (rolloutDone(sts)) return undefined;
    if (Date.now() >= deadline) {
      const pods = await client.list<RolledPod>(R.pods, {
        namespace: root,
        labelSelector: `${LABEL.cluster}=${root},${LABEL.component}=${name}`,
      });
      return {
        message: `not rolled out within ${Math.round(timeoutMs / 1000)} s: ${stalledBecause(sts, pods.items)}`,
        serving: (sts.status?.readyReplicas ?? 0) > 0,
      };
    }
    await new Promise((r) => setTimeout(r, Math.min(ROLL_POLL_MS, Math.max(0, deadline - Date.now()))));
  }
}

/**
 * WorkloadRoller applies a native tenant's StatefulSets (all at once on a first start, one component at a time on a
 * serving tenant) and remembers, per root namespace, the last roll that stopped and the hash of the StatefulSets it
 * was rolling to, so that the same spec is neither planned nor rolled again until it changes.
 */
export class WorkloadRoller {
  /** per root namespace, the last roll that stopped and the hash of the StatefulSets it was rolling to */
  private readonly failedRolls = new Map<string, { hash: string; failure: RollFailure }>();

  constructor(
    private readonly client: KubeClient,
    /** how long one component of a roll may take to roll out */
    private readonly stepTimeoutMs: number = DEFAULT_ROLL_STEP_TIMEOUT_MS,
  ) {}

  /**
   * plan lists the components whose StatefulSet an apply of these workloads would change, in ROLL_ORDER, by a dry run
   * of each StatefulSet's apply (a changed spec bumps its generation). A first start (a StatefulSet missing) and
   * workloads whose last roll failed plan nothing: apply reports them.
   */
  async plan(root: string, workloads: readonly KubeObject[]): Promise<RollComponent[]> {
    if (this.failedRolls.get(root)?.hash === workloadsHash(workloads)) return [];
    const plan: RollComponent[] = [];
    for (const [component, name] of NATIVE_WORKLOADS) {
      const obj = workloads.find((o) => o.metadata?.name === name);
      const existing = await this.client.getOrNull<RolledStatefulSet>(R.statefulsets, root, name);
      if (!obj || !existing) return [];
      const dry = await this.client.apply(R.statefulsets, obj, IDENTITY.manager, { dryRun: true });
      if (dry.metadata?.generation !== existing.metadata?.generation) plan.push(component);
    }
    return plan;
  }

  /**
   * apply applies the tenant's StatefulSets. A first start applies all three at once (the apiserver waits
   * for etcd by itself), and so does a tenant with no ready replica of any component. A serving tenant's are rolled
   * in ROLL_ORDER: each one applied, and when that changed it or it was still
   * rolling, waited for until all its replicas run it and are ready, before the next is applied. A step that does not
   * roll out in time stops there and is reported; the same spec is not applied past that step again until it changes.
   */
  async apply(root: string, workloads: readonly KubeObject[]): Promise<{ rolled: boolean; failure?: RollFailure }> {
    const current = new Map<string, RolledStatefulSet | null>();
    for (const [, name] of NATIVE_WORKLOADS)
      current.set(name, await this.client.getOrNull<RolledStatefulSet>(R.statefulsets, root, name));
    // A first start, or a tenant none of whose components has a ready replica (it never came up, or is down
    // whole), has nothing to keep serving: all three at once, as waiting on a step that never was ready would stall.
    const serving = [...current.values()].some((sts) => (sts?.status?.readyReplicas ?? 0) > 0);
    if (!current.get('apiserver') || !serving) {
      for (const obj of workloads) await this.client.apply(R.statefulsets, obj, IDENTITY.manager);
      return { rolled: false };
    }
    const hash = workloadsHash(workloads);
    const failed = this.failedRolls.get(root);
    if (failed?.hash === hash) return { rolled: false, failure: failed.failure };
    let rolled = false;
    for (const [component, name] of NATIVE_WORKLOADS) {
      const obj = workloads.find((o) => o.metadata?.name === name);
      if (!obj) continue;
      const before = current.get(name);
      const applied = await this.client.apply<RolledStatefulSet>(R.statefulsets, obj, IDENTITY.manager);
      const changed = applied.metadata?.generation !== before?.metadata?.generation;
      if (!changed && !rolloutInProgress(applied)) continue;
      rolled ||= changed;
      log.info({ tenant: root, component, changed }, 'rolling the component; waiting for its rollout');
      const stalled = await waitRolledOut(this.client, root, name, this.stepTimeoutMs);
      if (stalled) {
        const failure: RollFailure = { component, message: stalled.message, kept: stalled.serving };
        log.warn({ tenant: root, ...failure }, 'roll stopped');
        this.failedRolls.set(root, { hash, failure });
        return { rolled, failure };
      }
    }
    this.failedRolls.delete(root);
    return { rolled };
  }
}

/** workloadsHash identifies the StatefulSets a roll goes to (a failed roll is not tried again until they change). */
function workloadsHash(workloads: readonly KubeObject[]): string {
  return createHash('sha256').update(stableJson(workloads)).digest('hex').slice(0, 16);
}
