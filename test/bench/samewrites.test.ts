import { describe, expect, it } from 'vitest';
import { parseInflight, procCpuSeconds } from './procstat.ts';
import { apiCallsOf, quota } from './samewrites.ts';

describe('same-writes arm', () => {
  it('quota spreads an average number of writes per Pod over the Pods, exactly', () => {
    const total = (rate: number, pods: number) =>
      Array.from({ length: pods }, (_, i) => quota(rate, i)).reduce((a, b) => a + b, 0);
    expect(Array.from({ length: 4 }, (_, i) => quota(0.5, i))).toEqual([0, 1, 0, 1]);
    expect(Array.from({ length: 3 }, (_, i) => quota(2, i))).toEqual([2, 2, 2]);
    expect(total(1.2, 40)).toBe(48);
    expect(total(0.15, 40)).toBe(6);
    expect(total(0.05, 2000)).toBe(100);
    expect(total(0, 100)).toBe(0);
  });

  it('apiCallsOf counts every write once (a minted token is already two: its TokenRequest and its Secret)', () => {
    expect(apiCallsOf({ createSuper: 10, token: 20, bind: 10 })).toBe(40);
    expect(apiCallsOf({ createSuper: 10, token: 0.5, bind: 10 })).toBe(20.5);
    expect(apiCallsOf({})).toBe(0);
  });
});

describe('procstat', () => {
  it('parseInflight reads apiserver_current_inflight_requests per request kind', () => {
    const text = [
      '# HELP apiserver_current_inflight_requests [STABLE] Maximal number of currently used inflight request limit...',
      '# TYPE apiserver_current_inflight_requests gauge',
      'apiserver_current_inflight_requests{request_kind="mutating"} 7',
      'apiserver_current_inflight_requests{request_kind="readOnly"} 2',
      'apiserver_current_inqueue_requests{request_kind="mutating"} 99',
    ].join('\n');
    expect(parseInflight(text)).toEqual({ mutating: 7, readOnly: 2 });
  });

  it('procCpuSeconds reads this process from /proc, and 0 for none', () => {
    const end = Date.now() + 30;
    while (Date.now() < end) Math.sqrt(Math.random());
    expect(procCpuSeconds(process.pid)).toBeGreaterThan(0);
    expect(procCpuSeconds(undefined)).toBe(0);
  });
});
