/**
 * The super cluster's side of a side-by-side run: the same specs run against the super cluster the tenant runs on,
 * on the same real node(s). The super cluster's simulated (kwok) nodes run no containers, so they are cordoned for
 * the run (the suite leaves cordoned nodes out of its node counts and the scheduler places nothing there), and the
 * real nodes' taint, which keeps the platform's own Pods off them and which the suite's Pods do not tolerate, is
 * lifted; both are put back afterwards.
 */
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { isConflict } from '../../core/kube/errors.ts';
import { R } from '../../core/kube/resources.ts';

/** Taint is a node taint. */
interface Taint {
  key: string;
  value?: string;
  effect: string;
}

/** SuiteNode is the part of a Node this file reads. */
export type SuiteNode = KubeObject & { spec?: { unschedulable?: boolean; taints?: Taint[] } };

/** NodeChanges are the nodes a super run cordons and the real nodes whose taint it lifts. */
export interface NodeChanges {
  cordon: string[];
  untaint: string[];
}

/**
 * superRunChanges plans the node changes of a super run: every node without the real-node label that is not already
 * cordoned is cordoned; every real node carrying `taint` loses it. Names sorted.
 */
export function superRunChanges(nodes: readonly SuiteNode[], realLabel: string, taint: Taint): NodeChanges {
  const out: NodeChanges = { cordon: [], untaint: [] };
  for (const n of nodes) {
    const name = n.metadata?.name ?? '';
    if (n.metadata?.labels?.[realLabel] !== 'true') {
      if (!n.spec?.unschedulable) out.cordon.push(name);
    } else if (n.spec?.taints?.some((t) => t.key === taint.key && t.effect === taint.effect)) out.untaint.push(name);
  }
  out.cordon.sort();
  out.untaint.sort();
  return out;
}

const withoutTaint = (taints: readonly Taint[] | undefined, t: Taint) =>
  (taints ?? []).filter((x) => !(x.key === t.key && x.effect === t.effect));

/**
 * prepareSuperRun makes the changes superRunChanges plans and returns what puts them back (the cordons lifted, the
 * taint added again); writes go through resourceVersion preconditions and are retried on a conflict.
 */
export async function prepareSuperRun(
  client: KubeClient,
  realLabel: string,
  taint: Taint,
): Promise<{ changes: NodeChanges; restore: () => Promise<void> }> {
  const nodes = (await client.list<SuiteNode>(R.nodes)).items;
  const changes = superRunChanges(nodes, realLabel, taint);
  const edit = async (name: string, f: (n: SuiteNode) => void) => {
    for (let attempt = 0; ; attempt++) {
      const n = await client.get<SuiteNode>(R.nodes, undefined, name);
      f(n);
      try {
        await client.update(R.nodes, n, { fieldManager: 'vc-conformance' });
        return;
      } catch (e) {
        if (attempt >= 5 || !isConflict(e)) throw e;
      }
    }
  };
  for (const name of changes.cordon) await edit(name, (n) => ((n.spec ??= {}).unschedulable = true));
  for (const name of changes.untaint)
    await edit(name, (n) => ((n.spec ??= {}).taints = withoutTaint(n.spec?.taints, taint)));
  const restore = async () => {
    for (const name of changes.cordon) await edit(name, (n) => delete n.spec?.unschedulable);
    for (const name of changes.untaint)
      await edit(name, (n) => ((n.spec ??= {}).taints = [...withoutTaint(n.spec?.taints, taint), { ...taint }]));
  };
  return { changes, restore };
}
