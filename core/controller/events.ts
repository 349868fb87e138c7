import type { KubeClient, KubeObject } from '../kube/client.ts';
import { recordEvent } from '../kube/events.ts';
import type { Logger } from '../log.ts';

/** EventRecorderOptions configure an EventRecorder. */
export interface EventRecorderOptions {
  client: KubeClient;
  /** the event source, e.g. IDENTITY.manager */
  component: string;
  /** the apiVersion and kind of the objects events are about (list items from the cache may lack them) */
  apiVersion: string;
  kind: string;
  log: Logger;
}

/**
 * EventRecorder records core/v1 Events about one controller's objects. Events are best effort: a failure is logged
 * at warn level and never fails the reconcile.
 */
export class EventRecorder {
  constructor(private readonly o: EventRecorderOptions) {}

  /** record creates an Event about obj. */
  async record(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const m = obj.metadata ?? {};
    const target = {
      apiVersion: this.o.apiVersion,
      kind: this.o.kind,
      name: m.name ?? '',
      namespace: m.namespace,
      uid: m.uid,
    };
    const err = await recordEvent(this.o.client, target, type, reason, message, this.o.component);
    if (err) this.o.log.warn({ err: err.message, reason }, 'could not record event');
  }
}
