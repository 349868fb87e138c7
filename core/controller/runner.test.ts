import { describe, it, expect } from 'vitest';
import { pino } from 'pino';
import { FakeClock, realClock } from '../queue/clock.ts';
import { FairQueue, tenantOfKey } from '../queue/fairqueue.ts';
import { ItemExponentialFailureRateLimiter } from '../queue/ratelimiter.ts';
import { registry } from '../metrics/registry.ts';
import { WorkQueue, type RateLimitingQueue } from '../queue/workqueue.ts';
import { Runner, type ReconcileEnding, type Result } from './runner.ts';

const silent = pino({ level: 'silent' });

/** flush lets every pending promise callback run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
}

function deferred<T = Result>(): Deferred<T> {
  const d = {} as Deferred<T>;
  d.promise = new Promise<T>((resolve, reject) => Object.assign(d, { resolve, reject }));
  return d;
}

function setup(
  reconcile: (key: string) => Promise<Result>,
  options: { concurrency?: number; queue?: RateLimitingQueue } = {},
) {
  const clock = new FakeClock();
  const queue =
    options.queue ?? new WorkQueue({ clock, rateLimiter: new ItemExponentialFailureRateLimiter(100, 10_000) });
  const outcomes: ReconcileEnding[] = [];
  const durations: number[] = [];
  const calls: string[] = [];
  const runner = new Runner({
    name: 'test',
    queue,
    reconciler: {
      reconcile: (key) => {
        calls.push(key);
        return reconcile(key);
      },
    },
    concurrency: options.concurrency ?? 1,
    clock,
    logger: silent,
    metrics: {
      reconciled: (outcome, ms) => {
        outcomes.push(outcome);
        durations.push(ms);
      },
    },
  });
  runner.start();
  return { clock, queue, runner, outcomes, durations, calls };
}

describe('Runner', () => {
  it('forgets the key after a success', async () => {
    let failures = 1;
    const { queue, outcomes, clock, calls } = setup(async () => {
      if (failures-- > 0) throw new Error('transient');
    });
    queue.add('a');
    await flush();
    expect(queue.numRequeues('a')).toBe(1);
    clock.step(100);
    await flush();
    expect(outcomes).toEqual(['error', 'success']);
    expect(queue.numRequeues('a')).toBe(0);
    clock.step(1_000_000);
    await flush();
    expect(calls).toEqual(['a', 'a']);
  });

  it('retries a failing key with exponential backoff', async () => {
    let failures = 3;
    const { queue, clock, calls, outcomes } = setup(async () => {
      if (failures-- > 0) throw new Error('transient');
    });
    queue.add('a');
    await flush();
    const retriedAt: number[] = [];
    while (calls.length < 4 && clock.now() < 10_000) {
      clock.step(1);
      await flush();
      if (calls.length > retriedAt.length + 1) retriedAt.push(clock.now());
    }
    expect(retriedAt).toEqual([100, 100 + 200, 100 + 200 + 400]);
    expect(outcomes).toEqual(['error', 'error', 'error', 'success']);
  });

  it('runs the key again after requeueAfter, with its retry history forgotten', async () => {
    let calls = 0;
    const { queue, clock, outcomes } = setup(async () => {
      calls++;
      if (calls === 1) throw new Error('transient');
      if (calls === 2) return { requeueAfter: 500 };
    });
    queue.add('a');
    await flush();
    clock.step(100);
    await flush();
    expect(outcomes).toEqual(['error', 'requeue_after']);
    expect(queue.numRequeues('a')).toBe(0);
    clock.step(499);
    await flush();
    expect(calls).toBe(2);
    clock.step(1);
    await flush();
    expect(calls).toBe(3);
    expect(outcomes.at(-1)).toBe('success');
  });

  it.each([{ requeueAfter: 0 }, { requeueAfter: -1 }, {}, undefined])('treats %j as plain success', async (result) => {
    const { queue, clock, outcomes, calls } = setup(async () => result);
    queue.add('a');
    await flush();
    clock.step(1_000_000);
    await flush();
    expect(calls).toEqual(['a']);
    expect(outcomes).toEqual(['success']);
  });

  it.each<{ name: string; reconcile: () => Promise<Result> }>([
    { name: 'a rejected promise', reconcile: () => Promise.reject(new Error('boom')) },
    { name: 'an async throw', reconcile: async () => Promise.reject(new Error('boom')) },
    {
      name: 'a synchronous throw',
      reconcile: () => {
        throw new Error('boom');
      },
    },
    { name: 'a rejection with a non-Error', reconcile: () => Promise.reject('boom') },
  ])('survives $name and retries the key', async ({ reconcile }) => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { queue, clock, calls, outcomes } = setup((key) => (key === 'bad' ? reconcile() : Promise.resolve()));
      queue.add('bad');
      queue.add('good');
      await flush();
      expect(calls).toEqual(['bad', 'good']);
      expect(outcomes).toEqual(['error', 'success']);
      expect(queue.numRequeues('bad')).toBe(1);
      clock.step(100);
      await flush();
      expect(calls).toEqual(['bad', 'good', 'bad']);
      await flush();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('never reconciles one key in two workers at once, and loses no add', async () => {
    const inFlight = new Map<string, () => void>();
    const needsRun = new Set<string>();
    let overlaps = 0;
    let maxInFlight = 0;
    const { queue } = setup(
      (key) => {
        if (inFlight.has(key)) overlaps++;
        needsRun.delete(key);
        return new Promise<Result>((resolve) => {
          inFlight.set(key, () => {
            inFlight.delete(key);
            resolve();
          });
          maxInFlight = Math.max(maxInFlight, inFlight.size);
        });
      },
      { concurrency: 4 },
    );
    let seed = 42;
    const random = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let step = 0; step < 500; step++) {
      if (random(10) < 6) {
        const key = `k${random(6)}`;
        needsRun.add(key);
        queue.add(key);
      } else {
        const running = [...inFlight.values()];
        running[random(Math.max(1, running.length))]?.();
      }
      await flush();
    }
    while (inFlight.size > 0) {
      for (const finish of [...inFlight.values()]) finish();
      await flush();
    }
    expect(overlaps).toBe(0);
    expect(maxInFlight).toBe(4);
    expect([...needsRun]).toEqual([]);
    expect(queue.len()).toBe(0);
  });

  it('runs a key re-added during its reconcile once more, after it finishes', async () => {
    const gates: Array<Deferred<Result>> = [];
    const { queue, calls } = setup(
      () => {
        const gate = deferred();
        gates.push(gate);
        return gate.promise;
      },
      { concurrency: 4 },
    );
    queue.add('a');
    await flush();
    queue.add('a');
    queue.add('a');
    await flush();
    expect(calls).toEqual(['a']);
    gates[0]!.resolve();
    await flush();
    expect(calls).toEqual(['a', 'a']);
    gates[1]!.resolve();
    await flush();
    expect(calls).toEqual(['a', 'a']);
  });

  it('runs at most `concurrency` reconciles at once', async () => {
    const gates: Array<Deferred<Result>> = [];
    const { queue, calls } = setup(
      () => {
        const gate = deferred();
        gates.push(gate);
        return gate.promise;
      },
      { concurrency: 3 },
    );
    for (let i = 0; i < 10; i++) queue.add(`k${i}`);
    await flush();
    expect(calls).toHaveLength(3);
    gates[0]!.resolve();
    await flush();
    expect(calls).toHaveLength(4);
  });

  it('reports reconcile durations on the clock', async () => {
    const gate = deferred();
    const { queue, clock, durations } = setup(() => gate.promise);
    queue.add('a');
    await flush();
    clock.step(250);
    gate.resolve();
    await flush();
    expect(durations).toEqual([250]);
  });

  it('stop shuts the queue down and waits for the reconcile in flight', async () => {
    const gate = deferred();
    const { queue, runner, outcomes, calls, clock } = setup(() => gate.promise, { concurrency: 2 });
    queue.add('a');
    await flush();
    let stopped = false;
    const stopping = runner.stop().then(() => {
      stopped = true;
    });
    await flush();
    expect(queue.shuttingDown()).toBe(true);
    expect(stopped).toBe(false);
    queue.add('b');
    gate.reject(new Error('fails on the way out'));
    await stopping;
    expect(outcomes).toEqual(['error']);
    expect(calls).toEqual(['a']);
    expect(clock.pending()).toBe(0);
  });

  it('passes each reconcile a signal that stop aborts', async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue({ clock });
    const seen: AbortSignal[] = [];
    const runner = new Runner({
      name: 'test-signal',
      queue,
      clock,
      logger: silent,
      reconciler: {
        reconcile: (_key, signal) => {
          seen.push(signal);
          return new Promise<Result>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        },
      },
    });
    runner.start();
    queue.add('a');
    await flush();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.aborted).toBe(false);
    await runner.stop();
    expect(seen[0]!.aborted).toBe(true);
  });

  it('reports reconciles on /metrics by controller and result when given no metrics', async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue({ clock });
    const runner = new Runner({
      name: 'test-default-metrics',
      queue,
      clock,
      logger: silent,
      reconciler: { reconcile: async () => undefined },
    });
    runner.start();
    queue.add('a');
    await flush();
    await runner.stop();
    const text = await registry.metrics();
    expect(text).toContain('vc_controller_reconcile_total{controller="test-default-metrics",result="success"} 1');
    expect(text).toContain('vc_controller_reconcile_duration_seconds_count{controller="test-default-metrics"} 1');
  });

  it('stop resolves at once when idle, and start refuses to run twice', async () => {
    const { runner } = setup(async () => undefined, { concurrency: 3 });
    expect(() => runner.start()).toThrow(/already started/);
    await runner.stop();
  });

  it('starts again after stop once its queue is reopened, with a signal not aborted', async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue({ clock });
    const seen: Array<[string, boolean]> = [];
    const runner = new Runner({
      name: 'test-restart',
      queue,
      clock,
      logger: silent,
      reconciler: {
        reconcile: async (key, signal) => void seen.push([key, signal.aborted]),
      },
    });
    runner.start();
    queue.add('a');
    await flush();
    await runner.stop();
    queue.add('dropped while stopped');
    expect(() => runner.start()).toThrow(/queue is shut down/);
    queue.reopen();
    runner.start();
    queue.add('b');
    await flush();
    await runner.stop();
    expect(seen).toEqual([
      ['a', false],
      ['b', false],
    ]);
  });

  it.each([0, -1, 1.5])('rejects concurrency %d', (concurrency) => {
    const queue = new WorkQueue({ clock: new FakeClock() });
    expect(
      () => new Runner({ name: 't', queue, reconciler: { reconcile: async () => undefined }, concurrency }),
    ).toThrow(RangeError);
  });

  it('drives a FairQueue so that a flooding tenant does not starve another', async () => {
    const clock = new FakeClock();
    const queue = new FairQueue({ clock });
    const { calls } = setup(async () => undefined, { queue });
    for (let i = 0; i < 1000; i++) queue.add(`flood/ns/obj-${i}`);
    for (let i = 0; i < 3; i++) queue.add(`small/ns/obj-${i}`);
    await flush();
    // The idle worker took flood/ns/obj-0 the moment it was added; from then on the tenants alternate.
    const smallAt = calls.flatMap((key, i) => (tenantOfKey(key) === 'small' ? [i] : []));
    expect(smallAt).toEqual([2, 4, 6]);
    expect(calls).toHaveLength(1003);
  });

  it.each([
    { workers: 2, cap: 1, quickTenants: 1 },
    { workers: 4, cap: 1, quickTenants: 2 },
    { workers: 8, cap: 2, quickTenants: 3 },
  ])(
    'with $workers workers and a cap of $cap, a tenant whose reconciles hang holds $cap and the others finish',
    async ({ workers, cap, quickTenants }) => {
      const clock = new FakeClock();
      const queue = new FairQueue({ clock, maxInFlightPerTenant: cap });
      const hang = deferred<Result>();
      const { calls } = setup((key) => (tenantOfKey(key) === 'slow' ? hang.promise : Promise.resolve()), {
        queue,
        concurrency: workers,
      });
      for (let i = 0; i < 50; i++) queue.add(`slow/ns/obj-${i}`);
      const quick = Array.from({ length: quickTenants }, (_, t) => `quick-${t}`);
      for (let i = 0; i < 50; i++) for (const t of quick) queue.add(`${t}/ns/obj-${i}`);
      for (let i = 0; i < 20; i++) await flush();
      const slowCalls = calls.filter((key) => tenantOfKey(key) === 'slow');
      expect(slowCalls).toHaveLength(cap);
      expect(queue.tenantInFlight('slow')).toBe(cap);
      for (const t of quick) expect(calls.filter((key) => tenantOfKey(key) === t)).toHaveLength(50);
      expect(queue.len()).toBe(50 - cap);
      hang.resolve(undefined);
      for (let i = 0; i < 20; i++) await flush();
      expect(calls.filter((key) => tenantOfKey(key) === 'slow')).toHaveLength(50);
    },
  );
});

describe('Runner and the event loop', () => {
  it.each([
    { case: 'lets waiting I/O run between keys once its workers held the loop 5 ms', clock: realClock, yields: true },
    { case: 'never yields while its clock stands still (a FakeClock)', clock: new FakeClock(), yields: false },
  ])('$case', async ({ clock, yields }) => {
    const KEYS = 20;
    const queue = new WorkQueue({ clock, rateLimiter: new ItemExponentialFailureRateLimiter(100, 10_000) });
    let done = 0;
    const runner = new Runner({
      name: 'test',
      queue,
      // a reconcile that writes nothing: 1 ms of work, settled without I/O
      reconciler: {
        reconcile: () => {
          const end = performance.now() + 1;
          while (performance.now() < end);
          done++;
          return Promise.resolve(undefined);
        },
      },
      concurrency: 2,
      clock,
      logger: silent,
      metrics: { reconciled: () => undefined },
    });
    for (let i = 0; i < KEYS; i++) queue.add(`k${i}`);
    let doneWhenIoRan = -1;
    setImmediate(() => (doneWhenIoRan = done));
    runner.start();
    while (done < KEYS) await flush();
    await runner.stop();
    if (yields) expect(doneWhenIoRan).toBeLessThan(KEYS);
    else expect(doneWhenIoRan).toBe(KEYS);
  });
});
