import { objectKey, type EventHandler } from '../kube/informer.ts';
import type { KubeObject } from '../kube/client.ts';
import { provenanceOf } from '../names/names.ts';

/**
 * SchedulingWindow bounds, per tenant, the super Pods waiting for the super cluster's scheduler. The scheduler takes
 * Pods in priority and then arrival order, whoever they belong to: a tenant creating 500 Pods at once would put a
 * Pod another tenant creates a moment later behind all of them (seconds, measured: the `syncer` bench's flood). With
 * at most `size` Pods of a tenant waiting there, another tenant's Pod waits behind at most `size` Pods of each busy
 * tenant; the flooding tenant's further creates wait in the syncer (parked, without a write or a retry loop) and go
 * as soon as one of its Pods is bound.
 *
 * A super Pod counts from the moment its create is sent until the scheduler has dealt with it: bound (spec.nodeName),
 * found unschedulable (PodScheduled=False: it waits in the scheduler's backoff, not ahead of anyone), ended or
 * deleted. A Pod still waiting after `staleMs` stops counting (another scheduler's Pod, or a create whose Pod the
 * cache never showed), so a tenant's window never closes for good. Parked keys are woken in the order they came, as
 * places free up, and at least every `recheckMs` while any is parked.
 */
export interface SchedulingWindowOptions {
  /** the super Pods of one tenant that may wait for the scheduler at once */
  size: number;
  /** wake puts a parked key back on the queue */
  wake: (key: string) => void;
  /** how long a waiting Pod counts at most; default 30 s */
  staleMs?: number;
  /** how often parked keys are reconsidered without an event; default 1 s */
  recheckMs?: number;
  now?: () => number;
}

interface TenantWindow {
  /** super Pod keys (namespace/name) waiting for the scheduler, with when they started to count */
  readonly waiting: Map<string, number>;
  /** queue keys waiting for a place, in arrival order */
  readonly parked: Set<string>;
}

export class SchedulingWindow {
  private readonly tenants = new Map<string, TenantWindow>();
  private readonly now: () => number;
  private readonly staleMs: number;
  private timer?: NodeJS.Timeout;

  constructor(private readonly o: SchedulingWindowOptions) {
    if (!Number.isSafeInteger(o.size) || o.size < 1) {
      throw new RangeError(`scheduling window: size must be a positive integer, got ${o.size}`);
    }
    this.now = o.now ?? Date.now;
    this.staleMs = o.staleMs ?? 30_000;
  }

  /**
   * reserve counts a super Pod whose create is about to be sent. It returns false, and parks `key`, when the tenant
   * already has `size` Pods waiting; the key is woken when a place frees up.
   */
  reserve(tenant: string, superPod: string, key: string): boolean {
    const w = this.windowOf(tenant);
    this.expire(w);
    if (w.waiting.has(superPod) || w.waiting.size < this.o.size) {
      w.waiting.set(superPod, w.waiting.get(superPod) ?? this.now());
      w.parked.delete(key);
      return true;
    }
    w.parked.add(key);
    this.arm();
    return false;
  }

  /**
   * parkIfFull parks `key` without counting anything when the tenant's window has no place for `superPod`, and tells
   * whether it did: the syncer asks it before planning a Pod whose super copy is still to be created, so a key that
   * would only be parked is not planned first.
   */
  parkIfFull(tenant: string, superPod: string, key: string): boolean {
    const w = this.tenants.get(tenant);
    if (!w) return false;
    this.expire(w);
    if (w.waiting.has(superPod) || w.waiting.size < this.o.size) return false;
    w.parked.add(key);
    this.arm();
    return true;
  }

  /** release stops counting a super Pod whose create failed. */
  release(tenant: string, superPod: string): void {
    const w = this.tenants.get(tenant);
    if (w?.waiting.delete(superPod)) this.wakeSome(tenant, w);
  }

  /** waitingOf is the number of a tenant's super Pods counted now. */
  waitingOf(tenant: string): number {
    return this.tenants.get(tenant)?.waiting.size ?? 0;
  }

  /** parkedOf is the number of a tenant's keys waiting for a place. */
  parkedOf(tenant: string): number {
    return this.tenants.get(tenant)?.parked.size ?? 0;
  }

  /** forget drops a tenant that is no longer served. */
  forget(tenant: string): void {
    this.tenants.delete(tenant);
  }

  /** clear forgets every tenant's Pods and parked keys (a leadership term ended: the next one queues every key). */
  clear(): void {
    this.tenants.clear();
    this.stop();
  }

  /** stop ends the recheck timer. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** podHandler follows the super Pods: a Pod the scheduler has dealt with, or that is gone, frees its place. */
  podHandler(): EventHandler<KubeObject> {
    const seen = (o: KubeObject, gone: boolean) => {
      const tenant = provenanceOf(o)?.cluster;
      if (!tenant) return;
      const w = this.tenants.get(tenant);
      if (!w) return;
      if ((gone || !waitsForScheduler(o)) && w.waiting.delete(objectKey(o))) this.wakeSome(tenant, w);
    };
    return {
      onAdd: (o) => seen(o, false),
      onUpdate: (_, o) => seen(o, false),
      onDelete: (o) => seen(o, true),
    };
  }

  /** recheck expires stale Pods and wakes what fits, for every tenant; the timer runs it while keys are parked. */
  recheck(): void {
    for (const [tenant, w] of this.tenants) {
      this.expire(w);
      this.wakeSome(tenant, w);
    }
    if (![...this.tenants.values()].some((w) => w.parked.size)) this.stop();
  }

  private windowOf(tenant: string): TenantWindow {
    let w = this.tenants.get(tenant);
    if (!w) this.tenants.set(tenant, (w = { waiting: new Map(), parked: new Set() }));
    return w;
  }

  private expire(w: TenantWindow): void {
    const oldest = this.now() - this.staleMs;
    for (const [id, at] of w.waiting) if (at < oldest) w.waiting.delete(id);
  }

  /** wakeSome wakes as many parked keys as there are free places (a woken key reserves its place when it runs). */
  private wakeSome(tenant: string, w: TenantWindow): void {
    let free = this.o.size - w.waiting.size;
    for (const key of w.parked) {
      if (free-- <= 0) break;
      w.parked.delete(key);
      this.o.wake(key);
    }
    if (!w.parked.size && !w.waiting.size) this.tenants.delete(tenant);
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.recheck(), this.o.recheckMs ?? 1000);
    this.timer.unref();
  }
}

/** waitsForScheduler tells whether the scheduler still has to place a Pod ahead of others: unbound, not found unschedulable, not ended. */
export function waitsForScheduler(o: KubeObject): boolean {
  const pod = o as KubeObject & {
    spec?: { nodeName?: string };
    status?: { phase?: string; conditions?: Array<{ type?: string; status?: string }> };
  };
  if (pod.metadata?.deletionTimestamp || pod.spec?.nodeName) return false;
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return false;
  return !pod.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False');
}
