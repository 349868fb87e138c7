import type { Effect, RouteContext, TenantKey, TenantView, Watch } from '../contract.ts';
import type { KubeObject } from '../kube.ts';
import { PREFIX } from '../meta.ts';
import { LABEL } from '../names.ts';
import { R } from '../resources.ts';
import { SUPER_INTERNAL_CIDRS, TENANT_ISOLATION_POLICY } from '../wellknown.ts';
import { cidrComplement, parseCidr } from './cidr.ts';
import type { NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyPeer } from './types.ts';

/** NAMESPACE_NAME_LABEL is the label the apiserver sets on every Namespace to its own name. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/**
 * INGRESS_NAMESPACE_LABEL marks, with the value "true", the super namespaces where the platform runs its ingress
 * controllers (as deploy/network/vc-system.yaml does): they may reach tenant Pods behind tenant Ingresses. Tenants
 * cannot set it: it is under the project's prefix, stripped on the way down.
 */
export const INGRESS_NAMESPACE_LABEL = `${PREFIX}/ingress`;

/**
 * tenantPeer selects every namespace of the tenant in the super cluster by the tenant key label, which only the
 * manager writes (tenant keys under the project's prefix are stripped): the super namespaces of its tenant namespaces
 * and its root namespace, where a native control plane runs (its apiserver calls the tenant's webhooks).
 */
export function tenantPeer(tenant: Pick<TenantView, 'key'>): NetworkPolicyPeer {
  return { namespaceSelector: { matchLabels: { [LABEL.cluster]: tenant.key } } };
}

/** internalCIDRs are the super-internal ranges of a tenant: its policy's, or SUPER_INTERNAL_CIDRS. */
export function internalCIDRs(tenant: Pick<TenantView, 'network'>): readonly string[] {
  return tenant.network?.internalCIDRs ?? SUPER_INTERNAL_CIDRS;
}

/**
 * outsidePeers are the addresses outside the super cluster: every IPv4 and IPv6 address except `internal` (by
 * default SUPER_INTERNAL_CIDRS).
 */
export function outsidePeers(internal: readonly string[] = SUPER_INTERNAL_CIDRS): NetworkPolicyPeer[] {
  const v4 = internal.filter((c) => parseCidr(c).family === 4);
  const v6 = internal.filter((c) => parseCidr(c).family === 6);
  const block = (cidr: string, except: string[]): NetworkPolicyPeer => ({
    ipBlock: { cidr, ...(except.length && { except }) },
  });
  return [block('0.0.0.0/0', v4), block('::/0', v6)];
}

/**
 * outsideBlockPeers are the same addresses as outsidePeers, less `exclude` too, as plain ipBlocks with no `except`
 * (cidrComplement): what they allow does not hang on how a NetworkPolicy implementation keeps excepted entries.
 */
export function outsideBlockPeers(exclude: readonly string[] = SUPER_INTERNAL_CIDRS): NetworkPolicyPeer[] {
  return [...cidrComplement(4, exclude), ...cidrComplement(6, exclude)].map((cidr) => ({ ipBlock: { cidr } }));
}

const hostCidr = (host: string): string | undefined => {
  try {
    const c = parseCidr(host);
    return `${host}/${c.prefix}`;
  } catch {
    return undefined;
  }
};

/**
 * isolationPolicy is the TENANT_ISOLATION_POLICY of one super namespace of `tenant` (the core sets its namespace and
 * its managed-by and tenant labels). It selects every Pod of the namespace for ingress and egress:
 * - ingress only from the tenant's own namespaces (tenantPeer) and the platform's ingress controllers
 *   (INGRESS_NAMESPACE_LABEL): other tenants and the super's other Pods are refused;
 * - egress to the tenant's own namespaces (its Pods, its DNS, a native control plane), to the tenant apiserver
 *   (`apiserverEndpoint`, and the DNS view its DNS server reads, `dnsApiEndpoint`, when they are IP addresses; a
 *   native apiserver is inside the tenant already), and to every address outside the super-internal ranges
 *   (internalCIDRs: the policy's, by default SUPER_INTERNAL_CIDRS). Super Pods, Services, nodes, the super apiserver
 *   and the cloud metadata address are unreachable, DNS included: the only resolver inside the super cluster a Pod
 *   reaches is its tenant's own DNS (in the tenant's kube-system, reached by its Service, which the node translates to
 *   the DNS Pod's address before the policy is evaluated). The super's DNS, a node-local cache (169.254.20.10) or
 *   another tenant's DNS would answer other tenants' names; the tenant DNS forwards nothing, so it needs none of them.
 * Policies are additive: a tenant's own NetworkPolicies can only add to this, within what the networkpolicies plugin
 * lets them say.
 */
export function isolationPolicy(
  tenant: Pick<TenantView, 'key' | 'apiserverEndpoint' | 'dnsApiEndpoint' | 'network'>,
): NetworkPolicy {
  const egress: NetworkPolicyEgressRule[] = [{ to: [tenantPeer(tenant)] }];
  for (const ep of [tenant.apiserverEndpoint, tenant.dnsApiEndpoint]) {
    const cidr = ep && hostCidr(ep.host);
    if (ep && cidr) egress.push({ to: [{ ipBlock: { cidr } }], ports: [{ protocol: 'TCP', port: ep.port }] });
  }
  egress.push({ to: outsidePeers(internalCIDRs(tenant)) });
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: TENANT_ISOLATION_POLICY },
    spec: {
      podSelector: {},
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        { from: [tenantPeer(tenant), { namespaceSelector: { matchLabels: { [INGRESS_NAMESPACE_LABEL]: 'true' } } }] },
      ],
      egress,
    },
  };
}

/** isolationEffect asks the core to keep the isolation policy in the super namespace of tenant namespace `namespace`. */
export function isolationEffect(
  namespace: string,
  tenant: Pick<TenantView, 'key' | 'apiserverEndpoint' | 'dnsApiEndpoint' | 'network'>,
): Effect {
  return { type: 'superNetworkPolicy', namespace, policy: isolationPolicy(tenant) };
}

/**
 * isolationWatch requeues a tenant namespace when the isolation policy of its super namespace changes or is deleted,
 * so the namespaces plugin puts it back.
 */
export const isolationWatch: Watch = {
  resource: R.networkpolicies,
  side: 'super',
  map(obj: KubeObject, ctx: RouteContext): TenantKey[] {
    const m = obj.metadata ?? {};
    if (m.name !== TENANT_ISOLATION_POLICY || !m.namespace) return [];
    const owner = ctx.tenantOfNamespace(m.namespace);
    return owner ? [{ tenant: owner.tenant, namespace: '', name: owner.namespace }] : [];
  },
};
