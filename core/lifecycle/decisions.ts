import type { Result } from '../controller/runner.ts';
import { setCondition, type ConditionInput } from '../controller/status.ts';
import type { ProvisionState } from '../provisioners/provisioner.ts';
import type { EffectiveSettings } from '../tenancy/policy.ts';
import { SERVING_PHASES, type VirtualCluster, type VirtualClusterStatus } from '../api/virtualcluster.ts';
import type { HealthVerdict } from './health.ts';
import { exposedCondition } from './kubeconfigsecret.ts';

/**
 * This module holds the VirtualCluster reconcile's decisions without I/O: each function takes what a step read (the
 * object, a validation, the policy's answer, the provisioner's state) and says what the user sees next — phase,
 * reason, message, conditions, events, requeue — as an Outcome. core/lifecycle/controller.ts runs the steps that read
 * and write, and applies the Outcomes in one place (nextStatus).
 */

/** EXPOSE_RECHECK_MS is how soon a Running tenant whose exposed address is still awaited is reconciled again. */
export const EXPOSE_RECHECK_MS = 10_000;
/** UNKNOWN_SUPER_RECHECK_MS is how soon a VirtualCluster pinned to an unknown super cluster is looked at again. */
export const UNKNOWN_SUPER_RECHECK_MS = 15_000;
/** REFUSED_RECHECK_MS is how soon a refused kubeconfig, provision or foreign object is looked at again. */
export const REFUSED_RECHECK_MS = 30_000;
/** WAITING_RECHECK_MS is how soon a control plane that is still starting is looked at again. */
export const WAITING_RECHECK_MS = 2000;

/** INVALID_SPEC is the reason of a VirtualCluster whose spec fails its schema or its plugins' config schemas. */
export const INVALID_SPEC = 'InvalidSpec';
/** UNKNOWN_SUPER_CLUSTER is the reason of a VirtualCluster pinned to a super cluster this manager does not serve. */
export const UNKNOWN_SUPER_CLUSTER = 'UnknownSuperCluster';
/** POLICY_VIOLATION is the reason of a VirtualCluster whose spec its TenantPolicy refuses. */
export const POLICY_VIOLATION = 'PolicyViolation';
/** POLICY_NOT_FOUND is the reason of a VirtualCluster waiting for the TenantPolicy its spec.policyName names. */
export const POLICY_NOT_FOUND = 'PolicyNotFound';
/** PROVISIONER_UNAVAILABLE is the reason of a VirtualCluster whose provisioner this manager does not have. */
export const PROVISIONER_UNAVAILABLE = 'ProvisionerUnavailable';
/** PROVISIONING is the reason of a control plane's first start, announced before the provisioner runs. */
export const PROVISIONING = 'Provisioning';
/** PROVISION_FAILED is the reason of a control plane whose provisioner failed (it is retried with back-off). */
export const PROVISION_FAILED = 'ProvisionFailed';
/** WAITING is the reason of a control plane the provisioner reports as still starting. */
export const WAITING = 'Waiting';
/** NOT_OWNED is the reason of a VirtualCluster whose root namespace, kubeconfig Secret or CA ConfigMap is not its own. */
export const NOT_OWNED = 'NotOwned';
/** RUNNING is the reason of a serving control plane (status, Ready condition and first-start event). */
export const RUNNING = 'Running';
/** UPDATED is the reason of the event on a control plane rolled to a new spec. */
export const UPDATED = 'Updated';
/** DELETING is the reason of a VirtualCluster whose control plane and namespaces are being removed. */
export const DELETING = 'Deleting';
/** RECOVERED is the reason of the event on a Degraded tenant whose components are healthy again. */
export const RECOVERED = 'Recovered';
/** COMPONENT_RESTARTED is the reason of the event on a component that died and was restarted. */
export const COMPONENT_RESTARTED = 'ComponentRestarted';
/** CONTROL_PLANE_UNAVAILABLE is the reason of a serving tenant whose provisioner reports its control plane not ready. */
export const CONTROL_PLANE_UNAVAILABLE = 'ControlPlaneUnavailable';
/** CLUSTER_VERSIONS_UNAVAILABLE is the reason of a VirtualCluster naming a ClusterVersion while none can be read. */
export const CLUSTER_VERSIONS_UNAVAILABLE = 'ClusterVersionsUnavailable';
/** ACCEPTED is the reason of the PolicyAccepted=True condition. */
export const ACCEPTED = 'Accepted';

/** LifecycleEvent is one Kubernetes Event a step records on the VirtualCluster. */
export interface LifecycleEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/**
 * Outcome is what one step of the reconcile decides. `stop` ends the reconcile after this step (absent, the next step
 * runs); `publish` writes the status so far before the next step runs (a long step behind it, as Flux's controllers
 * publish their Reconciling condition); `release` takes the tenant away from the syncer. `status` fields and
 * `conditions` are merged into the object's status, `events` recorded after it is written, and `requeueAfter` asks
 * for the key again. `error` is rethrown (a retry with back-off) once status and events are written.
 */
export interface Outcome {
  stop?: boolean;
  publish?: boolean;
  release?: boolean;
  status?: VirtualClusterStatus;
  conditions?: ConditionInput[];
  events?: LifecycleEvent[];
  requeueAfter?: number;
  error?: unknown;
}

/** CONTINUE is the Outcome of a step that found nothing to report: the next step runs. */
export const CONTINUE: Outcome = {};

/** ready is the Ready condition with the given status, reason and message. */
export function ready(status: ConditionInput['status'], reason: string, message: string): ConditionInput {
  return { type: 'Ready', status, reason, message };
}

/** policyAccepted is the PolicyAccepted=True condition naming the policy whose settings the tenant runs with. */
export function policyAccepted(e: EffectiveSettings): ConditionInput {
  return {
    type: 'PolicyAccepted',
    status: 'True',
    reason: ACCEPTED,
    message: `within policy ${JSON.stringify(e.policyName)}`,
  };
}

/** failed is the Outcome of a refusal: Error phase, Ready=False with the same reason, the tenant released. */
function failed(reason: string, message: string, extra: Partial<Outcome> = {}): Outcome {
  return {
    stop: true,
    release: true,
    status: { phase: 'Error', reason, message },
    conditions: [ready('False', reason, message)],
    ...extra,
  };
}

/**
 * pending is the Outcome of a tenant that waits for something outside it (a policy, a super cluster, capacity):
 * Pending, Ready=False with the reason, the tenant released, a Warning event only when the message is new.
 */
export function pending(vc: VirtualCluster, reason: string, message: string, requeueAfter?: number): Outcome {
  return {
    stop: true,
    release: true,
    status: { phase: 'Pending', reason, message },
    conditions: [ready('False', reason, message)],
    events: unchanged(vc, reason, message) ? [] : [{ type: 'Warning', reason, message }],
    ...(requeueAfter !== undefined && { requeueAfter }),
  };
}

/** unchanged reports whether vc already shows this reason and message (then its Warning event is not repeated). */
function unchanged(vc: VirtualCluster, reason: string, message: string): boolean {
  return vc.status?.reason === reason && vc.status?.message === message;
}

/**
 * invalidSpec decides on a VirtualCluster that fails its schema (`schemaMessage`, set when it does) or its plugins'
 * config schemas (`pluginErrors`): Error, InvalidSpec, a Warning event, no requeue (an edit wakes it).
 */
export function invalidSpec(key: string, schemaMessage: string | undefined, pluginErrors: string[]): Outcome {
  if (schemaMessage === undefined && !pluginErrors.length) return CONTINUE;
  const message = schemaMessage ?? pluginErrors.map((e) => `VirtualCluster ${key}: ${e}`).join('\n');
  return failed(INVALID_SPEC, message, { events: [{ type: 'Warning', reason: INVALID_SPEC, message }] });
}

/**
 * unknownSuperCluster decides on spec.superCluster: `known` is true or why no syncer of this manager serves that name.
 * Such a tenant is Pending, released and looked at again (the super cluster may be registered meanwhile); its Warning
 * event is recorded only when the message is new.
 */
export function unknownSuperCluster(vc: VirtualCluster, key: string, known: true | string): Outcome {
  if (known === true) return CONTINUE;
  const message = `VirtualCluster ${key}: spec.superCluster ${JSON.stringify(vc.spec?.superCluster)}: ${known}`;
  return pending(vc, UNKNOWN_SUPER_CLUSTER, message, UNKNOWN_SUPER_RECHECK_MS);
}

/**
 * policyNotFound decides on a spec.policyName no TenantPolicy has (`exists` false): a tenant not serving yet is
 * Pending until the platform creates it (a new policy requeues it); a serving one goes on to policyRefused.
 */
export function policyNotFound(vc: VirtualCluster, key: string, exists: boolean): Outcome {
  if (exists || SERVING_PHASES.has(vc.status?.phase ?? '')) return CONTINUE;
  const message = `VirtualCluster ${key}: spec.policyName: TenantPolicy ${JSON.stringify(vc.spec?.policyName)} does not exist; waiting for it`;
  return pending(vc, POLICY_NOT_FOUND, message);
}

/**
 * clusterVersionsUnavailable decides on a spec.clusterVersionName while the manager cannot read ClusterVersions yet
 * (`readable` false: the CRD is not installed, or the first list has not come back). Provisioning without the version
 * would start the wrong Kubernetes, so a tenant not serving yet is Pending and looked at again; a serving one keeps
 * running as it is and is looked at again, with nothing written.
 */
export function clusterVersionsUnavailable(vc: VirtualCluster, key: string, readable: boolean): Outcome {
  const name = vc.spec?.clusterVersionName;
  if (readable || !name) return CONTINUE;
  if (SERVING_PHASES.has(vc.status?.phase ?? '')) return { stop: true, requeueAfter: CLUSTER_VERSIONS_RECHECK_MS };
  const message =
    `VirtualCluster ${key}: spec.clusterVersionName ${JSON.stringify(name)}: the manager cannot read ClusterVersions ` +
    `(is the ClusterVersion CRD installed? \`vc install\` and deploy/ install it); waiting`;
  return pending(vc, CLUSTER_VERSIONS_UNAVAILABLE, message, CLUSTER_VERSIONS_RECHECK_MS);
}

/** CLUSTER_VERSIONS_RECHECK_MS is how often a tenant waiting for readable ClusterVersions is looked at again. */
export const CLUSTER_VERSIONS_RECHECK_MS = 10_000;

/**
 * policyRefused decides on a spec the TenantPolicy refuses (`message`). A tenant that runs on `lastAccepted` settings
 * keeps running (Ready stays True, PolicyAccepted=False); any other becomes Error and is released. The Warning event
 * is recorded only when the message is new; a policy change requeues it.
 */
export function policyRefused(
  vc: VirtualCluster,
  message: string,
  lastAccepted: EffectiveSettings | undefined,
): Outcome {
  const reason = POLICY_VIOLATION;
  const notAccepted: ConditionInput = { type: 'PolicyAccepted', status: 'False', reason, message };
  const phase = vc.status?.phase;
  if (lastAccepted && SERVING_PHASES.has(phase ?? '')) {
    const kept = `spec refused; the control plane keeps running on its last accepted settings (policy ${JSON.stringify(lastAccepted.policyName)}):\n${message}`;
    return {
      stop: true,
      status: { reason, message: kept },
      conditions: [ready('True', RUNNING, 'control plane is serving'), notAccepted],
      events: unchanged(vc, reason, kept) ? [] : [{ type: 'Warning', reason, message }],
    };
  }
  return {
    ...failed(reason, message),
    conditions: [ready('False', reason, message), notAccepted],
    events: unchanged(vc, reason, message) ? [] : [{ type: 'Warning', reason, message }],
  };
}

/**
 * provisionerUnavailable decides on the effective provisioner `type` when `available` says whether this manager has
 * it: ProvisionerUnavailable, without an event or requeue (a manager restart with it configured wakes the key).
 */
export function provisionerUnavailable(type: string | undefined, available: boolean): Outcome {
  if (type && available) return CONTINUE;
  const message = type
    ? `provisioner "${type}" is not available in this manager (spec.provisioner.type)`
    : 'no provisioner named (spec.provisioner.type) and this manager has no default (virtualClusters.defaultProvisioner)';
  return { ...failed(PROVISIONER_UNAVAILABLE, message), release: false };
}

/**
 * isFirstStart reports whether vc's control plane has never been Running (then reaching it announces Running); a
 * Sleeping tenant ran before: its wake is no first start.
 */
export function isFirstStart(vc: VirtualCluster): boolean {
  const phase = vc.status?.phase ?? '';
  return !SERVING_PHASES.has(phase) && phase !== 'Sleeping';
}

/**
 * provisioningStarts announces a first start with provisioner `type` (Provisioning phase and a Normal event),
 * published before the provisioner runs; a tenant already Provisioning, Running or Updating gets nothing.
 */
export function provisioningStarts(vc: VirtualCluster, type: string): Outcome {
  if (!isFirstStart(vc) || vc.status?.phase === 'Provisioning') return CONTINUE;
  return {
    publish: true,
    status: { phase: 'Provisioning', reason: PROVISIONING, message: `provisioning with ${type}` },
    conditions: [ready('False', PROVISIONING, 'control plane starting')],
    events: [
      {
        type: 'Normal',
        reason: PROVISIONING,
        message: `provisioning the control plane with the ${type} provisioner`,
      },
    ],
  };
}

/**
 * provisionFailed decides on an error the provisioner threw. `refusal` is the reason of a refusal that stays until
 * someone changes something (a KubeconfigError or ProvisionRefused): looked at again later, without a retry storm.
 * Any other error is rethrown for the runner's back-off.
 */
export function provisionFailed(e: unknown, refusal: string | undefined): Outcome {
  const message = e instanceof Error ? e.message : String(e);
  const reason = refusal ?? PROVISION_FAILED;
  return {
    ...failed(reason, message, { events: [{ type: 'Warning', reason, message }] }),
    release: false,
    ...(refusal ? { requeueAfter: REFUSED_RECHECK_MS } : { error: e }),
  };
}

/**
 * stillStarting decides on a control plane the provisioner reports not ready yet: Provisioning, Waiting, 2 s. A tenant
 * that was serving (`vc` Running or Degraded: a native tenant whose apiserver Pod is restarted by its StatefulSet) is
 * Degraded instead, with ControlPlaneUnavailable and the events of a transition; one Updating stays Updating.
 */
export function stillStarting(state: ProvisionState, vc?: VirtualCluster): Outcome {
  if (state.ready) return CONTINUE;
  const message = `waiting for ${state.waitingFor}`;
  if (vc && !isFirstStart(vc) && vc.status?.phase !== 'Updating')
    return {
      stop: true,
      status: { phase: 'Degraded', reason: CONTROL_PLANE_UNAVAILABLE, message },
      conditions: [ready('False', CONTROL_PLANE_UNAVAILABLE, message)],
      events: transitionEvents(vc, { healthy: false, reason: CONTROL_PLANE_UNAVAILABLE, message }),
      requeueAfter: WAITING_RECHECK_MS,
    };
  return {
    stop: true,
    // A tenant rolling to a new spec stays Updating while the provisioner waits for a component (a native StatefulSet).
    status: { phase: vc?.status?.phase === 'Updating' ? 'Updating' : 'Provisioning', reason: WAITING, message },
    conditions: [ready('False', WAITING, message)],
    requeueAfter: WAITING_RECHECK_MS,
  };
}

/** notOwned decides on an object the VirtualCluster needs that exists and is not the manager's: NotOwned, 30 s. */
export function notOwned(message: string | undefined): Outcome {
  if (!message) return CONTINUE;
  return failed(NOT_OWNED, message, {
    events: [{ type: 'Warning', reason: NOT_OWNED, message }],
    requeueAfter: REFUSED_RECHECK_MS,
  });
}

/**
 * running decides on a ready control plane served from `root` with the kubeconfig Secret `secretName`: Running with
 * its endpoint, Ready and PolicyAccepted True, Exposed when the API server is exposed, `cache` (CacheWithinLimit)
 * when the manager's syncers report on the tenant's caches, a Normal event on a first start
 * (`first`) or a roll, published before the tenant's DNS is ensured.
 */
export function running(
  state: Extract<ProvisionState, { ready: true }>,
  root: string,
  secretName: string,
  effective: EffectiveSettings,
  first: boolean,
  vc?: VirtualCluster,
  health?: HealthVerdict,
  cache?: ConditionInput,
): Outcome {
  const p = state.result;
  const endpoint = p.apiserverEndpoint;
  const access = p.externalAccess;
  // A roll's or a first start's verdict is of the processes before it: the monitor's next probe brings the new one.
  const verdict = state.rolled || first ? undefined : health;
  const degraded = verdict && !verdict.healthy ? verdict : undefined;
  const message = state.rolled ? 'control plane rolled to the new spec' : 'control plane is serving';
  const events: LifecycleEvent[] = [
    ...(first || state.rolled ? [{ type: 'Normal' as const, reason: state.rolled ? UPDATED : RUNNING, message }] : []),
    ...(vc && verdict ? [...transitionEvents(vc, verdict), ...restartEvents(verdict)] : []),
  ];
  return {
    publish: true,
    status: {
      phase: degraded ? 'Degraded' : 'Running',
      reason: degraded ? degraded.reason : RUNNING,
      message: degraded ? degraded.message : message,
      ...(verdict && { components: componentsStatus(verdict) }),
      clusterNamespace: root,
      kubeconfigSecretName: secretName,
      kubeletClientCertFingerprint: p.kubeletClientCertFingerprint,
      rotatingKubeletClientCertFingerprints: p.rotatingKubeletClientCertFingerprints,
      apiserverEndpoint: endpoint ? `https://${endpoint.host}:${endpoint.port}` : undefined,
    },
    conditions: [
      degraded ? ready('False', degraded.reason, degraded.message) : ready('True', RUNNING, 'control plane is serving'),
      policyAccepted(effective),
      ...(access ? [exposedCondition(access, p.kubeconfig)] : []),
      ...(cache ? [cache] : []),
    ],
    events,
  };
}

/** HealthChange is what transitionEvents needs of a health verdict. */
type HealthChange = Pick<HealthVerdict, 'healthy' | 'reason' | 'message'>;

/**
 * transitionEvents are the events of a serving tenant's health changing: a Warning when it turns Degraded or fails for
 * another reason, a Normal Recovered when a Degraded tenant is healthy again; nothing while it stays as it was.
 */
export function transitionEvents(vc: VirtualCluster, h: HealthChange): LifecycleEvent[] {
  const phase = vc.status?.phase;
  if (h.healthy)
    return phase === 'Degraded'
      ? [
          {
            type: 'Normal',
            reason: RECOVERED,
            message: `control plane healthy again after ${vc.status?.reason ?? 'Degraded'}`,
          },
        ]
      : [];
  if (phase === 'Degraded' && vc.status?.reason === h.reason) return [];
  return [{ type: 'Warning', reason: h.reason, message: h.message }];
}

/**
 * restartEvents are a Warning ComponentRestarted per component whose restart count the monitor saw grow since the
 * controller last took a verdict (HealthVerdict.restarted): each restart is told once, whatever status showed between.
 */
export function restartEvents(h: HealthVerdict): LifecycleEvent[] {
  return (h.restarted ?? []).map((c) => ({
    type: 'Warning' as const,
    reason: COMPONENT_RESTARTED,
    message: `${c.name} died and was restarted (${c.restarts} restarts)`,
  }));
}

/** componentsStatus is status.components from a verdict: only the fields a component has. */
export function componentsStatus(h: HealthVerdict): NonNullable<VirtualClusterStatus['components']> {
  return h.components.map((c) => ({
    name: c.name,
    healthy: c.healthy,
    reason: c.reason,
    ...(c.message !== undefined && { message: c.message.slice(0, 4096) }),
    ...(c.restarts !== undefined && { restarts: c.restarts }),
    ...(c.version !== undefined && { version: c.version }),
  }));
}

/**
 * afterDns ends the reconcile of a Running tenant with its DNS step's requeue, and while an exposed address is still
 * awaited (`awaitingAddress`: a load balancer's) no later than EXPOSE_RECHECK_MS, since nothing else wakes the key.
 */
export function afterDns(awaitingAddress: boolean, dns: Result): Outcome {
  const dnsAfter = dns ? dns.requeueAfter : undefined;
  if (!awaitingAddress) return { stop: true, requeueAfter: dnsAfter };
  return { stop: true, requeueAfter: Math.min(dnsAfter ?? EXPOSE_RECHECK_MS, EXPOSE_RECHECK_MS) };
}

/** deleting announces the deletion of vc (published before anything is removed); one already Deleting gets nothing. */
export function deleting(vc: VirtualCluster): Outcome {
  if (vc.status?.phase === 'Deleting') return { release: true };
  return {
    publish: true,
    release: true,
    status: { phase: 'Deleting', reason: DELETING, message: 'removing the control plane and super namespaces' },
    conditions: [ready('False', DELETING, 'deleting')],
  };
}

/**
 * nextStatus is vc's status after the outcome: its fields merged over the old ones, each condition set with vc's
 * generation as observedGeneration, and observedGeneration itself; vc is not changed.
 */
export function nextStatus(vc: VirtualCluster, o: Outcome, now: Date = new Date()): VirtualClusterStatus {
  const old = vc.status ?? {};
  const generation = vc.metadata?.generation;
  let conditions = old.conditions;
  for (const c of o.conditions ?? [])
    conditions = setCondition(conditions, { ...c, observedGeneration: generation }, now);
  return { ...old, ...o.status, conditions, observedGeneration: generation };
}

/** hasStatus reports whether the outcome changes status at all (else nothing is written for it). */
export function hasStatus(o: Outcome): boolean {
  return o.status !== undefined || (o.conditions?.length ?? 0) > 0;
}

/** merge folds a later outcome into the pending one: status fields and conditions over, events after. */
export function merge(pending: Outcome, next: Outcome): Outcome {
  return {
    release: pending.release || next.release,
    status: pending.status || next.status ? { ...pending.status, ...next.status } : undefined,
    conditions: [...(pending.conditions ?? []), ...(next.conditions ?? [])],
    events: [...(pending.events ?? []), ...(next.events ?? [])],
  };
}
