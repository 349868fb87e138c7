import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ByteRate } from '../api/tenantpolicy.ts';
import { BytePacer, checkByteRate, NOTICE_MS } from './bytepacer.ts';

const KiB = 1024;

function newPacer() {
  const woken: string[] = [];
  const p = new BytePacer({ wake: (k) => woken.push(k) });
  return { p, woken };
}

describe('BytePacer', () => {
  beforeEach(() => vi.useFakeTimers({ now: 0 }));
  afterEach(() => vi.useRealTimers());

  it.each([
    // writes of one size at once: the burst lets some through, the rest wait
    { rate: { perSecond: 100 * KiB, burst: 400 * KiB }, sizes: [100, 100, 100, 100, 100], sent: 4 },
    { rate: { perSecond: 100 * KiB, burst: 400 * KiB }, sizes: [300, 300], sent: 1 },
    // an object larger than the burst goes on a full bucket, and the next waits
    { rate: { perSecond: 100 * KiB, burst: 400 * KiB }, sizes: [900, 1], sent: 1 },
    // nothing to write always goes
    { rate: { perSecond: 1 * KiB, burst: 1 * KiB }, sizes: [0, 0, 0], sent: 3 },
    // a rate of 0 per second (the syncer's own, turned off) paces nothing
    { rate: { perSecond: 0, burst: 1 }, sizes: [900, 900, 900], sent: 3 },
  ])('$rate: writes of $sizes KiB at once send $sent and park the rest', ({ rate, sizes, sent }) => {
    const { p } = newPacer();
    const got = sizes.map((kib, i) => p.take('a', `a/configmaps/default/c${i}`, kib * KiB, rate));
    expect(got.filter(Boolean).length).toBe(sent);
    expect(p.parkedOf('a')).toBe(sizes.length - sent);
  });

  it.each([
    // after the burst, one 100 KiB write per second at 100 KiB/s
    { rate: { perSecond: 100 * KiB, burst: 100 * KiB }, kib: 100, afterMs: 1000, woken: 1 },
    { rate: { perSecond: 100 * KiB, burst: 100 * KiB }, kib: 100, afterMs: 999, woken: 0 },
    // 50 KiB writes: two per second
    { rate: { perSecond: 100 * KiB, burst: 100 * KiB }, kib: 50, afterMs: 500, woken: 1 },
    // a 900 KiB object over a 400 KiB burst left the bucket at -500 KiB: the next 100 KiB waits 6 s
    { rate: { perSecond: 100 * KiB, burst: 400 * KiB }, kib: 900, afterMs: 5999, woken: 0 },
    { rate: { perSecond: 100 * KiB, burst: 400 * KiB }, kib: 900, afterMs: 6000, woken: 1, next: 100 },
  ])(
    '$rate: after a $kib KiB write that spent the bucket, a parked write is woken after $afterMs ms: $woken',
    ({ rate, kib, afterMs, woken, next }) => {
      const { p, woken: w } = newPacer();
      // spend the bucket down to zero (or below, for an object over the burst)
      expect(p.take('a', 'first', rate.burst, rate)).toBe(true);
      if (kib > rate.burst / KiB) {
        vi.advanceTimersByTime((rate.burst / rate.perSecond) * 1000);
        expect(p.take('a', 'big', kib * KiB, rate)).toBe(true);
      }
      expect(p.take('a', 'waits', (next ?? kib) * KiB, rate)).toBe(false);
      vi.advanceTimersByTime(afterMs);
      expect(w.length).toBe(woken);
    },
  );

  it('wakes parked keys in the order they came, as many as the refilled bytes cover', () => {
    const { p, woken } = newPacer();
    const rate: ByteRate = { perSecond: 100 * KiB, burst: 200 * KiB };
    for (let i = 0; i < 6; i++) p.take('a', `k${i}`, 100 * KiB, rate);
    expect(p.parkedOf('a')).toBe(4);
    vi.advanceTimersByTime(1000);
    expect(woken).toEqual(['k2']);
    // the woken key spends its bytes when it runs
    expect(p.take('a', 'k2', 100 * KiB, rate)).toBe(true);
    vi.advanceTimersByTime(1000);
    expect(p.take('a', 'k3', 100 * KiB, rate)).toBe(true);
    vi.advanceTimersByTime(2000);
    expect(woken).toEqual(['k2', 'k3', 'k4', 'k5']);
    expect(p.parkedOf('a')).toBe(0);
  });

  it('paces each tenant on its own: a tenant over its rate does not hold back another', () => {
    const { p } = newPacer();
    const rate: ByteRate = { perSecond: 100 * KiB, burst: 100 * KiB };
    expect(p.take('flood', 'f0', 900 * KiB, rate)).toBe(true);
    expect(p.take('flood', 'f1', 900 * KiB, rate)).toBe(false);
    expect(p.take('quiet', 'q0', 4 * KiB, rate)).toBe(true);
    expect(p.take('quiet', 'q1', 4 * KiB, rate)).toBe(true);
    expect(p.held()).toEqual([['flood', 1]]);
  });

  it('parkIfShort parks without spending, only when the bucket does not hold the bytes', () => {
    const { p, woken } = newPacer();
    const rate: ByteRate = { perSecond: 100 * KiB, burst: 100 * KiB };
    expect(p.parkIfShort('a', 'k0', 100 * KiB, rate)).toBe(false);
    expect(p.take('a', 'k0', 100 * KiB, rate)).toBe(true);
    expect(p.parkIfShort('a', 'k1', 10 * KiB, rate)).toBe(true);
    vi.advanceTimersByTime(100);
    expect(woken).toEqual(['k1']);
  });

  it('giveBack returns bytes spent on writes that were not sent, up to the burst', () => {
    const { p } = newPacer();
    const rate: ByteRate = { perSecond: 1 * KiB, burst: 100 * KiB };
    expect(p.take('a', 'k0', 100 * KiB, rate)).toBe(true);
    p.giveBack('a', 500 * KiB);
    expect(p.take('a', 'k1', 100 * KiB, rate)).toBe(true);
    expect(p.take('a', 'k2', 1 * KiB, rate)).toBe(false);
  });

  it('tells a held tenant at most once every NOTICE_MS', () => {
    const { p } = newPacer();
    const rate: ByteRate = { perSecond: 1 * KiB, burst: 1 * KiB };
    expect(p.noticeDue('a')).toBe(false);
    p.take('a', 'k0', 1 * KiB, rate);
    p.take('a', 'k1', 1 * KiB, rate);
    expect(p.noticeDue('a')).toBe(true);
    expect(p.noticeDue('a')).toBe(false);
    vi.advanceTimersByTime(NOTICE_MS - 1000);
    p.take('a', 'k2', 1 * KiB, rate);
    expect(p.noticeDue('a')).toBe(false);
    vi.advanceTimersByTime(1000);
    p.take('a', 'k3', 1 * KiB, rate);
    p.take('a', 'k4', 1 * KiB, rate);
    expect(p.noticeDue('a')).toBe(true);
  });

  it('forget and clear drop parked keys and their timers', () => {
    const { p, woken } = newPacer();
    const rate: ByteRate = { perSecond: 10 * KiB, burst: 1 * KiB };
    for (const t of ['a', 'b']) {
      p.take(t, `${t}0`, 1 * KiB, rate);
      p.take(t, `${t}1`, 1 * KiB, rate);
    }
    p.forget('a');
    expect(p.parkedOf('a')).toBe(0);
    p.clear();
    vi.advanceTimersByTime(10_000);
    expect(woken).toEqual([]);
    expect(p.held()).toEqual([]);
  });
});

describe('checkByteRate', () => {
  it.each([
    [{ perSecond: 1024, burst: 1024 }, undefined],
    [{ perSecond: 0, burst: 1 }, undefined],
    [{ perSecond: -1, burst: 1024 }, 'perSecond must be a number of bytes >= 0, got -1'],
    [{ perSecond: Number.NaN, burst: 1024 }, 'perSecond must be a number of bytes >= 0, got NaN'],
    [{ perSecond: 1024, burst: 0 }, 'burst must be a whole number of bytes >= 1, got 0'],
    [{ perSecond: 1024, burst: 1.5 }, 'burst must be a whole number of bytes >= 1, got 1.5'],
  ])('%o: %s', (rate, error) => {
    if (error) expect(() => checkByteRate(rate, 'syncer superByteRate')).toThrow(`syncer superByteRate: ${error}`);
    else expect(checkByteRate(rate, 'x')).toEqual(rate);
  });
});
