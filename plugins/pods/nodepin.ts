import { type PluginContext, R, superNodeName } from '@virtualcluster-ts/plugin-sdk';
import {
  type Node,
  nodesView,
  type PodRefusal,
  type PodSpec,
  shownForPlacement,
  tenantHasPodOn,
} from '@virtualcluster-ts/plugin-sdk/pods';

/** NODE_NAME_FIELD is the node field a tenant Pod may pin its node by: the DaemonSet controller's pin. */
export const NODE_NAME_FIELD = 'metadata.name';

interface FieldRequirement {
  key?: string;
  operator?: string;
  values?: string[];
}

interface Term {
  matchExpressions?: unknown[];
  matchFields?: FieldRequirement[];
}

interface NodeAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: Term[] };
  preferredDuringSchedulingIgnoredDuringExecution?: Array<{ preference?: Term }>;
}

/** NodePin is one `matchFields` requirement of a Pod's node affinity, with the path of the field that holds it. */
export interface NodePin {
  field: string;
  requirement: FieldRequirement;
}

const affinityOf = (spec: PodSpec): NodeAffinity | undefined =>
  (spec.affinity as { nodeAffinity?: NodeAffinity } | undefined)?.nodeAffinity;

/** nodePins lists every `matchFields` requirement of a Pod spec's node affinity (required and preferred terms). */
export function nodePins(spec: PodSpec): NodePin[] {
  const na = affinityOf(spec);
  const out: NodePin[] = [];
  const term = (t: Term | undefined, at: string) => {
    for (const [i, r] of (t?.matchFields ?? []).entries())
      out.push({ field: `${at}.matchFields[${i}]`, requirement: r });
  };
  const req = 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms';
  for (const [i, t] of (na?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []).entries())
    term(t, `${req}[${i}]`);
  const pref = 'spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution';
  for (const [i, p] of (na?.preferredDuringSchedulingIgnoredDuringExecution ?? []).entries())
    term(p.preference, `${pref}[${i}].preference`);
  return out;
}

/**
 * nodeOfTenant says whether the tenant may pin a Pod to the super node `node`, by what the syncer itself knows (a
 * tenant with cluster-admin can create Node objects of any name in its own control plane, so its vNodes prove
 * nothing): the node exists and is one of the tenant's vNodes by its policy's view — a node where the syncer placed
 * one of the tenant's Pods, or, under the `schedulable` view, any Ready node its Pods may be placed on.
 */
export function nodeOfTenant(node: string, ctx: PluginContext): boolean {
  const superNode = ctx.superCache.get<Node>(R.nodes, undefined, node);
  if (!superNode) return false;
  if (tenantHasPodOn(node, ctx)) return true;
  return nodesView(ctx.tenant) === 'schedulable' && shownForPlacement(superNode, ctx);
}

/**
 * checkNodePins refuses a tenant Pod's node pin (`matchFields`) unless it is the DaemonSet controller's: key
 * `metadata.name`, operator `In`, and every value a vNode of this tenant on the super cluster this syncer serves
 * (nodeOfTenant). Anything else would let a tenant choose a super node by name, which the policy's node label keys
 * (no `kubernetes.io/hostname` by default) deny. The refusal names the field and the value.
 */
export function checkNodePins(spec: PodSpec, ctx: PluginContext): PodRefusal | undefined {
  const qualifier = ctx.sharedTenants ? ctx.superCluster : undefined;
  for (const { field, requirement: r } of nodePins(spec)) {
    if (r.key !== NODE_NAME_FIELD || r.operator !== 'In') {
      return {
        field: `${field}.key`,
        message:
          `${field}.key: node field "${r.key ?? ''}" with operator ${r.operator ?? '(none)'}: a tenant Pod may pin nodes ` +
          `only by ${NODE_NAME_FIELD} In <its vNodes> (as DaemonSet Pods do)`,
      };
    }
    for (const [i, vNode] of (r.values ?? []).entries()) {
      const node = superNodeName(vNode, qualifier);
      if (node !== undefined && nodeOfTenant(node, ctx)) continue;
      const where = qualifier ? ` of super cluster ${qualifier}, where this Pod is placed` : '';
      return {
        field: `${field}.values[${i}]`,
        message: `${field}.values[${i}] "${vNode}" is not a node of this tenant${where}: a Pod may be pinned only to its tenant's vNodes`,
      };
    }
  }
  return undefined;
}

/**
 * translateNodePins rewrites, in a new super Pod's spec, the vNode names of its `metadata.name` pins (checked by
 * checkNodePins) to the names of the super nodes behind them.
 */
export function translateNodePins(spec: PodSpec, ctx: Pick<PluginContext, 'sharedTenants' | 'superCluster'>): void {
  const qualifier = ctx.sharedTenants ? ctx.superCluster : undefined;
  for (const { requirement: r } of nodePins(spec))
    if (r.values) r.values = r.values.map((v) => superNodeName(v, qualifier) ?? v);
}
