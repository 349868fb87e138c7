import { isDeepStrictEqual } from 'node:util';
import { isNotFound, type KubeClient, type KubeObject, type Resource } from '../kube/client.ts';

/** CONDITION_STATUSES are the values of a condition's status, as in metav1.Condition. */
export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;
/** ConditionStatus is one of CONDITION_STATUSES. */
export type ConditionStatus = (typeof CONDITION_STATUSES)[number];

/** Condition is one metav1.Condition of an object's status: a type, its status and a machine-readable reason. */
export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message?: string;
  /** when status last changed (RFC 3339) */
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** ConditionInput is a condition as a reconcile decides it; setCondition supplies the transition time. */
export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

/**
 * nextCondition is c with its lastTransitionTime: that of the condition of the same type in previous when the
 * status is unchanged, else now.
 */
export function nextCondition(
  previous: readonly Condition[] | undefined,
  c: ConditionInput,
  now: Date = new Date(),
): Condition {
  const before = previous?.find((x) => x.type === c.type);
  return {
    ...c,
    lastTransitionTime: before && before.status === c.status ? before.lastTransitionTime : now.toISOString(),
  };
}

/**
 * setCondition returns a new list: conditions without the one of c's type, then c with nextCondition's transition
 * time. The input list is not changed.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  c: ConditionInput,
  now: Date = new Date(),
): Condition[] {
  return [...(conditions ?? []).filter((x) => x.type !== c.type), nextCondition(conditions, c, now)];
}

/** StatusWriterOptions configure a StatusWriter. */
export interface StatusWriterOptions {
  client: KubeClient;
  resource: Resource;
  /** the field manager of the status patches */
  fieldManager: string;
}

/**
 * StatusWriter writes the status subresource of a controller's objects. write never changes the object it is given
 * (an informer's cached object must not be mutated): it merge-patches `/status` only when the new status differs
 * from the object's, ignores an object deleted meanwhile, and returns a deep copy carrying the new status for the
 * rest of the reconcile.
 */
export class StatusWriter<S extends object> {
  constructor(private readonly o: StatusWriterOptions) {}

  /** write records status on obj's server copy when it changed, and returns obj as it now stands. */
  async write<T extends KubeObject & { status?: S }>(obj: T, status: S): Promise<T> {
    const w = planStatusWrite(obj, status);
    if (!w) return obj;
    const m = obj.metadata ?? {};
    try {
      await this.o.client.patch(this.o.resource, m.namespace, m.name!, w.patch, 'merge', {
        subresource: 'status',
        fieldManager: this.o.fieldManager,
      });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    return w.updated;
  }
}

/** StatusWrite is a status change to make: the merge patch of `/status` and the object as it will stand. */
export interface StatusWrite<T> {
  patch: { status: unknown };
  updated: T;
}

/**
 * planStatusWrite decides StatusWriter.write without I/O: undefined when status equals obj's, else the patch and a
 * deep copy of obj carrying a copy of status. Neither obj nor status is changed or shared with the result.
 */
export function planStatusWrite<S extends object, T extends KubeObject & { status?: S }>(
  obj: T,
  status: S,
): StatusWrite<T> | undefined {
  if (sameJSON(obj.status ?? {}, status)) return undefined;
  const updated = structuredClone(obj);
  updated.status = structuredClone(status);
  return { patch: { status: structuredClone(status) }, updated };
}

/** sameJSON compares two values as their JSON documents: key order and undefined fields do not count. */
export function sameJSON(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b)));
}
