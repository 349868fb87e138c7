import { describe, expect, it } from 'vitest';
import { accountWrites, beyondPerPod, formatAccount, writesPerPodTotal } from './accounting.ts';

describe('accountWrites', () => {
  const key = (side: string, op: string, plugin: string, verb: string, resource: string) =>
    [side, op, plugin, verb, resource].join('|');
  const create = key('super', 'createSuper', 'pods', 'create', 'pods');
  const bind = key('tenant', 'bind', 'pods', 'create', 'pods/binding');
  const odd = key('tenant', 'patchTenant', 'pods', 'patch', 'pods');

  it.each([
    {
      name: 'growth divided by the Pods, the most frequent first, each explained',
      before: { [create]: 10, [bind]: 10 },
      after: { [create]: 110, [bind]: 60 },
      pods: 100,
      want: [
        { op: 'createSuper', side: 'super', perPod: 1, explained: true },
        { op: 'bind', side: 'tenant', perPod: 0.5, explained: true },
      ],
    },
    {
      name: 'a kind of write the table does not know is shown as unexplained',
      before: {},
      after: { [odd]: 3 },
      pods: 2,
      want: [{ op: 'patchTenant', side: 'tenant', perPod: 1.5, explained: false }],
    },
    {
      name: 'series that did not grow are left out',
      before: { [create]: 5 },
      after: { [create]: 5 },
      pods: 1,
      want: [],
    },
  ])('$name', ({ before, after, pods, want }) => {
    const rows = accountWrites(before, after, pods);
    expect(rows.map((r) => ({ op: r.op, side: r.side, perPod: r.perPod, explained: r.why !== 'unexplained' }))).toEqual(
      want,
    );
  });

  it('totals the rows and prints one line each plus the total', () => {
    const rows = accountWrites({}, { [create]: 4, [bind]: 2 }, 4);
    expect(writesPerPodTotal(rows)).toBe(1.5);
    const text = formatAccount(rows);
    expect(text.split('\n')).toHaveLength(3);
    expect(text).toContain('1.500  syncer writes per Pod in all');
  });
});

describe('beyondPerPod', () => {
  const row = (op: string, plugin: string, resource: string, perPod: number) => ({
    side: 'tenant',
    op,
    plugin,
    verb: 'create',
    resource,
    perPod,
    why: '',
  });
  it.each([
    {
      name: 'exactly the three per-Pod writes: nothing beyond',
      rows: [
        row('createSuper', 'pods', 'pods', 1),
        row('bind', 'pods', 'pods/binding', 1),
        row('patchTenantStatus', 'pods', 'pods/status', 1),
      ],
      want: { kinds: [], perPod: 0 },
    },
    {
      name: 'a second status for some Pods is beyond, by its excess',
      rows: [row('patchTenantStatus', 'pods', 'pods/status', 1.15), row('bind', 'pods', 'pods/binding', 1)],
      want: { kinds: ['patchTenantStatus'], perPod: 0.15 },
    },
    {
      name: 'per-node and per-ServiceAccount writes are beyond',
      rows: [
        row('patchTenant', 'nodes', 'nodes', 0.04),
        row('token', 'pods', 'serviceaccounts/token', 0.02),
        row('bind', 'pods', 'pods/binding', 1),
      ],
      want: { kinds: ['patchTenant', 'token'], perPod: 0.06 },
    },
  ])('$name', ({ rows, want }) => {
    const b = beyondPerPod(rows);
    expect(b.rows.map((r) => r.op)).toEqual(want.kinds);
    expect(b.perPod).toBeCloseTo(want.perPod);
  });
});
