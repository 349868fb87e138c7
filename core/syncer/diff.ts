import { createPatch, type Operation } from 'rfc6902';
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

/** forCreate strips server-owned metadata from a desired object before it is created (status stays: Nodes keep it). */
export function forCreate<T extends KubeObject>(o: T): T {
  const m = { ...(o.metadata ?? {}) };
  for (const f of SERVER_META) delete m[f];
  return { ...o, metadata: m };
}
