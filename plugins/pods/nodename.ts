import { type PluginContext, R, superNodeName } from '@virtualcluster-ts/plugin-sdk';
import {
  mayPlaceOn,
  type Node,
  type PodRefusal,
  type PodSpec,
  type Taint,
  type Toleration,
  tolerates,
} from '@virtualcluster-ts/plugin-sdk/pods';
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
  if (node !== undefined && nodeOfTenant(node, ctx)) {
    const closed = closedToPod(node, spec, ctx);
    return closed === undefined
      ? undefined
      : { field: 'spec.nodeName', message: `spec.nodeName "${vNode}": ${closed}` };
  }
  const where = qualifier ? ` of super cluster ${qualifier}, where this Pod is placed` : '';
  return {
    field: 'spec.nodeName',
    message:
      `spec.nodeName "${vNode}" is not a node of this tenant${where}: a Pod may name only a node its tenant sees ` +
      `(kubectl get nodes); remove spec.nodeName to let the super cluster schedule it`,
  };
}

/** UNSCHEDULABLE_TAINT is the taint the scheduler reads a cordoned node as (its NodeUnschedulable plugin). */
const UNSCHEDULABLE_TAINT: Taint = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };

/**
 * closedToPod says why a node of the tenant takes no new Pod bound by name, or nothing when it does. A Pod with
 * spec.nodeName skips the scheduler, and the kubelet checks neither NoSchedule taints nor a cordon, so the syncer
 * makes the scheduler's checks itself: the platform still lets the tenant's Pods be placed there (mayPlaceOn: the
 * forced and RuntimeClass node selectors, taints its policy allows; a node where the tenant has a Pod may have left
 * its pool or been tainted for another team since), the node is not cordoned (unless the Pod tolerates it, as the
 * scheduler allows), and every NoSchedule or NoExecute taint is tolerated by the Pod's own tolerations or those the
 * platform adds (pods.forced, the required RuntimeClass).
 */
function closedToPod(node: string, spec: PodSpec, ctx: PluginContext): string | undefined {
  const superNode = ctx.superCache.get<Node>(R.nodes, undefined, node);
  if (!superNode) return 'the node is gone';
  if (!mayPlaceOn(superNode, ctx.tenant, ctx.superCache))
    return "the platform's placement for this tenant (forced node selector, allowed taints) no longer includes it";
  const required = ctx.tenant.runtimeClasses?.required;
  const rc = required
    ? ctx.superCache.get<{ scheduling?: { tolerations?: Toleration[] } }>(R.runtimeclasses, undefined, required)
    : undefined;
  const own = Array.isArray(spec.tolerations) ? (spec.tolerations as Toleration[]) : [];
  const tolerations = [...own, ...(ctx.tenant.pods?.forced?.tolerations ?? []), ...(rc?.scheduling?.tolerations ?? [])];
  const taints = ((superNode.spec?.taints ?? []) as Taint[]).filter(
    (t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute',
  );
  if (superNode.spec?.unschedulable === true) taints.push(UNSCHEDULABLE_TAINT);
  const open = taints.find((taint) => !tolerations.some((t) => tolerates(t, taint)));
  if (!open) return undefined;
  return (
    `the node has the taint ${open.key}${open.value ? `=${open.value}` : ''}:${open.effect} that the Pod does not ` +
    `tolerate; a Pod bound by name gets the scheduler's taint and cordon checks`
  );
}

/**
 * translateNodeName names, in a new super Pod spec, the super node behind the vNode of its nodeName (checked by
 * checkNodeName); without a nodeName nothing changes.
 */
export function translateNodeName(spec: PodSpec, ctx: Pick<PluginContext, 'sharedTenants' | 'superCluster'>): void {
  if (!spec.nodeName) return;
  spec.nodeName = superNodeName(spec.nodeName, ctx.sharedTenants ? ctx.superCluster : undefined) ?? spec.nodeName;
}
