import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { LABEL } from '../../core/names/names.ts';
import type { Decision, ResourcePlugin, RouteContext, TenantKey } from '../../core/plugins/contract.ts';
import { clone, newObject, upMeta } from '../../core/plugins/helpers.ts';

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

const isPublic = (o: KubeObject): boolean => o.metadata?.labels?.[LABEL.public] === 'true';


/**
 * storageclassesPlugin copies the super StorageClasses a super-cluster admin labelled public (LABEL.public = "true") into
 * every tenant, so tenant PVCs can name them; a class that loses the label is removed from the tenants.
 */
export const storageclassesPlugin = {
  manifest: {
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
    const name = superObj.metadata?.name ?? '';
    return rctx.tenants.map((t) => ({ tenant: t.key, namespace: '', name }));
  },

  toTenant(superObj: StorageClass | undefined, tenantObj: StorageClass | undefined): Decision<StorageClass> {
    if (!superObj || !isPublic(superObj)) return { object: null };
    const desired: StorageClass = tenantObj ? clone(tenantObj) : newObject<StorageClass>(superObj, {});
    desired.metadata = upMeta(superObj, tenantObj);
    for (const f of STORAGE_CLASS_FIELDS) {
      if (superObj[f] === undefined) delete desired[f];
      else (desired as KubeObject)[f] = clone(superObj[f]);
    }
    return { object: desired };
  },
} satisfies ResourcePlugin<StorageClass>;

export default storageclassesPlugin;
