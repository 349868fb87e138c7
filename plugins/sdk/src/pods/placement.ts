import type { CacheReader, NodeTotals, NodesView, PluginContext, TenantView, TolerationRule } from '../contract.ts';
import type { KubeObject } from '../kube.ts';
import { provenanceOf } from '../names.ts';
import { R } from '../resources.ts';
import { DEFAULT_TOLERATIONS } from './policy.ts';
import type { Node, Pod } from './types.ts';

/** Taint is one core/v1 Taint of a super node. */
export interface Taint {
  key?: string;
  value?: string;
  effect?: string;
}

/** Toleration is one core/v1 Toleration, as the forced placement and a RuntimeClass's scheduling carry them. */
export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}

/** RuntimeClass is a node.k8s.io/v1 RuntimeClass as far as its scheduling goes. */
interface RuntimeClass extends KubeObject {
  scheduling?: { nodeSelector?: Record<string, string>; tolerations?: Toleration[] };
}

/** nodesView is the tenant's vNode view from its policy (nodes.view); withPods when the policy says nothing. */
export function nodesView(tenant: Pick<TenantView, 'nodes'>): NodesView {
  return tenant.nodes?.view === 'schedulable' ? 'schedulable' : 'withPods';
}

/**
 * nodeTotals is what the tenant sees of a node's own figures, from its policy (nodes.totals): scaled when the policy
 * says nothing, withheld when it says so (any other value, as from an object written past validation, withholds too).
 */
export function nodeTotals(tenant: Pick<TenantView, 'nodes'>): NodeTotals {
  const t = tenant.nodes?.totals;
  return t === undefined || t === 'scaled' ? 'scaled' : 'withheld';
}

/** tolerates is the scheduler's rule: does toleration `t` tolerate `taint` (an empty key with Exists: every taint)? */
export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (!t.key) return t.operator === 'Exists';
  if (t.key !== taint.key) return false;
  return t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '');
}

/**
 * ruleAllows says whether a policy toleration rule lets a tenant Pod carry a toleration of `taint`: the rule's key
 * (absent: the empty key, which with Exists tolerates every key) and its effect (absent: any).
 */
function ruleAllows(rule: TolerationRule, taint: Taint): boolean {
  if (rule.effect !== undefined && rule.effect !== taint.effect) return false;
  return !rule.key || rule.key === taint.key;
}

/**
 * mayPlaceOn says whether the tenant's Pods may be placed on a super node by what the platform decides: every entry
 * of the forced node selector (pods.forced) and of the node selector of the RuntimeClass every Pod runs in
 * (runtimeClasses.required; missing in the super cluster: no node) matches a node label, and every NoSchedule or
 * NoExecute taint is tolerated by the forced or RuntimeClass tolerations or allowed by pods.tolerations.
 */
export function mayPlaceOn(node: Node, tenant: TenantView, superCache: CacheReader): boolean {
  const required = tenant.runtimeClasses?.required;
  const rc = required ? superCache.get<RuntimeClass>(R.runtimeclasses, undefined, required) : undefined;
  if (required && !rc) return false;
  const labels = node.metadata?.labels ?? {};
  for (const selector of [tenant.pods?.forced?.nodeSelector, rc?.scheduling?.nodeSelector])
    for (const [k, v] of Object.entries(selector ?? {})) if (labels[k] !== v) return false;
  const tolerations: Toleration[] = [
    ...(tenant.pods?.forced?.tolerations ?? []),
    ...(rc?.scheduling?.tolerations ?? []),
  ];
  const rules = tenant.pods?.tolerations ?? DEFAULT_TOLERATIONS;
  return ((node.spec?.taints ?? []) as Taint[]).every(
    (taint) =>
      (taint.effect !== 'NoSchedule' && taint.effect !== 'NoExecute') ||
      tolerations.some((t) => tolerates(t, taint)) ||
      rules.some((r) => ruleAllows(r, taint)),
  );
}

/** isReadyAndSchedulable says whether a super node takes new Pods: its Ready condition is True and it is not cordoned. */
export function isReadyAndSchedulable(node: Node): boolean {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  return ready?.status === 'True' && node.spec?.unschedulable !== true;
}

/**
 * tenantHasPodOn reports whether the tenant has a Pod on the node: a super Pod the syncer wrote for it, scheduled
 * there. A tenant Pod's own spec.nodeName does not count: the tenant writes it, and could name any super node to see it.
 */
export function tenantHasPodOn(node: string, ctx: PluginContext): boolean {
  return ctx.superCache
    .list<Pod>(R.pods)
    .some((p) => p.spec?.nodeName === node && provenanceOf(p)?.cluster === ctx.tenant.key);
}

/**
 * shownForPlacement says whether a tenant whose policy chose the `schedulable` view sees the node without Pods on it:
 * the node is Ready, not cordoned, and its Pods may be placed there (mayPlaceOn).
 */
export function shownForPlacement(superNode: Node, ctx: PluginContext): boolean {
  return (
    nodesView(ctx.tenant) === 'schedulable' &&
    isReadyAndSchedulable(superNode) &&
    mayPlaceOn(superNode, ctx.tenant, ctx.superCache)
  );
}
