import {
  buildOn,
  clone,
  copyFields,
  type Decision,
  downMeta,
  type Effect,
  type KubeObject,
  PLUGIN_API_VERSION,
  type PluginContext,
  R,
  type ResourcePlugin,
  stripDown,
} from '@virtualcluster-ts/plugin-sdk';
import {
  ANNOTATIONS_IGNORED,
  checkIngress,
  externalNameBackends,
  INGRESS_POLICY_VIOLATION,
  type IngressRefusal,
  splitAnnotations,
} from './policy.ts';
import { checkIngressFields } from './fields.ts';

export {
  ANNOTATIONS_IGNORED,
  checkIngress,
  CLASS_ANNOTATION,
  externalNameBackends,
  DEFAULT_INGRESSES_POLICY,
  hostAllowed,
  INGRESS_POLICY_VIOLATION,
  isSnippet,
  splitAnnotations,
} from './policy.ts';

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

/** SILENT_DROPS are annotations dropped without a warning: client bookkeeping no ingress controller reads. */
const SILENT_DROPS = new Set(['kubectl.kubernetes.io/last-applied-configuration']);

const ingressRef = (i: Ingress) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  namespace: i.metadata?.namespace,
  name: i.metadata?.name ?? '',
  uid: i.metadata?.uid,
});

/**
 * refuse tells the tenant why its Ingress is not synced (a Warning event naming every field). A super Ingress that
 * exists stays as it was, the way an apiserver keeps an object whose update it rejects: nothing running is torn down
 * because of a policy edit (the platform deletes what it wants gone, such as a host it gave to another tenant).
 */
function refuse(tenantObj: Ingress, refusals: IngressRefusal[]): Decision<Ingress> {
  const message = refusals.map((r) => `${r.field}: ${r.message}`).join('; ');
  const effects: Effect[] = [
    {
      type: 'event',
      side: 'tenant',
      regarding: ingressRef(tenantObj),
      eventType: 'Warning',
      reason: INGRESS_POLICY_VIOLATION,
      message,
    },
  ];
  return { object: null, skip: { reason: INGRESS_POLICY_VIOLATION, message }, effects };
}

function toSuper(tenantObj: Ingress, superObj: Ingress | undefined, ctx: PluginContext): Decision<Ingress> {
  const tm = tenantObj.metadata ?? {};
  const unknown = checkIngressFields(tenantObj.spec);
  const typeOf = (name: string) =>
    ctx.tenantCache.get<KubeObject & { spec?: { type?: string } }>(R.services, tm.namespace ?? '', name)?.spec?.type;
  const refusals = [
    ...(unknown ? [unknown] : []),
    ...checkIngress(tenantObj, ctx.tenant.ingresses),
    ...externalNameBackends(tenantObj, typeOf),
  ];
  if (refusals.length) return refuse(tenantObj, refusals);
  const meta = downMeta(tenantObj, superObj, ctx, {
    namespace: ctx.names.superNamespace(tm.namespace ?? ''),
    name: tm.name ?? '',
  });
  // The Ingress list, not the general copiedMetadata one, decides which annotations reach the shared controller.
  const annotations = stripDown(tm.annotations, ctx.tenant.opaqueMetaPrefixes);
  const { kept, dropped } = splitAnnotations(annotations, ctx.tenant.ingresses);
  if (kept.length) meta.annotations = Object.fromEntries(kept.map((k) => [k, annotations![k]!]));
  else delete meta.annotations;
  const spec = { ...clone(superObj?.spec) };
  copyFields(tenantObj.spec, spec, SPEC_FIELDS);
  const desired = buildOn<Ingress>(superObj, tenantObj, meta, { spec });
  const told = dropped.filter((k) => !SILENT_DROPS.has(k));
  if (!told.length) return { object: desired };
  return {
    object: desired,
    effects: [
      {
        type: 'event',
        side: 'tenant',
        regarding: ingressRef(tenantObj),
        eventType: 'Warning',
        reason: ANNOTATIONS_IGNORED,
        message:
          `annotations not copied to the shared ingress controller: ${told.join(', ')} ` +
          "(only keys the tenant's policy lists in ingresses.annotations are; snippets never)",
      },
    ],
  };
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
 * synced under the same names in the tenant's super namespace. Hosts and classes must be the tenant policy's
 * (ingresses.hosts, ingresses.classes), else the Ingress is refused with a Warning event; only annotation keys the
 * policy lists (ingresses.annotations) are copied, snippets never. A backend that is an ExternalName Service in the
 * tenant is refused: the shared controller would follow the alias from the platform's network (such Services have no
 * super copy either, so an Ingress synced before its backend became one serves nothing for it).
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
  // A backend Service's type decides whether the Ingress is refused.
  reads: [{ resource: R.services, side: 'tenant' }],
  toSuper,
  toTenant,
} satisfies ResourcePlugin<Ingress>;

export default ingressesPlugin;
