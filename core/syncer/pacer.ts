import type { CreateRate } from '../api/tenantpolicy.ts';

/** DEFAULT_YIELD_SHARE is the share of its rate a tenant with a backlog keeps while another tenant creates Pods. */
export const DEFAULT_YIELD_SHARE = 0.25;

/** ACTIVE_MS is how long after its last create a tenant without a backlog counts as creating Pods. */
export const ACTIVE_MS = 1000;

/** CreatePacerOptions configure a pacer. */
export interface CreatePacerOptions {
  /** wake puts a parked key back on the queue */
  wake: (key: string) => void;
  now?: () => number;
  /**
   * yieldShare is the share of its rate a tenant with parked keys refills at while another tenant without parked
   * keys has created a Pod in the last ACTIVE_MS (0 < share <= 1; 1 turns yielding off). Default DEFAULT_YIELD_SHARE.
   */
  yieldShare?: number;
}

interface Bucket {
  tokens: number;
  /** when tokens was last brought up to date (ms, the pacer's clock) */
  at: number;
  /** keys waiting for a token, in arrival order */
  readonly parked: Set<string>;
  /** the rate the bucket was last used with (parked keys are woken by it) */
  rate: CreateRate;
  /** when a token was last spent (ms, the pacer's clock) */
  lastTake: number;
  timer?: NodeJS.Timeout;
}

/**
 * CreatePacer paces, per tenant, the super Pods the syncer creates: a token bucket of `burst` creates that refills at
 * `perSecond`. On two cores a tenant creating 200 Pods at once ran the super cluster's apiserver, scheduler and nodes
 * at full CPU for four seconds, and every other tenant's next Pod took 5.7 times as long to run as it did alone (the
 * `syncer` bench's flood); the scheduling window (window.ts) keeps such a tenant from queueing ahead of others in the
 * scheduler, not from taking the host's CPU. A rate the platform sets keeps that headroom: a tenant over its rate has
 * its further creates parked in the syncer (no write, no retry loop) and woken, in the order they came, as tokens
 * refill. Other writes (status up, deletes, Services, ...) are not paced.
 *
 * A tenant with a backlog yields to tenants without one: while another tenant is creating Pods at its own pace (it
 * spent a token in the last ACTIVE_MS and has no key parked), a tenant with parked keys refills at `yieldShare` of its
 * rate; a tenant whose rate paces nothing (the platform's choice) counts as creating whenever it creates. At 20 Pods/s
 * a flood still kept the 2 cores ~150% busy and another tenant's Pods took 3x as long as alone; at 5 Pods/s they ran as
 * fast as alone once the flood had reached the syncer. A flooding tenant alone keeps its whole rate, and two flooding
 * tenants do not slow each other.
 */
export class CreatePacer {
  private readonly buckets = new Map<string, Bucket>();
  /** when each tenant whose rate paces nothing (perSecond 0) last created a Pod: it counts as creating too */
  private readonly unpacedAt = new Map<string, number>();
  private readonly now: () => number;
  private readonly yieldShare: number;

  constructor(private readonly o: CreatePacerOptions) {
    this.now = o.now ?? Date.now;
    this.yieldShare = checkYieldShare(o.yieldShare ?? DEFAULT_YIELD_SHARE, 'CreatePacer yieldShare');
  }

  /**
   * take spends one of the tenant's tokens for a create about to be sent and returns true; with none left it parks
   * `key`, to be woken when a token has refilled, and returns false. A rate of 0 per second never parks.
   */
  take(tenant: string, key: string, rate: CreateRate): boolean {
    if (!paced(rate)) {
      if (this.yieldShare < 1) this.unpacedAt.set(tenant, this.now());
      return true;
    }
    this.unpacedAt.delete(tenant);
    const b = this.refill(tenant, rate);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      b.lastTake = b.at;
      b.parked.delete(key);
      return true;
    }
    b.parked.add(key);
    this.arm(tenant, b);
    return false;
  }

  /**
   * parkIfEmpty parks `key` without spending anything when the tenant has no token now, and tells whether it did: the
   * syncer asks it before planning a Pod whose super copy is still to be created.
   */
  parkIfEmpty(tenant: string, key: string, rate: CreateRate): boolean {
    if (!paced(rate)) return false;
    const b = this.refill(tenant, rate);
    if (b.tokens >= 1) return false;
    b.parked.add(key);
    this.arm(tenant, b);
    return true;
  }

  /** giveBack returns a token spent on a create that was not sent after all. */
  giveBack(tenant: string): void {
    const b = this.buckets.get(tenant);
    if (b) b.tokens = Math.min(b.rate.burst, b.tokens + 1);
  }

  /** parkedOf is the number of a tenant's keys waiting for a token. */
  parkedOf(tenant: string): number {
    return this.buckets.get(tenant)?.parked.size ?? 0;
  }

  /** yielding tells whether a tenant refills at its yield share now: it has parked keys and another is creating. */
  yielding(tenant: string): boolean {
    const b = this.buckets.get(tenant);
    return !!b && this.perSecond(tenant, b, this.now()) < b.rate.perSecond;
  }

  /**
   * perSecond is the rate a tenant's bucket refills at now: its whole rate, or its yield share of it while it has
   * parked keys and another tenant without any spent a token in the last ACTIVE_MS.
   */
  private perSecond(tenant: string, b: Bucket, now: number): number {
    if (this.yieldShare >= 1 || b.parked.size === 0) return b.rate.perSecond;
    for (const [t, o] of this.buckets) {
      if (t !== tenant && o.parked.size === 0 && now - o.lastTake < ACTIVE_MS)
        return b.rate.perSecond * this.yieldShare;
    }
    for (const [t, at] of this.unpacedAt) {
      if (t !== tenant && now - at < ACTIVE_MS) return b.rate.perSecond * this.yieldShare;
    }
    return b.rate.perSecond;
  }

  /** forget drops a tenant that is no longer served. */
  forget(tenant: string): void {
    const b = this.buckets.get(tenant);
    if (b) clearTimeout(b.timer);
    this.buckets.delete(tenant);
    this.unpacedAt.delete(tenant);
  }

  /** clear forgets every tenant (a leadership term ended: the next one queues every key). */
  clear(): void {
    for (const t of [...this.buckets.keys()]) this.forget(t);
  }

  /** refill brings a tenant's bucket up to date under `rate` (a full bucket for a tenant not seen before). */
  private refill(tenant: string, rate: CreateRate): Bucket {
    const now = this.now();
    let b = this.buckets.get(tenant);
    if (!b) {
      b = { tokens: rate.burst, at: now, parked: new Set(), rate, lastTake: -Infinity };
      this.buckets.set(tenant, b);
      return b;
    }
    b.rate = rate;
    b.tokens = Math.min(rate.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond(tenant, b, now));
    b.at = now;
    return b;
  }

  /**
   * arm sets the tenant's timer, unless one is set, for when its next token is due: the one after the `promised`
   * tokens that keys just woken will spend when they run.
   */
  private arm(tenant: string, b: Bucket, promised = 0): void {
    if (b.timer) return;
    const ms = Math.max(1, Math.ceil(((promised + 1 - b.tokens) / this.perSecond(tenant, b, this.now())) * 1000));
    b.timer = setTimeout(() => {
      b.timer = undefined;
      this.wake(tenant, b);
    }, ms);
    b.timer.unref();
  }

  /** wake wakes as many parked keys as there are whole tokens (a woken key spends its token when it runs). */
  private wake(tenant: string, b: Bucket): void {
    if (this.buckets.get(tenant) !== b) return;
    this.refill(tenant, b.rate);
    const free = Math.floor(b.tokens);
    let woken = 0;
    for (const key of b.parked) {
      if (woken >= free) break;
      b.parked.delete(key);
      woken++;
      this.o.wake(key);
    }
    // Keys still parked wait for the token after those promised; a bucket with none parked and full is forgotten.
    if (b.parked.size) this.arm(tenant, b, woken);
    else if (b.tokens >= b.rate.burst) this.buckets.delete(tenant);
  }
}

/** paced tells whether a rate paces anything. */
function paced(rate: CreateRate): boolean {
  return rate.perSecond > 0;
}

/** checkYieldShare validates a yield share from a configuration: more than 0, at most 1. */
export function checkYieldShare(share: number, where: string): number {
  if (!Number.isFinite(share) || share <= 0 || share > 1) {
    throw new RangeError(`${where}: must be a number > 0 and <= 1, got ${share}`);
  }
  return share;
}

/** checkCreateRate validates a rate from a configuration: a non-negative perSecond and a burst of at least 1. */
export function checkCreateRate(rate: CreateRate, where: string): CreateRate {
  if (!Number.isFinite(rate.perSecond) || rate.perSecond < 0) {
    throw new RangeError(`${where}: perSecond must be a number >= 0, got ${rate.perSecond}`);
  }
  if (!Number.isSafeInteger(rate.burst) || rate.burst < 1) {
    throw new RangeError(`${where}: burst must be an integer >= 1, got ${rate.burst}`);
  }
  return rate;
}
