import { Counter, Histogram } from 'prom-client';
import { registry as metricsRegistry } from '../metrics/registry.ts';
import { ANN } from '../names/names.ts';
import type { FrontDoorActivity } from '../provisioners/provisioner.ts';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import type { KubeObject } from '../kube/client.ts';
import { ready, type Outcome } from './decisions.ts';

/**
 * This module holds the decisions of sleep and wake (issue 34 §4) without I/O: when a tenant is due to sleep, what a
 * sleeping tenant's status says, and the metrics. The controller asks the provisioner (Sleeper) to do it.
 */

/** SLEEPING is the reason of a tenant whose apiserver and controller manager are stopped until a request wakes it. */
export const SLEEPING = 'Sleeping';
/** WOKEN is the reason of the event of a sleeping tenant woken by a request, by `vc wake` or by a spec change. */
export const WOKEN = 'Woken';
/** SLEEP_REFUSED is the reason of the event of a sleep asked for a tenant that cannot sleep (no front door). */
export const SLEEP_REFUSED = 'SleepRefused';
/**
 * SCALED_TO_ZERO is the reason of the event of a tenant whose Pods in the super cluster were deleted as it fell asleep
 * (its policy's sleep.workloads ScaleToZero).
 */
export const SCALED_TO_ZERO = 'WorkloadsScaledToZero';

/** scaledToZeroMessage is the message of that event, for n Pods deleted. */
export function scaledToZeroMessage(n: number): string {
  return (
    `${n} Pod${n === 1 ? '' : 's'} of this tenant deleted from the super cluster while it sleeps (sleep.workloads ` +
    'ScaleToZero); at the wake their controllers make them again'
  );
}

/**
 * SLEEP_DEFERRED is the reason of the Warning event of a tenant kept awake although idle or asked to sleep: it woke as
 * often in the last hour as its policy's sleep.maxWakesPerHour allows.
 */
export const SLEEP_DEFERRED = 'SleepDeferred';

/** WAKE_WINDOW_MS is the window sleep.maxWakesPerHour counts wakes in. */
export const WAKE_WINDOW_MS = 3_600_000;

/**
 * sleepDeferredUntil answers, for a tenant woken at `wakesMs` (ms epoch, any order), until when (ms epoch) it must be
 * kept awake at `nowMs`: when `max` or more of those wakes lie within the last WAKE_WINDOW_MS, until the oldest of the
 * `max` latest is that old; undefined when it may sleep now. Each wake starts an etcd and an apiserver, and anyone
 * who reaches the front door can wake a tenant, so a tenant woken that often costs less awake than asleep.
 */
export function sleepDeferredUntil(wakesMs: readonly number[], nowMs: number, max: number): number | undefined {
  const recent = wakesMs.filter((t) => t > nowMs - WAKE_WINDOW_MS && t <= nowMs).sort((a, b) => b - a);
  if (max < 1 || recent.length < max) return undefined;
  return recent[max - 1]! + WAKE_WINDOW_MS;
}

/** sleepDeferredMessage is the message of the SleepDeferred event of a tenant kept awake until `untilMs`. */
export function sleepDeferredMessage(max: number, untilMs: number, asked: boolean): string {
  return (
    `${asked ? 'the sleep request was removed: ' : ''}kept awake until ${new Date(untilMs).toISOString()}: woken ` +
    `${max} time${max === 1 ? '' : 's'} within the last hour, the most its TenantPolicy allows before it stays awake ` +
    '(sleep.maxWakesPerHour); each wake starts its etcd and apiserver again'
  );
}

/** MIN_IDLE_MS is the shortest idle time spec.sleep.afterIdle may ask for; less is read as this. */
export const MIN_IDLE_MS = 10_000;

/** sleeps counts tenants put to sleep. */
export const sleepsTotal = new Counter({
  name: 'vc_tenant_sleeps_total',
  help: 'Tenants put to sleep (their apiserver and controller manager stopped), by `vc sleep` or after spec.sleep.afterIdle.',
  registers: [metricsRegistry],
});

/** wakesTotal counts tenants woken, by what woke them. */
export const wakesTotal = new Counter({
  name: 'vc_tenant_wakes_total',
  help: 'Sleeping tenants woken: by a request through the front door (request), `vc wake` (command) or a spec change (spec).',
  labelNames: ['cause'],
  registers: [metricsRegistry],
});

/** wakeSeconds is how long a request through the front door waited for the tenant it woke. */
export const wakeSeconds = new Histogram({
  name: 'vc_tenant_wake_seconds',
  help: 'Time from the first request through a sleeping tenant front door until its apiserver answered.',
  buckets: [0.5, 1, 2, 3, 5, 10, 20, 60],
  registers: [metricsRegistry],
});

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** durationMs reads a Go-style duration (`90s`, `1h30m`, `250ms`) in milliseconds; undefined when it is not one. */
export function durationMs(text: string): number | undefined {
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(text)) return undefined;
  let total = 0;
  for (const [, n, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(n) * UNITS[unit!]!;
  return total;
}

/** sleepRequestedAt is when the tenant's sleep was asked for (ms epoch), or undefined when it was not. */
export function sleepRequestedAt(vc: VirtualCluster): number | undefined {
  const v = vc.metadata?.annotations?.[ANN.sleepRequested];
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? 0 : t;
}

/** servedBefore reports whether the tenant ran already (only such a tenant has a kubeconfig Secret to wake it by). */
export function servedBefore(vc: VirtualCluster): boolean {
  return ['Running', 'Degraded', 'Sleeping'].includes(vc.status?.phase ?? '');
}

/**
 * specChangedWhileAsleep reports whether a sleeping tenant's spec changed since it went to sleep (its generation is
 * past the one its status saw): the change wakes it and is applied at once.
 */
export function specChangedWhileAsleep(vc: VirtualCluster): boolean {
  return vc.status?.phase === 'Sleeping' && vc.metadata?.generation !== vc.status.observedGeneration;
}

/**
 * idleDue reports whether a served tenant with spec.sleep is due to sleep at `nowMs`: its front door has no open
 * connection and none opened or spoke for afterIdle (at least MIN_IDLE_MS), counted from when it last became Ready at
 * the earliest (a tenant woken by `vc wake` or a spec change, with no client since, stays awake that long too). A
 * tenant without a front door, already asked to sleep, or not Running is never due.
 */
export function idleDue(vc: VirtualCluster, activity: FrontDoorActivity | undefined, nowMs: number): boolean {
  const after = vc.spec?.sleep?.afterIdle;
  if (!after || !activity || vc.status?.phase !== 'Running' || sleepRequestedAt(vc) !== undefined) return false;
  const idle = Math.max(MIN_IDLE_MS, durationMs(after) ?? Infinity);
  const ready = vc.status.conditions?.find((c) => c.type === 'Ready' && c.status === 'True')?.lastTransitionTime;
  const since = Math.max(activity.lastActiveMs, ready ? Date.parse(ready) || 0 : 0);
  return activity.open === 0 && nowMs - since >= idle;
}

/**
 * workloadsRunning counts a tenant's Pods in the super cluster that run or are about to (phase Running or Pending, not
 * being deleted): with its policy's sleep.workloads KeepAwake, any keeps the tenant from sleeping when idle.
 */
export function workloadsRunning(pods: readonly KubeObject[]): number {
  return pods.filter((p) => {
    const phase = (p as { status?: { phase?: string } }).status?.phase ?? 'Pending';
    return !p.metadata?.deletionTimestamp && (phase === 'Running' || phase === 'Pending');
  }).length;
}

/**
 * asleep is the Outcome of a tenant that sleeps: phase Sleeping, Ready False with reason Sleeping, the tenant taken
 * from the syncer and the health monitor; a Normal event when it was not asleep before.
 */
export function asleep(vc: VirtualCluster): Outcome {
  const message = 'asleep: apiserver and controller manager stopped; the first request through the front door wakes it';
  const first = vc.status?.phase !== 'Sleeping';
  return {
    stop: true,
    release: true,
    status: { phase: 'Sleeping', reason: SLEEPING, message },
    conditions: [ready('False', SLEEPING, message)],
    events: first ? [{ type: 'Normal', reason: SLEEPING, message }] : [],
  };
}
