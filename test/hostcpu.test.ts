import { describe, expect, it } from 'vitest';
import { busyLine, busyShare, cpuTimes, type CpuTimes } from './hostcpu.ts';

const core = (user: number, sys: number, idle: number, nice = 0, irq = 0) => ({
  times: { user, nice, sys, idle, irq },
});

describe('host CPU busy share', () => {
  it('adds up every core: user, nice, sys and irq are busy, idle is not', () => {
    expect(cpuTimes([core(100, 50, 850, 10, 5), core(300, 100, 600)])).toEqual({
      cores: 2,
      busyMs: 565,
      totalMs: 2015,
    });
  });

  const at = (busyMs: number, totalMs: number, cores = 2): CpuTimes => ({ cores, busyMs, totalMs });
  const cases: Array<{ name: string; before: CpuTimes; after: CpuTimes; want: number | undefined; line?: string }> = [
    {
      name: 'half of two cores busy',
      before: at(1000, 4000),
      after: at(2000, 6000),
      want: 0.5,
      line: '   50 %  integration, realnode (of 2 cores)',
    },
    {
      name: 'all busy',
      before: at(0, 0),
      after: at(8000, 8000),
      want: 1,
      line: '  100 %  integration, realnode (of 2 cores)',
    },
    {
      name: 'all idle',
      before: at(500, 1000),
      after: at(500, 3000),
      want: 0,
      line: '    0 %  integration, realnode (of 2 cores)',
    },
    { name: 'no time passed', before: at(500, 1000), after: at(500, 1000), want: undefined },
    { name: 'the cores changed', before: at(500, 1000, 2), after: at(900, 2000, 4), want: undefined },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(busyShare(c.before, c.after)).toBe(c.want);
      expect(busyLine('integration, realnode', c.before, c.after)).toBe(c.line);
    });
});
