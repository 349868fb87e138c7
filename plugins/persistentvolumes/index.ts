import { R } from '../../core/kube/resources.ts';
import { provenanceOf } from '../../core/names/names.ts';
import {
  buildOn,
  clone,
  type Decision,
  type KubeObject,
  type ObjectReference,
  PLUGIN_API_VERSION,
  type PluginContext,
  type ResourcePlugin,
  type RouteContext,
  type TenantKey,
  upMeta,
} from '../sdk/src/index.ts';

/** ClaimRef is the ObjectReference a bound PersistentVolume keeps to its claim. */
export type ClaimRef = ObjectReference;

/** PersistentVolume is the part of a core/v1 PersistentVolume this plugin reads. */
export interface PersistentVolume extends KubeObject {
  spec?: { claimRef?: ClaimRef; storageClassName?: string; [field: string]: unknown };
  status?: { phase?: string; [field: string]: unknown };
}

/**
 * claimUid returns the uid of the tenant claim a super PV is bound to: the tenant PVC's uid when that PVC is the one
 * the super claim was written for. A stale claimRef (the claim was deleted, or deleted and created again under the
 * same name) keeps the uid the tenant PV already shows, so a Released volume stays Released in the tenant.
 */
function claimUid(
  ref: ClaimRef,
  tenantNs: string,
  tenantObj: PersistentVolume | undefined,
  ctx: PluginContext,
): string | undefined {
  const name = ref.name ?? '';
  const tenantPvc = ctx.tenantCache.get(R.persistentvolumeclaims, tenantNs, name);
  const superPvc = ctx.superCache.get(R.persistentvolumeclaims, ref.namespace, name);
  const writtenFor = provenanceOf(superPvc);
  const stale =
    !!superPvc &&
    ((!!ref.uid && superPvc.metadata?.uid !== ref.uid) ||
      (!!writtenFor && writtenFor.uid !== tenantPvc?.metadata?.uid));
  if (tenantPvc?.metadata?.uid && !stale) return tenantPvc.metadata.uid;
  const prev = tenantObj?.spec?.claimRef;
  return prev?.namespace === tenantNs && prev.name === name ? prev.uid : undefined;
}

/**
 * persistentvolumesPlugin shows a tenant the super PersistentVolumes bound to its claims: the super PV's spec with the
 * claimRef pointing at the tenant PVC (tenant namespace and uid), and the super PV's status.
 */
export const persistentvolumesPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'persistentvolumes',
    version: '0.1.0',
    description: 'Shows each tenant the super PersistentVolumes bound to its PersistentVolumeClaims.',
    resource: { ...R.persistentvolumes },
    direction: 'up',
    sourceOfTruth: 'super',
    processes: ['manager'],
  },

  reads: [{ resource: R.persistentvolumeclaims, side: 'super' }],
  // A tenant claim that binds (or is deleted and created again) changes the claimRef uid its volume shows.
  watches: [
    {
      resource: R.persistentvolumeclaims,
      side: 'tenant',
      map: (pvc) => {
        const volume = (pvc as { spec?: { volumeName?: string } }).spec?.volumeName;
        return volume ? [{ namespace: '', name: volume }] : [];
      },
    },
  ],

  route(superObj: PersistentVolume, rctx: RouteContext): TenantKey[] {
    const ns = superObj.spec?.claimRef?.namespace;
    const owner = ns ? rctx.tenantOfNamespace(ns) : undefined;
    return owner ? [{ tenant: owner.tenant, namespace: '', name: superObj.metadata?.name ?? '' }] : [];
  },

  toTenant(
    superObj: PersistentVolume | undefined,
    tenantObj: PersistentVolume | undefined,
    ctx: PluginContext,
  ): Decision<PersistentVolume> {
    const ref = superObj?.spec?.claimRef;
    const tenantNs = ref?.namespace ? ctx.names.tenantNamespace(ref.namespace) : undefined;
    if (!superObj || !ref || tenantNs === undefined) return { object: null };
    const uid = claimUid(ref, tenantNs, tenantObj, ctx);
    if (uid === undefined) {
      return {
        object: tenantObj ?? null,
        skip: {
          reason: 'ClaimNotFound',
          message: `claim ${tenantNs}/${ref.name ?? ''} of volume ${superObj.metadata?.name ?? ''} is not in the tenant`,
        },
      };
    }
    const claimRef: ClaimRef = { ...clone(ref), namespace: tenantNs, uid };
    delete claimRef.resourceVersion;
    const desired = buildOn<PersistentVolume>(tenantObj, superObj, upMeta(superObj, tenantObj));
    desired.spec = { ...clone(superObj.spec), claimRef };
    if (superObj.status) desired.status = clone(superObj.status);
    else delete desired.status;
    return { object: desired };
  },
} satisfies ResourcePlugin<PersistentVolume>;

export default persistentvolumesPlugin;
