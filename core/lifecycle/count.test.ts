import { describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import { countVerdict, TOO_MANY_VIRTUAL_CLUSTERS } from './count.ts';

const vc = (ns: string, name: string, at: string, extra: Partial<VirtualCluster> = {}): VirtualCluster => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { namespace: ns, name, uid: `${ns}-${name}`, creationTimestamp: at },
  spec: {},
  ...extra,
});

const t1 = '2026-01-01T00:00:01Z';
const t2 = '2026-01-01T00:00:02Z';
const a = vc('team', 'a', t1);
const b = vc('team', 'b', t1);
const c = vc('team', 'c', t2);
const other = vc('else', 'z', '2025-01-01T00:00:00Z');

describe('countVerdict', () => {
  const cases: Array<[string, VirtualCluster[], VirtualCluster, number, boolean]> = [
    ['the oldest are within the count (a tie by time goes by name)', [a, b, c, other], a, 2, false],
    ['the second of a tie is within', [a, b, c, other], b, 2, false],
    ['one past the count is refused; other namespaces do not count', [a, b, c, other], c, 2, true],
    ['one being deleted makes room', [{ ...a, metadata: { ...a.metadata, deletionTimestamp: t2 } }, b, c], c, 2, false],
    [
      'one already serving keeps serving when the limit is lowered',
      [a, b, { ...c, status: { phase: 'Running' } }],
      { ...c, status: { phase: 'Running' } },
      1,
      false,
    ],
  ];
  it.each(cases)('%s', (_, all, which, max, refused) => {
    const o = countVerdict(which, all, max);
    expect(o.stop === true).toBe(refused);
  });

  it('says why in the status, a condition and one Warning event, and looks again later', () => {
    const o = countVerdict(c, [a, b, c], 2);
    const message =
      'VirtualCluster team/c: namespace team has 3 VirtualClusters and the manager provisions the 2 oldest ' +
      '(virtualClusters.maxPerNamespace); delete one to make room';
    expect(o).toMatchObject({
      release: true,
      status: { phase: 'Pending', reason: TOO_MANY_VIRTUAL_CLUSTERS, message },
      events: [{ type: 'Warning', reason: TOO_MANY_VIRTUAL_CLUSTERS, message }],
    });
    expect(o.requeueAfter).toBeGreaterThan(0);
    const again = countVerdict({ ...c, status: o.status }, [a, b, c], 2);
    expect(again.events).toEqual([]);
  });
});
