import type { Result } from '../controller/runner.ts';
import type { Provisioner, ProvisionLimits, ProvisionState } from '../provisioners/provisioner.ts';
import type { AcceptedPolicy, EffectiveSettings } from '../tenancy/policy.ts';
import type { ProvisionerType, VirtualCluster } from '../api/virtualcluster.ts';
import { CONTINUE, merge, type Outcome } from './decisions.ts';

/**
 * Pass is what one reconcile of one VirtualCluster has learned so far; each step reads it and adds what it found.
 * `vc` is the latest copy: a status write replaces it.
 */
export interface Pass {
  key: string;
  vc: VirtualCluster;
  root: string;
  effective?: EffectiveSettings;
  /** the TenantPolicy the effective settings came from, at the generation evaluated (status.acceptedPolicy) */
  acceptedPolicy?: AcceptedPolicy;
  type?: ProvisionerType;
  provisioner?: Provisioner;
  /** whether the control plane had never been Running when this reconcile began */
  first?: boolean;
  state?: Extract<ProvisionState, { ready: true }>;
  secretName?: string;
  /** what the provisioner is given besides the spec: the policy's limits and the ClusterVersion */
  limits?: ProvisionLimits;
}

/** Step is one named part of the reconcile: it does its I/O and says what follows. */
export type Step = (p: Pass) => Promise<Outcome>;

/** StepHooks are what runSteps does with the steps' outcomes: the controller's own writes. */
export interface StepHooks {
  /** release takes the tenant from the syncer and the health monitor at once (an outcome's `release`) */
  release(p: Pass): void;
  /** commit writes an outcome's status (when it has one) and then records its events */
  commit(p: Pass, o: Outcome): Promise<void>;
}

/**
 * runSteps runs steps in order until one stops. A step's `release` takes the tenant from the syncer at once; its
 * status, conditions and events wait until a step publishes or stops, or one throws, and are then written in one
 * place (hooks.commit): one write at the end whatever happened, and earlier only where a step publishes progress
 * before a long step. A stop with an error throws it (the runner retries with backoff); a stop with requeueAfter
 * returns it.
 */
export async function runSteps(p: Pass, steps: readonly Step[], hooks: StepHooks): Promise<Result> {
  let pending: Outcome = CONTINUE;
  try {
    for (const step of steps) {
      const o = await step(p);
      if (o.release) hooks.release(p);
      pending = merge(pending, o);
      if (o.stop) {
        if (o.error !== undefined) throw o.error;
        return o.requeueAfter !== undefined ? { requeueAfter: o.requeueAfter } : undefined;
      }
      if (o.publish) {
        const published = pending;
        pending = CONTINUE;
        await hooks.commit(p, published);
      }
    }
    return undefined;
  } finally {
    await hooks.commit(p, pending);
  }
}
