import {
  buildOn,
  checkFields,
  clone,
  type Decision,
  downMeta,
  type Effect,
  type FieldShape,
  fieldRule as F,
  type KubeObject,
  type ObjectReference,
  PLUGIN_API_VERSION,
  type PluginContext,
  R,
  type ResourcePlugin,
  type RouteContext,
  SERVICE_NAME_LABEL,
  type TenantKey,
} from '@virtualcluster-ts/plugin-sdk';
import { hasSelector } from './selector.ts';
import { ENDPOINTS_FIELDS_VERSION } from './fields.ts';
import {
  ADDRESSES_REFUSED,
  addressRule,
  apiserverAddress,
  objectsHolding,
  REFUSED_RETRY_MS,
  withAddress,
} from './policy.ts';

/** SLICE_FIELDS_REFUSED is the skip and event reason of tenant EndpointSlices with a field the syncer has no rule for. */
export const SLICE_FIELDS_REFUSED = 'EndpointSliceFieldRefused';

/** MANAGED_BY_LABEL names the controller that writes an EndpointSlice. */
export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
/**
 * DERIVED_MANAGERS are the controllers whose EndpointSlices the super cluster derives itself: the EndpointSlice
 * controller's (Services with a selector) and the mirroring controller's (from the Endpoints the endpoints plugin
 * copies).
 */
export const DERIVED_MANAGERS: readonly string[] = [
  'endpointslice-controller.k8s.io',
  'endpointslicemirroring-controller.k8s.io',
];

/** SliceEndpoint is one endpoint of an EndpointSlice. */
export interface SliceEndpoint {
  addresses?: string[];
  conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
  hostname?: string;
  targetRef?: ObjectReference;
  nodeName?: string;
  zone?: string;
  hints?: Record<string, unknown>;
  deprecatedTopology?: Record<string, string>;
}

/** SlicePort is one port of an EndpointSlice. */
export interface SlicePort {
  name?: string;
  protocol?: string;
  port?: number;
  appProtocol?: string;
}

/** EndpointSlice is the part of a discovery.k8s.io/v1 EndpointSlice this plugin touches. */
export interface EndpointSlice extends KubeObject {
  addressType?: string;
  endpoints?: SliceEndpoint[] | null;
  ports?: SlicePort[] | null;
}

/** ENDPOINT_SLICE_FIELDS_VERSION is the Kubernetes version whose EndpointSlice fields ENDPOINT_SLICE_FIELDS names. */
export const ENDPOINT_SLICE_FIELDS_VERSION = ENDPOINTS_FIELDS_VERSION;

/**
 * ENDPOINT_SLICE_FIELDS is the rule of every discovery.k8s.io/v1 EndpointSlice body field of Kubernetes v1.36: each
 * endpoint's addresses are checked (addressRule), targetRefs point at the super namespace; a field it does not name
 * is refused (checkSliceFields).
 */
export const ENDPOINT_SLICE_FIELDS: FieldShape = {
  apiVersion: F.copy,
  kind: F.copy,
  metadata: F.translate('downMeta: the tenant\u2019s allowed labels and annotations, the super namespace'),
  addressType: F.copy,
  endpoints: F.list(
    {
      addresses: F.check('the tenant\u2019s own Pods or endpoints.allowedCIDRs (addressRule)'),
      conditions: F.object({ ready: F.copy, serving: F.copy, terminating: F.copy }),
      hostname: F.copy,
      targetRef: F.object(
        {
          kind: F.copy,
          namespace: F.translate('the tenant namespace becomes its super namespace'),
          name: F.copy,
          uid: F.translate('the tenant uid is left out'),
          apiVersion: F.copy,
          resourceVersion: F.translate('the tenant version is left out'),
          fieldPath: F.copy,
        },
        'translate',
      ),
      nodeName: F.copy,
      zone: F.copy,
      hints: F.object({ forZones: F.list({ name: F.copy }), forNodes: F.list({ name: F.copy }) }),
      deprecatedTopology: F.copy,
    },
    'check',
    'an endpoint is copied only when the tenant\u2019s policy allows its address',
  ),
  ports: F.list({ name: F.copy, protocol: F.copy, port: F.copy, appProtocol: F.copy }),
};

/** checkSliceFields returns the first field of a tenant EndpointSlice ENDPOINT_SLICE_FIELDS does not know. */
export function checkSliceFields(slice: EndpointSlice): { field: string; message: string } | undefined {
  return checkFields(
    slice,
    ENDPOINT_SLICE_FIELDS,
    'EndpointSlice',
    `the syncer knows the EndpointSlice fields of Kubernetes ${ENDPOINT_SLICE_FIELDS_VERSION}, and refuses ` +
      'EndpointSlices with a field added since until a rule says how it is kept within the tenant',
  );
}

/** serviceNameOf is the name of the tenant Service an EndpointSlice belongs to (its label), if it names one. */
const serviceNameOf = (slice: KubeObject): string | undefined => slice.metadata?.labels?.[SERVICE_NAME_LABEL];

/** superEndpoint points a tenant endpoint's targetRef at the super object: super namespace, no tenant uid or version. */
function superEndpoint(e: SliceEndpoint, ctx: PluginContext): SliceEndpoint {
  const out = clone(e);
  if (out.targetRef) {
    if (out.targetRef.namespace) out.targetRef.namespace = ctx.names.superNamespace(out.targetRef.namespace);
    delete out.targetRef.uid;
    delete out.targetRef.resourceVersion;
  }
  return out;
}

function refusedEvent(slice: EndpointSlice, reason: string, message: string): Effect {
  const m = slice.metadata ?? {};
  return {
    type: 'event',
    side: 'tenant',
    regarding: {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      namespace: m.namespace ?? '',
      name: m.name ?? '',
      uid: m.uid,
    },
    eventType: 'Warning',
    reason,
    message,
  };
}

function toSuper(
  tenantObj: EndpointSlice,
  superObj: EndpointSlice | undefined,
  ctx: PluginContext,
): Decision<EndpointSlice> {
  const tm = tenantObj.metadata ?? {};
  const namespace = tm.namespace ?? '';
  const serviceName = serviceNameOf(tenantObj);
  if (!serviceName || DERIVED_MANAGERS.includes(tm.labels?.[MANAGED_BY_LABEL] ?? '')) return { object: null };
  const service = ctx.tenantCache.get(R.services, namespace, serviceName);
  if (!service || hasSelector(service)) return { object: null };
  const unknown = checkSliceFields(tenantObj);
  if (unknown) {
    // Refused whole, as an apiserver refuses an object: a super copy of an earlier version stays as it was.
    const message = `not copied to the super cluster: ${unknown.message}`;
    return {
      object: null,
      skip: { reason: SLICE_FIELDS_REFUSED, message },
      effects: [refusedEvent(tenantObj, SLICE_FIELDS_REFUSED, message)],
    };
  }
  const meta = downMeta(
    tenantObj,
    superObj,
    ctx,
    { namespace: ctx.names.superNamespace(namespace), name: tm.name ?? '' },
    {},
    { extraLabels: { [SERVICE_NAME_LABEL]: serviceName } },
  );
  const desired = buildOn<EndpointSlice>(superObj, { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice' }, meta);
  desired.addressType = tenantObj.addressType;
  const ports = tenantObj.ports ?? [];
  const rule = withAddress(
    addressRule(ctx),
    apiserverAddress(
      ctx,
      namespace,
      serviceName,
      ports.map((p) => p.port),
    ),
  );
  const refused = new Map<string, string>();
  // An endpoint with any refused address is left out whole: it stands for one backend.
  const endpoints: SliceEndpoint[] = [];
  for (const e of tenantObj.endpoints ?? []) {
    const why = (e.addresses ?? []).map((a) => [a, rule.refusal(a)] as const).filter(([, w]) => w !== undefined);
    for (const [a, w] of why) refused.set(a, w!);
    if (!why.length) endpoints.push(superEndpoint(e, ctx));
  }
  desired.endpoints = endpoints;
  if (tenantObj.ports) desired.ports = clone(tenantObj.ports);
  else delete desired.ports;
  if (!refused.size) return { object: desired };
  const message =
    'addresses not copied to the super cluster: ' +
    [...refused]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([ip, why]) => `${ip} (${why})`)
      .join(', ');
  return {
    object: desired,
    effects: [refusedEvent(tenantObj, ADDRESSES_REFUSED, message)],
    requeueAfterMs: REFUSED_RETRY_MS,
  };
}

/** ENDPOINTSLICES_BY_IP indexes the super EndpointSlices the syncer wrote by the addresses they hold. */
export const ENDPOINTSLICES_BY_IP = 'endpointslices-by-ip';

/** sliceAddressesOf lists every address of an EndpointSlice. */
export function sliceAddressesOf(slice: KubeObject): string[] {
  return [...new Set(((slice as EndpointSlice).endpoints ?? []).flatMap((e) => e.addresses ?? []))];
}

/**
 * slicesHolding maps a super Pod to the tenant EndpointSlices whose super copy holds one of its IPs (as
 * endpointsHolding does for Endpoints): when a Pod goes, or its IP comes back to another tenant's Pod, they are checked
 * again at once.
 */
export function slicesHolding(pod: KubeObject, rctx: RouteContext): TenantKey[] {
  return objectsHolding<EndpointSlice>(pod, rctx, ENDPOINTSLICES_BY_IP, R.endpointslices, sliceAddressesOf);
}

/**
 * endpointslicesPlugin copies the EndpointSlices a tenant writes itself (or a tenant controller writes) for Services
 * without a selector, under the same rules as the endpoints plugin's Endpoints: only addresses of the tenant's own Pods
 * or in its policy's endpoints.allowedCIDRs (an endpoint holding another is left out and named in a Warning event on
 * the tenant EndpointSlice), targetRefs in the super namespace without the tenant uid. Slices of Services with a
 * selector, and those the tenant's EndpointSlice or mirroring controller wrote (DERIVED_MANAGERS), are not copied: the
 * super cluster's controllers derive their own. A slice written before its Service is looked at again on the
 * syncer's patrol.
 */
export const endpointslicesPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'endpointslices',
    version: '0.1.0',
    description: 'Copies the EndpointSlices tenants write for their Services without a selector to the super cluster.',
    resource: { ...R.endpointslices },
    direction: 'down',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  reads: [
    { resource: R.pods, side: 'super' },
    { resource: R.services, side: 'tenant' },
  ],
  indexes: [{ name: ENDPOINTSLICES_BY_IP, resource: R.endpointslices, values: sliceAddressesOf }],
  watches: [{ resource: R.pods, side: 'super', map: slicesHolding }],
  toSuper,
} satisfies ResourcePlugin<EndpointSlice>;
