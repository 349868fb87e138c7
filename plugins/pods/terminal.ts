import type { Pod, PodStatus } from '@virtualcluster-ts/plugin-sdk/pods';

/** CONTAINER_STATUS_UNKNOWN is the reason the kubelet gives a container it can no longer find on a terminated Pod. */
export const CONTAINER_STATUS_UNKNOWN = 'ContainerStatusUnknown';
/** CONTAINER_STATUS_UNKNOWN_MESSAGE is the kubelet's message for such a container. */
export const CONTAINER_STATUS_UNKNOWN_MESSAGE = 'The container could not be located when the pod was terminated';

/** ContainerState is a core/v1 ContainerState as far as termination goes. */
interface ContainerState {
  running?: Record<string, unknown>;
  waiting?: Record<string, unknown>;
  terminated?: { exitCode?: number; reason?: string; message?: string; [field: string]: unknown };
}

/** ContainerStatus is a core/v1 ContainerStatus as far as termination goes. */
interface ContainerStatus {
  name: string;
  state?: ContainerState;
  ready?: boolean;
  started?: boolean;
  [field: string]: unknown;
}

const TERMINAL = new Set(['Succeeded', 'Failed']);

/**
 * terminated is what the kubelet's status manager leaves of a container when the Pod terminates (TerminatePod): a
 * container already terminated keeps its state, any other is terminated with ContainerStatusUnknown and exit code 137.
 */
function terminated(cs: ContainerStatus): ContainerStatus {
  const out: ContainerStatus = { ...structuredClone(cs), ready: false, started: false };
  if (cs.state?.terminated) return out;
  out.state = {
    terminated: { exitCode: 137, reason: CONTAINER_STATUS_UNKNOWN, message: CONTAINER_STATUS_UNKNOWN_MESSAGE },
  };
  return out;
}

/**
 * terminalStatus is the status a kubelet (1.27 and later, still so in 1.36) leaves on a deleted Pod once its
 * containers are gone, for a tenant Pod whose super Pod is gone while it was terminating: no kubelet will write it,
 * and controllers holding finalizers on the Pod (the Job controller's tracking finalizer) wait for a terminal phase.
 * Containers not terminated become ContainerStatusUnknown (exit 137); the phase is Succeeded when every regular
 * container terminated with exit code 0 (a terminal Pod restarts nothing, whatever its restartPolicy, as the kubelet's
 * getPhase has it), Failed otherwise, also for a Pod that never started a container. Ready and ContainersReady turn
 * False. Undefined when the Pod is already Succeeded or Failed: nothing to write.
 */
export function terminalStatus(pod: Pod, now: Date): PodStatus | undefined {
  const status = pod.status ?? {};
  if (TERMINAL.has(status.phase ?? '')) return undefined;
  const containers = ((status.containerStatuses ?? []) as ContainerStatus[]).map(terminated);
  const inits = ((status.initContainerStatuses ?? []) as ContainerStatus[]).map(terminated);
  const names = (pod.spec?.containers ?? []).map((c) => c.name);
  const regular = names.map((n) => containers.find((c) => c.name === n));
  const succeeded = regular.length > 0 && regular.every((c) => c?.state?.terminated?.exitCode === 0);
  const phase = succeeded ? 'Succeeded' : 'Failed';
  const out: PodStatus = { phase };
  if (containers.length) out.containerStatuses = containers;
  if (inits.length) out.initContainerStatuses = inits;
  const notReady = (status.conditions ?? [])
    .filter((c) => (c.type === 'Ready' || c.type === 'ContainersReady') && c.status !== 'False')
    .map((c) => ({ type: c.type, status: 'False', reason: 'PodCompleted', lastTransitionTime: now.toISOString() }));
  if (notReady.length) out.conditions = notReady;
  return out;
}
