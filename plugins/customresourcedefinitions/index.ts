import {
  buildOn,
  clone,
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

/** CustomResourceDefinition is the part of an apiextensions.k8s.io/v1 CRD this plugin reads. */
export interface CustomResourceDefinition extends KubeObject {
  spec?: {
    group?: string;
    names?: Record<string, unknown>;
    scope?: string;
    versions?: unknown[];
    conversion?: { strategy?: string; [field: string]: unknown };
    [field: string]: unknown;
  };
}

/**
 * customresourcedefinitionsPlugin copies the super CRDs labelled public into every tenant that enables it: group, names,
 * scope and versions (schemas, subresources, printer columns). A conversion webhook is never copied, since it
 * serves the super apiserver; the tenant copy converts with strategy None. The tenant apiserver owns the status.
 */
export const customresourcedefinitionsPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'customresourcedefinitions',
    version: '0.1.0',
    description:
      'Copies the super CRDs labelled tenancy.x-k8s.io/super.public=true into tenants, without conversion webhooks.',
    resource: { ...R.crds },
    direction: 'up',
    sourceOfTruth: 'super',
    processes: ['manager'],
    optIn: true,
  },

  route(superObj: CustomResourceDefinition, rctx: RouteContext): TenantKey[] {
    if (!isPublic(superObj)) return [];
    return routeToAllTenants(superObj, rctx);
  },

  toTenant(
    superObj: CustomResourceDefinition | undefined,
    tenantObj: CustomResourceDefinition | undefined,
  ): Decision<CustomResourceDefinition> {
    if (!superObj || !isPublic(superObj)) return { object: null };
    const from = superObj.spec ?? {};
    const desired = buildOn<CustomResourceDefinition>(tenantObj, superObj, upMeta(superObj, tenantObj));
    desired.spec = {
      ...desired.spec,
      group: from.group,
      names: clone(from.names),
      scope: from.scope,
      versions: clone(from.versions),
      conversion: from.conversion?.strategy === 'None' ? clone(from.conversion) : { strategy: 'None' },
    };
    return { object: desired };
  },
} satisfies ResourcePlugin<CustomResourceDefinition>;

export default customresourcedefinitionsPlugin;
