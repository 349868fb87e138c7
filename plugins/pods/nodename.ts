import { type PluginContext, superNodeName } from '@virtualcluster-ts/plugin-sdk';
import type { PodRefusal, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { NODE_NAME_FIELD, nodeOfTenant } from './nodepin.ts';

/**
 * A tenant Pod created with `spec.nodeName` names a vNode. Its super Pod is not created with the super node in
 * nodeName: that would skip the super scheduler, and with it the platform's forced placement, taints, the per-node
 * share and resource fit. It gets a required node affinity to that one super node instead (the DaemonSet
 * controller's pin, translated the same way), so the super scheduler places it there or leaves it Pending with its
 * reason, which the tenant reads on its Pod's events. The tenant Pod stays bound to the vNode it named.
 */

/** NODE_NAME_REFUSED is the skip, event and VCSynced reason of a tenant Pod whose spec.nodeName is not its node. */
export const NODE_NAME_REFUSED = 'NodeNameRefused';

/**
 * checkNodeName refuses a tenant Pod's `spec.nodeName` unless it names a vNode of this tenant on the super cluster
 * this syncer serves, by the rule of DaemonSet pins (nodeOfTenant: a node running one of the tenant's Pods, or under
 * the `schedulable` view any Ready node the policy lets its Pods be placed on). No nodeName: nothing to check.
 */
export function checkNodeName(spec: PodSpec, ctx: PluginContext): PodRefusal | undefined {
  const vNode = spec.nodeName;
  if (!vNode) return undefined;
  const qualifier = ctx.sharedTenants ? ctx.superCluster : undefined;
  const node = superNodeName(vNode, qualifier);
  if (node !== undefined && nodeOfTenant(node, ctx)) return undefined;
  const where = qualifier ? ` of super cluster ${qualifier}, where this Pod is placed` : '';
  return {
    field: 'spec.nodeName',
    message:
      `spec.nodeName "${vNode}" is not a node of this tenant${where}: a Pod may name only a node its tenant sees ` +
      `(kubectl get nodes); remove spec.nodeName to let the super cluster schedule it`,
  };
}

interface Term {
  matchExpressions?: unknown[];
  matchFields?: Array<{ key: string; operator: string; values?: string[] }>;
}

/**
 * pinToNamedNode moves a new super Pod spec's nodeName (a vNode checked by checkNodeName) into a required node
 * affinity to the super node behind it: `metadata.name In [node]` in every required node selector term (terms are
 * ORed, so each must carry it), or one term of its own when the Pod requires none; nodeName is removed.
 */
export function pinToNamedNode(spec: PodSpec, ctx: Pick<PluginContext, 'sharedTenants' | 'superCluster'>): void {
  const vNode = spec.nodeName;
  delete spec.nodeName;
  if (!vNode) return;
  const node = superNodeName(vNode, ctx.sharedTenants ? ctx.superCluster : undefined) ?? vNode;
  const affinity = ((spec.affinity as Record<string, unknown> | undefined) ??= {}) as Record<string, unknown>;
  const nodeAffinity = (affinity.nodeAffinity ??= {}) as Record<string, unknown>;
  const required = (nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution ??= {}) as {
    nodeSelectorTerms?: Term[];
  };
  const terms = (required.nodeSelectorTerms ??= []);
  if (!terms.length) terms.push({});
  for (const t of terms) (t.matchFields ??= []).push({ key: NODE_NAME_FIELD, operator: 'In', values: [node] });
}
