/**
 * The GitSource status pieces the controller writes: conditions at the source's generation, the record-backed
 * revision and confirmation, the reconcile request handled, and which VirtualCluster status changes concern health.
 */
import { setCondition, type ConditionInput } from '../core/controller/status.ts';
import type { KubeObject } from '../core/kube/client.ts';
import type { GitSource, GitSourceStatus } from './applier/gitsource.ts';
import { recordedData, type AppliedRecord } from './record.ts';

/** parseDuration reads `90s`, `1m`, `1h30m`, `500ms` into milliseconds. */
export function parseDuration(s: string | undefined, fallbackMs: number): number {
  if (!s) return fallbackMs;
  let total = 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  let m: RegExpExecArray | null;
  let matched = '';
  while ((m = re.exec(s))) {
    total += Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
    matched += m[0];
  }
  return matched === s && total > 0 ? total : fallbackMs;
}

/** handled is a status recording the reconcile request this reconcile handled, if any. */
export function handled(status: GitSourceStatus, request: string | undefined): GitSourceStatus {
  return request ? { ...status, lastHandledReconcileAt: request } : status;
}

/** healthChanged tells whether a VirtualCluster's status write changed what its health is judged from. */
export function healthChanged(a: KubeObject, b: KubeObject): boolean {
  type S = { status?: { phase?: string; observedGeneration?: number; conditions?: Array<{ type: string }> } };
  const pick = (o: KubeObject) => {
    const s = (o as S).status;
    return JSON.stringify([s?.phase, s?.observedGeneration, s?.conditions?.find((c) => c.type === 'Ready')]);
  };
  return pick(a) !== pick(b);
}

/** withCondition is the GitSource's status with one condition set (at its generation). */
export function withCondition(gs: GitSource, c: Omit<ConditionInput, 'observedGeneration'>): GitSourceStatus {
  const old = gs.status ?? {};
  const generation = gs.metadata.generation;
  return {
    ...old,
    observedGeneration: generation,
    conditions: setCondition(old.conditions, { ...c, observedGeneration: generation }),
  };
}

/**
 * reported is a status to write with lastAppliedRevision and lastHandledConfirmation from the manager's record,
 * whatever status said before.
 */
export function reported(record: AppliedRecord, status: GitSourceStatus): GitSourceStatus {
  const d = recordedData(record);
  const out: GitSourceStatus = d.revision ? { ...status, lastAppliedRevision: d.revision } : { ...status };
  // The handled confirmation is reported from the record only: a value found in status that the record does not hold
  // (written there by a status writer) is removed, null being a deletion in the status merge patch.
  if (d.confirmation) out.lastHandledConfirmation = d.confirmation;
  else if (out.lastHandledConfirmation !== undefined) out.lastHandledConfirmation = null;
  return out;
}

/** stalled keeps the last applied revision and inventory, and says why the source cannot go on. */
export function stalled(gs: GitSource, reason: string, message: string): GitSourceStatus {
  const s = withCondition(gs, { type: 'Ready', status: 'False', reason, message });
  const others = (s.conditions ?? []).filter((x) => x.type !== 'Reconciling');
  return {
    ...s,
    conditions: setCondition(others, {
      type: 'Stalled',
      status: 'True',
      reason,
      message,
      observedGeneration: gs.metadata.generation,
    }),
  };
}

/** waiting is Ready False and Reconciling True for the same reason: the source goes on by itself once it passes. */
export function waiting(gs: GitSource, reason: string, message: string): GitSourceStatus {
  const s = withCondition(gs, { type: 'Ready', status: 'False', reason, message });
  return {
    ...s,
    conditions: setCondition(s.conditions, {
      type: 'Reconciling',
      status: 'True',
      reason,
      message,
      observedGeneration: gs.metadata.generation,
    }),
  };
}
