import type { Clock } from './clock.ts';

/** RateLimiter decides how long a failed item waits before its next attempt (client-go's workqueue.RateLimiter). */
export interface RateLimiter {
  /** when records one more failure of `item` and returns the delay in milliseconds before it may be retried. */
  when(item: string): number;
  /** forget clears what the limiter remembers about `item`, typically after it succeeded. */
  forget(item: string): void;
  /** retries is the number of failures recorded for `item` since it was last forgotten. */
  retries(item: string): number;
}

/**
 * ItemExponentialFailureRateLimiter delays each item by `baseMs * 2^failures`, capped at `maxMs`; failures are
 * counted per item until it is forgotten.
 */
export class ItemExponentialFailureRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();

  constructor(
    readonly baseMs: number,
    readonly maxMs: number,
  ) {
    if (!(baseMs >= 0) || !(maxMs >= baseMs)) {
      throw new RangeError(`exponential rate limiter needs 0 <= baseMs <= maxMs, got ${baseMs}, ${maxMs}`);
    }
  }

  when(item: string): number {
    const exp = this.failures.get(item) ?? 0;
    this.failures.set(item, exp + 1);
    // 2^1023 is the largest finite power; the product may still overflow to Infinity, which the cap absorbs.
    return Math.min(this.maxMs, this.baseMs * 2 ** Math.min(exp, 1023));
  }

  forget(item: string): void {
    this.failures.delete(item);
  }

  retries(item: string): number {
    return this.failures.get(item) ?? 0;
  }
}

/**
 * BucketRateLimiter is one token bucket shared by all items: it holds up to `burst` tokens and refills at `qps`
 * tokens per second. Each `when` reserves a token and returns how long until that token exists (zero while the
 * bucket is not empty), like golang.org/x/time/rate's Reserve. It keeps no per-item state.
 */
export class BucketRateLimiter implements RateLimiter {
  private tokens: number;
  private last: number;

  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly clock: Clock,
  ) {
    if (!(qps > 0) || !Number.isFinite(qps))
      throw new RangeError(`bucket rate limiter needs a finite qps > 0, got ${qps}`);
    if (!Number.isInteger(burst) || burst < 1)
      throw new RangeError(`bucket rate limiter needs an integer burst >= 1, got ${burst}`);
    this.tokens = burst;
    this.last = clock.now();
  }

  when(_item: string): number {
    const now = this.clock.now();
    const elapsed = Math.max(0, now - this.last);
    this.tokens = Math.min(this.burst, this.tokens + (elapsed * this.qps) / 1000);
    this.last = Math.max(this.last, now);
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.qps;
  }

  forget(_item: string): void {}

  retries(_item: string): number {
    return 0;
  }
}

/** MaxOfRateLimiter asks every limiter and waits for the longest delay; retries is the largest count among them. */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: readonly RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    if (limiters.length === 0) throw new RangeError('MaxOfRateLimiter needs at least one limiter');
    this.limiters = limiters;
  }

  when(item: string): number {
    // Every limiter must see the failure, so no short-circuiting.
    return this.limiters.reduce((max, limiter) => Math.max(max, limiter.when(item)), 0);
  }

  forget(item: string): void {
    for (const limiter of this.limiters) limiter.forget(item);
  }

  retries(item: string): number {
    return this.limiters.reduce((max, limiter) => Math.max(max, limiter.retries(item)), 0);
  }
}

/**
 * defaultControllerRateLimiter is client-go's DefaultControllerRateLimiter: per-item exponential backoff from 5ms to
 * 1000s, and overall at most 10 retries per second after a burst of 100.
 */
export function defaultControllerRateLimiter(clock: Clock): RateLimiter {
  return new MaxOfRateLimiter(
    new ItemExponentialFailureRateLimiter(5, 1_000_000),
    new BucketRateLimiter(10, 100, clock),
  );
}
