import {
  type KubeObject,
  type LoadBalancerRule,
  type PluginContext,
  provenanceOf,
  R,
  type ServicesPolicyView,
  type ServiceTypeRule,
} from '@virtualcluster-ts/plugin-sdk';

/** SERVICE_POLICY_VIOLATION is the reason of the event and condition on a tenant Service its policy refuses. */
export const SERVICE_POLICY_VIOLATION = 'ServicePolicyViolation';
/** SYNCED_CONDITION is the tenant Service condition that says why the Service has no (current) super copy. */
export const SYNCED_CONDITION = 'VCSynced';

/**
 * DEFAULT_SERVICES_POLICY is the built-in services policy: neither NodePort nor LoadBalancer Services, at most 5
 * of each once a policy allows them, and no load balancer class but the super's default. It equals the TenantPolicy
 * schema's defaults (policy.test.ts holds them together).
 */
export const DEFAULT_SERVICES_POLICY = {
  nodePort: { allowed: false, max: 5, maxPorts: 5, keepTenantPorts: false },
  loadBalancer: { allowed: false, max: 5, maxPorts: 5, keepTenantPorts: false, classes: [] as readonly string[] },
} as const satisfies { nodePort: Required<ServiceTypeRule>; loadBalancer: Required<LoadBalancerRule> };

/** CAPPED_TYPES are the Service types that take something shared from the super cluster: node ports, load balancers. */
export const CAPPED_TYPES = { NodePort: 'nodePort', LoadBalancer: 'loadBalancer' } as const;
/** CappedType is one of the keys of CAPPED_TYPES. */
export type CappedType = keyof typeof CAPPED_TYPES;

const isCapped = (t: unknown): t is CappedType => typeof t === 'string' && Object.hasOwn(CAPPED_TYPES, t);
const typeOf = (o: KubeObject | undefined): unknown => (o as { spec?: { type?: unknown } } | undefined)?.spec?.type;

/** ServiceRefusal is why a tenant Service cannot have its type in the super cluster. */
export interface ServiceRefusal {
  message: string;
  /** look again after this long: a refusal by count lifts when another Service of the tenant leaves the type */
  requeueAfterMs?: number;
  /** refused by the count cap: a super copy already of the type is beyond the cap and must go */
  overCap?: boolean;
}

/** CAP_RETRY_MS is how often a Service refused by the count cap looks again whether a place became free. */
export const CAP_RETRY_MS = 30_000;

/** ruleFor is the tenant's effective rule for a capped type: the policy's fields over the built-in defaults. */
export function ruleFor(policy: ServicesPolicyView | undefined, type: CappedType): Required<ServiceTypeRule> {
  const key = CAPPED_TYPES[type];
  return { ...DEFAULT_SERVICES_POLICY[key], ...policy?.[key] };
}

/**
 * checkServiceType decides whether a tenant Service of type NodePort or LoadBalancer may exist in the super cluster
 * (other types always may). The count cap is per tenant, across its namespaces, and deterministic whichever worker
 * asks: the tenant's Services of that type are ranked (already of that type in the super first, then by creation time,
 * namespace and name) and the first `max` are allowed, less one for every super Service of that type whose tenant
 * Service no longer asks for it (it still holds its node ports until it is updated or deleted).
 */
export function checkServiceType(svc: KubeObject, ctx: PluginContext): ServiceRefusal | undefined {
  const type = typeOf(svc);
  if (!isCapped(type)) return undefined;
  const key = CAPPED_TYPES[type];
  const rule = ruleFor(ctx.tenant.services, type);
  if (!rule.allowed)
    return {
      message: `spec.type ${type} is not allowed by the tenant's policy (services.${key}.allowed); use ClusterIP or ask the platform administrator`,
    };
  const tooMany = portRefusal(svc, type, rule);
  if (tooMany) return tooMany;

  const tenantKey = ctx.tenant.key;
  const mineInSuper = (ns: string, name: string): KubeObject | undefined => {
    const s = ctx.superCache.get(R.services, ctx.names.superNamespace(ns), name);
    return provenanceOf(s)?.cluster === tenantKey ? s : undefined;
  };
  const candidates = ctx.tenantCache
    .list(R.services)
    // a Service refused for its class or its ports takes no place: it gets no super copy whatever its rank
    .filter(
      (s) =>
        typeOf(s) === type &&
        !s.metadata?.deletionTimestamp &&
        !checkLoadBalancerClass(s, ctx) &&
        !portRefusal(s, type, rule),
    )
    .map((s) => {
      const ns = s.metadata?.namespace ?? '';
      const name = s.metadata?.name ?? '';
      return {
        id: `${ns}/${name}`,
        admitted: typeOf(mineInSuper(ns, name)) === type ? 0 : 1,
        created: s.metadata?.creationTimestamp ?? '',
      };
    })
    .sort(
      (a, b) =>
        a.admitted - b.admitted ||
        (a.created < b.created ? -1 : a.created > b.created ? 1 : 0) ||
        (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
  const ids = new Set(candidates.map((c) => c.id));
  const held = ctx.superCache.list(R.services).filter((s) => {
    const p = provenanceOf(s);
    return p?.cluster === tenantKey && typeOf(s) === type && !ids.has(`${p.namespace}/${p.name}`);
  }).length;
  const self = `${svc.metadata?.namespace ?? ''}/${svc.metadata?.name ?? ''}`;
  const rank = candidates.findIndex((c) => c.id === self);
  const position = (rank < 0 ? candidates.length : rank) + held;
  if (position < rule.max) return undefined;
  return {
    message:
      `spec.type ${type}: the tenant's policy allows at most ${rule.max} Service${rule.max === 1 ? '' : 's'} of ` +
      `type ${type} (services.${key}.max) and earlier ones take them; delete one or use ClusterIP`,
    requeueAfterMs: CAP_RETRY_MS,
    overCap: true,
  };
}

/**
 * checkLoadBalancerClass refuses a Service whose spec.loadBalancerClass is not in the policy's
 * services.loadBalancer.classes. A class picks the controller that gives the Service its address, and a platform may
 * run one that hands out addresses on a network meant for itself (an internal load balancer, a pool of the nodes'
 * own network): only the classes the platform lists are the tenant's to choose. A Service naming no class gets the
 * super cluster's default load balancer, as the type rule allows.
 */
export function checkLoadBalancerClass(svc: KubeObject, ctx: PluginContext): ServiceRefusal | undefined {
  const cls = (svc as { spec?: { loadBalancerClass?: unknown } }).spec?.loadBalancerClass;
  if (cls === undefined || cls === null) return undefined;
  const classes = ctx.tenant.services?.loadBalancer?.classes ?? DEFAULT_SERVICES_POLICY.loadBalancer.classes;
  if (typeof cls === 'string' && classes.includes(cls)) return undefined;
  return {
    message:
      `spec.loadBalancerClass "${String(cls)}" is not allowed by the tenant's policy (services.loadBalancer.classes: ` +
      `${classes.join(', ') || 'none'}); leave it out for the super cluster's default load balancer`,
  };
}

/**
 * portRefusal refuses a Service of a capped type with more ports than the rule's maxPorts. Each port takes a node port
 * on every node from the range all tenants share (a LoadBalancer's too, unless it sets allocateLoadBalancerNodePorts
 * false): the count cap alone would let `max` Services of many ports each hold the whole range.
 */
function portRefusal(svc: KubeObject, type: CappedType, rule: Required<ServiceTypeRule>): ServiceRefusal | undefined {
  const spec = (svc as { spec?: { ports?: unknown[]; allocateLoadBalancerNodePorts?: unknown } }).spec;
  const none = type === 'LoadBalancer' && spec?.allocateLoadBalancerNodePorts === false;
  const ports = none ? 0 : (spec?.ports?.length ?? 0);
  if (ports <= rule.maxPorts) return undefined;
  return {
    message:
      `spec.ports: ${ports} ports, each a node port on every node; the tenant's policy allows at most ` +
      `${rule.maxPorts} per Service of type ${type} (services.${CAPPED_TYPES[type]}.maxPorts)`,
  };
}
