import { R } from '../../core/kube/resources.ts';
import {
  buildOn,
  clone,
  copyFields,
  type Decision,
  downMeta,
  type KubeObject,
  PLUGIN_API_VERSION,
  type PluginContext,
  type ResourcePlugin,
} from '../sdk/src/index.ts';

/** SPEC_FIELDS are the Ingress spec fields the super Ingress takes from the tenant Ingress. */
export const SPEC_FIELDS = ['ingressClassName', 'rules', 'tls', 'defaultBackend'] as const;

/** Ingress is the part of a networking.k8s.io/v1 Ingress this plugin touches. */
export interface Ingress extends KubeObject {
  spec?: {
    ingressClassName?: string;
    rules?: unknown[];
    tls?: unknown[];
    defaultBackend?: Record<string, unknown>;
    [field: string]: unknown;
  };
  status?: { loadBalancer?: Record<string, unknown>; [field: string]: unknown };
}

function toSuper(tenantObj: Ingress, superObj: Ingress | undefined, ctx: PluginContext): Decision<Ingress> {
  const tm = tenantObj.metadata ?? {};
  const meta = downMeta(tenantObj, superObj, ctx, {
    namespace: ctx.names.superNamespace(tm.namespace ?? ''),
    name: tm.name ?? '',
  });
  const spec = { ...clone(superObj?.spec) };
  copyFields(tenantObj.spec, spec, SPEC_FIELDS);
  const desired = buildOn<Ingress>(superObj, tenantObj, meta, { spec });
  return { object: desired };
}

function toTenant(superObj: Ingress | undefined, tenantObj: Ingress | undefined): Decision<Ingress> {
  if (!tenantObj)
    return {
      object: null,
      skip: { reason: 'NoTenantObject', message: 'the tenant ingress is gone; nothing to carry up' },
    };
  const desired = clone(tenantObj);
  if (!superObj) return { object: desired };
  desired.status = { ...desired.status, loadBalancer: clone(superObj.status?.loadBalancer ?? {}) };
  return { object: desired };
}

/**
 * ingressesPlugin copies tenant Ingresses to the super cluster, where the shared ingress controller serves them, and
 * carries the load balancer addresses back. Backends and TLS secrets keep their names: Services and Secrets are
 * synced under the same names in the tenant's super namespace.
 */
export const ingressesPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'ingresses',
    version: '0.1.0',
    description: 'Copies tenant Ingresses to the super cluster and carries the load balancer status back.',
    resource: { ...R.ingresses },
    direction: 'both',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
    optIn: true,
  },
  toSuper,
  toTenant,
} satisfies ResourcePlugin<Ingress>;

export default ingressesPlugin;
