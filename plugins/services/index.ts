import {
  ANN,
  MAX_RECORDED_ENDPOINTS,
  readyEndpointsOn,
  type RouteContext,
  SERVICE_NAME_LABEL,
  superClusterIPOn,
  type TenantKey,
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
} from '@virtualcluster-ts/plugin-sdk';
import { externalNameRefusal } from './externalname.ts';
import { checkServiceFields } from './fields.ts';
import {
  checkLoadBalancerClass,
  checkServiceType,
  ruleFor,
  SERVICE_POLICY_VIOLATION,
  type ServiceRefusal,
  SYNCED_CONDITION,
} from './policy.ts';

export {
  CAPPED_TYPES,
  checkLoadBalancerClass,
  checkServiceType,
  DEFAULT_SERVICES_POLICY,
  ruleFor,
  SERVICE_POLICY_VIOLATION,
  SYNCED_CONDITION,
} from './policy.ts';
export { checkServiceFields, SERVICE_FIELDS_VERSION, SERVICE_SPEC_FIELDS } from './fields.ts';

/** ServicePort is one port of a Service. */
export interface ServicePort {
  name?: string;
  protocol?: string;
  appProtocol?: string;
  port?: number;
  targetPort?: number | string;
  nodePort?: number;
}

/** ServiceSpec is the part of a Service's spec this plugin touches. */
export interface ServiceSpec {
  type?: string;
  clusterIP?: string;
  clusterIPs?: string[];
  ipFamilies?: string[];
  ports?: ServicePort[];
  healthCheckNodePort?: number;
  externalTrafficPolicy?: string;
  externalIPs?: string[];
  loadBalancerIP?: string;
  [field: string]: unknown;
}

/** Service is the part of a core/v1 Service this plugin touches. */
export interface Service extends KubeObject {
  spec?: ServiceSpec;
  status?: {
    loadBalancer?: Record<string, unknown>;
    conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }>;
    [field: string]: unknown;
  };
}

/**
 * MIRRORED_SPEC_FIELDS are the spec fields the super Service takes from the tenant as they are (absent stays absent).
 * Not copied: clusterIP(s), ipFamilies, nodePorts and healthCheckNodePort (the super assigns them; where the policy keeps
 * the tenant's node ports, a create asks for them once, keepsTenantPorts). A Service with
 * externalIPs or loadBalancerIP, with which a tenant could capture traffic to addresses it does not own in the shared
 * cluster, or with a field SERVICE_SPEC_FIELDS does not know, is refused (checkServiceFields).
 */
export const MIRRORED_SPEC_FIELDS = [
  'type',
  'selector',
  'sessionAffinity',
  'sessionAffinityConfig',
  'externalTrafficPolicy',
  'internalTrafficPolicy',
  'publishNotReadyAddresses',
  'ipFamilyPolicy',
  'loadBalancerClass',
  'loadBalancerSourceRanges',
  'allocateLoadBalancerNodePorts',
  'trafficDistribution',
] as const;

/** HEADLESS is the clusterIP of a Service without a virtual IP. */
export const HEADLESS = 'None';

const usesNodePorts = (type: string | undefined): boolean => type === 'NodePort' || type === 'LoadBalancer';
const protocolOf = (p: ServicePort): string => p.protocol ?? 'TCP';

/** matchPort finds the port of another version of a Service that is `p`: same name and protocol, else same port and protocol. */
export function matchPort(p: ServicePort, candidates: readonly ServicePort[] | undefined): ServicePort | undefined {
  const list = candidates ?? [];
  return (
    list.find((c) => (c.name ?? '') === (p.name ?? '') && protocolOf(c) === protocolOf(p)) ??
    list.find((c) => c.port === p.port && protocolOf(c) === protocolOf(p))
  );
}

const serviceRef = (s: Service) => ({
  apiVersion: 'v1',
  kind: 'Service',
  namespace: s.metadata?.namespace,
  name: s.metadata?.name ?? '',
  uid: s.metadata?.uid,
});

/**
 * refuse tells the tenant why its Service is not synced (a Warning event and a VCSynced=False condition). A super
 * Service that exists stays as it was, the way an apiserver keeps an object whose update it rejects, and as the
 * controller keeps a Running tenant whose policy changed: a type the policy withdraws does not tear running Services
 * down (the platform deletes what it wants gone). The count cap is the exception, as it must hold whatever the timing:
 * a super Service of the type that ranks beyond it (admitted by concurrent workers before either saw the other's
 * copy, or beyond a lowered cap) is deleted.
 */
function refuse(tenantObj: Service, superObj: Service | undefined, r: ServiceRefusal): Decision<Service> {
  const ref = serviceRef(tenantObj);
  const effects: Effect[] = [
    {
      type: 'event',
      side: 'tenant',
      regarding: ref,
      eventType: 'Warning',
      reason: SERVICE_POLICY_VIOLATION,
      message: r.message,
    },
    {
      type: 'tenantCondition',
      namespace: ref.namespace ?? '',
      name: ref.name,
      uid: ref.uid ?? '',
      condition: { type: SYNCED_CONDITION, status: 'False', reason: SERVICE_POLICY_VIOLATION, message: r.message },
    },
  ];
  const retry = r.requeueAfterMs !== undefined ? { requeueAfterMs: r.requeueAfterMs } : {};
  if (r.overCap && superObj?.spec?.type === tenantObj.spec?.type) return { object: null, effects, ...retry };
  return { object: null, skip: { reason: SERVICE_POLICY_VIOLATION, message: r.message }, effects, ...retry };
}

/** TENANT_ONLY is the VCSynced reason of an ExternalName Service, which has no super copy (notCopied). */
export const TENANT_ONLY = 'TenantOnly';

/**
 * notCopied keeps an ExternalName Service out of the super cluster, deleting a copy an earlier type left there. In the
 * tenant the alias is answered by the tenant's own DNS, which needs no super object; in the super cluster its only
 * readers are the shared ingress (and gateway) controllers, which would resolve the name from the platform's network
 * and connect wherever it points, whatever a name check saw (a public name may resolve inward, now or later). The
 * tenant reads why in a VCSynced=False condition.
 */
function notCopied(tenantObj: Service): Decision<Service> {
  const ref = serviceRef(tenantObj);
  const message =
    "an ExternalName Service is answered by the tenant's own DNS and not copied to the super cluster, whose shared " +
    'ingress controllers would follow the alias from the platform network; an Ingress cannot use it as a backend';
  const c = tenantObj.status?.conditions?.find((x) => x.type === SYNCED_CONDITION);
  const told = c?.status === 'False' && c.reason === TENANT_ONLY && c.message === message;
  if (told) return { object: null };
  return {
    object: null,
    effects: [
      {
        type: 'tenantCondition',
        namespace: ref.namespace ?? '',
        name: ref.name,
        uid: ref.uid ?? '',
        condition: { type: SYNCED_CONDITION, status: 'False', reason: TENANT_ONLY, message },
      },
    ],
  };
}

/** syncedAgain clears a VCSynced=False condition once the tenant Service is synced again. */
function syncedAgain(tenantObj: Service): Effect[] {
  const c = tenantObj.status?.conditions?.find((x) => x.type === SYNCED_CONDITION);
  if (c?.status !== 'False') return [];
  const ref = serviceRef(tenantObj);
  return [
    {
      type: 'tenantCondition',
      namespace: ref.namespace ?? '',
      name: ref.name,
      uid: ref.uid ?? '',
      condition: {
        type: SYNCED_CONDITION,
        status: 'True',
        reason: 'Synced',
        message: 'the Service is in the super cluster',
      },
    },
  ];
}

function toSuper(tenantObj: Service, superObj: Service | undefined, ctx: PluginContext): Decision<Service> {
  const tm = tenantObj.metadata ?? {};
  const refusal =
    checkServiceFields(tenantObj.spec) ??
    externalNameRefusal(tenantObj.spec, ctx.tenant.clusterDomain) ??
    checkLoadBalancerClass(tenantObj, ctx) ??
    checkServiceType(tenantObj, ctx);
  if (refusal) return refuse(tenantObj, superObj, refusal);
  const ts = tenantObj.spec ?? {};
  if (ts.type === 'ExternalName') return notCopied(tenantObj);
  const tenantIP = ts.clusterIP;
  const meta = downMeta(
    tenantObj,
    superObj,
    ctx,
    { namespace: ctx.names.superNamespace(tm.namespace ?? ''), name: tm.name ?? '' },
    tenantIP ? { [ANN.tenantClusterIP]: tenantIP } : {},
  );

  const spec: ServiceSpec = superObj?.spec ? clone(superObj.spec) : {};
  copyFields(ts, spec, MIRRORED_SPEC_FIELDS);
  delete spec.externalName; // only a copy made before ExternalName Services stayed in the tenant has one
  // A create asks for the tenant's own node ports where the policy keeps them, once: a create planned again after
  // that (the super cluster refused a number) lets the super cluster pick, and the tenant is shown its numbers.
  const askTenantPorts = !superObj && keepsTenantPorts(ts.type, ctx) && ctx.remembered !== TRIED_TENANT_PORTS;
  if (ts.ports?.length) {
    spec.ports = ts.ports.map((p) => {
      const out = clone(p);
      delete out.nodePort;
      const assigned = usesNodePorts(ts.type) ? matchPort(p, superObj?.spec?.ports)?.nodePort : undefined;
      if (assigned) out.nodePort = assigned;
      else if (askTenantPorts && p.nodePort) out.nodePort = p.nodePort;
      return out;
    });
  } else delete spec.ports;

  if (!superObj) {
    if (tenantIP === HEADLESS) {
      spec.clusterIP = HEADLESS;
      spec.clusterIPs = [HEADLESS];
    }
  }
  if (!superObj || ts.type !== 'LoadBalancer' || ts.externalTrafficPolicy !== 'Local') delete spec.healthCheckNodePort;

  const effects = syncedAgain(tenantObj);
  const desired = buildOn<Service>(superObj, { apiVersion: 'v1', kind: 'Service' }, meta, { spec });
  const asked = askTenantPorts && spec.ports?.some((p) => p.nodePort) ? { remember: TRIED_TENANT_PORTS } : {};
  return effects.length ? { object: desired, effects, ...asked } : { object: desired, ...asked };
}

/** TRIED_TENANT_PORTS is the note of a create that asked for the tenant's node ports (Decision.remember). */
export const TRIED_TENANT_PORTS = 'tried-tenant-node-ports';

/** keepsTenantPorts says whether the tenant's policy keeps the node ports of a Service of this type (keepTenantPorts). */
function keepsTenantPorts(type: string | undefined, ctx: PluginContext): boolean {
  return (type === 'NodePort' || type === 'LoadBalancer') && ruleFor(ctx.tenant.services, type).keepTenantPorts;
}

function toTenant(
  superObj: Service | undefined,
  tenantObj: Service | undefined,
  ctx: PluginContext,
): Decision<Service> {
  if (!tenantObj)
    return {
      object: null,
      skip: { reason: 'NoTenantObject', message: 'the tenant Service is gone; nothing to carry up' },
    };
  const desired = clone(tenantObj);
  if (!superObj) return { object: desired };
  const meta = (desired.metadata ??= {});
  const annotations = { ...meta.annotations };
  const superIP = superObj.spec?.clusterIP;
  const key = ctx.sharedTenants && ctx.superCluster ? superClusterIPOn(ctx.superCluster) : ANN.superClusterIP;
  if (key && superIP) annotations[key] = superIP;
  else if (key) delete annotations[key];
  const ready = ctx.sharedTenants && ctx.superCluster ? readyEndpointsOn(ctx.superCluster) : undefined;
  if (ready && superIP && superIP !== 'None') annotations[ready] = readyAddresses(superObj, ctx).join(',');
  else if (ready) delete annotations[ready];
  if (Object.keys(annotations).length) meta.annotations = annotations;
  else delete meta.annotations;

  desired.status = { ...desired.status, loadBalancer: clone(superObj.status?.loadBalancer ?? {}) };

  if (usesNodePorts(desired.spec?.type)) {
    for (const p of desired.spec?.ports ?? []) {
      const assigned = matchPort(p, superObj.spec?.ports)?.nodePort;
      if (assigned && assigned !== p.nodePort) p.nodePort = assigned;
    }
  }
  return { object: desired };
}

interface EndpointSlice extends KubeObject {
  endpoints?: Array<{ addresses?: string[]; conditions?: { ready?: boolean } }>;
}

/**
 * readyAddresses are the ready addresses (an unset `ready` counts as ready, as the API says) of the EndpointSlices of a
 * super Service in its own namespace, sorted, at most MAX_RECORDED_ENDPOINTS. Every slice there is the super cluster's
 * own or one the syncer checked: those its controllers derive from the tenant's super Pods, and the tenant slices the
 * endpointslices plugin copied after keeping only the tenant's own addresses.
 */
export function readyAddresses(superObj: Service, ctx: Pick<PluginContext, 'superCache'>): string[] {
  const name = superObj.metadata?.name;
  const out = new Set<string>();
  for (const s of ctx.superCache.list<EndpointSlice>(R.endpointslices, superObj.metadata?.namespace)) {
    if (!name || s.metadata?.labels?.[SERVICE_NAME_LABEL] !== name) continue;
    for (const e of s.endpoints ?? []) if (e.conditions?.ready !== false) for (const a of e.addresses ?? []) out.add(a);
  }
  return [...out].sort().slice(0, MAX_RECORDED_ENDPOINTS);
}

/**
 * serviceOfSlice maps a super EndpointSlice to the tenant Service whose copy it belongs to, with several super
 * clusters only (readyEndpointsOn is written only then).
 */
export function serviceOfSlice(slice: KubeObject, rctx: RouteContext): TenantKey[] {
  const svc = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
  const owner = rctx.tenantOfNamespace(slice.metadata?.namespace ?? '');
  if (!rctx.sharedTenants || !rctx.superCluster || !svc || !owner) return [];
  return [{ tenant: owner.tenant, namespace: owner.namespace, name: svc }];
}

/**
 * servicesPlugin copies tenant Services to the super cluster, which assigns cluster IPs and node ports of its own:
 * the tenant's cluster IP is recorded on the super Service (ANN.tenantClusterIP), the super's is shown on the tenant
 * Service (ANN.superClusterIP; with several super clusters, superClusterIPOn: each its own), node ports and the
 * load balancer status follow the super. NodePort and LoadBalancer Services need the tenant's policy
 * (services.nodePort, services.loadBalancer: allowed and a per-tenant count cap); a refused one gets a Warning event
 * and a VCSynced=False condition on the tenant Service.
 */
export const servicesPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'services',
    version: '0.1.0',
    description: 'Copies tenant Services to the super cluster; node ports and load balancer status follow the super.',
    resource: { ...R.services },
    direction: 'both',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  // The ready addresses of a copy (readyEndpointsOn) follow its EndpointSlices.
  watches: [{ resource: R.endpointslices, side: 'super', map: serviceOfSlice }],
  toSuper,
  toTenant,
} satisfies ResourcePlugin<Service>;

export default servicesPlugin;
