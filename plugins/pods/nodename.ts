import { type PluginContext, superNodeName } from '@virtualcluster-ts/plugin-sdk';
import type { PodRefusal, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { nodeOfTenant } from './nodepin.ts';

/**
 * A tenant Pod created with `spec.nodeName` names a vNode. Its super Pod is created with the super node behind it in
 * nodeName, as upstream runs such a Pod: no scheduler, the kubelet's admission decides. Before that, checkNodeName
 * has the syncer refuse a node the tenant may not use (the platform's forced node selector, taints its policy does
 * not let it tolerate, a node not its own); the kubelet's admission still enforces the forced node selector (copied
 * into the super Pod), NoExecute taints, host ports and resources, and a Pod it rejects fails with the kubelet's
 * reason, as upstream. The tenant Pod stays bound to the vNode it named.
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

/**
 * translateNodeName names, in a new super Pod spec, the super node behind the vNode of its nodeName (checked by
 * checkNodeName); without a nodeName nothing changes.
 */
export function translateNodeName(spec: PodSpec, ctx: Pick<PluginContext, 'sharedTenants' | 'superCluster'>): void {
  if (!spec.nodeName) return;
  spec.nodeName = superNodeName(spec.nodeName, ctx.sharedTenants ? ctx.superCluster : undefined) ?? spec.nodeName;
}
