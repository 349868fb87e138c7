/**
 * The syncer's events travel on a low-priority lane: a reconcile hands its event over and goes on, and a few writers
 * record events in the background, taking tenants in turn, so events never hold a worker and a tenant that floods
 * the lane delays only its own events. Repeats of an event still waiting coalesce into it (one write, its count
 * raised). Each tenant's backlog is bounded; beyond it the oldest waiting event is dropped and counted, as events
 * are best effort and the newest say most.
 */
import { Fifo } from '../queue/fifo.ts';

/**
 * EventWrite records one event, `count` times coalesced (at least 1); it resolves when done and never rejects
 * (failures are its own to report).
 */
export type EventWrite = (count: number) => Promise<void>;

/** LaneEvent is one event waiting on the lane. */
interface LaneEvent {
  readonly write: EventWrite;
  /** what repeats of this event share (object, reason, message); absent: never coalesced */
  readonly id: string | undefined;
  /** told when the event is dropped to keep the bound */
  readonly dropped: (() => void) | undefined;
  count: number;
}

/** PushOptions describe how an event joins the lane. */
export interface PushOptions {
  /** repeats pushed with the same id while this one waits raise its count instead of queueing a write */
  id?: string;
  /** told if the event is dropped to keep the bound (not when the lane is stopped or the tenant forgotten) */
  dropped?: () => void;
}

/** EventLaneOptions configure an EventLane. */
export interface EventLaneOptions {
  /** writes at once over all tenants; default 2 */
  concurrency?: number;
  /** events waiting per tenant; beyond it the oldest is dropped; default 1000 */
  maxPendingPerTenant?: number;
  /** told of every event dropped because its tenant's backlog was full */
  onDrop?: (tenant: string) => void;
  /** told of every repeat that coalesced into an event still waiting */
  onCoalesce?: (tenant: string) => void;
}

/** EventLane runs event writes in the background, a bounded backlog per tenant, tenants served in turn. */
export class EventLane {
  private readonly pending = new Map<string, Fifo<LaneEvent>>();
  /** the waiting events that have an id, by tenant and id */
  private readonly byId = new Map<string, LaneEvent>();
  private readonly concurrency: number;
  private readonly maxPending: number;
  private running = 0;
  private stopped = false;
  private idle: Array<() => void> = [];

  constructor(private readonly o: EventLaneOptions = {}) {
    this.concurrency = o.concurrency ?? 2;
    this.maxPending = o.maxPendingPerTenant ?? 1000;
  }

  /**
   * push queues one event write of a tenant, or coalesces it into the waiting event with the same id; false when it
   * was not taken (the lane is stopped). A full backlog drops its oldest event to take this one.
   */
  push(tenant: string, write: EventWrite, o: PushOptions = {}): boolean {
    if (this.stopped) return false;
    const idKey = o.id === undefined ? undefined : `${tenant}\u0000${o.id}`;
    const same = idKey === undefined ? undefined : this.byId.get(idKey);
    if (same) {
      same.count++;
      this.o.onCoalesce?.(tenant);
      return true;
    }
    let q = this.pending.get(tenant);
    if (!q) {
      q = new Fifo<LaneEvent>();
      this.pending.set(tenant, q);
    }
    while (q.length >= this.maxPending) {
      const oldest = q.shift();
      if (!oldest) break;
      this.settle(tenant, oldest);
      this.o.onDrop?.(tenant);
      oldest.dropped?.();
    }
    const e: LaneEvent = { write, id: o.id, dropped: o.dropped, count: 1 };
    q.push(e);
    if (idKey !== undefined) this.byId.set(idKey, e);
    this.pump();
    return true;
  }

  /** waiting tells whether an event of a tenant with this id waits on the lane (a repeat would coalesce into it). */
  waiting(tenant: string, id: string): boolean {
    return this.byId.has(`${tenant}\u0000${id}`);
  }

  /** pendingOf is the number of a tenant's events waiting to be written. */
  pendingOf(tenant: string): number {
    return this.pending.get(tenant)?.length ?? 0;
  }

  /** forget drops the waiting events of a tenant that is no longer served. */
  forget(tenant: string): void {
    for (const e of this.pending.get(tenant) ?? []) this.settle(tenant, e);
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
    this.byId.clear();
    await this.drained();
  }

  private pump(): void {
    while (this.running < this.concurrency) {
      const e = this.next();
      if (!e) break;
      this.running++;
      void e
        .write(e.count)
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

  /** settle takes an event out of the coalescing index: it no longer waits. */
  private settle(tenant: string, e: LaneEvent): void {
    if (e.id !== undefined) this.byId.delete(`${tenant}\u0000${e.id}`);
  }

  /** next takes the first event of the tenant first in turn, and puts that tenant at the back of the turn. */
  private next(): LaneEvent | undefined {
    for (const [tenant, q] of this.pending) {
      const e = q.shift();
      this.pending.delete(tenant);
      if (q.length) this.pending.set(tenant, q);
      if (e) {
        this.settle(tenant, e);
        return e;
      }
    }
    return undefined;
  }
}
