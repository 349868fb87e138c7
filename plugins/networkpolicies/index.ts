import {
  buildOn,
  type Decision,
  downMeta,
  type Effect,
  LABEL,
  MANAGER,
  PLUGIN_API_VERSION,
  type PluginContext,
  provenanceOf,
  R,
  type ResourcePlugin,
  SUPER_INTERNAL_CIDRS,
  TENANT_ISOLATION_POLICY,
} from '@virtualcluster-ts/plugin-sdk';
import {
  type Cidr,
  cidrContains,
  internalCIDRs,
  type IPBlock,
  type LabelSelector,
  NAMESPACE_NAME_LABEL,
  type NetworkPolicy,
  type NetworkPolicyEgressRule,
  type NetworkPolicyIngressRule,
  type NetworkPolicyPeer,
  outsidePeers,
  parseCidr,
} from '@virtualcluster-ts/plugin-sdk/network';

import { checkNetworkPolicyFields } from './fields.ts';

export type { NetworkPolicy } from '@virtualcluster-ts/plugin-sdk/network';
export { checkNetworkPolicyFields, NETWORK_POLICY_FIELDS_VERSION, NETWORK_POLICY_SPEC_FIELDS } from './fields.ts';

/** RESERVED_NAME is the skip reason of a tenant NetworkPolicy named like the tenant isolation policy. */
export const RESERVED_NAME = 'ReservedName';
/** NOT_MANAGED is the skip reason of a tenant NetworkPolicy whose name a super policy the syncer did not write has. */
export const NOT_MANAGED = 'NotManaged';
/** REFUSED is the event reason of a tenant NetworkPolicy that cannot be translated; its super copy is removed. */
export const REFUSED = 'NetworkPolicyRefused';

/** Refusal is a tenant NetworkPolicy the plugin does not sync: the field at fault and why. */
class Refusal extends Error {
  constructor(
    readonly field: string,
    readonly why: string,
  ) {
    super(`${field}: ${why}`);
  }
}

const mapsNames = (op: string): boolean => op === 'In' || op === 'NotIn';

/**
 * translateNamespaceSelector makes a tenant namespaceSelector select only super namespaces the syncer wrote for this
 * tenant: it is ANDed with the tenant key and managed-by labels (only the manager writes them, so no other tenant's
 * namespace, no root namespace and no super namespace carries both), and tenant namespace names under
 * `kubernetes.io/metadata.name` become their super names. Other labels are kept: they match the labels the
 * namespaces plugin copies to the super namespaces. A tenant term on the tenant key label cannot widen anything: it is
 * ANDed with the real value, never replaced by it.
 */
export function translateNamespaceSelector(
  sel: LabelSelector,
  ctx: Pick<PluginContext, 'names' | 'tenant'>,
): LabelSelector {
  const out: LabelSelector = {};
  if (sel.matchLabels) {
    out.matchLabels = Object.fromEntries(
      Object.entries(sel.matchLabels).map(([k, v]) => [
        k,
        k === NAMESPACE_NAME_LABEL ? ctx.names.superNamespace(v) : v,
      ]),
    );
  }
  out.matchExpressions = [
    ...(sel.matchExpressions ?? []).map((e) =>
      e.key === NAMESPACE_NAME_LABEL && mapsNames(e.operator)
        ? { ...e, values: (e.values ?? []).map((v) => ctx.names.superNamespace(v)) }
        : structuredClone(e),
    ),
    { key: LABEL.cluster, operator: 'In', values: [ctx.tenant.key] },
    { key: LABEL.managedBy, operator: 'In', values: [MANAGER] },
  ];
  return out;
}

/**
 * clipEgressBlock keeps a tenant egress ipBlock off the super-internal ranges: a range inside the block is added to
 * its `except` (unless an except already covers it); a block inside a range is refused, since it could only reach
 * the super cluster. `internal` defaults to SUPER_INTERNAL_CIDRS.
 */
export function clipEgressBlock(
  block: IPBlock,
  field: string,
  internal: readonly string[] = SUPER_INTERNAL_CIDRS,
): IPBlock {
  const parse = (text: string, at: string): Cidr => {
    try {
      return parseCidr(text);
    } catch {
      throw new Refusal(at, `${JSON.stringify(text)} is not a CIDR`);
    }
  };
  const cidr = parse(block.cidr, `${field}.cidr`);
  const except = (block.except ?? []).map((e, i) => ({ text: e, c: parse(e, `${field}.except[${i}]`) }));
  const out: IPBlock = { cidr: block.cidr, ...(block.except && { except: [...block.except] }) };
  for (const r of internal) {
    const range = parseCidr(r);
    if (cidrContains(range, cidr))
      throw new Refusal(`${field}.cidr`, `${block.cidr} lies inside ${r}, an address range of the super cluster`);
    if (!cidrContains(cidr, range) || except.some((e) => cidrContains(e.c, range))) continue;
    (out.except ??= []).push(r);
  }
  return out;
}

function peer(p: NetworkPolicyPeer, field: string, egress: boolean, ctx: PluginContext): NetworkPolicyPeer {
  const out = structuredClone(p);
  if (p.namespaceSelector) out.namespaceSelector = translateNamespaceSelector(p.namespaceSelector, ctx);
  if (p.ipBlock && egress) out.ipBlock = clipEgressBlock(p.ipBlock, `${field}.ipBlock`, internalCIDRs(ctx.tenant));
  return out;
}

function ingressRule(r: NetworkPolicyIngressRule, i: number, ctx: PluginContext): NetworkPolicyIngressRule {
  const out = structuredClone(r);
  if (r.from?.length) out.from = r.from.map((p, j) => peer(p, `spec.ingress[${i}].from[${j}]`, false, ctx));
  return out;
}

/**
 * egressRule translates one egress rule. A rule without peers means every destination; in the super cluster that is
 * every namespace of the tenant and every address outside the super-internal ranges, which is what it is turned into.
 */
function egressRule(r: NetworkPolicyEgressRule, i: number, ctx: PluginContext): NetworkPolicyEgressRule {
  const out = structuredClone(r);
  out.to = r.to?.length
    ? r.to.map((p, j) => peer(p, `spec.egress[${i}].to[${j}]`, true, ctx))
    : [{ namespaceSelector: translateNamespaceSelector({}, ctx) }, ...outsidePeers(internalCIDRs(ctx.tenant))];
  return out;
}

/**
 * translateSpec returns the super spec of a tenant NetworkPolicy: podSelector, policyTypes and ports are kept;
 * namespaceSelectors only match the tenant's own namespaces; egress ipBlocks are clipped off the super-internal
 * ranges; an egress rule to everywhere means everywhere the tenant may go. Ingress ipBlocks and ingress rules without
 * peers are kept: they only open the tenant's own Pods. Throws a Refusal naming the field it cannot translate.
 */
export function translateSpec(spec: NetworkPolicy['spec'], ctx: PluginContext): NetworkPolicy['spec'] {
  if (!spec) return spec;
  const out = structuredClone(spec);
  if (spec.ingress) out.ingress = spec.ingress.map((r, i) => ingressRule(r, i, ctx));
  if (spec.egress) out.egress = spec.egress.map((r, i) => egressRule(r, i, ctx));
  return out;
}

function refusedEvent(tenantObj: NetworkPolicy, reason: string, message: string): Effect {
  const tm = tenantObj.metadata ?? {};
  return {
    type: 'event',
    side: 'tenant',
    regarding: {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      namespace: tm.namespace,
      name: tm.name ?? '',
      uid: tm.uid,
    },
    eventType: 'Warning',
    reason,
    message,
  };
}

function toSuper(
  tenantObj: NetworkPolicy,
  superObj: NetworkPolicy | undefined,
  ctx: PluginContext,
): Decision<NetworkPolicy> {
  const tm = tenantObj.metadata ?? {};
  if (tm.name === TENANT_ISOLATION_POLICY) {
    const message = `the name ${TENANT_ISOLATION_POLICY} belongs to the tenant isolation policy of the super cluster`;
    return {
      object: null,
      skip: { reason: RESERVED_NAME, message },
      effects: [refusedEvent(tenantObj, RESERVED_NAME, `not synced: ${message}`)],
    };
  }
  if (superObj && !provenanceOf(superObj)) {
    // A policy the platform (or a tool of its) put in the super namespace: never adopted and rewritten by a tenant.
    const message = `a super NetworkPolicy ${tm.name} that the syncer did not write exists in the super namespace`;
    return {
      object: null,
      skip: { reason: NOT_MANAGED, message },
      effects: [refusedEvent(tenantObj, NOT_MANAGED, `not synced: ${message}`)],
    };
  }
  const unknown = checkNetworkPolicyFields(tenantObj.spec);
  // Not synced, and a super copy of an earlier version is removed, as for a Refusal below.
  if (unknown) return { object: null, effects: [refusedEvent(tenantObj, REFUSED, `not synced: ${unknown.message}`)] };
  let spec: NetworkPolicy['spec'];
  try {
    spec = translateSpec(tenantObj.spec, ctx);
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    // Not synced, and a super copy of an earlier version is removed: the tenant's Pods are left with less allowed.
    return { object: null, effects: [refusedEvent(tenantObj, REFUSED, `not synced: ${e.message}`)] };
  }
  const meta = downMeta(tenantObj, superObj, ctx, {
    namespace: ctx.names.superNamespace(tm.namespace ?? ''),
    name: tm.name ?? '',
  });
  return {
    object: buildOn<NetworkPolicy>(superObj, { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' }, meta, {
      ...(spec && { spec }),
    }),
  };
}

/**
 * networkPoliciesPlugin copies tenant NetworkPolicies into their super namespace, translated so that they can only
 * ever add to what the tenant isolation policy allows within the tenant: namespaceSelectors select the tenant's own
 * namespaces only, egress ipBlocks leave the super-internal ranges out. The policy named TENANT_ISOLATION_POLICY is
 * the super's and is never synced over.
 */
export const networkPoliciesPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'networkpolicies',
    version: '0.1.0',
    description:
      "Copies tenant NetworkPolicies to the super cluster with namespace selectors confined to the tenant's namespaces.",
    resource: { ...R.networkpolicies },
    direction: 'down',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  toSuper,
} satisfies ResourcePlugin<NetworkPolicy>;

export default networkPoliciesPlugin;
