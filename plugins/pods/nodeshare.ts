import { type PluginContext, provenanceOf, R } from '@virtualcluster-ts/plugin-sdk';
import type { Pod, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';

/**
 * The per-node share of Pod slots (TenantPolicy pods.maxPodsPerNode): a node runs a fixed number of Pods (the
 * kubelet's maxPods), and one tenant must not take them all. The super scheduler is what places Pods, so the share is
 * made something it sees: a new super Pod gets a required node affinity that excludes, by name, every node already
 * holding the share of the tenant's Pods. It is decided when the super Pod is created (a Pod's affinity cannot change
 * afterwards), so Pods created together before any of them is bound may still meet on one node; the syncer's
 * scheduling window bounds how many of a tenant's Pods wait for the scheduler at once, and so the overshoot.
 */

const ended = (p: Pod): boolean => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';

/** fullNodes lists, sorted, the super nodes holding `max` or more of the tenant's Pods that have not ended. */
export function fullNodes(ctx: Pick<PluginContext, 'tenant' | 'superCache'>, max: number): string[] {
  const counts = new Map<string, number>();
  for (const p of ctx.superCache.list<Pod>(R.pods)) {
    const node = p.spec?.nodeName;
    if (!node || ended(p) || provenanceOf(p)?.cluster !== ctx.tenant.key) continue;
    counts.set(node, (counts.get(node) ?? 0) + 1);
  }
  return [...counts]
    .filter(([, n]) => n >= max)
    .map(([node]) => node)
    .sort();
}

interface Term {
  matchExpressions?: unknown[];
  matchFields?: Array<{ key: string; operator: string; values?: string[] }>;
}

/**
 * applyNodeShare adds to a new super Pod's spec the exclusion of the tenant's full nodes: a `metadata.name NotIn`
 * field requirement per full node in every required node selector term (terms are ORed, so each must carry it), or one term of its
 * own when the Pod requires none. Nothing changes without a share or without a full node.
 */
export function applyNodeShare(spec: PodSpec, ctx: Pick<PluginContext, 'tenant' | 'superCache'>): void {
  const max = ctx.tenant.pods?.maxPodsPerNode;
  if (max === undefined) return;
  const full = fullNodes(ctx, max);
  if (!full.length) return;
  // The apiserver takes one value per metadata.name requirement of a node selector: one NotIn per full node.
  const notIn = full.map((node) => ({ key: 'metadata.name', operator: 'NotIn', values: [node] }));
  const affinity = ((spec.affinity as Record<string, unknown> | undefined) ??= {}) as Record<string, unknown>;
  const node = (affinity.nodeAffinity ??= {}) as Record<string, unknown>;
  const required = (node.requiredDuringSchedulingIgnoredDuringExecution ??= {}) as { nodeSelectorTerms?: Term[] };
  const terms = (required.nodeSelectorTerms ??= []);
  if (!terms.length) terms.push({});
  for (const t of terms) (t.matchFields ??= []).push(...notIn.map((r) => ({ ...r, values: [...r.values] })));
}
