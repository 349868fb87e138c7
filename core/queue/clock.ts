import { performance } from 'node:perf_hooks';

declare const timerBrand: unique symbol;

/** TimerHandle identifies a pending timer; only the Clock that issued it can cancel it. */
export type TimerHandle = { readonly [timerBrand]: true };

/**
 * Clock is the time source of the queues and rate limiters. `now()` is in milliseconds on a monotonic scale: only
 * differences between readings are meaningful.
 */
export interface Clock {
  now(): number;
  /** setTimer runs `fn` once, `ms` milliseconds from now (a negative delay counts as zero). */
  setTimer(fn: () => void, ms: number): TimerHandle;
  /** clearTimer cancels a timer that has not fired yet; cancelling a fired or cancelled timer does nothing. */
  clearTimer(handle: TimerHandle): void;
}

/** MAX_TIMER_MS is the longest delay a Node timer takes (2^31-1 ms, 24.8 days); a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * nodeClock is a Clock on `performance.now()` and Node timers. A delay longer than `maxTimerMs` is waited out in
 * steps of at most that, so a timer due in a year (a certificate renewal) fires in a year, not at once; a timer never
 * fires before it is due; the handle cancels whichever step is pending.
 */
export function nodeClock(maxTimerMs = MAX_TIMER_MS): Clock {
  return {
    now: () => performance.now(),
    setTimer: (fn, ms) => {
      const due = performance.now() + Math.max(0, ms);
      const handle: { timer?: NodeJS.Timeout } = {};
      // Node's timers count from the event loop's cached millisecond clock and may fire up to a millisecond or two
      // before `due` by performance.now(): such a timer waits out the rest instead of firing early.
      const fire = () => (performance.now() < due ? arm() : fn());
      const arm = () => {
        const left = Math.max(0, due - performance.now());
        handle.timer = left > maxTimerMs ? setTimeout(arm, maxTimerMs) : setTimeout(fire, left);
      };
      arm();
      return handle as unknown as TimerHandle;
    },
    clearTimer: (handle) => clearTimeout((handle as unknown as { timer?: NodeJS.Timeout }).timer),
  };
}

/** realClock is the process clock: `performance.now()` and Node timers. */
export const realClock: Clock = nodeClock();

interface FakeTimer {
  readonly due: number;
  readonly seq: number;
  readonly fn: () => void;
}

/**
 * FakeClock is a Clock for tests. Time stands still until `step` moves it; timers fire synchronously inside `step`,
 * earliest due first (ties in the order they were set), with `now()` reading each timer's due time while it runs.
 */
export class FakeClock implements Clock {
  private time: number;
  private seq = 0;
  private readonly timers = new Map<number, FakeTimer>();

  constructor(start = 0) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimer(fn: () => void, ms: number): TimerHandle {
    const seq = ++this.seq;
    this.timers.set(seq, { due: this.time + Math.max(0, ms), seq, fn });
    return { id: seq } as unknown as TimerHandle;
  }

  clearTimer(handle: TimerHandle): void {
    this.timers.delete((handle as unknown as { id: number }).id);
  }

  /** pending is the number of timers that have been set and have neither fired nor been cleared. */
  pending(): number {
    return this.timers.size;
  }

  /**
   * step advances time by `ms` and fires every timer due by then, including timers set by the callbacks of earlier
   * ones. A callback that throws stops the step with time at that timer's due time.
   */
  step(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`FakeClock.step: ms must be >= 0, got ${ms}`);
    const target = this.time + ms;
    for (let next = this.nextDue(target); next; next = this.nextDue(target)) {
      this.timers.delete(next.seq);
      this.time = next.due;
      next.fn();
    }
    this.time = target;
  }

  private nextDue(limit: number): FakeTimer | undefined {
    let next: FakeTimer | undefined;
    for (const timer of this.timers.values()) {
      if (timer.due > limit) continue;
      if (!next || timer.due < next.due || (timer.due === next.due && timer.seq < next.seq)) next = timer;
    }
    return next;
  }
}
