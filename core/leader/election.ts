// The test of LeaderElector against a real kube-apiserver (candidates competing for one Lease) lives in test/;
// election.test.ts covers the pure timing and record logic.
import { Gauge } from 'prom-client';
import { KubeClient, isAlreadyExists, isConflict, isNotFound, type KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { childLogger, type Logger } from '../log.ts';
import { registry } from '../metrics/registry.ts';

/** LeaderRecord is the election state kept in a Lease's spec. */
export interface LeaderRecord {
  /** empty when nobody holds the lease */
  holderIdentity: string;
  leaseDurationSeconds: number;
  /** RFC 3339 with microseconds, see formatMicroTime */
  acquireTime: string;
  renewTime: string;
  leaseTransitions: number;
}

/** Lease is the part of a coordination.k8s.io/v1 Lease the elector reads and writes. */
export interface Lease extends KubeObject {
  spec?: Partial<LeaderRecord> & Record<string, unknown>;
}

/**
 * LeaseAction is the next step of a candidate: `create` the missing Lease, `renew` the Lease it holds, `acquire` a
 * Lease that is free or expired, or `wait` because another candidate holds it.
 */
export type LeaseAction = 'create' | 'renew' | 'acquire' | 'wait';

/** JITTER_FACTOR stretches the retry period of acquisition by up to this fraction, as client-go does. */
export const JITTER_FACTOR = 1.2;

/** formatMicroTime formats a wall-clock time like metav1.MicroTime: `2006-01-02T15:04:05.000000Z`. */
export function formatMicroTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** recordOf reads the election record of a Lease, filling absent fields with their zero values. */
export function recordOf(lease: Lease): LeaderRecord {
  const s = lease.spec ?? {};
  return {
    holderIdentity: s.holderIdentity ?? '',
    leaseDurationSeconds: s.leaseDurationSeconds ?? 0,
    acquireTime: s.acquireTime ?? '',
    renewTime: s.renewTime ?? '',
    leaseTransitions: s.leaseTransitions ?? 0,
  };
}

/**
 * leaseHeld tells whether a lease whose last successful renewal started at renewedAtMs is surely still held at nowMs
 * (both on one monotonic clock): before the renew deadline, which is shorter than the lease duration other
 * candidates wait for.
 */
export function leaseHeld(renewedAtMs: number, renewDeadlineMs: number, nowMs: number): boolean {
  return nowMs - renewedAtMs < renewDeadlineMs;
}

/** sameRecord reports whether two records are equal field by field. */
export function sameRecord(a: LeaderRecord, b: LeaderRecord): boolean {
  return (
    a.holderIdentity === b.holderIdentity &&
    a.leaseDurationSeconds === b.leaseDurationSeconds &&
    a.acquireTime === b.acquireTime &&
    a.renewTime === b.renewTime &&
    a.leaseTransitions === b.leaseTransitions
  );
}

/**
 * decide picks the next step of candidate `identity` given the record it observed (null: there is no Lease) and
 * `observedAtMs`, the local monotonic time at which it first saw that exact record. Like client-go, a record held by
 * another candidate stays valid for its leaseDurationSeconds counted from our own observation, never from its
 * renewTime, so clock skew between candidates cannot end a lease early. The duration is the holder's, from the
 * record: it is what the holder promised to renew within. `holderGone` (the holder's process is known to have
 * ended, see local.ts) takes the lease at once.
 */
export function decide(
  observed: LeaderRecord | null,
  observedAtMs: number,
  nowMs: number,
  identity: string,
  holderGone = false,
): LeaseAction {
  if (!observed) return 'create';
  if (observed.holderIdentity === identity) return 'renew';
  if (observed.holderIdentity === '' || holderGone) return 'acquire';
  return observedAtMs + observed.leaseDurationSeconds * 1000 > nowMs ? 'wait' : 'acquire';
}

/**
 * nextRecord is the record candidate `identity` writes when it creates (`old` null), renews or acquires the lease at
 * wall-clock time `nowMs`. Renewal keeps acquireTime and leaseTransitions; a change of holder counts a transition.
 */
export function nextRecord(
  old: LeaderRecord | null,
  identity: string,
  leaseDurationSeconds: number,
  nowMs: number,
): LeaderRecord {
  const now = formatMicroTime(nowMs);
  const rec: LeaderRecord = {
    holderIdentity: identity,
    leaseDurationSeconds,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: 0,
  };
  if (!old) return rec;
  if (old.holderIdentity === identity)
    return { ...rec, acquireTime: old.acquireTime || now, leaseTransitions: old.leaseTransitions };
  return { ...rec, leaseTransitions: old.leaseTransitions + 1 };
}

/** releaseRecord is the record a holder writes to give the lease up: no holder, and a one-second duration. */
export function releaseRecord(old: LeaderRecord, nowMs: number): LeaderRecord {
  const now = formatMicroTime(nowMs);
  return {
    holderIdentity: '',
    leaseDurationSeconds: 1,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: old.leaseTransitions,
  };
}

const isLeaderGauge = new Gauge({
  name: 'vc_leader_is_leader',
  help: '1 while this process leads through the Lease (namespace/name), otherwise 0.',
  labelNames: ['lease'] as const,
  registers: [registry],
});

/** LeaderElectorOptions configure a LeaderElector; the timing options mean what they mean in client-go. */
export interface LeaderElectorOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  /** unique per process, e.g. pod name plus a random suffix: a restarted process with the same identity resumes at once */
  identity: string;
  /** how long others wait, from when they saw the last renewal, before taking over; whole seconds (default 15) */
  leaseDurationSeconds?: number;
  /** how long the leader keeps leading without a successful renewal (default 10) */
  renewDeadlineSeconds?: number;
  /** the pause between attempts to acquire or renew (default 2) */
  retryPeriodSeconds?: number;
  /**
   * onStartedLeading starts the guarded work; `signal` aborts when leadership ends. A returned promise is taken to
   * settle once the work has stopped, which lets a cancelled run wait for it before releasing the lease. When it
   * rejects (or onStartedLeading throws) while leading, the work failed and nothing runs: the term ends at once, the
   * lease is released and run waits one retry period before it returns, so that another candidate (or this one,
   * standing again) starts afresh instead of a leader that holds the lease and runs nothing.
   */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  /** onStoppedLeading is called once leadership ended, after the lease was released if it is released. */
  onStoppedLeading(): void;
  /** onNewLeader is called with the identity of each new holder observed, this candidate included. */
  onNewLeader?(identity: string): void;
  /** give the lease up when run's signal aborts, so that another candidate takes over at once (default true) */
  releaseOnCancel?: boolean;
  /**
   * holderGone tells a holder identity whose process is known to have ended (killed without releasing the lease):
   * its lease is taken at once instead of after its duration. Default: never known (local.ts has one for processes
   * on the same host).
   */
  holderGone?(identity: string): boolean;
}

type Attempt = 'ok' | 'held' | 'failed';

/**
 * LeaderElector elects one leader among candidates through a coordination.k8s.io/v1 Lease, following client-go's
 * leaderelection: acquire (or create) the lease, renew it every retry period, and stop leading when no renewal has
 * succeeded within the renew deadline or another holder shows up.
 */
export class LeaderElector {
  private readonly o: Required<Omit<LeaderElectorOptions, 'onNewLeader' | 'holderGone'>> &
    Pick<LeaderElectorOptions, 'onNewLeader' | 'holderGone'>;
  private readonly label: string;
  private readonly log: Logger;
  /** the Lease last read or written, whose resourceVersion guards the next update */
  private lease: Lease | null = null;
  private observed: LeaderRecord | null = null;
  /** performance.now() when `observed` was first seen */
  private observedAt = 0;
  /** performance.now() at the start of the last successful acquire or renew */
  private renewedAt = 0;
  private leading = false;
  private reportedLeader = '';
  private running = false;

  constructor(opts: LeaderElectorOptions) {
    const o = {
      ...opts,
      leaseDurationSeconds: opts.leaseDurationSeconds ?? 15,
      renewDeadlineSeconds: opts.renewDeadlineSeconds ?? 10,
      retryPeriodSeconds: opts.retryPeriodSeconds ?? 2,
      releaseOnCancel: opts.releaseOnCancel ?? true,
    };
    if (!o.namespace || !o.name) throw new Error('leader election needs the namespace and name of the Lease');
    if (!o.identity) throw new Error('leader election needs a non-empty identity');
    if (!Number.isInteger(o.leaseDurationSeconds) || o.leaseDurationSeconds < 1) {
      throw new Error(`leaseDurationSeconds must be a whole number of seconds >= 1, not ${o.leaseDurationSeconds}`);
    }
    if (!(o.retryPeriodSeconds > 0)) throw new Error('retryPeriodSeconds must be greater than zero');
    if (!(o.leaseDurationSeconds > o.renewDeadlineSeconds))
      throw new Error('leaseDurationSeconds must be greater than renewDeadlineSeconds');
    if (!(o.renewDeadlineSeconds > JITTER_FACTOR * o.retryPeriodSeconds)) {
      throw new Error(`renewDeadlineSeconds must be greater than retryPeriodSeconds * ${JITTER_FACTOR}`);
    }
    this.o = o;
    this.label = `${o.namespace}/${o.name}`;
    this.log = childLogger({ controller: 'leader-election', lease: this.label, identity: o.identity });
    isLeaderGauge.set({ lease: this.label }, 0);
  }

  /** isLeader reports whether this candidate currently leads. */
  isLeader(): boolean {
    return this.leading;
  }

  /**
   * holds reports whether this candidate leads and surely still holds the lease now: its last successful renewal
   * started less than the renew deadline ago (leaseHeld), else the reason it may not. Asked before each write of the
   * leader's work, it stops a process that was paused (SIGSTOP, a long GC, a frozen VM) past its lease from writing
   * before its renew loop has noticed the loss.
   */
  holds(): true | string {
    if (!this.leading) return `not leading the lease ${this.label}`;
    return leaseHeld(this.renewedAt, this.renewDeadlineMs, performance.now())
      ? true
      : `no renewal of the lease ${this.label} succeeded within ${this.o.renewDeadlineSeconds}s`;
  }

  /** leader returns the holder of the lease as last observed; empty when unknown or free. */
  leader(): string {
    return this.observed?.holderIdentity ?? '';
  }

  /**
   * run stands for election until `signal` aborts or leadership, once gained, is lost; it never rejects on API
   * errors, it retries. Call it again to stand anew. When `signal` aborts while leading, the work's signal aborts,
   * run waits for the promise onStartedLeading returned (at most until the renew deadline would have passed, while the
   * lease is surely still ours) and then, with releaseOnCancel, releases the lease.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.running) throw new Error(`leader election for ${this.label} is already running`);
    this.running = true;
    try {
      if (await this.acquire(signal)) await this.lead(signal);
    } finally {
      this.running = false;
    }
  }

  private get renewDeadlineMs(): number {
    return this.o.renewDeadlineSeconds * 1000;
  }
  private get retryPeriodMs(): number {
    return this.o.retryPeriodSeconds * 1000;
  }

  private async acquire(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false;
    this.log.info('attempting to acquire the lease');
    for (;;) {
      const started = performance.now();
      const r = await this.tryAcquireOrRenew(signal, this.renewDeadlineMs);
      this.reportTransition();
      // Stopped during the attempt, whatever it reported: a write that the stop cut short (a 'failed' attempt) may
      // still have reached the apiserver and taken the lease, and then nobody would renew or release it; the others
      // would wait out a whole lease duration. release() writes only when the lease names this candidate.
      if (signal.aborted) {
        if (this.o.releaseOnCancel) await this.release();
        return false;
      }
      if (r === 'ok') {
        this.renewedAt = started;
        return true;
      }
      if (!(await sleep(this.retryPeriodMs * (1 + Math.random() * JITTER_FACTOR), signal))) return false;
    }
  }

  private async lead(signal: AbortSignal): Promise<void> {
    const stop = new AbortController();
    this.leading = true;
    isLeaderGauge.set({ lease: this.label }, 1);
    this.log.info('became leader');
    const failed = new AbortController();
    let work: Promise<void>;
    try {
      work = Promise.resolve(this.o.onStartedLeading(stop.signal)).catch((e: unknown) => {
        this.log.error({ err: e }, 'leader work failed');
        failed.abort();
      });
    } catch (e) {
      this.log.error({ err: e }, 'onStartedLeading threw');
      failed.abort();
      work = Promise.resolve();
    }

    const renewing = await this.renewLoop(AbortSignal.any([signal, failed.signal]));
    const ended = failed.signal.aborted && !signal.aborted ? 'failed' : renewing;
    stop.abort();
    this.leading = false;
    isLeaderGauge.set({ lease: this.label }, 0);

    if (ended === 'failed') await this.release();
    else if (ended === 'cancelled' && this.o.releaseOnCancel) {
      const safeMs = this.renewedAt + this.renewDeadlineMs - performance.now();
      if (await settlesWithin(work, safeMs)) await this.release();
      else this.log.warn('leader work did not stop before the renew deadline; leaving the lease to expire');
    }
    this.log.info({ reason: ended }, 'stopped leading');
    try {
      this.o.onStoppedLeading();
    } catch (e) {
      this.log.error({ err: e }, 'onStoppedLeading threw');
    }
    // A start that fails at once must not spin: the next stand comes after a retry period, another candidate's chance.
    if (ended === 'failed') await sleep(this.retryPeriodMs * (1 + Math.random() * JITTER_FACTOR), signal);
  }

  private async renewLoop(signal: AbortSignal): Promise<'cancelled' | 'lost'> {
    for (;;) {
      if (!(await sleep(this.retryPeriodMs, signal))) return 'cancelled';
      for (;;) {
        const remaining = this.renewedAt + this.renewDeadlineMs - performance.now();
        if (remaining <= 0) {
          this.log.warn(`no renewal succeeded within ${this.o.renewDeadlineSeconds}s`);
          return 'lost';
        }
        const started = performance.now();
        const r = await this.tryAcquireOrRenew(signal, remaining);
        this.reportTransition();
        if (signal.aborted) return 'cancelled';
        if (r === 'ok') {
          this.renewedAt = started;
          break;
        }
        if (r === 'held') {
          this.log.warn({ holder: this.leader() }, 'the lease is held by another candidate');
          return 'lost';
        }
        if (!(await sleep(Math.min(this.retryPeriodMs, remaining), signal))) return 'cancelled';
      }
    }
  }

  /**
   * tryAcquireOrRenew makes one attempt, bounded by timeoutMs: while leading it first updates the Lease it last wrote
   * (one request); otherwise, or when that fails, it reads the Lease and acts on decide().
   */
  private async tryAcquireOrRenew(signal: AbortSignal, timeoutMs: number): Promise<Attempt> {
    const attempt = AbortSignal.any([signal, AbortSignal.timeout(Math.max(1, Math.ceil(timeoutMs)))]);
    if (this.leading && this.lease && this.observed) {
      try {
        await this.write(
          this.lease,
          nextRecord(this.observed, this.o.identity, this.o.leaseDurationSeconds, Date.now()),
          attempt,
        );
        return 'ok';
      } catch (e) {
        this.log.debug({ err: e }, 'renewing the known lease failed, reading it again');
        if (attempt.aborted) return 'failed';
      }
    }

    let lease: Lease | null = null;
    try {
      lease = await this.o.client.request<Lease>('GET', KubeClient.path(R.leases, this.o.namespace, this.o.name), {
        signal: attempt,
      });
    } catch (e) {
      if (signal.aborted) return 'failed';
      if (!isNotFound(e)) {
        this.log.warn({ err: e }, 'reading the lease failed');
        return 'failed';
      }
    }
    if (lease) this.observe(lease);
    else this.observed = this.lease = null;

    const holder = this.observed?.holderIdentity ?? '';
    const gone = !!holder && holder !== this.o.identity && !!this.o.holderGone?.(holder);
    const decision = decide(this.observed, this.observedAt, performance.now(), this.o.identity, gone);
    if (decision === 'wait') return 'held';
    if (gone) this.log.info({ holder }, "the holder's process has ended; taking the lease over without waiting it out");
    const rec = nextRecord(this.observed, this.o.identity, this.o.leaseDurationSeconds, Date.now());
    try {
      if (decision === 'create' || !lease) {
        const fresh: Lease = {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { namespace: this.o.namespace, name: this.o.name },
          spec: { ...rec },
        };
        this.setObserved(
          await this.o.client.request<Lease>('POST', KubeClient.path(R.leases, this.o.namespace), {
            body: fresh,
            signal: attempt,
          }),
        );
      } else {
        await this.write(lease, rec, attempt);
      }
      return 'ok';
    } catch (e) {
      if (signal.aborted) return 'failed';
      if (isConflict(e) || isAlreadyExists(e)) this.log.debug({ err: e }, 'another candidate wrote the lease first');
      else this.log.warn({ err: e }, `${decision === 'create' ? 'creating' : 'updating'} the lease failed`);
      return 'failed';
    }
  }

  /** write replaces the record of `base` with an update guarded by base's resourceVersion. */
  private async write(base: Lease, rec: LeaderRecord, signal: AbortSignal): Promise<void> {
    const body: Lease = { ...base, spec: { ...base.spec, ...rec } };
    this.setObserved(
      await this.o.client.request<Lease>('PUT', KubeClient.path(R.leases, this.o.namespace, this.o.name), {
        body,
        signal,
      }),
    );
  }

  private observe(lease: Lease): void {
    this.lease = lease;
    const rec = recordOf(lease);
    if (this.observed && sameRecord(rec, this.observed)) return;
    this.observed = rec;
    this.observedAt = performance.now();
  }

  private setObserved(lease: Lease): void {
    this.lease = lease;
    this.observed = recordOf(lease);
    this.observedAt = performance.now();
  }

  private reportTransition(): void {
    const holder = this.leader();
    if (holder === this.reportedLeader) return;
    this.reportedLeader = holder;
    if (!holder) return;
    this.log.info({ holder }, 'new leader observed');
    try {
      this.o.onNewLeader?.(holder);
    } catch (e) {
      this.log.error({ err: e }, 'onNewLeader threw');
    }
  }

  /** release gives the lease up if this candidate still holds it; failures are logged, the lease then expires. */
  private async release(): Promise<void> {
    const signal = AbortSignal.timeout(this.renewDeadlineMs);
    try {
      const lease = await this.o.client.request<Lease>(
        'GET',
        KubeClient.path(R.leases, this.o.namespace, this.o.name),
        { signal },
      );
      const rec = recordOf(lease);
      if (rec.holderIdentity !== this.o.identity) return;
      await this.write(lease, releaseRecord(rec, Date.now()), signal);
      this.reportTransition();
      this.log.info('released the lease');
    } catch (e) {
      if (!isNotFound(e)) this.log.warn({ err: e }, 'releasing the lease failed; it will expire');
    }
  }
}

/** sleep waits ms or until signal aborts; it resolves true when the full time passed. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function settlesWithin(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, ms));
  });
  return Promise.race([p.then(() => true), late]).finally(() => clearTimeout(timer));
}
