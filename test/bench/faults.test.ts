import { describe, expect, it } from 'vitest';
import { FAULT_CASES, peakPods, selectedCases } from './faults.ts';

describe('selectedCases', () => {
  it.each([
    { argv: ['faults'], want: [...FAULT_CASES] },
    { argv: ['faults', '--case', 'kill-manager'], want: ['baseline', 'kill-manager'] },
    { argv: ['faults', '--case=etcd,kill-manager'], want: ['baseline', 'kill-manager', 'etcd'] },
    { argv: ['--case', 'tenant-delete', '--case', 'git-server'], want: ['baseline', 'git-server', 'tenant-delete'] },
  ])('$argv', ({ argv, want }) => expect(selectedCases(argv)).toStrictEqual(want));

  it('names an unknown case and the known ones', () => {
    expect(() => selectedCases(['--case', 'kill-etcd'])).toThrow(
      /unknown case kill-etcd \(cases: baseline, kill-manager/,
    );
  });
});

describe('peakPods', () => {
  const sizes = { tenants: 4, pods: 150, killPods: 5000, deletePods: 1000, tenantDownSeconds: 60, paceMs: 500 };
  it.each([
    { cases: ['baseline'] as const, want: 150 },
    { cases: ['baseline', 'kill-manager'] as const, want: 5000 },
    { cases: ['baseline', 'tenant-delete'] as const, want: 1150 },
    // 3 other tenants, a Pod each every 500 ms for 60 s, twice (all up, then one down), and the downed one's 38
    { cases: ['baseline', 'tenant-apiserver', 'etcd'] as const, want: 758 },
  ])('$cases: $want', ({ cases, want }) => expect(peakPods(cases, sizes)).toBe(want));
});
