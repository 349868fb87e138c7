import { describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import { describeDocument, describeText, eventRows, EVENTS_SHOWN, healthOf } from './describe.ts';

const vc = (status?: VirtualCluster['status']): VirtualCluster => ({
  metadata: { name: 'dev', namespace: 'team-a', uid: 'u1' },
  spec: { provisioner: { type: 'local' }, clusterVersionName: 'cv' },
  ...(status && { status }),
});

describe('healthOf (the HEALTH column)', () => {
  it.each([
    ['never probed', vc(), '-'],
    [
      'all healthy',
      vc({
        components: [
          { name: 'etcd', healthy: true },
          { name: 'kube-apiserver', healthy: true },
        ],
      }),
      'Healthy',
    ],
    [
      'the first failing component and its reason',
      vc({
        components: [
          { name: 'etcd', healthy: true },
          { name: 'kube-apiserver', healthy: false, reason: 'ComponentDown' },
          { name: 'syncer', healthy: false, reason: 'SyncerBacklog' },
        ],
      }),
      'kube-apiserver: ComponentDown',
    ],
  ])('%s', (_n, v, want) => expect(healthOf(v)).toBe(want));
});

describe('vc describe', () => {
  const status: VirtualCluster['status'] = {
    phase: 'Degraded',
    reason: 'ComponentDown',
    message: 'etcd: etcd exited (SIGKILL)',
    clusterNamespace: 'team-a-abc123-dev',
    components: [{ name: 'etcd', healthy: false, reason: 'ComponentDown', restarts: 2 }],
    conditions: [
      { type: 'Ready', status: 'False', reason: 'ComponentDown', lastTransitionTime: '2026-11-29T08:00:00Z' },
    ],
  };
  const items = [
    {
      type: 'Warning',
      reason: 'ComponentDown',
      message: 'etcd: down',
      lastTimestamp: '2026-11-29T08:00:01Z',
      involvedObject: { uid: 'u1' },
    },
    {
      type: 'Normal',
      reason: 'Running',
      message: 'serving',
      lastTimestamp: '2026-11-29T07:00:00Z',
      involvedObject: { uid: 'u1' },
    },
    {
      type: 'Warning',
      reason: 'Old',
      message: 'of a deleted namesake',
      lastTimestamp: '2026-11-29T08:00:02Z',
      involvedObject: { uid: 'u0' },
    },
  ];

  it('keeps the events of this object (by uid), oldest first, at most EVENTS_SHOWN', () => {
    expect(eventRows(vc(status), items).map((e) => e.reason)).toEqual(['Running', 'ComponentDown']);
    const many = Array.from({ length: EVENTS_SHOWN + 5 }, (_, i) => ({
      reason: `E${i}`,
      lastTimestamp: `2026-11-29T08:${String(i).padStart(2, '0')}:00Z`,
    }));
    const rows = eventRows(vc(status), many);
    expect(rows).toHaveLength(EVENTS_SHOWN);
    expect(rows.at(-1)!.reason).toBe(`E${EVENTS_SHOWN + 4}`);
  });

  it('shows components, conditions and events as data and as text', () => {
    const events = eventRows(vc(status), items);
    const doc = describeDocument(vc(status), events);
    expect(doc).toMatchObject({
      phase: 'Degraded',
      provisioner: 'local',
      clusterVersion: 'cv',
      rootNamespace: 'team-a-abc123-dev',
    });
    expect(doc.components[0]).toMatchObject({ name: 'etcd', restarts: 2 });
    const text = describeText(vc(status), events);
    expect(text).toMatch(/^Phase:\s+Degraded$/m);
    expect(text).toMatch(/^ {2}etcd\s+false\s+2\s+-\s+ComponentDown/m);
    expect(text).toMatch(/^ {2}Ready\s+False\s+ComponentDown/m);
    expect(text).toMatch(/^ {2}Warning\s+ComponentDown\s+2026-11-29T08:00:01Z\s+1\s+etcd: down/m);
  });

  it('says a tenant was not probed yet rather than showing an empty table', () => {
    expect(describeText(vc({ phase: 'Provisioning' }), [])).toMatch(/Components:\n {2}<not probed yet>/);
  });
});
