import type { ComponentReport } from '../provisioners/provisioner.ts';

/**
 * This module decides a tenant's health from what one round of probes found, without I/O: which component fails
 * first in the order a control plane depends on its parts (etcd, then the apiserver on it, then the controller manager
 * and the syncer on the apiserver), with what reason, and the per-component status the VirtualCluster shows.
 * core/lifecycle/healthmonitor.ts runs the probes; core/lifecycle/decisions.ts turns the verdict into phase and events.
 */

/** COMPONENTS are the parts of a tenant control plane whose health is reported, in the order they depend on each other. */
export const COMPONENTS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'syncer'] as const;
/** ComponentName is one of COMPONENTS. */
export type ComponentName = (typeof COMPONENTS)[number];

/** COMPONENT_DOWN is the reason of a component when the provisioner reports the component's process or workload not running. */
export const COMPONENT_DOWN = 'ComponentDown';
/** COMPONENT_UNHEALTHY is the reason of a component when the component runs and fails its own health check, as the provisioner reports. */
export const COMPONENT_UNHEALTHY = 'ComponentUnhealthy';
/** ETCD_UNHEALTHY is the reason of a component when etcd answers no health check, or the apiserver's readyz fails only on its etcd checks. */
export const ETCD_UNHEALTHY = 'EtcdUnhealthy';
/** APISERVER_UNREACHABLE is the reason of a component when the apiserver's /readyz got no answer. */
export const APISERVER_UNREACHABLE = 'ApiserverUnreachable';
/** APISERVER_NOT_READY is the reason of a component when the apiserver's /readyz answered with failing checks. */
export const APISERVER_NOT_READY = 'ApiserverNotReady';
/** LEASE_STALE is the reason of a component when the controller manager's leader Lease was not renewed within its duration. */
export const LEASE_STALE = 'LeaseNotRenewed';
/** SYNCER_NOT_SYNCED is the reason of a component when the syncer's caches of the tenant have not synced for longer than the grace period. */
export const SYNCER_NOT_SYNCED = 'SyncerNotSynced';
/** SYNCER_BACKLOG is the reason of a component when more of the tenant's keys wait in the syncer's queue than the limit. */
export const SYNCER_BACKLOG = 'SyncerBacklog';
/** HEALTHY is the reason of a component (and a tenant) that passed every check. */
export const HEALTHY = 'Healthy';

/** ReadyzResult is the apiserver's answer to GET /readyz?verbose, or why there was none. */
export type ReadyzResult = { status: number; body: string } | { error: string };

/** LeaseResult is the controller manager's leader Lease as read from the tenant, or why it could not be judged. */
export type LeaseResult =
  | { state: 'present'; holder?: string; renewTime?: string; durationSeconds?: number }
  | { state: 'absent' }
  | { state: 'unknown'; error: string };

/** SyncerLag is what the syncer says of one tenant: keys waiting and being worked, and whether its caches synced. */
export interface SyncerLag {
  waiting: number;
  inFlight: number;
  synced: boolean;
  /** for how long the caches have been seen unsynced (0 when synced) */
  unsyncedForMs: number;
}

/** ProbeResults are everything one round of probes found for one tenant. */
export interface ProbeResults {
  /** the provisioner's report of its processes or workloads; absent when it reports none (import) */
  components?: ComponentReport[];
  readyz: ReadyzResult;
  /** the apiserver's gitVersion, when /version answered */
  version?: string;
  lease: LeaseResult;
  /** absent when no syncer of this process serves the tenant */
  syncer?: SyncerLag;
}

/** HealthLimits are the thresholds of the verdict. */
export interface HealthLimits {
  /** how long the syncer's caches of a tenant may stay unsynced (a relist after an apiserver restart) */
  syncerSyncGraceMs: number;
  /** how many of a tenant's keys may wait in the syncer's queue */
  syncerMaxWaiting: number;
  /** slack on top of a Lease's duration before it counts as not renewed (clock skew, a slow renewal) */
  leaseGraceMs: number;
}

/** DEFAULT_HEALTH_LIMITS are the thresholds a manager uses unless configured otherwise. */
export const DEFAULT_HEALTH_LIMITS: HealthLimits = {
  syncerSyncGraceMs: 120_000,
  syncerMaxWaiting: 10_000,
  leaseGraceMs: 5000,
};

/** ComponentHealth is one component's line in status.components. */
export interface ComponentHealth {
  name: ComponentName;
  healthy: boolean;
  reason: string;
  message?: string;
  restarts?: number;
  version?: string;
}

/** HealthVerdict is a tenant's health: healthy, or the first failing component with its reason and message. */
export interface HealthVerdict {
  healthy: boolean;
  /** the first failing component, in COMPONENTS order */
  component?: ComponentName;
  reason: string;
  message: string;
  components: ComponentHealth[];
  /** components whose restart count the monitor saw grow since the controller last took a verdict, with the count */
  restarted?: Array<{ name: ComponentName; restarts: number }>;
}

/** ETCD_CHECKS are the apiserver readyz checks that fail when etcd does. */
const ETCD_CHECKS = new Set(['etcd', 'etcd-readiness']);

/** failingChecks lists the checks a verbose readyz or livez body marks failed (`[-]name failed: …`). */
export function failingChecks(body: string): string[] {
  const out: string[] = [];
  for (const line of body.split('\n')) {
    const m = /^\[-\]([^\s]+)\s/.exec(line.trim() + ' ');
    if (m) out.push(m[1]!);
  }
  return out;
}

/** leaseAgeMs is how long ago the Lease was renewed at `now`, or undefined when it names no renewTime. */
function leaseAgeMs(l: Extract<LeaseResult, { state: 'present' }>, now: Date): number | undefined {
  if (!l.renewTime) return undefined;
  const t = Date.parse(l.renewTime);
  return Number.isNaN(t) ? undefined : now.getTime() - t;
}

/**
 * fromReport is a component's line from the provisioner's report alone: down, running but failing its own check
 * (`unhealthyReason`), or healthy.
 */
function fromReport(
  name: ComponentName,
  r: ComponentReport | undefined,
  unhealthyReason = COMPONENT_UNHEALTHY,
): ComponentHealth | undefined {
  if (!r) return undefined;
  const restarts = r.restarts;
  if (!r.running)
    return { name, healthy: false, reason: COMPONENT_DOWN, message: r.message ?? `${name} is not running`, restarts };
  if (r.healthy === false)
    return {
      name,
      healthy: false,
      reason: unhealthyReason,
      message: r.message ?? `${name} fails its health check`,
      restarts,
    };
  return { name, healthy: true, reason: HEALTHY, restarts };
}

/** judgeEtcd: the process and its own check first, then what the apiserver says of its etcd. */
function judgeEtcd(p: ProbeResults, report: ComponentReport | undefined): ComponentHealth | undefined {
  const base = fromReport('etcd', report, ETCD_UNHEALTHY);
  if (base && !base.healthy) return base;
  const restarts = report?.restarts;
  if ('status' in p.readyz) {
    const etcdFailing = failingChecks(p.readyz.body).filter((c) => ETCD_CHECKS.has(c));
    if (etcdFailing.length)
      return {
        name: 'etcd',
        healthy: false,
        reason: ETCD_UNHEALTHY,
        message: `the apiserver's readyz fails ${etcdFailing.join(', ')}`,
        restarts,
      };
  }
  if (base) return base;
  // Nothing reports etcd directly (a native or imported tenant): the apiserver's etcd check passing says it answers.
  return 'status' in p.readyz && p.readyz.status === 200 ? { name: 'etcd', healthy: true, reason: HEALTHY } : undefined;
}

/** judgeApiserver: the process, then /readyz (its failing checks other than etcd's are the message). */
function judgeApiserver(p: ProbeResults, report: ComponentReport | undefined): ComponentHealth {
  const restarts = report?.restarts;
  const version = p.version;
  const base = fromReport('kube-apiserver', report);
  if (base && !base.healthy) return base;
  if ('error' in p.readyz)
    return {
      name: 'kube-apiserver',
      healthy: false,
      reason: APISERVER_UNREACHABLE,
      message: `/readyz: ${p.readyz.error}`,
      restarts,
    };
  if (p.readyz.status !== 200) {
    const failing = failingChecks(p.readyz.body);
    const message = failing.length
      ? `/readyz failing checks: ${failing.join(', ')}`
      : `/readyz answered ${p.readyz.status}: ${p.readyz.body.trim().slice(0, 200)}`;
    return { name: 'kube-apiserver', healthy: false, reason: APISERVER_NOT_READY, message, restarts, version };
  }
  return { name: 'kube-apiserver', healthy: true, reason: HEALTHY, restarts, version };
}

/** judgeControllerManager: the process or workload, then the leader Lease's freshness where there is one. */
function judgeControllerManager(
  p: ProbeResults,
  report: ComponentReport | undefined,
  limits: HealthLimits,
  now: Date,
): ComponentHealth | undefined {
  const base = fromReport('kube-controller-manager', report);
  if (base && !base.healthy) return base;
  const restarts = report?.restarts;
  const l = p.lease;
  if (l.state === 'present') {
    const age = leaseAgeMs(l, now);
    const limit = (l.durationSeconds ?? 15) * 1000 + limits.leaseGraceMs;
    if (age === undefined || age > limit) {
      // the limit, not the age: a message that changed every probe would rewrite status every probe
      const when = age === undefined ? 'never renewed' : `not renewed within ${limit / 1000} s`;
      const message = `leader Lease kube-system/kube-controller-manager (holder ${l.holder ?? 'none'}) ${when}`;
      return { name: 'kube-controller-manager', healthy: false, reason: LEASE_STALE, message, restarts };
    }
    return {
      name: 'kube-controller-manager',
      healthy: true,
      reason: HEALTHY,
      message: `leader ${l.holder ?? ''}`.trim(),
      restarts,
    };
  }
  // Without a Lease (leader election off, one replica) the process or workload is all there is to judge by.
  return base;
}

/**
 * judgeSyncer: unsynced caches past the grace period, or a backlog past the limit. The messages name the limits, not
 * the live counts (the metrics carry those): status is written when it changes, and a queue depth changes every probe.
 */
function judgeSyncer(s: SyncerLag | undefined, limits: HealthLimits): ComponentHealth | undefined {
  if (!s) return undefined;
  if (!s.synced && s.unsyncedForMs > limits.syncerSyncGraceMs)
    return {
      name: 'syncer',
      healthy: false,
      reason: SYNCER_NOT_SYNCED,
      message: `the syncer's caches of the tenant have not synced within ${Math.round(limits.syncerSyncGraceMs / 1000)} s`,
    };
  if (s.waiting > limits.syncerMaxWaiting)
    return {
      name: 'syncer',
      healthy: false,
      reason: SYNCER_BACKLOG,
      message: `more than ${limits.syncerMaxWaiting} of the tenant's keys wait in the syncer's queue`,
    };
  return { name: 'syncer', healthy: true, reason: HEALTHY };
}

/**
 * judge decides a tenant's health from one round of probes at `now`. A component the apiserver's failure is blamed
 * on comes first: a dead etcd makes the apiserver's readyz fail too, and the verdict names etcd. The apiserver being
 * unreachable hides the controller manager's Lease (it cannot be read), so that component is then left out rather
 * than reported on stale knowledge.
 */
export function judge(p: ProbeResults, now: Date, limits: HealthLimits = DEFAULT_HEALTH_LIMITS): HealthVerdict {
  const report = (n: ComponentName) => p.components?.find((c) => c.name === n);
  const apiserver = judgeApiserver(p, report('kube-apiserver'));
  const lines = [
    judgeEtcd(p, report('etcd')),
    apiserver,
    apiserver.healthy || p.lease.state === 'present' || report('kube-controller-manager')
      ? judgeControllerManager(p, report('kube-controller-manager'), limits, now)
      : undefined,
    judgeSyncer(p.syncer, limits),
  ].filter((c): c is ComponentHealth => c !== undefined);
  const etcd = lines.find((c) => c.name === 'etcd');
  // An apiserver whose readyz fails only on etcd is not itself at fault: its line keeps the facts, etcd takes the blame.
  const first = etcd && !etcd.healthy ? etcd : lines.find((c) => !c.healthy);
  if (!first) return { healthy: true, reason: HEALTHY, message: 'every component is healthy', components: lines };
  return {
    healthy: false,
    component: first.name,
    reason: first.reason,
    message: `${first.name}: ${first.message ?? first.reason}`,
    components: lines,
  };
}

/**
 * sameHealth reports whether two verdicts would show the same status (healthy, blamed component, reason, and each
 * component's health, reason and restarts): only a change is worth a reconcile and a status write. Messages that
 * carry counters (queue depth, Lease age) change every round and are left out.
 */
export function sameHealth(a: HealthVerdict | undefined, b: HealthVerdict | undefined): boolean {
  if (!a || !b) return a === b;
  const sig = (v: HealthVerdict) =>
    JSON.stringify([
      v.healthy,
      v.component,
      v.reason,
      v.components.map((c) => [c.name, c.healthy, c.reason, c.restarts ?? 0, c.version ?? '']),
    ]);
  return sig(a) === sig(b);
}

/**
 * missedDeath is the verdict to show for components the provisioner said died but that were back (restarted by it)
 * before the probe looked: the same probe with those components reported down, so the tenant's status and events
 * name what died (an etcd restarted in half a second is still an etcd that died, not an apiserver whose readyz failed
 * or timed out meanwhile). Undefined when nothing died or the probe itself saw them down.
 */
export function missedDeath(
  results: ProbeResults,
  verdict: HealthVerdict,
  died: readonly string[],
  now: Date,
  limits: HealthLimits,
): HealthVerdict | undefined {
  const back = died.filter((n) => results.components?.some((c) => c.name === n && c.running));
  if (!back.length || (verdict.component && died.includes(verdict.component))) return undefined;
  const components = results.components!.map((c) =>
    back.includes(c.name)
      ? { ...c, running: false, message: `${c.name} exited and was restarted (${c.restarts} restarts)` }
      : c,
  );
  return judge({ ...results, components }, now, limits);
}
