import type { Decision } from '@virtualcluster-ts/plugin-sdk';
import type { Pod } from '@virtualcluster-ts/plugin-sdk/pods';

/** SCHEDULING_GATED is the skip reason of a tenant Pod whose scheduling gates are not all removed yet. */
export const SCHEDULING_GATED = 'SchedulingGated';

/**
 * gated waits for the tenant to remove a Pod's scheduling gates: the super Pod is created without gates once none is
 * left (the tenant Pod's update wakes the syncer), since nobody would remove them from the super Pod.
 */
export function gated(tenantPod: Pod): Decision<Pod> {
  const names = (tenantPod.spec?.schedulingGates ?? []).map((g) => g.name).join(', ');
  return {
    object: null,
    skip: { reason: SCHEDULING_GATED, message: `waiting for the scheduling gates ${names} to be removed` },
  };
}
