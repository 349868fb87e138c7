/**
 * The syncer's events travel on a low-priority lane: a reconcile hands its event over and goes on, and a few writers
 * record events in the background, taking tenants in turn, so events never hold a worker and a tenant that floods
 * the lane delays only its own events. Each tenant's backlog is bounded; beyond it new events are dropped and
 * counted, as events are best effort.
 */
import { Fifo } from '../queue/fifo.ts';

/** EventWrite records one event; it resolves when done and never rejects (failures are its own to report). */
export type EventWrite = () => Promise<void>;

/** EventLaneOptions configure an EventLane. */
export interface EventLaneOptions {
  /** writes at once over all tenants; default 2 */
  concurrency?: number;
  /** events waiting per tenant before new ones are dropped; default 1000 */
  maxPendingPerTenant?: number;
  /** told of every event dropped because its tenant's backlog was full */
  onDrop?: (tenant: string) => void;
}

/** EventLane runs event writes in the background, a bounded backlog per tenant, tenants served in turn. */
export class EventLane {
  private readonly pending = new Map<string, Fifo<EventWrite>>();
  private readonly concurrency: number;
  private readonly maxPending: number;
  private running = 0;
  private stopped = false;
  private idle: Array<() => void> = [];

  constructor(private readonly o: EventLaneOptions = {}) {
    this.concurrency = o.concurrency ?? 2;
    this.maxPending = o.maxPendingPerTenant ?? 1000;
  }

  /** push queues one event write of a tenant; false when it was dropped (stopped, or the tenant's backlog is full). */
  push(tenant: string, write: EventWrite): boolean {
    if (this.stopped) return false;
    let q = this.pending.get(tenant);
    if (!q) {
      q = new Fifo<EventWrite>();
      this.pending.set(tenant, q);
    }
    if (q.length >= this.maxPending) {
      this.o.onDrop?.(tenant);
      return false;
    }
    q.push(write);
    this.pump();
    return true;
  }

  /** pendingOf is the number of a tenant's events waiting to be written. */
  pendingOf(tenant: string): number {
    return this.pending.get(tenant)?.length ?? 0;
  }

  /** forget drops the waiting events of a tenant that is no longer served. */
  forget(tenant: string): void {
    this.pending.delete(tenant);
  }

  /** drained resolves when nothing waits and nothing is being written. */
  drained(): Promise<void> {
    if (!this.running && !this.pending.size) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** stop drops every waiting event and resolves when the writes under way have ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.pending.clear();
    await this.drained();
  }

  private pump(): void {
    while (this.running < this.concurrency) {
      const write = this.next();
      if (!write) break;
      this.running++;
      void write()
        .catch(() => undefined)
        .finally(() => {
          this.running--;
          this.pump();
          if (!this.running && !this.pending.size) {
            const waiting = this.idle;
            this.idle = [];
            waiting.forEach((f) => f());
          }
        });
    }
  }

  /** next takes the first event of the tenant first in turn, and puts that tenant at the back of the turn. */
  private next(): EventWrite | undefined {
    for (const [tenant, q] of this.pending) {
      const write = q.shift();
      this.pending.delete(tenant);
      if (q.length) this.pending.set(tenant, q);
      if (write) return write;
    }
    return undefined;
  }
}
