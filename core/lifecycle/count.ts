import { SERVING_PHASES, type VirtualCluster } from '../api/virtualcluster.ts';
import { CONTINUE, pending, type Outcome } from './decisions.ts';

/**
 * DEFAULT_MAX_PER_NAMESPACE is how many VirtualClusters of one namespace the manager provisions by default: each is a
 * control plane (processes, or Pods in the super cluster), so whoever may write VirtualClusters in a namespace, or a
 * GitSource applying into it, must not be able to ask for any number.
 */
export const DEFAULT_MAX_PER_NAMESPACE = 20;

/** TOO_MANY_VIRTUAL_CLUSTERS is the reason of a VirtualCluster past its namespace's count. */
export const TOO_MANY_VIRTUAL_CLUSTERS = 'TooManyVirtualClusters';

/** COUNT_RECHECK_MS is how soon a VirtualCluster past the count looks again (an older one may have gone). */
export const COUNT_RECHECK_MS = 30_000;

// A sleeping tenant was served and keeps its place, as a serving one does.
const SERVING: ReadonlySet<string> = new Set([...SERVING_PHASES, 'Sleeping']);

/** order sorts VirtualClusters oldest first: by creationTimestamp, then by name (one second holds many). */
function order(a: VirtualCluster, b: VirtualCluster): number {
  const ta = a.metadata?.creationTimestamp ?? '';
  const tb = b.metadata?.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  const na = a.metadata?.name ?? '';
  const nb = b.metadata?.name ?? '';
  return na < nb ? -1 : na > nb ? 1 : 0;
}

/**
 * countVerdict decides whether `vc` is within the first `max` VirtualClusters of its namespace (oldest first, those
 * being deleted left out). One past it is not provisioned: Pending (capacity), reason TooManyVirtualClusters, a Warning event
 * once, and a look again later. A VirtualCluster already serving keeps serving when the limit is lowered.
 */
export function countVerdict(vc: VirtualCluster, all: readonly VirtualCluster[], max: number): Outcome {
  if (SERVING.has(vc.status?.phase ?? '')) return CONTINUE;
  const ns = vc.metadata?.namespace;
  const live = all.filter((x) => x.metadata?.namespace === ns && !x.metadata?.deletionTimestamp).sort(order);
  const rank = live.findIndex((x) => x.metadata?.uid === vc.metadata?.uid);
  if (rank < max) return CONTINUE;
  const reason = TOO_MANY_VIRTUAL_CLUSTERS;
  const message =
    `VirtualCluster ${ns}/${vc.metadata?.name}: namespace ${ns} has ${live.length} VirtualClusters and the manager ` +
    `provisions the ${max} oldest (virtualClusters.maxPerNamespace); delete one to make room`;
  return pending(vc, reason, message, COUNT_RECHECK_MS);
}
