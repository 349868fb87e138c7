import { describe, expect, it } from 'vitest';
import { FAULT_CASES, selectedCases } from './faults.ts';

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
