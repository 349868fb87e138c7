import { describe, expect, it } from 'vitest';
import { type QuietGate, quietGateOf, quietVerdict } from './quiet.ts';

const gate: QuietGate = { maxBusyPercent: 50, waitSeconds: 30, windowSeconds: 10 };

describe('quietVerdict', () => {
  it.each<[string, number[], ReturnType<typeof quietVerdict>]>([
    ['the first window is quiet', [20], 'start'],
    ['exactly at the bound counts as quiet', [50], 'start'],
    ['busy, time for another window', [180], 'wait'],
    ['busy twice, one more window fits in 30 s', [180, 120], 'wait'],
    ['quiet after two busy windows', [180, 120, 40], 'start'],
    ['busy for the whole wait', [180, 120, 90], 'give up'],
  ])('%s', (_, busy, want) => {
    expect(quietVerdict(busy, gate)).toBe(want);
  });
});

describe('quietGateOf', () => {
  it.each<[string, Record<string, string>, QuietGate | undefined]>([
    ['no variable: no gate', {}, undefined],
    ['a wait of 0: no gate', { BENCH_QUIET_WAIT_S: '0' }, undefined],
    [
      'a wait with the default bound',
      { BENCH_QUIET_WAIT_S: '600' },
      { maxBusyPercent: 50, waitSeconds: 600, windowSeconds: 10 },
    ],
    [
      'a wait and a bound',
      { BENCH_QUIET_WAIT_S: '60', BENCH_QUIET_MAX: '30' },
      { maxBusyPercent: 30, waitSeconds: 60, windowSeconds: 10 },
    ],
  ])('%s', (_, env, want) => {
    expect(quietGateOf(env)).toEqual(want);
  });
  it.each([
    { BENCH_QUIET_WAIT_S: 'soon' },
    { BENCH_QUIET_WAIT_S: '-5' },
    { BENCH_QUIET_WAIT_S: '60', BENCH_QUIET_MAX: '0' },
  ])('refuses %o', (env) => {
    expect(() => quietGateOf(env)).toThrow(/BENCH_QUIET/);
  });
});
