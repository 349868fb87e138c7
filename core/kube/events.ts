import { randomBytes } from 'node:crypto';
import type { KubeClient } from './client.ts';
import { R } from './resources.ts';

/** EventTarget is the object an event is about. */
export interface EventTarget {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
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
