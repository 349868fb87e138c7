/**
 * The source poller: polls one source on an interval (with jitter) and on demand (webhooks), and hands each new
 * artifact to the consumer. A poll lists the remote refs; only a moved ref leads to a fetch and a read.
 */
import type { Artifact } from '../artifact.ts';
import { childLogger, type Logger } from '../../core/log.ts';
import { realClock, type Clock, type TimerHandle } from '../../core/queue/clock.ts';
import type { RateLimiter } from '../../core/queue/ratelimiter.ts';
import { SourceError } from './errors.ts';
import { redactUrl, type Credentials, type GitSourceFetcher, type GitRef, type SourceRequest } from './source.ts';
import type { VerifyKeys } from './verify.ts';

/** SourceSpec is the desired state of one git source. */
export interface SourceSpec {
  url: string;
  ref: GitRef;
  /** directory to read, relative to the repository root */
  path?: string;
  /** poll interval in milliseconds */
  intervalMs: number;
  /** timeout of each network call in milliseconds */
  timeoutMs?: number;
  credentials?: Credentials;
  /** when set, only commits signed by one of these keys produce artifacts */
  verify?: VerifyKeys;
  /** a suspended source is not polled, on the interval or on trigger */
  suspend?: boolean;
  /**
   * read at each poll: the last applied revision, which a new revision must descend from, and the one revision
   * allowed not to, or why the last applied revision is lost (see SourceRequest.since, allowRevision and baseLost)
   */
  history?: () => { since?: string; allowRevision?: string; baseLost?: string };
}

/** SourcePollerOptions configures a SourcePoller. */
export interface SourcePollerOptions {
  fetcher: Pick<GitSourceFetcher, 'resolve' | 'artifact'>;
  spec: SourceSpec;
  onArtifact: (artifact: Artifact) => void | Promise<void>;
  onError: (err: SourceError) => void;
  /** fraction of the interval by which each wait varies, both ways (default 0.1) */
  jitter?: number;
  clock?: Clock;
  /** random source in [0, 1) for the jitter */
  random?: () => number;
  logger?: Logger;
  /**
   * bounds how often polls start, whatever asks for them (webhooks, `vc reconcile`, the interval): a poll beyond it
   * waits for its turn (a token bucket, core/queue/ratelimiter.ts); default unbounded
   */
  limiter?: RateLimiter;
}

/** PollOutcome says what one poll did. */
export type PollOutcome = 'unchanged' | 'emitted' | 'failed' | 'suspended';

/**
 * SourcePoller polls one source. It never emits the same revision and digest twice in a row, emits errors (such as
 * VerificationFailed) instead of artifacts when a poll fails, and runs at most one poll at a time: triggers that
 * arrive during a poll are coalesced into one more poll after it.
 */
export class SourcePoller {
  private readonly fetcher: SourcePollerOptions['fetcher'];
  private spec: SourceSpec;
  private readonly onArtifact: SourcePollerOptions['onArtifact'];
  private readonly onError: SourcePollerOptions['onError'];
  private readonly jitter: number;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly log: Logger;
  private readonly limiter: RateLimiter | undefined;
  private timer: TimerHandle | null = null;
  private running: Promise<PollOutcome> | null = null;
  private queued: Promise<PollOutcome> | null = null;
  private started = false;
  /** set by stop: a poll waiting for its turn then does not run */
  private stopped = false;
  /** the poll waiting for its turn (after): stop cancels its timer and settles it at once */
  private waiting: { handle: TimerHandle; fire: () => void } | null = null;
  private last: { revision: string; digest: string } | null = null;
  private lastAttempt: { revision: string; failed: boolean } | null = null;
  private pollCount = 0;

  constructor(opts: SourcePollerOptions) {
    this.fetcher = opts.fetcher;
    this.spec = opts.spec;
    this.onArtifact = opts.onArtifact;
    this.onError = opts.onError;
    this.jitter = opts.jitter ?? 0.1;
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.limiter = opts.limiter;
    this.log = opts.logger ?? childLogger({ component: 'source-poller', url: redactUrl(opts.spec.url) });
  }

  /** lastEmitted is the revision and digest of the last artifact handed out. */
  get lastEmitted(): { revision: string; digest: string } | null {
    return this.last;
  }

  /** polls is the number of polls that ran. */
  get polls(): number {
    return this.pollCount;
  }

  /** suspended tells whether the spec suspends polling. */
  get suspended(): boolean {
    return this.spec.suspend === true;
  }

  /** start polls now and then on the interval; a suspended source waits for resume. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.stopped = false;
    if (!this.suspended) void this.trigger();
  }

  /** stop cancels the interval; a poll in flight completes. */
  stop(): void {
    this.started = false;
    this.stopped = true;
    this.clearTimer();
    // A poll waiting for its turn would otherwise hold the process until its timer fires, only to do nothing.
    if (this.waiting) {
      this.clock.clearTimer(this.waiting.handle);
      this.waiting.fire();
    }
  }

  /** suspend stops polling (interval and triggers) until resume. */
  suspend(): void {
    this.spec = { ...this.spec, suspend: true };
    this.clearTimer();
  }

  /** resume undoes suspend and polls right away when started. */
  resume(): void {
    this.spec = { ...this.spec, suspend: false };
    if (this.started) void this.trigger();
  }

  /**
   * trigger requests an immediate poll. While a poll runs, all triggers share one poll that starts after it; the
   * promise settles when the poll covering this trigger is done.
   */
  trigger(): Promise<PollOutcome> {
    if (this.suspended) return Promise.resolve('suspended');
    if (this.queued) return this.queued;
    if (!this.running) {
      const wait = this.turn();
      if (wait <= 0) return this.run();
      this.queued = this.after(wait);
      return this.queued;
    }
    const next = () => {
      const wait = this.turn();
      return wait <= 0 ? this.runQueued() : this.after(wait);
    };
    this.queued = this.running.then(next, next);
    return this.queued;
  }

  /** turn reserves the next poll's place with the limiter: how many ms it waits (0 without a limiter). */
  private turn(): number {
    return this.limiter?.when('poll') ?? 0;
  }

  /** runQueued runs the queued poll now. */
  private runQueued(): Promise<PollOutcome> {
    this.queued = null;
    return this.run();
  }

  /** after runs the queued poll in `ms`, unless the poller was stopped meanwhile. */
  private after(ms: number): Promise<PollOutcome> {
    return new Promise<void>((resolve) => {
      const fire = () => {
        this.waiting = null;
        resolve();
      };
      this.waiting = { handle: this.clock.setTimer(fire, ms), fire };
    }).then(() => {
      if (this.stopped) {
        this.queued = null;
        return 'suspended' as const;
      }
      return this.runQueued();
    });
  }

  private run(): Promise<PollOutcome> {
    this.clearTimer();
    const p = this.pollOnce().finally(() => {
      this.running = null;
      this.schedule();
    });
    this.running = p;
    return p;
  }

  private schedule(): void {
    if (!this.started || this.suspended || this.queued || this.timer) return;
    const spread = this.jitter * (this.random() * 2 - 1);
    const delay = Math.max(0, this.spec.intervalMs * (1 + spread));
    this.timer = this.clock.setTimer(() => {
      this.timer = null;
      void this.trigger();
    }, delay);
  }

  private clearTimer(): void {
    if (this.timer) {
      this.clock.clearTimer(this.timer);
      this.timer = null;
    }
  }

  private async pollOnce(): Promise<PollOutcome> {
    if (this.suspended) return 'suspended';
    this.pollCount++;
    const spec = this.spec;
    const req: SourceRequest = {
      url: spec.url,
      ref: spec.ref,
      ...(spec.path !== undefined ? { path: spec.path } : {}),
      ...(spec.credentials ? { credentials: spec.credentials } : {}),
      ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
      ...(spec.verify ? { verify: spec.verify } : {}),
    };
    const history = spec.history?.() ?? {};
    if (history.since) req.since = history.since;
    if (history.allowRevision) req.allowRevision = history.allowRevision;
    if (history.baseLost !== undefined) req.baseLost = history.baseLost;
    let artifact: Artifact;
    try {
      const resolved = await this.fetcher.resolve(req);
      if (
        this.last?.revision === resolved.commit &&
        this.lastAttempt?.revision === resolved.commit &&
        !this.lastAttempt.failed
      ) {
        return 'unchanged';
      }
      this.lastAttempt = { revision: resolved.commit, failed: true };
      artifact = await this.fetcher.artifact(req, resolved);
      this.lastAttempt = { revision: artifact.revision, failed: false };
    } catch (err) {
      const sourceError =
        err instanceof SourceError
          ? err
          : new SourceError('FetchFailed', err instanceof Error ? err.message : String(err), { cause: err });
      this.log.debug({ reason: sourceError.reason, err: sourceError.message }, 'poll failed');
      this.report(sourceError);
      return 'failed';
    }
    if (this.last && this.last.revision === artifact.revision && this.last.digest === artifact.digest)
      return 'unchanged';
    this.last = { revision: artifact.revision, digest: artifact.digest };
    try {
      await this.onArtifact(artifact);
    } catch (err) {
      this.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'artifact consumer failed');
    }
    return 'emitted';
  }

  private report(err: SourceError): void {
    try {
      this.onError(err);
    } catch (cbErr) {
      this.log.warn({ err: cbErr instanceof Error ? cbErr.message : String(cbErr) }, 'error consumer failed');
    }
  }
}
