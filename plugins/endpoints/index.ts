import { R } from '../../core/kube/resources.ts';
import {
  buildOn,
  clone,
  type Decision,
  downMeta,
  type KubeObject,
  type ObjectReference,
  PLUGIN_API_VERSION,
  type PluginContext,
  type ResourcePlugin,
} from '../sdk/src/index.ts';

/** ObjectReference is the targetRef of an endpoint address. */
export type { ObjectReference } from '../sdk/src/index.ts';

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

/** hasSelector reports whether a Service selects Pods (an empty selector selects none, like no selector). */
export function hasSelector(service: KubeObject | undefined): boolean {
  const selector = (service as { spec?: { selector?: Record<string, string> } } | undefined)?.spec?.selector;
  return Object.keys(selector ?? {}).length > 0;
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

function toSuper(tenantObj: Endpoints, superObj: Endpoints | undefined, ctx: PluginContext): Decision<Endpoints> {
  const tm = tenantObj.metadata ?? {};
  const namespace = tm.namespace ?? '';
  const name = tm.name ?? '';
  const service = ctx.tenantCache.get(R.services, namespace, name);
  if (!service || hasSelector(service)) return { object: null };
  const meta = downMeta(tenantObj, superObj, ctx, { namespace: ctx.names.superNamespace(namespace), name });
  const desired = buildOn<Endpoints>(superObj, { apiVersion: 'v1', kind: 'Endpoints' }, meta);
  if (tenantObj.subsets?.length) {
    desired.subsets = tenantObj.subsets.map((s) => {
      const out: EndpointSubset = clone(s);
      if (s.addresses) out.addresses = s.addresses.map((a) => superAddress(a, ctx));
      if (s.notReadyAddresses) out.notReadyAddresses = s.notReadyAddresses.map((a) => superAddress(a, ctx));
      return out;
    });
  } else delete desired.subsets;
  return { object: desired };
}

/**
 * endpointsPlugin copies the Endpoints of tenant Services without a selector (their addresses are set by hand or
 * by a tenant controller); the super's endpoints controller fills those of Services with a selector itself, so
 * for them, and while the tenant Service is missing, the super object must not exist. TargetRefs point at the super
 * namespace and lose the tenant uid.
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
  // A Service that gains or loses its selector decides whether its Endpoints are copied.
  watches: [
    {
      resource: R.services,
      side: 'tenant',
      map: (svc) => [{ namespace: svc.metadata?.namespace ?? '', name: svc.metadata?.name ?? '' }],
    },
  ],
  toSuper,
} satisfies ResourcePlugin<Endpoints>;

export default endpointsPlugin;
