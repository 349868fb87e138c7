import {
  buildOn,
  copyFields,
  type Decision,
  isPublic,
  type KubeObject,
  PLUGIN_API_VERSION,
  R,
  type ResourcePlugin,
  type RouteContext,
  routeToAllTenants,
  type TenantKey,
  upMeta,
} from '@virtualcluster-ts/plugin-sdk';

/** STORAGE_CLASS_FIELDS are the StorageClass fields a tenant sees as the super cluster has them. */
export const STORAGE_CLASS_FIELDS = [
  'provisioner',
  'parameters',
  'reclaimPolicy',
  'volumeBindingMode',
  'allowVolumeExpansion',
  'mountOptions',
  'allowedTopologies',
] as const;

/** StorageClass is a storage.k8s.io/v1 StorageClass. */
export interface StorageClass extends KubeObject {
  provisioner?: string;
  parameters?: Record<string, string>;
  reclaimPolicy?: string;
  volumeBindingMode?: string;
  allowVolumeExpansion?: boolean;
  mountOptions?: string[];
  allowedTopologies?: unknown[];
}

/**
 * storageclassesPlugin copies the super StorageClasses a super-cluster admin labelled public (LABEL.public = "true") into
 * every tenant, so tenant PVCs can name them; a class that loses the label is removed from the tenants.
 */
export const storageclassesPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'storageclasses',
    version: '0.1.0',
    description: 'Copies the super StorageClasses labelled tenancy.x-k8s.io/super.public=true into every tenant.',
    resource: { ...R.storageclasses },
    direction: 'up',
    sourceOfTruth: 'super',
    processes: ['manager'],
  },

  route(superObj: StorageClass, rctx: RouteContext): TenantKey[] {
    if (!isPublic(superObj)) return [];
    return routeToAllTenants(superObj, rctx);
  },

  toTenant(superObj: StorageClass | undefined, tenantObj: StorageClass | undefined): Decision<StorageClass> {
    if (!superObj || !isPublic(superObj)) return { object: null };
    const desired = buildOn<StorageClass>(tenantObj, superObj, upMeta(superObj, tenantObj));
    copyFields(superObj, desired, STORAGE_CLASS_FIELDS);
    return { object: desired };
  },
} satisfies ResourcePlugin<StorageClass>;

export default storageclassesPlugin;
