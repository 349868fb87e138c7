import { BlockList, isIP } from 'node:net';
import {
  type EndpointsPolicyView,
  type KubeObject,
  type PluginContext,
  provenanceOf,
  R,
  type Resource,
  type RouteContext,
  type TenantKey,
} from '@virtualcluster-ts/plugin-sdk';

/** ADDRESSES_REFUSED is the reason of the event naming the addresses not copied to the super Endpoints or EndpointSlice. */
export const ADDRESSES_REFUSED = 'EndpointAddressesRefused';
/** REFUSED_RETRY_MS is when Endpoints with refused addresses look again (a tenant Pod may not have its IP yet). */
export const REFUSED_RETRY_MS = 30_000;

/**
 * DEFAULT_ENDPOINTS_POLICY is the built-in endpoints policy: no address outside the tenant's own Pods. It equals the
 * TenantPolicy schema's defaults (policy.test.ts holds them together).
 */
export const DEFAULT_ENDPOINTS_POLICY = { allowedCIDRs: [] } as const satisfies Required<EndpointsPolicyView>;

interface PodStatus {
  phase?: string;
  podIP?: string;
  podIPs?: Array<{ ip?: string }>;
}

/** podIPs are the IPs a super Pod holds: none once it has finished. */
export const podIPs = (pod: KubeObject): string[] => {
  const s = (pod as { status?: PodStatus }).status;
  // A finished Pod's IP goes back to the pool and may be another tenant's next.
  if (!s || s.phase === 'Succeeded' || s.phase === 'Failed') return [];
  return [...new Set([s.podIP, ...(s.podIPs ?? []).map((p) => p.ip)].filter((ip): ip is string => !!ip))];
};

/** AddressRule decides, address by address, whether an endpoint address may reach the super cluster. */
export interface AddressRule {
  /** refusal returns why the address is refused, or undefined when it may be copied */
  refusal(ip: string): string | undefined;
}

/**
 * apiserverAddress is the one address the tenant's `default/kubernetes` endpoints may hold besides its Pods: its own
 * apiserver as its Pods reach it (the tenant's apiserverEndpoint, which the VirtualCluster controller writes there),
 * when every port given is that endpoint's port. That address with another port may be another tenant's apiserver
 * (one host, a port each), and in any other object it is refused like any other address.
 */
export function apiserverAddress(
  ctx: Pick<PluginContext, 'tenant'>,
  namespace: string,
  name: string,
  ports: ReadonlyArray<number | undefined>,
): string | undefined {
  const endpoint = ctx.tenant.apiserverEndpoint;
  if (!endpoint || namespace !== 'default' || name !== 'kubernetes' || !ports.length) return undefined;
  return ports.every((p) => p === endpoint.port) ? endpoint.host : undefined;
}

/** withAddress is `rule` that also allows `also` (apiserverAddress's answer), when there is one. */
export function withAddress(rule: AddressRule, also: string | undefined): AddressRule {
  return also === undefined ? rule : { refusal: (ip) => (ip === also ? undefined : rule.refusal(ip)) };
}

/**
 * parseCIDRs turns CIDR strings into a BlockList; entries that are not CIDRs are left out (the schema refuses them
 * earlier, and a rule that cannot be read allows nothing).
 */
export function parseCIDRs(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const c of cidrs) {
    const [net, bits, extra] = c.split('/');
    const family = isIP(net ?? '');
    const prefix = Number(bits);
    if (!family || extra !== undefined || !/^\d{1,3}$/.test(bits ?? '') || prefix > (family === 4 ? 32 : 128)) continue;
    list.addSubnet(net!, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/**
 * addressRule builds the rule for one tenant from the super Pods the syncer manages and the tenant's policy: an
 * address is allowed when it is the IP of one of this tenant's running super Pods, else when it lies in
 * endpoints.allowedCIDRs and is not the IP of another tenant's Pod. Everything else (the apiserver, nodes, other
 * tenants' Pods, platform Services) is refused.
 */
export function addressRule(ctx: PluginContext): AddressRule {
  const own = new Set<string>();
  const others = new Set<string>();
  for (const pod of ctx.superCache.list(R.pods)) {
    const mine = provenanceOf(pod)?.cluster === ctx.tenant.key;
    for (const ip of podIPs(pod)) (mine ? own : others).add(ip);
  }
  const cidrs = ctx.tenant.endpoints?.allowedCIDRs ?? DEFAULT_ENDPOINTS_POLICY.allowedCIDRs;
  const allowed = parseCIDRs(cidrs);
  return {
    refusal(ip) {
      if (own.has(ip)) return undefined;
      if (others.has(ip)) return 'the IP of a Pod of another tenant';
      const family = isIP(ip);
      if (family && allowed.check(ip, family === 4 ? 'ipv4' : 'ipv6')) return undefined;
      const listed = cidrs.length ? cidrs.join(', ') : 'none';
      return `neither a Pod of this tenant nor in the policy's endpoints.allowedCIDRs (${listed})`;
    },
  };
}

/**
 * objectsHolding maps a super Pod to the tenant objects of `resource` whose super copy holds one of its IPs (by
 * `addresses`), for the tenants the index `byIP` names for that IP: the common case (none) is a lookup.
 */
export function objectsHolding<T extends KubeObject>(
  pod: KubeObject,
  rctx: RouteContext,
  byIP: string,
  resource: Resource,
  addresses: (o: T) => string[],
): TenantKey[] {
  const keys: TenantKey[] = [];
  for (const ip of podIPs(pod)) {
    const tenants = rctx.tenantsBy(byIP, ip);
    if (!tenants.length) continue;
    for (const o of rctx.superCache.list<T>(resource)) {
      const p = provenanceOf(o);
      if (p && tenants.includes(p.cluster) && addresses(o).includes(ip))
        keys.push({ tenant: p.cluster, namespace: p.namespace, name: p.name });
    }
  }
  return keys;
}
