import {
  buildOn,
  checkFields,
  clone,
  type Decision,
  downMeta,
  type FieldShape,
  fieldRule as F,
  type KubeObject,
  PLUGIN_API_VERSION,
  type PluginContext,
  type ResourcePlugin,
} from '@virtualcluster-ts/plugin-sdk';

/** VolumeSnapshot is the part of a snapshot.storage.k8s.io/v1 VolumeSnapshot this plugin reads and writes. */
export interface VolumeSnapshot extends KubeObject {
  spec?: {
    source?: { persistentVolumeClaimName?: string; volumeSnapshotContentName?: string };
    volumeSnapshotClassName?: string;
  };
  status?: {
    boundVolumeSnapshotContentName?: string;
    creationTime?: string;
    readyToUse?: boolean;
    restoreSize?: string;
    error?: { time?: string; message?: string };
    volumeGroupSnapshotName?: string;
  };
}

/** STATUS_FIELDS are the status fields a tenant sees as the super snapshot has them. */
export const STATUS_FIELDS = ['creationTime', 'readyToUse', 'restoreSize', 'error'] as const;

/** PRE_PROVISIONED is the skip and event reason of a snapshot that names a VolumeSnapshotContent itself. */
export const PRE_PROVISIONED = 'PreProvisionedSnapshot';
/** NO_SOURCE is the skip and event reason of a snapshot that names no claim to take. */
export const NO_SOURCE = 'NoSnapshotSource';

/**
 * SNAPSHOT_SPEC_FIELDS is the rule of every snapshot.storage.k8s.io/v1 VolumeSnapshotSpec field; a field it does not
 * name refuses the snapshot (FIELD_REFUSED) instead of being dropped unseen (the tenant installs the CRD, whose schema
 * may keep fields the upstream one does not have).
 */
export const SNAPSHOT_SPEC_FIELDS: FieldShape = {
  source: F.object({
    persistentVolumeClaimName: F.copy,
    volumeSnapshotContentName: F.refuse(
      "a VolumeSnapshotContent is the super cluster's; snapshot a claim of your own with spec.source.persistentVolumeClaimName",
    ),
  }),
  volumeSnapshotClassName: F.copy,
};

/** FIELD_REFUSED is the skip and event reason of a snapshot with a spec field SNAPSHOT_SPEC_FIELDS does not name. */
export const FIELD_REFUSED = 'FieldRefused';

/**
 * refusal says why a tenant snapshot must not reach the super cluster. A VolumeSnapshotContent is cluster-scoped and
 * holds a handle to storage: a tenant naming one (a pre-provisioned snapshot) could bind another tenant's or the
 * platform's snapshot data, so only dynamic snapshots of the tenant's own claims sync.
 */
function refusal(s: VolumeSnapshot): { reason: string; message: string } | undefined {
  const src = s.spec?.source ?? {};
  const unknown =
    !src.volumeSnapshotContentName &&
    checkFields(
      s.spec,
      SNAPSHOT_SPEC_FIELDS,
      'spec',
      'the plugin knows the VolumeSnapshot fields of snapshot.storage.k8s.io/v1, and refuses a snapshot with a field ' +
        'added since until a rule says how it is kept within the tenant',
    );
  if (unknown) return { reason: FIELD_REFUSED, message: unknown.message };
  if (src.volumeSnapshotContentName)
    return {
      reason: PRE_PROVISIONED,
      message:
        "spec.source.volumeSnapshotContentName: a VolumeSnapshotContent is the super cluster's; snapshot a claim " +
        'of your own with spec.source.persistentVolumeClaimName',
    };
  if (!src.persistentVolumeClaimName)
    return { reason: NO_SOURCE, message: 'spec.source.persistentVolumeClaimName is required' };
  return undefined;
}

function toSuper(
  tenantObj: VolumeSnapshot,
  superObj: VolumeSnapshot | undefined,
  ctx: PluginContext,
): Decision<VolumeSnapshot> {
  const tm = tenantObj.metadata ?? {};
  const refused = refusal(tenantObj);
  if (refused)
    return {
      object: null,
      skip: refused,
      effects: [
        {
          type: 'event',
          side: 'tenant',
          regarding: {
            apiVersion: 'snapshot.storage.k8s.io/v1',
            kind: 'VolumeSnapshot',
            namespace: tm.namespace,
            name: tm.name ?? '',
            uid: tm.uid,
          },
          eventType: 'Warning',
          ...refused,
        },
      ],
    };
  const target = { namespace: ctx.names.superNamespace(tm.namespace ?? ''), name: tm.name ?? '' };
  const desired = buildOn<VolumeSnapshot>(superObj, tenantObj, downMeta(tenantObj, superObj, ctx, target));
  // The claim keeps its name in the super namespace (the persistentvolumeclaims plugin's rule); the class is one
  // of the super cluster's, named as the tenant names it (absent: the super's default class).
  const spec: NonNullable<VolumeSnapshot['spec']> = {
    source: { persistentVolumeClaimName: tenantObj.spec!.source!.persistentVolumeClaimName! },
  };
  if (tenantObj.spec?.volumeSnapshotClassName) spec.volumeSnapshotClassName = tenantObj.spec.volumeSnapshotClassName;
  desired.spec = spec;
  return { object: desired };
}

/**
 * toTenant copies the super snapshot's progress to the tenant's. boundVolumeSnapshotContentName names a super
 * cluster-scoped object the tenant cannot see, and volumeGroupSnapshotName a super group: neither goes up.
 */
function toTenant(
  superObj: VolumeSnapshot | undefined,
  tenantObj: VolumeSnapshot | undefined,
): Decision<VolumeSnapshot> {
  if (!tenantObj || !superObj) return { object: null };
  const desired = clone(tenantObj);
  if (!superObj.status) return { object: desired };
  const status: NonNullable<VolumeSnapshot['status']> = {};
  for (const k of STATUS_FIELDS)
    if (superObj.status[k] !== undefined) Object.assign(status, { [k]: clone(superObj.status[k]) });
  desired.status = status;
  return { object: desired };
}

/**
 * volumesnapshotsPlugin copies tenant VolumeSnapshots of the tenant's own claims into their super namespace, where
 * the super cluster's snapshot controller and CSI driver take them, and carries their progress back. It needs the
 * snapshot CRDs (snapshot.storage.k8s.io/v1) in the tenant and in the super cluster.
 */
export const volumesnapshotsPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'volumesnapshots',
    version: '0.1.0',
    description:
      "Copies tenant VolumeSnapshots of the tenant's own claims to the super cluster, and their progress back.",
    resource: {
      group: 'snapshot.storage.k8s.io',
      version: 'v1',
      resource: 'volumesnapshots',
      kind: 'VolumeSnapshot',
      namespaced: true,
    },
    direction: 'both',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
    rbac: [
      {
        apiGroups: ['snapshot.storage.k8s.io'],
        resources: ['volumesnapshots'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
      },
    ],
  },
  toSuper,
  toTenant,
} satisfies ResourcePlugin<VolumeSnapshot>;

export default volumesnapshotsPlugin;
