import { describe, expect, it } from 'vitest';
import { runTable, testTenant } from '@virtualcluster-ts/plugin-sdk/testing';
import plugin, { FIELD_REFUSED, NO_SOURCE, PRE_PROVISIONED, type VolumeSnapshot } from './index.ts';

const tenant = testTenant();
const sns = `${tenant.key}-data`;

const snap = (namespace: string, spec: VolumeSnapshot['spec'], status?: VolumeSnapshot['status']): VolumeSnapshot => ({
  apiVersion: 'snapshot.storage.k8s.io/v1',
  kind: 'VolumeSnapshot',
  metadata: { namespace, name: 's1', uid: 'u1' },
  spec,
  ...(status && { status }),
});

describe('volumesnapshots', () => {
  it('copies a snapshot of a claim down, and its progress (without super object names) up', () => {
    const spec = { source: { persistentVolumeClaimName: 'db' }, volumeSnapshotClassName: 'csi-snap' };
    const superStatus = {
      boundVolumeSnapshotContentName: 'snapcontent-123',
      creationTime: '2026-01-01T00:00:00Z',
      readyToUse: true,
      restoreSize: '1Gi',
      volumeGroupSnapshotName: 'g',
    };
    const got = runTable(plugin, {
      create: { tenantObj: snap('data', spec) },
      defaultClass: { tenantObj: snap('data', { source: { persistentVolumeClaimName: 'db' } }) },
      status: { tenantObj: snap('data', spec), superObj: snap(sns, spec, superStatus) },
    });
    expect(got.create!.down?.object).toEqual({
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshot',
      metadata: { namespace: sns, name: 's1' },
      spec,
    });
    expect(got.defaultClass!.down?.object?.spec).toEqual({ source: { persistentVolumeClaimName: 'db' } });
    expect(got.status!.up?.object?.status).toEqual({
      creationTime: '2026-01-01T00:00:00Z',
      readyToUse: true,
      restoreSize: '1Gi',
    });
  });

  it.each([
    ['a pre-provisioned content', { source: { volumeSnapshotContentName: 'snapcontent-of-someone' } }, PRE_PROVISIONED],
    [
      'a content next to a claim',
      { source: { persistentVolumeClaimName: 'db', volumeSnapshotContentName: 'c' } },
      PRE_PROVISIONED,
    ],
    ['no source', { source: {} }, NO_SOURCE],
    [
      'a spec field newer than the plugin knows',
      { source: { persistentVolumeClaimName: 'db' }, cluster: 'b' },
      FIELD_REFUSED,
    ],
    [
      'a source field newer than the plugin knows',
      { source: { persistentVolumeClaimName: 'db', volumeHandle: 'snap-of-b' } },
      FIELD_REFUSED,
    ],
  ])('refuses %s, with a Warning on the tenant snapshot', (_, spec, reason) => {
    const d = runTable(plugin, { r: { tenantObj: snap('data', spec) } }).r!.down!;
    expect(d.object).toBeNull();
    expect(d.skip?.reason).toBe(reason);
    expect(d.effects).toEqual([expect.objectContaining({ type: 'event', eventType: 'Warning', reason })]);
  });
});
