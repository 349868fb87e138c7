import {
  buildOn,
  clone,
  type Decision,
  type KubeObject,
  type ObjectReference,
  PLUGIN_API_VERSION,
  type PluginContext,
  PREFIX,
  provenanceOf,
  R,
  type ResourcePlugin,
  type RouteContext,
  type TenantKey,
  upMeta,
} from '@virtualcluster-ts/plugin-sdk';

/** ClaimRef is the ObjectReference a bound PersistentVolume keeps to its claim. */
export type ClaimRef = ObjectReference;

/** PersistentVolume is the part of a core/v1 PersistentVolume this plugin reads. */
export interface PersistentVolume extends KubeObject {
  spec?: { claimRef?: ClaimRef; storageClassName?: string; [field: string]: unknown };
  status?: { phase?: string; [field: string]: unknown };
}

/**
 * PV_SPEC_FIELDS are the PersistentVolume spec fields a tenant sees as the super has them: what its claim binds
 * against and what `kubectl get pv` prints. The claimRef is rewritten to the tenant claim; mount options (server
 * settings) are dropped; the volume source is replaced (opaqueSource).
 */
export const PV_SPEC_FIELDS: readonly string[] = [
  'capacity',
  'accessModes',
  'persistentVolumeReclaimPolicy',
  'storageClassName',
  'volumeMode',
  'nodeAffinity',
  'volumeAttributesClassName',
];

/**
 * PV_ANNOTATIONS are the super PV annotations a tenant sees. `provisioned-by` names the provisioner (which the
 * public StorageClass shows anyway) and keeps the tenant's own PV controller from trying to delete the volume itself;
 * others (deletion secret names and namespaces, driver-specific keys) describe the storage back end.
 */
export const PV_ANNOTATIONS: readonly string[] = [
  'pv.kubernetes.io/provisioned-by',
  'pv.kubernetes.io/bound-by-controller',
];

/** OPAQUE_DRIVER_SUFFIX ends the CSI driver name a tenant PV shows for a super volume that is not a CSI volume. */
export const OPAQUE_DRIVER_SUFFIX = 'volumes.tenancy.x-k8s.io';

const NOT_SOURCE = new Set([...PV_SPEC_FIELDS, 'claimRef', 'mountOptions']);

/** volumeSourceOf returns the volume source fields of a PV spec (csi, nfs, hostPath, ...). */
function volumeSourceOf(spec: Record<string, unknown> | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(spec ?? {}).filter(([k, v]) => !NOT_SOURCE.has(k) && v !== undefined));
}

/**
 * opaqueSource is the volume source a tenant PV shows in place of the super one: a CSI source naming the super's CSI
 * driver (or `<type>.volumes.tenancy.x-k8s.io` for another type) with the volume's name as handle. The API requires
 * a source; the tenant mounts nothing itself (the super kubelet does), so it needs no handle, attributes, secrets,
 * server, path or device of the back end.
 */
export function opaqueSource(superSpec: Record<string, unknown> | undefined, name: string): Record<string, unknown> {
  const src = volumeSourceOf(superSpec);
  const csi = src.csi as { driver?: unknown; fsType?: unknown; readOnly?: unknown } | undefined;
  const type = Object.keys(src)[0] ?? 'unknown';
  const driver = typeof csi?.driver === 'string' ? csi.driver : `${type.toLowerCase()}.${OPAQUE_DRIVER_SUFFIX}`;
  const out: Record<string, unknown> = { driver, volumeHandle: name };
  if (typeof csi?.fsType === 'string') out.fsType = csi.fsType;
  if (typeof csi?.readOnly === 'boolean') out.readOnly = csi.readOnly;
  return { csi: out };
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
 * persistentvolumesPlugin shows a tenant the super PersistentVolumes bound to its claims, and of each what the claim
 * needs: capacity, access modes, class, reclaim policy, volume mode, node affinity (PV_SPEC_FIELDS), the claimRef
 * pointing at the tenant PVC (tenant namespace and uid), phase and reason. The back end stays in the super cluster:
 * the source is an opaque CSI source (opaqueSource), mount options, status messages and annotations other than
 * PV_ANNOTATIONS are dropped.
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
    const claimRef: ClaimRef = {
      apiVersion: ref.apiVersion ?? 'v1',
      kind: ref.kind ?? 'PersistentVolumeClaim',
      namespace: tenantNs,
      name: ref.name ?? '',
      uid,
    };
    const name = superObj.metadata?.name ?? '';
    const meta = upMeta(superObj, tenantObj);
    const annotations = Object.entries(meta.annotations ?? {}).filter(
      ([k]) => PV_ANNOTATIONS.includes(k) || k.startsWith(`${PREFIX}/`) || k.includes(`.${PREFIX}/`),
    );
    if (annotations.length) meta.annotations = Object.fromEntries(annotations);
    else delete meta.annotations;
    const desired = buildOn<PersistentVolume>(tenantObj, superObj, meta);
    const superSpec = superObj.spec as Record<string, unknown> | undefined;
    const kept = Object.fromEntries(
      PV_SPEC_FIELDS.filter((f) => superSpec?.[f] !== undefined).map((f) => [f, clone(superSpec![f])]),
    );
    // The API makes a PV's source immutable: a tenant PV keeps the one it was created with.
    const tenantSource = volumeSourceOf(tenantObj?.spec);
    const source = Object.keys(tenantSource).length ? tenantSource : opaqueSource(superSpec, name);
    desired.spec = { ...kept, ...source, claimRef };
    const st = superObj.status;
    if (st) {
      const status: Record<string, unknown> = {};
      for (const f of ['phase', 'reason', 'lastPhaseTransitionTime']) if (st[f] !== undefined) status[f] = clone(st[f]);
      desired.status = status;
    } else delete desired.status;
    return { object: desired };
  },
} satisfies ResourcePlugin<PersistentVolume>;

export default persistentvolumesPlugin;
