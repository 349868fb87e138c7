import { describe, it, expect } from 'vitest';
import { FakeClock } from './clock.ts';
import { ItemExponentialFailureRateLimiter } from './ratelimiter.ts';
import { WorkQueue, type QueueMetrics } from './workqueue.ts';

/** flush lets every pending promise callback run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** track exposes whether a promise has settled yet, and with what. */
function track<T>(promise: Promise<T>): { settled: boolean; value: T | undefined } {
  const state: { settled: boolean; value: T | undefined } = { settled: false, value: undefined };
  void promise.then((value) => {
    state.settled = true;
    state.value = value;
  });
  return state;
}

function newQueue(clock = new FakeClock()): WorkQueue {
  return new WorkQueue({ clock, rateLimiter: new ItemExponentialFailureRateLimiter(100, 10_000) });
}

describe('WorkQueue', () => {
  it('hands out a key added several times before processing once', async () => {
    const queue = newQueue();
    for (const key of ['a', 'b', 'a', 'a', 'b']) queue.add(key);
    expect(queue.len()).toBe(2);
    expect(await queue.get()).toBe('a');
    expect(await queue.get()).toBe('b');
    expect(queue.len()).toBe(0);
    const next = track(queue.get());
    await flush();
    expect(next.settled).toBe(false);
  });

  it('hands out keys in the order they were first added', async () => {
    const queue = newQueue();
    for (const key of ['c', 'a', 'b', 'c']) queue.add(key);
    expect([await queue.get(), await queue.get(), await queue.get()]).toEqual(['c', 'a', 'b']);
  });

  it('never hands a key being processed to a second worker', async () => {
    const queue = newQueue();
    queue.add('a');
    expect(await queue.get()).toBe('a');
    queue.add('a');
    expect(queue.len()).toBe(0);
    const second = track(queue.get());
    await flush();
    expect(second.settled).toBe(false);
    queue.done('a');
    await flush();
    expect(second).toEqual({ settled: true, value: 'a' });
  });

  it('requeues a key re-added while processing exactly once, after done', async () => {
    const queue = newQueue();
    queue.add('a');
    await queue.get();
    queue.add('a');
    queue.add('a');
    queue.done('a');
    expect(queue.len()).toBe(1);
    expect(await queue.get()).toBe('a');
    queue.done('a');
    expect(queue.len()).toBe(0);
  });

  it('does not requeue a processed key that was not re-added', async () => {
    const queue = newQueue();
    queue.add('a');
    await queue.get();
    queue.done('a');
    queue.done('a');
    queue.done('never-got');
    expect(queue.len()).toBe(0);
  });

  it('serves waiting workers one key each, oldest waiter first', async () => {
    const queue = newQueue();
    const first = track(queue.get());
    const second = track(queue.get());
    queue.add('a');
    await flush();
    expect(first).toEqual({ settled: true, value: 'a' });
    expect(second.settled).toBe(false);
    queue.add('b');
    await flush();
    expect(second).toEqual({ settled: true, value: 'b' });
    expect(queue.len()).toBe(0);
  });

  it('drains queued keys after shutDown, then resolves undefined and ignores adds', async () => {
    const queue = newQueue();
    queue.add('a');
    queue.add('b');
    queue.shutDown();
    queue.add('c');
    queue.addAfter('d', 0);
    queue.addRateLimited('e');
    expect(queue.shuttingDown()).toBe(true);
    expect([await queue.get(), await queue.get(), await queue.get()]).toEqual(['a', 'b', undefined]);
    expect(queue.numRequeues('e')).toBe(0);
  });

  it('takes adds again after reopen, once drained, with nothing of before shutDown queued', async () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    queue.add('a');
    queue.addAfter('late', 100);
    queue.shutDown();
    expect(await queue.get()).toBe('a');
    expect(() => queue.reopen()).toThrow(/every key was handed out and done/);
    queue.done('a');
    expect(await queue.get()).toBeUndefined();
    queue.reopen();
    expect(queue.shuttingDown()).toBe(false);
    clock.step(100);
    expect(queue.len()).toBe(0);
    queue.add('b');
    expect([queue.len(), await queue.get()]).toEqual([1, 'b']);
  });

  it('resolves workers already waiting with undefined on shutDown', async () => {
    const queue = newQueue();
    const waiting = [track(queue.get()), track(queue.get())];
    queue.shutDown();
    await flush();
    expect(waiting).toEqual([
      { settled: true, value: undefined },
      { settled: true, value: undefined },
    ]);
  });

  it('adds a delayed key only once the clock passes the delay', () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    queue.addAfter('a', 100);
    expect(queue.len()).toBe(0);
    clock.step(99);
    expect(queue.len()).toBe(0);
    clock.step(1);
    expect(queue.len()).toBe(1);
  });

  it.each([0, -5, Number.NaN])('adds a key delayed by %d at once', (ms) => {
    const queue = newQueue();
    queue.addAfter('a', ms);
    expect(queue.len()).toBe(1);
  });

  it('keeps the earliest of several delays for a key', async () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    queue.addAfter('a', 100);
    queue.addAfter('a', 50);
    queue.addAfter('a', 80);
    clock.step(50);
    expect(queue.len()).toBe(1);
    await queue.get();
    queue.done('a');
    clock.step(100);
    expect(queue.len()).toBe(0);
    expect(clock.pending()).toBe(0);
  });

  it('cancels pending delays on shutDown', () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    queue.addAfter('a', 100);
    queue.shutDown();
    expect(clock.pending()).toBe(0);
    clock.step(100);
    expect(queue.len()).toBe(0);
  });

  it('delays rate-limited adds by the limiter and counts requeues until forget', async () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    const delays: number[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      queue.addRateLimited('a');
      const start = clock.now();
      while (queue.len() === 0) clock.step(1);
      delays.push(clock.now() - start);
      await queue.get();
      queue.done('a');
    }
    expect(delays).toEqual([100, 200, 400]);
    expect(queue.numRequeues('a')).toBe(3);
    queue.forget('a');
    expect(queue.numRequeues('a')).toBe(0);
  });

  it('reports metrics', async () => {
    const clock = new FakeClock();
    const seen = { adds: 0, retries: 0, depth: [] as number[], latency: [] as number[], work: [] as number[] };
    const metrics: QueueMetrics = {
      add: () => seen.adds++,
      retry: () => seen.retries++,
      depth: (n) => seen.depth.push(n),
      queueLatency: (ms) => seen.latency.push(ms),
      workDuration: (ms) => seen.work.push(ms),
    };
    const queue = new WorkQueue({ clock, metrics, rateLimiter: new ItemExponentialFailureRateLimiter(10, 10) });
    queue.add('a');
    queue.add('a');
    queue.add('b');
    clock.step(30);
    await queue.get();
    clock.step(7);
    queue.done('a');
    queue.addRateLimited('a');
    clock.step(10);
    expect(seen).toEqual({ adds: 3, retries: 1, depth: [1, 2, 1, 2], latency: [30], work: [7] });
  });
});

describe('WorkQueue delays share one timer', () => {
  /** readyOrder steps the clock 1 ms at a time until `until` and returns the keys in the order they became ready. */
  async function readyOrder(queue: WorkQueue, clock: FakeClock, until: number): Promise<string[]> {
    const order: string[] = [];
    for (let t = 0; t < until; t++) {
      clock.step(1);
      while (queue.len() > 0) {
        const key = (await queue.get())!;
        order.push(key);
        queue.done(key);
      }
    }
    return order;
  }

  it.each([
    {
      name: 'earliest first',
      delays: [
        ['a', 30],
        ['b', 10],
        ['c', 20],
      ],
      want: ['b', 'c', 'a'],
    },
    {
      name: 'ties in the order delayed',
      delays: [
        ['a', 10],
        ['b', 10],
        ['c', 5],
        ['d', 10],
      ],
      want: ['c', 'a', 'b', 'd'],
    },
    {
      name: 'a key delayed again earlier moves up',
      delays: [
        ['a', 30],
        ['b', 20],
        ['a', 10],
      ],
      want: ['a', 'b'],
    },
    {
      name: 'a later delay of a delayed key is ignored',
      delays: [
        ['a', 10],
        ['b', 20],
        ['a', 50],
      ],
      want: ['a', 'b'],
    },
  ] as const)('$name', async ({ delays, want }) => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    for (const [key, ms] of delays) queue.addAfter(key, ms);
    expect(clock.pending()).toBe(1);
    expect(await readyOrder(queue, clock, 60)).toEqual(want);
    expect(clock.pending()).toBe(0);
  });

  it('keeps one timer for ten thousand delayed keys, and adds each once at its time', async () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    for (let i = 0; i < 10_000; i++) queue.addAfter(`k${i}`, 1 + ((i * 7919) % 1000));
    // Re-delays, earlier and later, leave stale entries behind; they never fire.
    for (let i = 0; i < 10_000; i += 3) queue.addAfter(`k${i}`, 1 + (i % 500));
    expect(clock.pending()).toBe(1);
    const order = await readyOrder(queue, clock, 1001);
    expect(order).toHaveLength(10_000);
    expect(new Set(order).size).toBe(10_000);
    expect(clock.pending()).toBe(0);
  });
});
