import type { KubeClient, KubeObject } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { LABEL } from '../../names/names.ts';
import type { RollComponent } from '../roll.ts';

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
