import {
  type Effect,
  type KubeObject,
  QUOTA_OBJECT_NAME,
  R,
  type RouteContext,
  type TenantKey,
  type TenantView,
  type Watch,
} from '@virtualcluster-ts/plugin-sdk';

/**
 * The tenant's ResourceQuota and LimitRange, kept by the syncer in every super namespace of the tenant as its policy's
 * quota section says (issue 12). The tenant has no access to the super cluster, so it cannot change them; a tenant
 * object of the same name stays in the tenant (ResourceQuotas and LimitRanges are not synced).
 */

/** quotaObjects are the ResourceQuota and LimitRange of a tenant's super namespaces; null where the policy has none. */
export function quotaObjects(tenant: Pick<TenantView, 'quota'>): {
  resourceQuota: KubeObject | null;
  limitRange: KubeObject | null;
} {
  const q = tenant.quota;
  const hard = q?.resourceQuota ?? {};
  const limits = q?.limitRange ?? [];
  return {
    resourceQuota: Object.keys(hard).length
      ? {
          apiVersion: 'v1',
          kind: 'ResourceQuota',
          metadata: { name: QUOTA_OBJECT_NAME },
          spec: { hard: { ...hard } },
        }
      : null,
    limitRange: limits.length
      ? {
          apiVersion: 'v1',
          kind: 'LimitRange',
          metadata: { name: QUOTA_OBJECT_NAME },
          spec: { limits: structuredClone(limits) },
        }
      : null,
  };
}

/**
 * quotaEffect asks the core to keep the quota objects in the super namespace of tenant namespace `namespace`; a tenant
 * without a quota section (a static tenant of the manager's configuration) gets none and nothing is touched.
 */
export function quotaEffect(namespace: string, tenant: Pick<TenantView, 'quota'>): Effect[] {
  if (!tenant.quota) return [];
  return [{ type: 'superQuota', namespace, ...quotaObjects(tenant) }];
}

const requeueOwner = (obj: KubeObject, ctx: RouteContext): TenantKey[] => {
  const m = obj.metadata ?? {};
  if (m.name !== QUOTA_OBJECT_NAME || !m.namespace) return [];
  const owner = ctx.tenantOfNamespace(m.namespace);
  return owner ? [{ tenant: owner.tenant, namespace: '', name: owner.namespace }] : [];
};

/**
 * quotaWatches requeue a tenant namespace when the quota objects of its super namespace change or go, so the
 * namespaces plugin puts them back as the policy says.
 */
export const quotaWatches: Watch[] = [
  { resource: R.resourcequotas, side: 'super', map: requeueOwner },
  { resource: R.limitranges, side: 'super', map: requeueOwner },
];
