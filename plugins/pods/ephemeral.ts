import { type KubeObject, type PluginContext, R } from '@virtualcluster-ts/plugin-sdk';
import type { PodRefusal, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { ephemeralClaimName } from './translate.ts';

/**
 * checkEphemeralClaims refuses a tenant Pod whose generic ephemeral volume would be a claim the Pod does not own. The
 * super Pod reads claim `<pod>-<volume>` (claimEphemeralVolumes), and `<pod>-<volume>` names collide: Pod `a` with
 * volume `b-c` and Pod `a-b` with volume `c` both mean `a-b-c`, and a tenant may have made a claim of that name
 * itself. Upstream, the ephemeral volume controller and the kubelet use the claim only when the Pod is its
 * controlling owner; the super kubelet sees a plain claim, so the syncer makes that check: a tenant claim of the name
 * that exists and is not controlled by this Pod (by uid) is refused, as upstream says it. A claim not made yet is
 * the tenant controller's to make; the super Pod waits for it as for any claim.
 */
export function checkEphemeralClaims(
  spec: PodSpec,
  pod: { namespace?: string; name?: string; uid?: string },
  ctx: Pick<PluginContext, 'tenantCache'>,
): PodRefusal | undefined {
  for (const [i, v] of (spec.volumes ?? []).entries()) {
    if (v.ephemeral === undefined) continue;
    const name = ephemeralClaimName(pod.name ?? '', v.name);
    const claim = ctx.tenantCache.get<KubeObject>(R.persistentvolumeclaims, pod.namespace, name);
    if (!claim || claim.metadata?.ownerReferences?.some((r) => r.controller === true && r.uid === pod.uid)) continue;
    return {
      field: `spec.volumes[${i}].ephemeral`,
      message:
        `spec.volumes[${i}] "${v.name}": PVC ${pod.namespace ?? ''}/${name} was not created for this Pod (the Pod is ` +
        `not its owner); rename the volume or the Pod, or remove that claim`,
    };
  }
  return undefined;
}
