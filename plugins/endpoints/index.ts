import {
  buildOn,
  clone,
  type Decision,
  downMeta,
  type Effect,
  type KubeObject,
  type ObjectReference,
  PLUGIN_API_VERSION,
  type PluginContext,
  R,
  type ResourcePlugin,
  type RouteContext,
  type TenantKey,
} from '@virtualcluster-ts/plugin-sdk';
import { checkEndpointsFields } from './fields.ts';
import { hasSelector } from './selector.ts';
import {
  ADDRESSES_REFUSED,
  type AddressRule,
  addressRule,
  apiserverAddress,
  objectsHolding,
  REFUSED_RETRY_MS,
  withAddress,
} from './policy.ts';

export { checkEndpointsFields, ENDPOINT_SUBSET_FIELDS, ENDPOINTS_FIELDS_VERSION } from './fields.ts';
export { hasSelector } from './selector.ts';

export {
  ADDRESSES_REFUSED,
  addressRule,
  apiserverAddress,
  DEFAULT_ENDPOINTS_POLICY,
  parseCIDRs,
  podIPs,
  REFUSED_RETRY_MS,
} from './policy.ts';

/** SKIP_MIRROR_LABEL on Endpoints keeps the EndpointSlice mirroring controller from deriving slices of them. */
export const SKIP_MIRROR_LABEL = 'endpointslice.kubernetes.io/skip-mirror';

/** FIELDS_REFUSED is the skip and event reason of tenant Endpoints with a field the syncer has no rule for. */
export const FIELDS_REFUSED = 'EndpointsFieldRefused';

/** ObjectReference is the targetRef of an endpoint address. */
export type { ObjectReference } from '@virtualcluster-ts/plugin-sdk';

/** EndpointAddress is one address of an EndpointSubset. */
export interface EndpointAddress {
  ip: string;
  hostname?: string;
  nodeName?: string;
  targetRef?: ObjectReference;
}

/** EndpointSubset is one group of addresses sharing ports. */
export interface EndpointSubset {
  addresses?: EndpointAddress[];
  notReadyAddresses?: EndpointAddress[];
  ports?: Array<Record<string, unknown>>;
}

/** Endpoints is the part of a core/v1 Endpoints this plugin touches. */
export interface Endpoints extends KubeObject {
  subsets?: EndpointSubset[];
}

/** superAddress points a tenant address's targetRef at the super object: super namespace, no tenant uid or version. */
function superAddress(a: EndpointAddress, ctx: PluginContext): EndpointAddress {
  const out = clone(a);
  if (out.targetRef) {
    if (out.targetRef.namespace) out.targetRef.namespace = ctx.names.superNamespace(out.targetRef.namespace);
    delete out.targetRef.uid;
    delete out.targetRef.resourceVersion;
  }
  return out;
}

/** keepAllowed returns the addresses the rule allows, each translated, and adds the others to `refused`. */
function keepAllowed(
  list: EndpointAddress[] | undefined,
  rule: AddressRule,
  refused: Map<string, string>,
  ctx: PluginContext,
): EndpointAddress[] {
  const out: EndpointAddress[] = [];
  for (const a of list ?? []) {
    const why = rule.refusal(a.ip);
    if (why) refused.set(a.ip, why);
    else out.push(superAddress(a, ctx));
  }
  return out;
}

function toSuper(tenantObj: Endpoints, superObj: Endpoints | undefined, ctx: PluginContext): Decision<Endpoints> {
  const tm = tenantObj.metadata ?? {};
  const namespace = tm.namespace ?? '';
  const name = tm.name ?? '';
  const service = ctx.tenantCache.get(R.services, namespace, name);
  if (!service || hasSelector(service)) return { object: null };
  const unknown = checkEndpointsFields(tenantObj.subsets);
  if (unknown) {
    // Refused whole, as an apiserver refuses an object: a super copy of an earlier version stays as it was.
    const message = `not copied to the super cluster: ${unknown.message}`;
    return {
      object: null,
      skip: { reason: FIELDS_REFUSED, message },
      effects: [
        {
          type: 'event',
          side: 'tenant',
          regarding: { apiVersion: 'v1', kind: 'Endpoints', namespace, name, uid: tm.uid },
          eventType: 'Warning',
          reason: FIELDS_REFUSED,
          message,
        },
      ],
    };
  }
  // Endpoints whose EndpointSlices the tenant writes itself are not mirrored in the super either (slices.ts copies them).
  const skipMirror = tm.labels?.[SKIP_MIRROR_LABEL] === 'true' ? { [SKIP_MIRROR_LABEL]: 'true' } : undefined;
  const meta = downMeta(
    tenantObj,
    superObj,
    ctx,
    { namespace: ctx.names.superNamespace(namespace), name },
    {},
    skipMirror && { extraLabels: skipMirror },
  );
  const desired = buildOn<Endpoints>(superObj, { apiVersion: 'v1', kind: 'Endpoints' }, meta);
  const rule = addressRule(ctx);
  const refused = new Map<string, string>();
  const subsets: EndpointSubset[] = [];
  for (const s of tenantObj.subsets ?? []) {
    const out: EndpointSubset = clone(s);
    const ports = (s.ports ?? []).map((p) => p.port as number | undefined);
    const subsetRule = withAddress(rule, apiserverAddress(ctx, namespace, name, ports));
    const addresses = keepAllowed(s.addresses, subsetRule, refused, ctx);
    const notReady = keepAllowed(s.notReadyAddresses, subsetRule, refused, ctx);
    if (s.addresses) out.addresses = addresses;
    if (s.notReadyAddresses) out.notReadyAddresses = notReady;
    // A subset whose every address was refused is left out: the apiserver refuses a subset without addresses.
    if (addresses.length || notReady.length || !(s.addresses?.length || s.notReadyAddresses?.length)) subsets.push(out);
  }
  if (subsets.length) desired.subsets = subsets;
  else delete desired.subsets;
  if (!refused.size) return { object: desired };
  const message =
    'addresses not copied to the super cluster: ' +
    [...refused]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([ip, why]) => `${ip} (${why})`)
      .join(', ');
  const event: Effect = {
    type: 'event',
    side: 'tenant',
    regarding: { apiVersion: 'v1', kind: 'Endpoints', namespace, name, uid: tm.uid },
    eventType: 'Warning',
    reason: ADDRESSES_REFUSED,
    message,
  };
  return { object: desired, effects: [event], requeueAfterMs: REFUSED_RETRY_MS };
}

/** ENDPOINTS_BY_IP indexes the super Endpoints the syncer wrote by the addresses they hold. */
export const ENDPOINTS_BY_IP = 'endpoints-by-ip';

/** addressesOf lists every address of an Endpoints object, ready or not. */
export function addressesOf(ep: KubeObject): string[] {
  const subsets = (ep as Endpoints).subsets ?? [];
  return [
    ...new Set(subsets.flatMap((s) => [...(s.addresses ?? []), ...(s.notReadyAddresses ?? [])].map((a) => a.ip))),
  ];
}

/**
 * endpointsHolding maps a super Pod to the tenant Endpoints whose super copy holds one of its IPs: when a Pod goes,
 * or its IP comes back to another tenant's Pod, those addresses are checked again at once. The index makes the
 * common case (no Endpoints hold the IP) a lookup.
 */
export function endpointsHolding(pod: KubeObject, rctx: RouteContext): TenantKey[] {
  return objectsHolding<Endpoints>(pod, rctx, ENDPOINTS_BY_IP, R.endpoints, addressesOf);
}

/**
 * endpointsPlugin copies the Endpoints of tenant Services without a selector (their addresses are set by hand or
 * by a tenant controller); the super's endpoints controller fills those of Services with a selector itself, so
 * for them, and while the tenant Service is missing, the super object must not exist. TargetRefs point at the super
 * namespace and lose the tenant uid. Only addresses of the tenant's own Pods, or in its policy's
 * endpoints.allowedCIDRs, are copied (and in `default/kubernetes`, its own apiserverEndpoint: apiserverAddress); the
 * others are named in a Warning event on the tenant Endpoints. The EndpointSlices the tenant's mirroring controller
 * derives from these Endpoints are not synced: the super's mirroring controller derives its own (slices.ts copies the
 * other EndpointSlices of such Services).
 */
export const endpointsPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'endpoints',
    version: '0.1.0',
    description: 'Copies the Endpoints of tenant Services without a selector to the super cluster.',
    resource: { ...R.endpoints },
    direction: 'down',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  reads: [{ resource: R.pods, side: 'super' }],
  indexes: [{ name: ENDPOINTS_BY_IP, resource: R.endpoints, values: addressesOf }],
  // A Service that gains or loses its selector decides whether its Endpoints are copied; a super Pod that comes or
  // goes decides whether the addresses they hold are still the tenant's.
  watches: [
    { resource: R.pods, side: 'super', map: endpointsHolding },
    {
      resource: R.services,
      side: 'tenant',
      map: (svc) => [{ namespace: svc.metadata?.namespace ?? '', name: svc.metadata?.name ?? '' }],
    },
  ],
  toSuper,
} satisfies ResourcePlugin<Endpoints>;

export default endpointsPlugin;
