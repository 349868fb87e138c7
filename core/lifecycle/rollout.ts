import { SERVING_PHASES, type VirtualCluster } from '../api/virtualcluster.ts';
import type { ConditionInput } from '../controller/status.ts';
import { CONTINUE, ready, type LifecycleEvent, type Outcome } from './decisions.ts';
import type { RollComponent, RollFailure } from '../provisioners/roll.ts';

export { planRoll, ROLL_ORDER, stableJson } from '../provisioners/roll.ts';
export type { ComponentSettings, RollComponent, RollFailure } from '../provisioners/roll.ts';

/**
 * This module holds the decisions of rolling a spec change through a running control plane, without I/O: which
 * components restart and in which order, what the tenant shows while it rolls, when a failed step is reported, and
 * whether a ClusterVersion's rollout may take one more of its tenants. Provisioners do the restarts; the
 * VirtualCluster controller (core/lifecycle/controller.ts) applies these Outcomes.
 */

/** SPEC_APPLIED is the condition that says whether the control plane runs the spec as written. */
export const SPEC_APPLIED = 'SpecApplied';
/** UPDATING is the reason of a tenant whose control plane is rolling to a new spec. */
export const UPDATING = 'Updating';
/** APPLIED is the reason of SpecApplied=True. */
export const APPLIED = 'Applied';
/** ROLLOUT_FAILED is the reason of a roll that stopped at a component that did not come back healthy. */
export const ROLLOUT_FAILED = 'RolloutFailed';
/** ROLLOUT_WAITING is the reason of a roll held back by its ClusterVersion's maxUnavailable. */
export const ROLLOUT_WAITING = 'RolloutWaiting';
/** ROLLOUT_RECHECK_MS is how soon a roll held back by maxUnavailable is looked at again. */
export const ROLLOUT_RECHECK_MS = 5000;

/** specApplied is the SpecApplied condition with the given status, reason and message. */
function specApplied(status: ConditionInput['status'], reason: string, message: string): ConditionInput {
  return { type: SPEC_APPLIED, status, reason, message };
}

/**
 * rollStarts announces a roll of `plan` on a serving tenant: Updating with the components in order, SpecApplied=False,
 * a Normal event; published before the provisioner restarts anything. A first start or an empty plan gets nothing.
 */
export function rollStarts(vc: VirtualCluster, plan: readonly RollComponent[]): Outcome {
  if (!plan.length || !SERVING_PHASES.has(vc.status?.phase ?? '')) return CONTINUE;
  const message = `rolling ${plan.join(', then ')} to the new spec`;
  return {
    publish: true,
    status: { phase: 'Updating', reason: UPDATING, message },
    conditions: [specApplied('False', UPDATING, message)],
    events: vc.status?.phase === 'Updating' ? [] : [{ type: 'Normal', reason: UPDATING, message }],
  };
}

/**
 * rollHeld decides on a roll that may not start yet (`why`, from mayRoll): the tenant keeps serving its old spec and
 * says so (SpecApplied=False, RolloutWaiting), and is looked at again shortly.
 */
export function rollHeld(vc: VirtualCluster, why: string): Outcome {
  const c = vc.status?.conditions?.find((x) => x.type === SPEC_APPLIED);
  const events: LifecycleEvent[] =
    c?.reason === ROLLOUT_WAITING && c.message === why
      ? []
      : [{ type: 'Normal', reason: ROLLOUT_WAITING, message: why }];
  return {
    stop: true,
    conditions: [specApplied('False', ROLLOUT_WAITING, why)],
    events,
    requeueAfter: ROLLOUT_RECHECK_MS,
  };
}

/**
 * rollResult is what a serving tenant shows of its last roll, laid over the running Outcome: after a failed step,
 * RolloutFailed naming the component (Running while the previous one serves again, else Degraded with Ready=False)
 * and a Warning event once per message; a roll refused before anything restarted (failure.refused: an upgrade the
 * version-skew policy forbids) keeps the tenant Running with SpecApplied=False, that reason and the message; after a
 * roll that completed, or once the control plane runs the spec again, SpecApplied=True. A tenant that never rolled
 * and shows no SpecApplied condition gets nothing.
 */
export function rollResult(vc: VirtualCluster, rolled: boolean, failure: RollFailure | undefined): Outcome {
  const old = vc.status?.conditions?.find((x) => x.type === SPEC_APPLIED);
  if (failure?.refused) {
    const { refused: reason, message } = failure;
    const seen = old?.reason === reason && old.message === message;
    return {
      status: { phase: 'Running', reason, message },
      conditions: [specApplied('False', reason, message)],
      events: seen ? [] : [{ type: 'Warning', reason, message }],
    };
  }
  if (failure) {
    const message = failure.kept
      ? `${failure.component} did not come back healthy with the new spec; the previous ${failure.component} serves again: ${failure.message}`
      : `${failure.component} did not come back healthy with the new spec: ${failure.message}`;
    const seen = old?.reason === ROLLOUT_FAILED && old.message === message;
    return {
      status: { phase: failure.kept ? 'Running' : 'Degraded', reason: ROLLOUT_FAILED, message },
      conditions: [
        specApplied('False', ROLLOUT_FAILED, message),
        ...(failure.kept ? [] : [ready('False', ROLLOUT_FAILED, message)]),
      ],
      events: seen ? [] : [{ type: 'Warning', reason: ROLLOUT_FAILED, message }],
    };
  }
  if (!rolled && (!old || old.status === 'True')) return CONTINUE;
  return { conditions: [specApplied('True', APPLIED, 'the control plane runs the spec')] };
}

/** RolloutPeer is one tenant of a ClusterVersion as its rollout sees it. */
export interface RolloutPeer {
  key: string;
  phase?: string;
  /** a roll of it is under way in this manager (before its Updating phase is written) */
  rolling?: boolean;
}

/** UNAVAILABLE_PHASES are the phases in which a served tenant counts against maxUnavailable. */
const UNAVAILABLE_PHASES: ReadonlySet<string> = new Set(['Updating', 'Degraded']);

/**
 * mayRoll decides whether the tenant `self` may start a roll while it shares ClusterVersion `cv` with `peers`: at
 * most `maxUnavailable` of them are rolling or unavailable (Updating or Degraded) at a time. A tenant that did not
 * come back healthy keeps its place, so the rollout stops there until it is healthy again. Answers true, or why not.
 */
export function mayRoll(
  self: string,
  cv: string,
  peers: readonly RolloutPeer[],
  maxUnavailable: number,
): true | string {
  const busy = peers.filter((p) => p.key !== self && (p.rolling || UNAVAILABLE_PHASES.has(p.phase ?? '')));
  if (busy.length < Math.max(1, maxUnavailable)) return true;
  const names = busy.map((p) => `${p.key} (${p.rolling ? 'rolling' : p.phase})`).join(', ');
  const verb = busy.length === 1 ? 'is' : 'are';
  return `waiting to roll: ClusterVersion ${cv} allows ${maxUnavailable} unavailable tenant(s) at a time and ${names} ${verb} not back yet`;
}

/** peersOf are the VirtualClusters naming ClusterVersion `cv` (those being deleted left out), with `rolling` keys. */
export function peersOf(cv: string, all: readonly VirtualCluster[], rolling: ReadonlySet<string>): RolloutPeer[] {
  return all
    .filter((x) => x.spec?.clusterVersionName === cv && !x.metadata?.deletionTimestamp)
    .map((x) => {
      const key = `${x.metadata?.namespace}/${x.metadata?.name}`;
      return { key, phase: x.status?.phase, rolling: rolling.has(key) };
    });
}
