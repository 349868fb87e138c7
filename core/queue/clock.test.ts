import { describe, it, expect } from 'vitest';
import { FakeClock, nodeClock, realClock } from './clock.ts';

describe('FakeClock', () => {
  it('fires due timers earliest first, with now() at each due time', () => {
    const clock = new FakeClock(1000);
    const fired: Array<[string, number]> = [];
    clock.setTimer(() => fired.push(['c', clock.now()]), 30);
    clock.setTimer(() => fired.push(['b', clock.now()]), 20);
    clock.setTimer(() => fired.push(['a', clock.now()]), 10);
    clock.step(25);
    expect(fired).toEqual([
      ['a', 1010],
      ['b', 1020],
    ]);
    expect(clock.now()).toBe(1025);
    clock.step(5);
    expect(fired.at(-1)).toEqual(['c', 1030]);
    expect(clock.pending()).toBe(0);
  });

  it('fires nothing before the due time', () => {
    const clock = new FakeClock();
    let fired = 0;
    clock.setTimer(() => fired++, 100);
    clock.step(99);
    expect(fired).toBe(0);
    clock.step(1);
    expect(fired).toBe(1);
  });

  it('fires timers due at the same time in the order they were set', () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    for (const n of [1, 2, 3]) clock.setTimer(() => fired.push(n), 5);
    clock.step(5);
    expect(fired).toEqual([1, 2, 3]);
  });

  it('fires timers set by callbacks when they fall inside the step', () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    clock.setTimer(() => {
      fired.push(clock.now());
      clock.setTimer(() => fired.push(clock.now()), 10);
      clock.setTimer(() => fired.push(clock.now()), 100);
    }, 10);
    clock.step(50);
    expect(fired).toEqual([10, 20]);
    expect(clock.pending()).toBe(1);
  });

  it('treats a negative delay as zero', () => {
    const clock = new FakeClock();
    let fired = 0;
    clock.setTimer(() => fired++, -5);
    clock.step(0);
    expect(fired).toBe(1);
  });

  it('does not fire a cleared timer', () => {
    const clock = new FakeClock();
    let fired = 0;
    const handle = clock.setTimer(() => fired++, 10);
    clock.clearTimer(handle);
    clock.clearTimer(handle);
    clock.step(100);
    expect(fired).toBe(0);
  });

  it('rejects a negative step', () => {
    expect(() => new FakeClock().step(-1)).toThrow(RangeError);
  });
});

describe('realClock', () => {
  it('runs timers and cancels cleared ones', async () => {
    const fired: string[] = [];
    const cleared = realClock.setTimer(() => fired.push('cleared'), 0);
    realClock.clearTimer(cleared);
    await new Promise<void>((resolve) => realClock.setTimer(resolve, 0));
    expect(fired).toEqual([]);
    expect(realClock.now()).toBeGreaterThan(0);
  });
});

describe('nodeClock', () => {
  // A clock whose timers take at most 5 ms stands for Node's 2^31-1 ms limit: a longer delay is waited out in steps.
  const clock = nodeClock(5);

  it('fires a timer longer than the limit once, not before it is due', async () => {
    const due = clock.now() + 40;
    const firedAt: number[] = [];
    await new Promise<void>((resolve) =>
      clock.setTimer(() => {
        firedAt.push(clock.now());
        resolve();
      }, 40),
    );
    await new Promise<void>((resolve) => clock.setTimer(resolve, 20));
    expect(firedAt).toHaveLength(1);
    expect(firedAt[0]).toBeGreaterThanOrEqual(due);
  });

  it('cancels a long timer in any of its steps', async () => {
    const fired: string[] = [];
    const early = clock.setTimer(() => fired.push('early'), 30);
    clock.clearTimer(early);
    // due after 400 steps: cleared after a few of them, however late a loaded host runs the 12 ms wait
    const late = clock.setTimer(() => fired.push('late'), 2000);
    await new Promise<void>((resolve) => clock.setTimer(resolve, 12));
    clock.clearTimer(late);
    await new Promise<void>((resolve) => clock.setTimer(resolve, 40));
    expect(fired).toEqual([]);
  });
});
