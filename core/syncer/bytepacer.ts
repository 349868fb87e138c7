import type { ByteRate } from '../api/tenantpolicy.ts';

/** NOTICE_MS is the least time between two notices (an event on the tenant) that a tenant is held back. */
export const NOTICE_MS = 60_000;

/** BytePacerOptions configure a byte pacer. */
export interface BytePacerOptions {
  /** wake puts a parked key back on the queue */
  wake: (key: string) => void;
  now?: () => number;
}

interface Bucket {
  readonly tenant: string;
  /** bytes that may be written now; below 0 after an object larger than the burst */
  tokens: number;
  /** when tokens was last brought up to date (ms, the pacer's clock) */
  at: number;
  /** keys waiting for bytes, in arrival order, with the bytes each will write */
  readonly parked: Map<string, number>;
  /** the rate the bucket was last used with (parked keys are woken by it) */
  rate: ByteRate;
  /** when the tenant was last told it is held back */
  noticedAt: number;
  timer?: NodeJS.Timeout;
}

/**
 * BytePacer paces, per tenant, the bytes the syncer writes to the super cluster for it: a token bucket of `burst`
 * bytes that refills at `perSecond`. The object caps (caps.ts) bound what a tenant keeps in the super cluster, not
 * how fast it gets there: a tenant writing ConfigMaps near the 1 MiB object cap as fast as its own apiserver takes them
 * had the super apiserver and etcd store, and the watches send back, tens of MiB a second, and another tenant's Pods
 * took 5.5 times as long to run as alone (the `slow-tenant` bench's at-caps phase). A write of a tenant over its rate
 * is parked in the syncer (no write, no worker held, no retry loop) and woken, in the order it came, when the bucket
 * holds its bytes again; other tenants' buckets are their own, so they do not wait.
 *
 * A write goes ahead when the bucket holds its bytes, or the whole burst for an object larger than the burst; it then
 * spends all its bytes, so a larger object leaves the bucket below zero and the next write waits longer: over time no
 * tenant writes faster than its rate.
 */
export class BytePacer {
  private readonly buckets = new Map<string, Bucket>();
  private readonly now: () => number;

  constructor(private readonly o: BytePacerOptions) {
    this.now = o.now ?? Date.now;
  }

  /**
   * take spends `bytes` of the tenant's bucket for writes about to be sent and returns true; without enough it parks
   * `key`, to be woken when the bucket has refilled, and returns false. Nothing to write (0 bytes) always goes.
   */
  take(tenant: string, key: string, bytes: number, rate: ByteRate): boolean {
    if (bytes <= 0 || !paced(rate)) return true;
    const b = this.refill(tenant, rate);
    if (b.tokens >= need(bytes, rate)) {
      b.tokens -= bytes;
      b.parked.delete(key);
      return true;
    }
    b.parked.set(key, bytes);
    this.arm(b, b.tokens);
    return false;
  }

  /**
   * parkIfShort parks `key` without spending anything when the tenant's bucket does not hold `bytes` now, and tells
   * whether it did: the syncer asks it before planning an object whose super copy is still to be created.
   */
  parkIfShort(tenant: string, key: string, bytes: number, rate: ByteRate): boolean {
    if (bytes <= 0 || !paced(rate)) return false;
    const b = this.refill(tenant, rate);
    if (b.tokens >= need(bytes, rate)) return false;
    b.parked.set(key, bytes);
    this.arm(b, b.tokens);
    return true;
  }

  /** giveBack returns bytes spent on writes that were not sent after all. */
  giveBack(tenant: string, bytes: number): void {
    const b = this.buckets.get(tenant);
    if (b) b.tokens = Math.min(b.rate.burst, b.tokens + bytes);
  }

  /** parkedOf is the number of a tenant's keys waiting for bytes. */
  parkedOf(tenant: string): number {
    return this.buckets.get(tenant)?.parked.size ?? 0;
  }

  /** held lists the tenants with keys waiting for bytes now, and how many each. */
  held(): Array<[string, number]> {
    return [...this.buckets].filter(([, b]) => b.parked.size > 0).map(([t, b]) => [t, b.parked.size]);
  }

  /**
   * noticeDue tells whether a held tenant is to be told now (at most once every NOTICE_MS), and notes that it was: the
   * syncer then records an event on the object that waits.
   */
  noticeDue(tenant: string): boolean {
    const b = this.buckets.get(tenant);
    if (!b || b.parked.size === 0) return false;
    const now = this.now();
    if (now - b.noticedAt < NOTICE_MS) return false;
    b.noticedAt = now;
    return true;
  }

  /** forget drops a tenant that is no longer served. */
  forget(tenant: string): void {
    const b = this.buckets.get(tenant);
    if (b) clearTimeout(b.timer);
    this.buckets.delete(tenant);
  }

  /** clear forgets every tenant (a leadership term ended: the next one queues every key). */
  clear(): void {
    for (const t of [...this.buckets.keys()]) this.forget(t);
  }

  /** refill brings a tenant's bucket up to date under `rate` (a full bucket for a tenant not seen before). */
  private refill(tenant: string, rate: ByteRate): Bucket {
    const now = this.now();
    let b = this.buckets.get(tenant);
    if (!b) {
      b = { tenant, tokens: rate.burst, at: now, parked: new Map(), rate, noticedAt: -Infinity };
      this.buckets.set(tenant, b);
      return b;
    }
    b.rate = rate;
    b.tokens = Math.min(rate.burst, b.tokens + ((now - b.at) / 1000) * rate.perSecond);
    b.at = now;
    return b;
  }

  /**
   * arm sets the bucket's timer, unless one is set, for when the first parked key's bytes are there on top of what keys
   * just woken will spend: `left` is what the bucket holds once they have.
   */
  private arm(b: Bucket, left: number): void {
    if (b.timer) return;
    const first = b.parked.values().next();
    if (first.done) return;
    const ms = Math.max(1, Math.ceil(((need(first.value, b.rate) - left) / b.rate.perSecond) * 1000));
    b.timer = setTimeout(() => {
      b.timer = undefined;
      this.wake(b);
    }, ms);
    b.timer.unref();
  }

  /** wake wakes parked keys, in order, while the bucket holds their bytes (a woken key spends them when it runs). */
  private wake(b: Bucket): void {
    const tenant = b.tenant;
    if (this.buckets.get(tenant) !== b) return;
    this.refill(tenant, b.rate);
    let left = b.tokens;
    for (const [key, bytes] of b.parked) {
      if (left < need(bytes, b.rate)) break;
      b.parked.delete(key);
      left -= bytes;
      this.o.wake(key);
    }
    // Keys still parked wait for their bytes after those promised; a bucket with none parked and full is forgotten.
    if (b.parked.size) this.arm(b, left);
    else if (b.tokens >= b.rate.burst) this.buckets.delete(tenant);
  }
}

/** need is what the bucket must hold for a write of `bytes` to go: its bytes, or the whole burst for a larger one. */
function need(bytes: number, rate: ByteRate): number {
  return Math.min(bytes, rate.burst);
}

/** paced tells whether a rate paces anything (a syncer's own rate of 0 per second turns pacing off). */
function paced(rate: ByteRate): boolean {
  return rate.perSecond > 0;
}

/** checkByteRate validates a byte rate from a configuration: non-negative perSecond, a burst of at least 1 byte. */
export function checkByteRate(rate: ByteRate, where: string): ByteRate {
  if (!Number.isFinite(rate.perSecond) || rate.perSecond < 0) {
    throw new RangeError(`${where}: perSecond must be a number of bytes >= 0, got ${rate.perSecond}`);
  }
  if (!Number.isSafeInteger(rate.burst) || rate.burst < 1) {
    throw new RangeError(`${where}: burst must be a whole number of bytes >= 1, got ${rate.burst}`);
  }
  return rate;
}
