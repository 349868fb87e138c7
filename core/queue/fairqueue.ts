import { Fifo } from './fifo.ts';
import { BaseQueue, type QueueOptions } from './workqueue.ts';

/**
 * tenantOfKey is the default tenant of a fair-queue key: the text before the first `/`, so `acme/default/web` and
 * `acme/node-1` belong to `acme`. A key without a `/` belongs to the tenant `''`, which is scheduled like any other.
 */
export function tenantOfKey(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}

/** FairQueueOptions configures a FairQueue. */
export interface FairQueueOptions extends QueueOptions {
  /** tenantOf maps a key to its tenant; default tenantOfKey. It must always give the same tenant for a key. */
  tenantOf?: (key: string) => string;
  /**
   * maxInFlightPerTenant caps the keys of one tenant being processed at once (handed out by `get` and not yet `done`):
   * with N workers and a cap k < N, a tenant whose reconciles hang holds at most k workers and the others keep being
   * served. Undefined means no cap.
   */
  maxInFlightPerTenant?: number;
  /**
   * borrowUpTo lets tenants at their cap borrow idle workers: when no tenant below its cap has a ready key, a capped
   * tenant may still take one while fewer than this many keys of all tenants are being processed. The workers above
   * it stay free for a tenant that arrives. Undefined (or at most the cap) means no borrowing.
   */
  borrowUpTo?: number;
  /**
   * lowPriority puts the keys it accepts on a low-priority lane (copied events: nothing urgent waits for them). A low
   * key is handed out only when no other key may be, and at most `maxLowInFlight` low keys are processed at once, so
   * they never hold the workers other keys need; tenants take turns on the lane. The lane has no bound: a low key may
   * wait, it is never dropped. It must always give the same answer for a key.
   */
  lowPriority?: (key: string) => boolean;
  /** maxLowInFlight caps the low-priority keys being processed at once (one per tenant at most); default 1 */
  maxLowInFlight?: number;
}

interface TenantQueue {
  readonly keys: Fifo;
  weight: number;
  /** the smooth weighted round robin "current weight" */
  current: number;
}

/**
 * FairQueue is a RateLimitingQueue that shares workers between tenants. Keys name their tenant (see `tenantOf`), so
 * the consumer API is exactly that of WorkQueue, and dedup and the never-two-workers rule hold per key across all
 * tenants. Each tenant with ready keys has its own FIFO sub-queue; `get` picks the sub-queue by smooth weighted round
 * robin (as nginx balances upstreams), so a tenant with weight w out of a total W among busy tenants gets w/W of
 * the hand-outs, evenly spread, however many keys the others hold. A sub-queue is dropped as soon as it runs empty,
 * and a tenant that comes back starts with a clean round robin state. With `maxInFlightPerTenant`, a tenant that has
 * that many keys being processed is skipped until one is done, so a tenant whose reconciles hang cannot hold every
 * worker; with `borrowUpTo`, capped tenants still use idle workers up to that many in flight. Keys `lowPriority`
 * accepts wait on a lane of their own, handed out only when no other key may be (see FairQueueOptions).
 */
export class FairQueue extends BaseQueue {
  private readonly tenants = new Map<string, TenantQueue>();
  private readonly weights = new Map<string, number>();
  private readonly tenantOf: (key: string) => string;
  private maxInFlight = Number.POSITIVE_INFINITY;
  private readonly inFlight = new Map<string, number>();
  private totalInFlight = 0;
  private borrowUpTo = 0;
  /** how many keys of all tenants may be in flight before a tenant that already has one waits (setConcurrencyLimit) */
  private limit = Number.POSITIVE_INFINITY;
  private ready = 0;
  /** the low-priority lane: each tenant's ready low keys, tenants in turn (first in the map is next) */
  private readonly low = new Map<string, Fifo>();
  private lowReady = 0;
  /** low keys being processed, per tenant; they do not count against the tenant's cap */
  private readonly lowInFlight = new Map<string, number>();
  private totalLowInFlight = 0;
  private readonly isLow: (key: string) => boolean;
  private readonly maxLowInFlight: number;

  constructor(options: FairQueueOptions = {}) {
    super(options);
    this.tenantOf = options.tenantOf ?? tenantOfKey;
    this.borrowUpTo = options.borrowUpTo ?? 0;
    this.isLow = options.lowPriority ?? (() => false);
    const maxLow = options.maxLowInFlight ?? 1;
    if (!Number.isSafeInteger(maxLow) || maxLow < 1) {
      throw new RangeError(`fair queue: maxLowInFlight must be a positive integer, got ${maxLow}`);
    }
    this.maxLowInFlight = maxLow;
    this.setMaxInFlightPerTenant(options.maxInFlightPerTenant);
  }

  /**
   * setMaxInFlightPerTenant changes the per-tenant cap (undefined: none). Keys already handed out stay with their
   * workers; a raised cap hands held-back keys to waiting workers at once.
   */
  setMaxInFlightPerTenant(cap: number | undefined): void {
    if (cap !== undefined && (!Number.isSafeInteger(cap) || cap < 1)) {
      throw new RangeError(`fair queue: maxInFlightPerTenant must be a positive integer, got ${cap}`);
    }
    this.maxInFlight = cap ?? Number.POSITIVE_INFINITY;
    this.dispatch();
  }

  /**
   * setConcurrencyLimit bounds the keys of all tenants in flight (an AdaptiveLimit's figure: more would only wait in
   * the server's queue, in arrival order). It never holds back a tenant that has no key in flight, so a tenant with
   * little to do is served at once, whatever the others hold; a tenant's second and later keys, and borrowed workers,
   * wait while the limit is reached. Undefined: no limit.
   */
  setConcurrencyLimit(limit: number | undefined): void {
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1)) {
      throw new RangeError(`fair queue: concurrency limit must be a positive integer, got ${limit}`);
    }
    this.limit = limit ?? Number.POSITIVE_INFINITY;
    this.dispatch();
  }

  /** setWeight sets the share of a tenant relative to the others; weights are positive integers, 1 by default. */
  setWeight(tenant: string, weight: number): void {
    if (!Number.isSafeInteger(weight) || weight < 1) {
      throw new RangeError(`fair queue: weight of tenant "${tenant}" must be a positive integer, got ${weight}`);
    }
    if (weight === 1) this.weights.delete(tenant);
    else this.weights.set(tenant, weight);
    const queue = this.tenants.get(tenant);
    if (queue) queue.weight = weight;
  }

  /** weight is the tenant's current weight. */
  weight(tenant: string): number {
    return this.weights.get(tenant) ?? 1;
  }

  /** activeTenants lists the tenants that have ready keys other than low-priority ones, i.e. that hold a sub-queue. */
  activeTenants(): string[] {
    return [...this.tenants.keys()];
  }

  /**
   * tenantInFlight is the number of keys of one tenant being processed (handed out and not yet done), low-priority
   * ones included: a tenant with nothing ready and nothing in flight has nothing left to write.
   */
  tenantInFlight(tenant: string): number {
    return this.capped(tenant) + this.tenantLowInFlight(tenant);
  }

  /** tenantLowInFlight is the number of low-priority keys of one tenant being processed. */
  tenantLowInFlight(tenant: string): number {
    return this.lowInFlight.get(tenant) ?? 0;
  }

  /** tenantLen is the number of ready keys of one tenant, low-priority ones included. */
  tenantLen(tenant: string): number {
    return (this.tenants.get(tenant)?.keys.length ?? 0) + this.tenantLowLen(tenant);
  }

  /** tenantLowLen is the number of ready low-priority keys of one tenant. */
  tenantLowLen(tenant: string): number {
    return this.low.get(tenant)?.length ?? 0;
  }

  /** capped is the number of a tenant's keys in flight that count against its cap (all but low-priority ones). */
  private capped(tenant: string): number {
    return this.inFlight.get(tenant) ?? 0;
  }

  /**
   * removeTenant drops the tenant's ready and delayed keys, its keys' retry history and its weight. Keys of the
   * tenant being processed finish normally but are not requeued by an earlier `add`; later adds are accepted as for
   * a new tenant.
   */
  removeTenant(tenant: string): void {
    this.discard((key) => this.tenantOf(key) === tenant);
    const queue = this.tenants.get(tenant);
    if (queue) {
      this.ready -= queue.keys.length;
      this.tenants.delete(tenant);
    }
    this.lowReady -= this.tenantLowLen(tenant);
    this.low.delete(tenant);
    this.weights.delete(tenant);
    this.dispatch();
  }

  protected push(key: string): void {
    const tenant = this.tenantOf(key);
    if (this.isLow(key)) {
      let lane = this.low.get(tenant);
      if (!lane) {
        lane = new Fifo();
        this.low.set(tenant, lane);
      }
      lane.push(key);
      this.lowReady++;
      return;
    }
    let queue = this.tenants.get(tenant);
    if (!queue) {
      queue = { keys: new Fifo(), weight: this.weight(tenant), current: 0 };
      this.tenants.set(tenant, queue);
    }
    queue.keys.push(key);
    this.ready++;
  }

  protected pop(): string | undefined {
    // A tenant at its cap sits a round out (its keys stay ready, its round robin state as it is), unless nobody below
    // the cap is waiting and fewer than borrowUpTo keys are in flight: then the capped tenants share the idle workers.
    // Under the concurrency limit, only tenants with nothing in flight are served once it is reached.
    const roomy = this.totalInFlight < this.limit;
    const best =
      this.pick((tenant) => {
        const n = this.capped(tenant);
        return n < this.maxInFlight && (n === 0 || roomy);
      }) ?? (this.totalInFlight < Math.min(this.borrowUpTo, this.limit) ? this.pick(() => true) : undefined);
    if (!best) return this.totalLowInFlight < this.maxLowInFlight ? this.popLow() : undefined;
    const [tenant, queue, total] = best;
    queue.current -= total;
    const key = queue.keys.shift();
    this.ready--;
    if (queue.keys.length === 0) this.tenants.delete(tenant);
    return key;
  }

  /**
   * popLow takes the oldest low-priority key of the tenant next in turn, and puts that tenant at the back. A tenant
   * with a low key in flight sits out: one whose event writes hang (its own webhook, a slow apiserver) holds at most
   * one low worker, and the other tenants' events keep moving.
   */
  private popLow(): string | undefined {
    for (const [tenant, lane] of this.low) {
      if (this.tenantLowInFlight(tenant) > 0) continue;
      const key = lane.shift();
      this.low.delete(tenant);
      if (lane.length) this.low.set(tenant, lane);
      if (key !== undefined) {
        this.lowReady--;
        return key;
      }
    }
    return undefined;
  }

  /** pick runs one smooth weighted round robin step among the tenants `eligible` accepts: the winner and the total. */
  private pick(eligible: (tenant: string) => boolean): [string, TenantQueue, number] | undefined {
    let total = 0;
    let best: [string, TenantQueue] | undefined;
    for (const entry of this.tenants) {
      if (!eligible(entry[0])) continue;
      const queue = entry[1];
      queue.current += queue.weight;
      total += queue.weight;
      if (!best || queue.current > best[1].current) best = entry;
    }
    return best && [best[0], best[1], total];
  }

  protected readyCount(): number {
    return this.ready + this.lowReady;
  }

  protected override started(key: string): void {
    const tenant = this.tenantOf(key);
    if (this.isLow(key)) {
      this.lowInFlight.set(tenant, this.tenantLowInFlight(tenant) + 1);
      this.totalLowInFlight++;
      return;
    }
    this.inFlight.set(tenant, this.capped(tenant) + 1);
    this.totalInFlight++;
  }

  protected override finished(key: string): void {
    const tenant = this.tenantOf(key);
    const low = this.isLow(key);
    const counts = low ? this.lowInFlight : this.inFlight;
    if (low) this.totalLowInFlight--;
    else this.totalInFlight--;
    const n = (counts.get(tenant) ?? 0) - 1;
    if (n > 0) counts.set(tenant, n);
    else counts.delete(tenant);
  }
}
