import {
  clone,
  copyFields,
  type Decision,
  downMeta,
  type Effect,
  keepSuperOwned,
  type KubeObject,
  newObject,
  PLUGIN_API_VERSION,
  type PluginContext,
  R,
  type ResourcePlugin,
} from '@virtualcluster-ts/plugin-sdk';
import { checkClaimFields } from './fields.ts';
import { checkClaim, CLAIM_POLICY_VIOLATION, type ClaimRefusal, sharedDefaultClass } from './policy.ts';

export { CLAIM_FIELDS_VERSION, CLAIM_SPEC_FIELDS, checkClaimFields } from './fields.ts';

/** TypedObjectReference is the dataSource / dataSourceRef of a claim. */
export interface TypedObjectReference {
  apiGroup?: string;
  kind?: string;
  name?: string;
  namespace?: string;
}

/** PersistentVolumeClaimSpec is the part of a claim's spec this plugin touches. */
export interface PersistentVolumeClaimSpec {
  accessModes?: string[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  storageClassName?: string;
  volumeMode?: string;
  selector?: Record<string, unknown>;
  dataSource?: TypedObjectReference;
  dataSourceRef?: TypedObjectReference;
  volumeName?: string;
  [field: string]: unknown;
}

/** PersistentVolumeClaim is the part of a core/v1 PersistentVolumeClaim this plugin touches. */
export interface PersistentVolumeClaim extends KubeObject {
  spec?: PersistentVolumeClaimSpec;
  status?: {
    phase?: string;
    accessModes?: string[];
    capacity?: Record<string, string>;
    conditions?: Array<Record<string, unknown>>;
    [field: string]: unknown;
  };
}

/** DOWN_SPEC_FIELDS are the spec fields a new super claim takes from the tenant claim. */
export const DOWN_SPEC_FIELDS = [
  'accessModes',
  'resources',
  'storageClassName',
  'volumeMode',
  'selector',
  'dataSource',
  'dataSourceRef',
] as const;

/** UP_STATUS_FIELDS are the status fields the tenant claim takes from the super claim. */
export const UP_STATUS_FIELDS = ['phase', 'accessModes', 'capacity', 'conditions'] as const;

/**
 * SUPER_ANNOTATIONS are claim annotations written by the super's volume controllers and scheduler (binding,
 * provisioner, selected node, resizer). Tenant values are dropped; the super's are kept, or every write would
 * strip them and the super's PV controller would put them back.
 */
export const SUPER_ANNOTATIONS = [
  'volume.kubernetes.io/storage-provisioner',
  'volume.beta.kubernetes.io/storage-provisioner',
  'volume.kubernetes.io/selected-node',
  'volume.kubernetes.io/storage-resizer',
] as const;

/** SUPER_ANNOTATION_PREFIXES are prefixes of claim annotations owned by the super like SUPER_ANNOTATIONS. */
export const SUPER_ANNOTATION_PREFIXES = ['pv.kubernetes.io/'] as const;

const superOwned = (key: string): boolean =>
  (SUPER_ANNOTATIONS as readonly string[]).includes(key) || SUPER_ANNOTATION_PREFIXES.some((p) => key.startsWith(p));

/** refuse tells the tenant on a Warning event why its claim has no super copy. */
function refuse(tenantObj: PersistentVolumeClaim, r: ClaimRefusal): Decision<PersistentVolumeClaim> {
  const tm = tenantObj.metadata ?? {};
  const regarding = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    namespace: tm.namespace ?? '',
    name: tm.name ?? '',
    uid: tm.uid ?? '',
  };
  return {
    object: null,
    skip: { reason: CLAIM_POLICY_VIOLATION, message: r.message },
    effects: [
      {
        type: 'event',
        side: 'tenant',
        regarding,
        eventType: 'Warning',
        reason: CLAIM_POLICY_VIOLATION,
        message: r.message,
      },
    ],
  };
}

function toSuper(
  tenantObj: PersistentVolumeClaim,
  superObj: PersistentVolumeClaim | undefined,
  ctx: PluginContext,
): Decision<PersistentVolumeClaim> {
  const tm = tenantObj.metadata ?? {};
  const meta = downMeta(tenantObj, superObj, ctx, {
    namespace: ctx.names.superNamespace(tm.namespace ?? ''),
    name: tm.name ?? '',
  });
  const sm = superObj?.metadata;
  const annotations = keepSuperOwned(meta.annotations, sm?.annotations, superOwned);
  if (annotations) meta.annotations = annotations;
  else delete meta.annotations;

  if (!superObj) {
    const ts = tenantObj.spec ?? {};
    const refusal = checkClaimFields(ts) ?? checkClaim(ts, ctx);
    if (refusal) return refuse(tenantObj, refusal);
    const spec: PersistentVolumeClaimSpec = {};
    copyFields(ts, spec, DOWN_SPEC_FIELDS);
    // Named, not left to the super's admission (checkClaim: only a default shared with tenants).
    spec.storageClassName ??= sharedDefaultClass(ctx);
    if (spec.dataSourceRef?.namespace)
      spec.dataSourceRef.namespace = ctx.names.superNamespace(spec.dataSourceRef.namespace);
    return {
      object: newObject<PersistentVolumeClaim>({ apiVersion: 'v1', kind: 'PersistentVolumeClaim' }, meta, { spec }),
    };
  }

  // The spec of a claim is immutable except resources.requests, and that only once the claim is bound.
  const desired: PersistentVolumeClaim = { ...clone(superObj), metadata: meta };
  const requests = tenantObj.spec?.resources?.requests;
  if (requests && superObj.status?.phase === 'Bound') {
    const spec = (desired.spec ??= {});
    spec.resources = { ...spec.resources, requests: clone(requests) };
  }
  return { object: desired };
}

function toTenant(
  superObj: PersistentVolumeClaim | undefined,
  tenantObj: PersistentVolumeClaim | undefined,
  _ctx: PluginContext,
): Decision<PersistentVolumeClaim> {
  if (!tenantObj)
    return {
      object: null,
      skip: { reason: 'NoTenantObject', message: 'the tenant claim is gone; nothing to carry up' },
    };
  const desired = clone(tenantObj);
  if (!superObj) return { object: desired };
  const status = { ...desired.status };
  copyFields(superObj.status, status, UP_STATUS_FIELDS);
  desired.status = status;

  const effects: Effect[] = [];
  const volume = superObj.spec?.volumeName;
  const own = desired.spec?.volumeName;
  if (volume && !own) desired.spec = { ...desired.spec, volumeName: volume };
  else if (volume && own !== volume) {
    const tm = tenantObj.metadata ?? {};
    effects.push({
      type: 'event',
      side: 'tenant',
      regarding: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: tm.namespace,
        name: tm.name ?? '',
        uid: tm.uid,
      },
      eventType: 'Warning',
      reason: 'VolumeNameMismatch',
      message: `the claim names volume ${own} but the super cluster bound it to ${volume}; spec.volumeName cannot change once set`,
    });
  }
  return effects.length ? { object: desired, effects } : { object: desired };
}

/**
 * persistentvolumeclaimsPlugin copies tenant claims to the super cluster, where they are provisioned and bound,
 * and carries the binding back: status, and spec.volumeName (the super PV, which the persistentvolumes plugin shows
 * to the tenant under the same name). volumeName never goes down: the super binds.
 */
export const persistentvolumeclaimsPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'persistentvolumeclaims',
    version: '0.1.0',
    description: 'Copies tenant PersistentVolumeClaims to the super cluster and carries binding and status back.',
    resource: { ...R.persistentvolumeclaims },
    direction: 'both',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  reads: [{ resource: R.storageclasses, side: 'super' }],
  toSuper,
  toTenant,
} satisfies ResourcePlugin<PersistentVolumeClaim>;

export default persistentvolumeclaimsPlugin;
