import { randomBytes } from 'node:crypto';
import type { KubeClient, ObjectMeta, Resource } from './client.ts';
import { R } from './resources.ts';

/** EventTarget is the object an event is about. */
export interface EventTarget {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

/** apiVersionOf is the apiVersion of a resource's objects: `group/version`, or the version alone for the core group. */
export function apiVersionOf(r: Resource): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

/**
 * eventTarget is the reference an event about an object of the resource carries, from the object's metadata; an
 * object without a name (never one read from an apiserver) gets the empty name.
 */
export function eventTarget(r: Resource, m: Pick<ObjectMeta, 'namespace' | 'name' | 'uid'>): EventTarget {
  return { apiVersion: apiVersionOf(r), kind: r.kind, namespace: m.namespace, name: m.name ?? '', uid: m.uid };
}

/**
 * recordEvent creates a core/v1 Event about an object, from a component. Events are best effort: a failure is
 * returned to the caller to log, never thrown, so a missing event cannot fail a reconcile.
 */
export async function recordEvent(
  client: KubeClient,
  target: EventTarget,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
  component: string,
): Promise<Error | undefined> {
  const now = new Date().toISOString();
  try {
    await client.create(R.events, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${target.name}.${randomBytes(8).toString('hex')}`, namespace: target.namespace ?? 'default' },
      involvedObject: target,
      type,
      reason,
      message: message.slice(0, 1024),
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      source: { component },
      reportingComponent: component,
    });
    return undefined;
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}
