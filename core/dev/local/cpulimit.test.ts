import { describe, expect, it } from 'vitest';
import { cpuFiles, sharesToWeight } from './cpulimit.ts';

describe('the cpu cgroup files of a control plane', () => {
  it.each<[string, 1 | 2, { millicores: number; shares: number }, Array<[string, string]>]>([
    [
      'one core, the default weight, on cgroup v1',
      1,
      { millicores: 1000, shares: 1024 },
      [
        ['cpu.cfs_period_us', '100000'],
        ['cpu.cfs_quota_us', '100000'],
        ['cpu.shares', '1024'],
      ],
    ],
    [
      'a tenth of a core, the least weight, on cgroup v1',
      1,
      { millicores: 100, shares: 2 },
      [
        ['cpu.cfs_period_us', '100000'],
        ['cpu.cfs_quota_us', '10000'],
        ['cpu.shares', '2'],
      ],
    ],
    [
      'two and a half cores on cgroup v2',
      2,
      { millicores: 2500, shares: 1024 },
      [
        ['cpu.max', '250000 100000'],
        ['cpu.weight', '39'],
      ],
    ],
    [
      "the platform's maximum on cgroup v2",
      2,
      { millicores: 16000, shares: 16384 },
      [
        ['cpu.max', '1600000 100000'],
        ['cpu.weight', '625'],
      ],
    ],
  ])('%s', (_, version, cpu, files) => {
    expect(cpuFiles(version, cpu)).toEqual(files);
  });

  it.each([
    [2, 1],
    [1024, 39],
    [262144, 10000],
  ])('converts cpu.shares %i to cpu.weight %i as the kubelet does', (shares, weight) => {
    expect(sharesToWeight(shares)).toBe(weight);
  });
});
