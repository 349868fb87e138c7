import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { LABEL } from '../../core/names/names.ts';
import type { Decision, ResourcePlugin, RouteContext, TenantKey } from '../../core/plugins/contract.ts';
import { clone, newObject, upMeta } from '../../core/plugins/helpers.ts';

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

const isPublic = (o: KubeObject): boolean => o.metadata?.labels?.[LABEL.public] === 'true';


/**
 * customresourcedefinitionsPlugin copies the super CRDs labelled public into every tenant that enables it: group, names,
 * scope and versions (schemas, subresources, printer columns). A conversion webhook is never copied, since it
 * serves the super apiserver; the tenant copy converts with strategy None. The tenant apiserver owns the status.
 */
export const customresourcedefinitionsPlugin = {
  manifest: {
    name: 'customresourcedefinitions',
    version: '0.1.0',
    description: 'Copies the super CRDs labelled tenancy.x-k8s.io/super.public=true into tenants, without conversion webhooks.',
    resource: { ...R.crds },
    direction: 'up',
    sourceOfTruth: 'super',
    processes: ['manager'],
    optIn: true,
  },

  route(superObj: CustomResourceDefinition, rctx: RouteContext): TenantKey[] {
    if (!isPublic(superObj)) return [];
    const name = superObj.metadata?.name ?? '';
    return rctx.tenants.map((t) => ({ tenant: t.key, namespace: '', name }));
  },

  toTenant(superObj: CustomResourceDefinition | undefined, tenantObj: CustomResourceDefinition | undefined): Decision<CustomResourceDefinition> {
    if (!superObj || !isPublic(superObj)) return { object: null };
    const from = superObj.spec ?? {};
    const desired: CustomResourceDefinition = tenantObj ? clone(tenantObj) : newObject<CustomResourceDefinition>(superObj, {});
    desired.metadata = upMeta(superObj, tenantObj);
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
