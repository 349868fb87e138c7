import { createPatch, type Operation } from 'rfc6902';
import { isDeepStrictEqual } from 'node:util';
import type { KubeObject } from '../kube/client.ts';

/** SERVER_META are metadata fields the apiserver owns; desired objects never set them and diffs ignore them. */
const SERVER_META = [
  'resourceVersion',
  'uid',
  'creationTimestamp',
  'generation',
  'managedFields',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
] as const;

/** specOf returns a copy of an object without status and without server-owned metadata. */
export function specOf(o: KubeObject): KubeObject {
  const { status: _status, metadata, ...rest } = o as KubeObject & { status?: unknown };
  const m = { ...(metadata ?? {}) };
  for (const f of SERVER_META) delete m[f];
  return { ...rest, metadata: m };
}

/**
 * diffSpec returns the JSON Patch that turns actual into desired, ignoring status and server-owned metadata. The
 * first operation tests actual's resourceVersion, so a write based on a stale cache fails instead of clobbering.
 */
export function diffSpec(actual: KubeObject, desired: KubeObject): Operation[] {
  const ops = createPatch(specOf(actual), specOf(desired));
  if (!ops.length) return [];
  return [{ op: 'test', path: '/metadata/resourceVersion', value: actual.metadata?.resourceVersion }, ...ops];
}

/** diffStatus returns the JSON Patch (on /status) that turns actual's status into desired's. */
export function diffStatus(actual: KubeObject, desired: KubeObject): Operation[] {
  const a = (actual as { status?: unknown }).status;
  const d = (desired as { status?: unknown }).status;
  const ops = createPatch({ status: a ?? {} }, { status: d ?? {} });
  if (!ops.length) return [];
  const fix: Operation[] = a === undefined ? [{ op: 'add', path: '/status', value: {} }] : [];
  return [{ op: 'test', path: '/metadata/resourceVersion', value: actual.metadata?.resourceVersion }, ...fix, ...ops];
}

/**
 * CONDITION_TIMES are the fields of a status condition that say when it was last seen or changed, not what it says.
 * lastHeartbeatTime is not one of them: a vNode's Ready heartbeat is what keeps the tenant's node lifecycle controller
 * from marking it unreachable.
 */
const CONDITION_TIMES = ['lastTransitionTime', 'lastProbeTime'] as const;

/** withoutConditionTimes is a status with CONDITION_TIMES dropped from each of its conditions. */
function withoutConditionTimes(status: unknown): unknown {
  if (status === null || typeof status !== 'object') return status;
  const s = status as { conditions?: unknown };
  if (!Array.isArray(s.conditions)) return status;
  return {
    ...s,
    conditions: s.conditions.map((c: unknown) => {
      if (c === null || typeof c !== 'object') return c;
      const out = { ...(c as Record<string, unknown>) };
      for (const f of CONDITION_TIMES) delete out[f];
      return out;
    }),
  };
}

/**
 * sameStatus says whether two statuses tell a reader the same thing: equal once the times of their conditions are
 * set aside. A condition whose type, status, reason and message are the same is the same condition, whichever
 * apiserver stamped it when: the Binding stamps the tenant Pod's PodScheduled with its own time, and copying the super
 * Pod's time over it would be a write that shows the user nothing new. Any other change writes the whole status, the
 * super times included.
 */
export function sameStatus(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(withoutConditionTimes(a ?? {}), withoutConditionTimes(b ?? {}));
}

/** forCreate strips server-owned metadata from a desired object before it is created (status stays: Nodes keep it). */
export function forCreate<T extends KubeObject>(o: T): T {
  const m = { ...(o.metadata ?? {}) };
  for (const f of SERVER_META) delete m[f];
  return { ...o, metadata: m };
}
