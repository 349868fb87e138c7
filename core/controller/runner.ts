import { setImmediate as nextTurn } from 'node:timers/promises';
import { childLogger, type Logger } from '../log.ts';
import { realClock, type Clock } from '../queue/clock.ts';
import type { RateLimitingQueue } from '../queue/workqueue.ts';
import { runnerMetrics } from './metrics.ts';

/**
 * Result is what a reconcile asks for on success: nothing, or to run the key again after `requeueAfter` milliseconds
 * (a value that is not > 0 counts as nothing, as in controller-runtime).
 */
export type Result = { requeueAfter?: number } | void;

/**
 * Reconciler brings the state named by a key to what it should be; a thrown error or rejection means "retry". The
 * signal is aborted when the runner stops: a long reconcile may pass it on to its I/O or return early.
 */
export interface Reconciler {
  reconcile(key: string, signal: AbortSignal): Promise<Result>;
}

/** RECONCILE_ENDINGS lists the ways a reconcile can end, as reported to RunnerMetrics (the `result` label). */
export const RECONCILE_ENDINGS = ['success', 'requeue_after', 'error'] as const;

/** ReconcileEnding is one of RECONCILE_ENDINGS. */
export type ReconcileEnding = (typeof RECONCILE_ENDINGS)[number];

/** RunnerMetrics receives one observation per finished reconcile. */
export interface RunnerMetrics {
  reconciled(ending: ReconcileEnding, durationMs: number): void;
}

/** RunnerOptions configures a Runner. */
export interface RunnerOptions {
  /** name identifies the controller in logs (the `controller` field). */
  name: string;
  queue: RateLimitingQueue;
  reconciler: Reconciler;
  /** concurrency is the number of workers, each reconciling one key at a time; default 1. */
  concurrency?: number;
  /** clock times reconciles for the metrics; default realClock. */
  clock?: Clock;
  /** metrics receives every finished reconcile; default runnerMetrics(name), which /metrics serves. */
  metrics?: RunnerMetrics;
  /** logger replaces the default `childLogger({ controller: name })`. */
  logger?: Logger;
}

/**
 * SLICE_MS bounds how long a runner's workers run keys without the event loop getting a turn. A reconcile that
 * writes nothing (a key parked, a plan with nothing to do) settles in microtasks, and so does the worker's next `get`:
 * with hundreds of such keys ready, the workers ran them all in one unbroken stretch (47 ms and more, measured while
 * a tenant's 200-Pod flood was read), and every response and watch event of every other tenant waited behind it.
 * After a stretch this long (on the runner's clock) a worker lets the loop take the I/O waiting before its next key.
 */
const SLICE_MS = 5;

/**
 * Runner feeds the keys of a queue to a reconciler with a fixed number of workers, following controller-runtime:
 * success forgets the key's retry history; `requeueAfter` forgets it and adds the key back after the delay; an error
 * (thrown or rejected) adds it back rate limited. A reconcile's failure never escapes the runner. There is no terminal
 * error: a reconciler that finds a spec it cannot act on writes that into status and returns, and an edit wakes it.
 */
export class Runner {
  private readonly queue: RateLimitingQueue;
  private readonly reconciler: Reconciler;
  private readonly concurrency: number;
  private readonly clock: Clock;
  private readonly metrics: RunnerMetrics;
  private readonly log: Logger;
  private stopping = new AbortController();
  private workers: Promise<void>[] | undefined;
  /** when a worker last gave the event loop a turn (the runner's clock) */
  private turnAt = 0;

  constructor(options: RunnerOptions) {
    const concurrency = options.concurrency ?? 1;
    if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
      throw new RangeError(`runner ${options.name}: concurrency must be a positive integer, got ${concurrency}`);
    }
    this.queue = options.queue;
    this.reconciler = options.reconciler;
    this.concurrency = concurrency;
    this.clock = options.clock ?? realClock;
    this.metrics = options.metrics ?? runnerMetrics(options.name);
    this.log = options.logger ?? childLogger({ controller: options.name });
  }

  /** start launches the workers. A stopped runner starts again once its queue is reopened (a new leadership term). */
  start(): void {
    if (this.workers) throw new Error('runner: already started');
    if (this.queue.shuttingDown()) throw new Error('runner: queue is shut down');
    if (this.stopping.signal.aborted) this.stopping = new AbortController();
    this.workers = Array.from({ length: this.concurrency }, () => this.work());
    this.log.info({ concurrency: this.concurrency }, 'runner started');
  }

  /**
   * stop shuts the queue down and resolves once every worker has exited. As in controller-runtime, workers first
   * finish their current reconcile and the keys that were already queued; delayed and rate-limited re-adds are
   * dropped. The reconciles' signal is aborted first, so those that heed it end early.
   */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.queue.shutDown();
    await Promise.all(this.workers ?? []);
    this.workers = undefined;
    this.log.info('runner stopped');
  }

  private async work(): Promise<void> {
    for (let key = await this.queue.get(); key !== undefined; key = await this.queue.get()) {
      try {
        await this.process(key);
      } catch (err) {
        this.log.error({ key, err }, 'runner bookkeeping failed');
      }
      await this.yieldTurn();
    }
  }

  /** yieldTurn gives the event loop a turn when the workers have held it SLICE_MS or more. */
  private async yieldTurn(): Promise<void> {
    if (this.clock.now() - this.turnAt < SLICE_MS) return;
    await nextTurn();
    this.turnAt = this.clock.now();
  }

  private async process(key: string): Promise<void> {
    const started = this.clock.now();
    let ending: ReconcileEnding;
    try {
      ending = await this.reconcile(key);
    } finally {
      this.queue.done(key);
    }
    this.metrics.reconciled(ending, this.clock.now() - started);
  }

  private async reconcile(key: string): Promise<ReconcileEnding> {
    let result: Result;
    try {
      result = await this.reconciler.reconcile(key, this.stopping.signal);
    } catch (err) {
      this.queue.addRateLimited(key);
      this.log.error({ key, err, requeues: this.queue.numRequeues(key) }, 'reconcile failed, retrying');
      return 'error';
    }
    this.queue.forget(key);
    const requeueAfter = result?.requeueAfter;
    if (requeueAfter !== undefined && requeueAfter > 0) {
      this.queue.addAfter(key, requeueAfter);
      return 'requeue_after';
    }
    return 'success';
  }
}
