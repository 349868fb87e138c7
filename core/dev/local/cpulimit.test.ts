import { describe, expect, it } from 'vitest';
import { cgroupInFile, cpuFiles, sharesToWeight } from './cpulimit.ts';

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

describe("a process's cgroup in the cpu hierarchy", () => {
  it.each<[string, string, 1 | 2, string]>([
    ['the root on a hybrid host', '4:memory:/process_api/c3\n1:cpu:/\n0::/\n', 1, '/'],
    ['a v1 cgroup shared with cpuacct', '3:cpuacct,cpu:/vc-platform-12\n1:name=systemd:/x\n', 1, '/vc-platform-12'],
    ['not cpuset, which also starts with cpu', '5:cpuset:/other\n2:cpu,cpuacct:/user.slice\n', 1, '/user.slice'],
    ['the v2 line on a v2 host', '0::/system.slice/vc.service\n', 2, '/system.slice/vc.service'],
    ['no v2 line on a v1 host: the root', '1:cpu:/a\n', 2, '/'],
    ['a path with a colon', '0::/a:b\n', 2, '/a:b'],
  ])('%s', (_, text, version, want) => {
    expect(cgroupInFile(text, version)).toBe(want);
  });
});
