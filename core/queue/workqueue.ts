import { realClock, type Clock, type TimerHandle } from './clock.ts';
import { Fifo } from './fifo.ts';
import { defaultControllerRateLimiter, type RateLimiter } from './ratelimiter.ts';

/**
 * RateLimitingQueue is what a consumer of a work queue sees: client-go's rate-limiting, delaying work queue with
 * string keys. Both WorkQueue and FairQueue implement it.
 *
 * - `add` marks a key dirty; a key added many times before a worker takes it is handed out once.
 * - `get` hands a key to one worker and marks it processing. A key that is processing is never handed to a second
 *   worker: if it is added again meanwhile, it goes back into the queue when the first worker calls `done`.
 * - After `shutDown`, adds are ignored and pending delays are cancelled; `get` still hands out the keys that were
 *   already queued and resolves `undefined` once the queue is empty.
 */
export interface RateLimitingQueue {
  add(key: string): void;
  /** get resolves with the next key, waiting for one if needed, or `undefined` once shut down and drained. */
  get(): Promise<string | undefined>;
  /** done ends the processing of a key obtained from `get`; every `get` must be paired with one `done`. */
  done(key: string): void;
  /** addAfter adds the key once `ms` milliseconds have passed; of several pending delays for a key the earliest wins. */
  addAfter(key: string, ms: number): void;
  /** addRateLimited adds the key after the delay the rate limiter assigns to it, counting one more retry. */
  addRateLimited(key: string): void;
  /** forget clears the key's retry history in the rate limiter; it does not remove the key from the queue. */
  forget(key: string): void;
  /** numRequeues is the number of rate-limited retries of the key since it was last forgotten. */
  numRequeues(key: string): number;
  /** len is the number of keys waiting to be handed out (not counting keys being processed or delayed). */
  len(): number;
  shutDown(): void;
  shuttingDown(): boolean;
}

/**
 * QueueMetrics receives the measurements client-go's workqueue exports; an implementation backed by prom-client can be
 * plugged in per queue.
 */
export interface QueueMetrics {
  /** add counts a key that became dirty (an add of an already dirty key is not counted). */
  add(): void;
  /** depth reports the number of keys waiting to be handed out, after each change. */
  depth(keys: number): void;
  /** queueLatency observes how long a key waited between becoming dirty and being handed to a worker. */
  queueLatency(ms: number): void;
  /** workDuration observes how long a worker held a key, from `get` to `done`. */
  workDuration(ms: number): void;
  /** retry counts a call to `addRateLimited`. */
  retry(): void;
}

/** QueueOptions configures a queue; every field has a default. */
export interface QueueOptions {
  /** clock drives delays, rate limiting and metrics; default realClock. */
  clock?: Clock;
  /** rateLimiter spaces out `addRateLimited`; default defaultControllerRateLimiter on the queue's clock. */
  rateLimiter?: RateLimiter;
  metrics?: QueueMetrics;
}

/** Delayed is one pending `addAfter` in the heap; it is stale once `delayed` holds another readyAt for its key. */
interface Delayed {
  readonly key: string;
  readonly readyAt: number;
  /** insertion order: keys due at the same time become ready in the order they were delayed */
  readonly seq: number;
}

/** before orders the delay heap: earliest first, then first delayed. */
const before = (a: Delayed, b: Delayed): boolean => a.readyAt < b.readyAt || (a.readyAt === b.readyAt && a.seq < b.seq);

/**
 * BaseQueue implements the RateLimitingQueue bookkeeping (dirty and processing sets, delays, rate limiting, waiting
 * workers, metrics) and leaves to subclasses only the order in which ready keys are handed out.
 */
export abstract class BaseQueue implements RateLimitingQueue {
  protected readonly clock: Clock;
  protected readonly rateLimiter: RateLimiter;
  private readonly metrics: QueueMetrics | undefined;
  /** keys added and not yet handed out: every ready key, plus processing keys that were added again */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  /**
   * Delayed keys share one timer, set for the earliest of a min-heap of readyAt times (a timer per key cost memory
   * per synced Pod: every Pod's token refresh is a delayed key). `delayed` holds each key's live readyAt; heap entries
   * that no longer match it are stale and skipped when they come to the top.
   */
  private readonly delayed = new Map<string, number>();
  private heap: Delayed[] = [];
  private seq = 0;
  private timer: TimerHandle | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private readonly dirtySince = new Map<string, number>();
  private readonly processingSince = new Map<string, number>();
  private stopping = false;

  constructor(options: QueueOptions = {}) {
    this.clock = options.clock ?? realClock;
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter(this.clock);
    this.metrics = options.metrics;
  }

  /** push makes a key ready to be handed out; the key is not ready already. */
  protected abstract push(key: string): void;
  /** pop removes and returns the ready key to hand out next, if any. */
  protected abstract pop(): string | undefined;
  /** readyCount is the number of ready keys. */
  protected abstract readyCount(): number;
  /** started is told that a key was handed to a worker; a subclass that limits hand-outs counts it here. */
  protected started(_key: string): void {}
  /** finished is told that the processing of a key ended (`done`); it pairs with `started`. */
  protected finished(_key: string): void {}

  add(key: string): void {
    if (this.stopping || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.metrics) {
      this.metrics.add();
      this.dirtySince.set(key, this.clock.now());
    }
    if (this.processing.has(key)) return;
    this.push(key);
    this.dispatch();
  }

  get(): Promise<string | undefined> {
    const key = this.take();
    if (key !== undefined) {
      this.reportDepth();
      return Promise.resolve(key);
    }
    // Shut down and drained; ready keys that pop may not hand out yet still wait for a `done` that frees them.
    if (this.stopping && this.readyCount() === 0) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: string): void {
    if (!this.processing.delete(key)) return;
    this.finished(key);
    const since = this.processingSince.get(key);
    if (since !== undefined) {
      this.processingSince.delete(key);
      this.metrics?.workDuration(this.clock.now() - since);
    }
    if (this.dirty.has(key)) this.push(key);
    // Even without a re-add, a finished key may let `pop` hand out a key it held back (a per-tenant cap).
    else if (this.waiters.length === 0 || this.readyCount() === 0) return;
    this.dispatch();
  }

  addAfter(key: string, ms: number): void {
    if (this.stopping) return;
    if (!(ms > 0)) {
      this.add(key);
      return;
    }
    const readyAt = this.clock.now() + ms;
    const pending = this.delayed.get(key);
    if (pending !== undefined && pending <= readyAt) return;
    this.delayed.set(key, readyAt);
    this.heapPush({ key, readyAt, seq: this.seq++ });
    // Stale entries pile up only when keys are delayed again earlier; rebuild once they outnumber the live ones.
    if (this.heap.length > 64 && this.heap.length > 2 * this.delayed.size) this.rebuildHeap();
    this.arm();
  }

  addRateLimited(key: string): void {
    if (this.stopping) return;
    this.metrics?.retry();
    this.addAfter(key, this.rateLimiter.when(key));
  }

  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.rateLimiter.retries(key);
  }

  len(): number {
    return this.readyCount();
  }

  shutDown(): void {
    if (this.stopping) return;
    this.stopping = true;
    this.delayed.clear();
    this.heap = [];
    this.arm();
    if (this.readyCount() === 0) for (const resolve of this.waiters.splice(0)) resolve(undefined);
  }

  shuttingDown(): boolean {
    return this.stopping;
  }

  /**
   * reopen takes adds again after `shutDown`, once every key has been handed out and done (the runner over it has
   * stopped): the queue starts empty, as a new one would, keeping only the rate limiter's retry history.
   */
  reopen(): void {
    if (!this.stopping) return;
    if (this.readyCount() > 0 || this.processing.size > 0)
      throw new Error('queue: reopen before every key was handed out and done');
    this.stopping = false;
  }

  /**
   * discard forgets every key that matches: it is no longer dirty, its pending delay is cancelled and its retry history
   * cleared. Keys being processed stay processing until `done`. The subclass must drop matching keys from its ready
   * set itself, then call `reportDepth`.
   */
  protected discard(matches: (key: string) => boolean): void {
    for (const key of this.dirty) {
      if (!matches(key)) continue;
      this.dirty.delete(key);
      this.dirtySince.delete(key);
      this.rateLimiter.forget(key);
    }
    let dropped = false;
    for (const key of this.delayed.keys()) {
      if (!matches(key)) continue;
      this.delayed.delete(key);
      this.rateLimiter.forget(key);
      dropped = true;
    }
    if (dropped) {
      this.rebuildHeap();
      this.arm();
    }
  }

  /** fire adds every delayed key that is due and sets the timer for the next. */
  private fire(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    const due: string[] = [];
    for (let top = this.heap[0]; top && top.readyAt <= now; top = this.heap[0]) {
      this.heapPop();
      if (this.delayed.get(top.key) !== top.readyAt) continue;
      this.delayed.delete(top.key);
      due.push(top.key);
    }
    this.arm();
    for (const key of due) this.add(key);
  }

  /** arm drops stale entries from the top of the heap and keeps the one timer set for the earliest live one. */
  private arm(): void {
    for (let top = this.heap[0]; top && this.delayed.get(top.key) !== top.readyAt; top = this.heap[0]) this.heapPop();
    const next = this.heap[0]?.readyAt ?? Number.POSITIVE_INFINITY;
    if (next === this.timerAt) return;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.timerAt = next;
    if (next !== Number.POSITIVE_INFINITY) this.timer = this.clock.setTimer(() => this.fire(), next - this.clock.now());
  }

  /** rebuildHeap keeps only the live entries. */
  private rebuildHeap(): void {
    const live = this.heap.filter((d) => this.delayed.get(d.key) === d.readyAt);
    this.heap = [];
    for (const d of live) this.heapPush(d);
  }

  private heapPush(d: Delayed): void {
    const h = this.heap;
    let i = h.push(d) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(d, h[parent]!)) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = d;
  }

  private heapPop(): void {
    const h = this.heap;
    const last = h.pop();
    if (!last || h.length === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const c = r < h.length && before(h[r]!, h[l]!) ? r : l;
      if (!before(h[c]!, last)) break;
      h[i] = h[c]!;
      i = c;
    }
    h[i] = last;
  }

  /** reportDepth tells the metrics the current number of ready keys. */
  protected reportDepth(): void {
    this.metrics?.depth(this.readyCount());
  }

  /** take pops the next key that may be handed out and marks it processing, or returns undefined if there is none. */
  private take(): string | undefined {
    const key = this.pop();
    if (key === undefined) return undefined;
    this.dirty.delete(key);
    this.processing.add(key);
    this.started(key);
    if (this.metrics) {
      const now = this.clock.now();
      const since = this.dirtySince.get(key);
      this.dirtySince.delete(key);
      if (since !== undefined) this.metrics.queueLatency(now - since);
      this.processingSince.set(key, now);
    }
    return key;
  }

  /**
   * dispatch hands ready keys to workers blocked in `get`, oldest waiter first, and releases the waiters once the queue
   * is shut down and drained.
   */
  protected dispatch(): void {
    while (this.waiters.length > 0) {
      const key = this.take();
      if (key === undefined) break;
      this.waiters.shift()?.(key);
    }
    if (this.stopping && this.readyCount() === 0) for (const resolve of this.waiters.splice(0)) resolve(undefined);
    this.reportDepth();
  }
}

/** WorkQueue is a RateLimitingQueue that hands keys out in the order they became ready. */
export class WorkQueue extends BaseQueue {
  private readonly ready = new Fifo();

  protected push(key: string): void {
    this.ready.push(key);
  }

  protected pop(): string | undefined {
    return this.ready.shift();
  }

  protected readyCount(): number {
    return this.ready.length;
  }
}
