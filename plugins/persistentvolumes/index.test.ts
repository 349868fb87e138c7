import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import type { Decision, RouteContext } from '../../core/plugins/contract.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import plugin, { persistentvolumesPlugin, type PersistentVolume } from './index.ts';

const tenant = testTenant();
const superNs = superNamespace(tenant.key, 'data');
const otherNs = superNamespace('team-b-4d5e6f-prod', 'data');

const tenantPvc = (uid = 'tenant-pvc-uid'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { namespace: 'data', name: 'db', uid },
});
const superPvc = (uid: string, writtenFor: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: {
    namespace: superNs,
    name: 'db',
    uid,
    labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: tenant.key },
    annotations: { [ANN.cluster]: tenant.key, [ANN.namespace]: 'data', [ANN.name]: 'db', [ANN.uid]: writtenFor },
  },
});

const superPv = (
  over: { claimNs?: string | null; phase?: string; source?: Record<string, unknown> } = {},
): PersistentVolume => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: {
    name: 'pvc-123',
    uid: 'super-pv-uid',
    resourceVersion: '900',
    labels: { zone: 'a', [LABEL.managedBy]: MANAGER },
    annotations: {
      'pv.kubernetes.io/provisioned-by': 'csi.example.com',
      'volume.kubernetes.io/provisioner-deletion-secret-name': 'ceph-admin',
      'volume.kubernetes.io/provisioner-deletion-secret-namespace': 'storage-system',
      [ANN.cluster]: tenant.key,
    },
    finalizers: ['kubernetes.io/pv-protection'],
  },
  spec: {
    capacity: { storage: '1Gi' },
    accessModes: ['ReadWriteOnce'],
    persistentVolumeReclaimPolicy: 'Delete',
    storageClassName: 'fast',
    volumeMode: 'Filesystem',
    mountOptions: ['nfsvers=4.1'],
    ...(over.source ?? {
      csi: {
        driver: 'csi.example.com',
        volumeHandle: 'vol-0backend1',
        fsType: 'ext4',
        volumeAttributes: { 'storage.example.com/pool': 'ssd-pool-7' },
        nodeStageSecretRef: { name: 'ceph-admin', namespace: 'storage-system' },
      },
    }),
    ...(over.claimNs === null
      ? {}
      : {
          claimRef: {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            namespace: over.claimNs ?? superNs,
            name: 'db',
            uid: 'super-pvc-uid',
            resourceVersion: '77',
          },
        }),
  },
  status: { phase: over.phase ?? 'Bound', message: 'bound by storage-system/ceph-admin' },
});

const tenantPv = (claimUid: string): PersistentVolume => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: {
    name: 'pvc-123',
    uid: 'tenant-pv-uid',
    resourceVersion: '12',
    labels: { [LABEL.managedBy]: MANAGER, stale: 'x' },
    finalizers: ['kubernetes.io/pv-protection'],
  },
  spec: {
    storageClassName: 'fast',
    claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'data', name: 'db', uid: claimUid },
  },
  status: { phase: 'Bound' },
});

const wantSpec = (claimUid: string, source: Record<string, unknown> = opaqueCsi) => ({
  capacity: { storage: '1Gi' },
  accessModes: ['ReadWriteOnce'],
  persistentVolumeReclaimPolicy: 'Delete',
  storageClassName: 'fast',
  volumeMode: 'Filesystem',
  ...source,
  claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'data', name: 'db', uid: claimUid },
});

/** opaqueCsi is the source a tenant PV shows for the CSI super volume: its driver, the PV name as handle. */
const opaqueCsi = { csi: { driver: 'csi.example.com', volumeHandle: 'pvc-123', fsType: 'ext4' } };

const skipped = (o: PersistentVolume | null): Decision<PersistentVolume> => ({
  object: o,
  skip: { reason: 'ClaimNotFound', message: 'claim data/db of volume pvc-123 is not in the tenant' },
});

interface Case {
  name: string;
  tenantState: KubeObject[];
  superState: KubeObject[];
  superObj: PersistentVolume | undefined;
  tenantObj?: PersistentVolume;
  want: Decision<PersistentVolume>;
}

const cases: Case[] = [
  {
    name: 'new bound volume: claimRef rewritten to the tenant namespace and the tenant PVC uid, no resourceVersion',
    tenantState: [tenantPvc()],
    superState: [superPvc('super-pvc-uid', 'tenant-pvc-uid')],
    superObj: superPv(),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: {
          name: 'pvc-123',
          labels: { zone: 'a' },
          annotations: { 'pv.kubernetes.io/provisioned-by': 'csi.example.com' },
        },
        spec: wantSpec('tenant-pvc-uid'),
        status: { phase: 'Bound' },
      },
    },
  },
  {
    name: 'existing tenant volume: built on it, managed-by kept, tenant-only label dropped, phase copied',
    tenantState: [tenantPvc()],
    superState: [superPvc('super-pvc-uid', 'tenant-pvc-uid')],
    superObj: superPv({ phase: 'Released' }),
    tenantObj: tenantPv('tenant-pvc-uid'),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: {
          name: 'pvc-123',
          uid: 'tenant-pv-uid',
          resourceVersion: '12',
          labels: { zone: 'a', [LABEL.managedBy]: MANAGER },
          annotations: { 'pv.kubernetes.io/provisioned-by': 'csi.example.com' },
          finalizers: ['kubernetes.io/pv-protection'],
        },
        spec: wantSpec('tenant-pvc-uid'),
        status: { phase: 'Released' },
      },
    },
  },
  {
    name: 'super volume gone: delete',
    tenantState: [tenantPvc()],
    superState: [],
    superObj: undefined,
    tenantObj: tenantPv('tenant-pvc-uid'),
    want: { object: null },
  },
  {
    name: 'super volume unbound (no claimRef): delete',
    tenantState: [tenantPvc()],
    superState: [],
    superObj: superPv({ claimNs: null, phase: 'Available' }),
    tenantObj: tenantPv('tenant-pvc-uid'),
    want: { object: null },
  },
  {
    name: 'super volume bound to another tenant: delete',
    tenantState: [tenantPvc()],
    superState: [],
    superObj: superPv({ claimNs: otherNs }),
    tenantObj: tenantPv('tenant-pvc-uid'),
    want: { object: null },
  },
  {
    name: 'claim not in the tenant and no tenant volume: skipped, nothing created',
    tenantState: [],
    superState: [superPvc('super-pvc-uid', 'tenant-pvc-uid')],
    superObj: superPv(),
    want: skipped(null),
  },
  {
    name: 'tenant PVC re-created under the same name (super claim written for the old uid), no tenant volume: skipped',
    tenantState: [tenantPvc('new-tenant-pvc-uid')],
    superState: [superPvc('super-pvc-uid', 'tenant-pvc-uid')],
    superObj: superPv(),
    want: skipped(null),
  },
  {
    name: 'super PVC re-created (claimRef uid stale): the tenant volume keeps the claim uid it showed',
    tenantState: [tenantPvc('new-tenant-pvc-uid')],
    superState: [superPvc('new-super-pvc-uid', 'new-tenant-pvc-uid')],
    superObj: superPv({ phase: 'Released' }),
    tenantObj: tenantPv('tenant-pvc-uid'),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: {
          name: 'pvc-123',
          uid: 'tenant-pv-uid',
          resourceVersion: '12',
          labels: { zone: 'a', [LABEL.managedBy]: MANAGER },
          annotations: { 'pv.kubernetes.io/provisioned-by': 'csi.example.com' },
          finalizers: ['kubernetes.io/pv-protection'],
        },
        spec: wantSpec('tenant-pvc-uid'),
        status: { phase: 'Released' },
      },
    },
  },
  ...(
    [
      ['nfs', { nfs: { server: 'filer-3.storage.internal', path: '/exports/tenant-a' } }],
      ['hostPath', { hostPath: { path: '/var/lib/storage/pv-a' } }],
      ['local', { local: { path: '/mnt/disks/ssd0' } }],
      ['iscsi', { iscsi: { targetPortal: '10.0.0.9:3260', iqn: 'iqn.2001-04.com.example:storage', lun: 0 } }],
    ] as const
  ).map(([type, source]): Case => ({
    name: `a ${type} super volume shows as the opaque CSI driver ${type.toLowerCase()}.volumes.tenancy.x-k8s.io`,
    tenantState: [tenantPvc()],
    superState: [superPvc('super-pvc-uid', 'tenant-pvc-uid')],
    superObj: superPv({ source }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: {
          name: 'pvc-123',
          labels: { zone: 'a' },
          annotations: { 'pv.kubernetes.io/provisioned-by': 'csi.example.com' },
        },
        spec: wantSpec('tenant-pvc-uid', {
          csi: { driver: `${type.toLowerCase()}.volumes.tenancy.x-k8s.io`, volumeHandle: 'pvc-123' },
        }),
        status: { phase: 'Bound' },
      },
    },
  })),
  {
    name: 'a tenant volume created with a source keeps it (the API makes it immutable); the rest follows the super',
    tenantState: [tenantPvc()],
    superState: [superPvc('super-pvc-uid', 'tenant-pvc-uid')],
    superObj: superPv(),
    tenantObj: {
      ...tenantPv('tenant-pvc-uid'),
      spec: { ...tenantPv('tenant-pvc-uid').spec, hostPath: { path: '/old' }, mountOptions: ['ro'] },
    },
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: {
          name: 'pvc-123',
          uid: 'tenant-pv-uid',
          resourceVersion: '12',
          labels: { zone: 'a', [LABEL.managedBy]: MANAGER },
          annotations: { 'pv.kubernetes.io/provisioned-by': 'csi.example.com' },
          finalizers: ['kubernetes.io/pv-protection'],
        },
        spec: wantSpec('tenant-pvc-uid', { hostPath: { path: '/old' } }),
        status: { phase: 'Bound' },
      },
    },
  },
];

describe('persistentvolumes toTenant: what a tenant volume never shows', () => {
  const ctx = testContext({
    tenant,
    tenantCache: new MapCache([[R.persistentvolumeclaims, [tenantPvc()]]]),
    superCache: new MapCache([[R.persistentvolumeclaims, [superPvc('super-pvc-uid', 'tenant-pvc-uid')]]]),
  });
  const json = JSON.stringify(persistentvolumesPlugin.toTenant(superPv(), undefined, ctx).object);
  it.each([
    ['the CSI volume handle', 'vol-0backend1'],
    ['CSI volume attributes', 'ssd-pool-7'],
    ['CSI secret references', 'ceph-admin'],
    ['the storage namespace', 'storage-system'],
    ['mount options', 'nfsvers'],
    ['the super claim namespace', superNs],
    ['the super claim uid', 'super-pvc-uid'],
  ])('%s', (_what, needle) => {
    expect(json).not.toContain(needle);
  });
});

describe('persistentvolumes toTenant', () => {
  it.each(cases)('$name', (c) => {
    const ctx = testContext({
      tenant,
      tenantCache: new MapCache([[R.persistentvolumeclaims, c.tenantState]]),
      superCache: new MapCache([
        [R.persistentvolumeclaims, c.superState],
        [R.persistentvolumes, c.superObj ? [c.superObj] : []],
      ]),
    });
    const before = structuredClone([c.superObj, c.tenantObj]);
    expect(persistentvolumesPlugin.toTenant(c.superObj, c.tenantObj, ctx)).toEqual(c.want);
    expect([c.superObj, c.tenantObj]).toEqual(before);
  });
});

const rctx = (owned: Record<string, { tenant: string; namespace: string }>): RouteContext => ({
  tenants: [tenant],
  superCache: new MapCache(),
  tenantsBy: () => [],
  tenantOfNamespace: (ns) => owned[ns],
});

describe('persistentvolumes route', () => {
  it.each([
    {
      name: 'claim in a tenant namespace -> that tenant, cluster-scoped key',
      pv: superPv(),
      want: [{ tenant: tenant.key, namespace: '', name: 'pvc-123' }],
    },
    { name: 'claim in a namespace no tenant owns -> nobody', pv: superPv({ claimNs: 'kube-system' }), want: [] },
    { name: 'unbound volume -> nobody', pv: superPv({ claimNs: null }), want: [] },
  ])('$name', ({ pv, want }) => {
    expect(persistentvolumesPlugin.route(pv, rctx({ [superNs]: { tenant: tenant.key, namespace: 'data' } }))).toEqual(
      want,
    );
  });
});

describe('persistentvolumes manifest', () => {
  it('is an up plugin of cluster-scoped PersistentVolumes and the default export', () => {
    expect(plugin).toBe(persistentvolumesPlugin);
    expect(plugin.manifest).toEqual({
      apiVersion: 'plugins.tenancy.x-k8s.io/v1',
      name: 'persistentvolumes',
      version: '0.1.0',
      description: expect.any(String),
      resource: {
        group: '',
        version: 'v1',
        resource: 'persistentvolumes',
        kind: 'PersistentVolume',
        namespaced: false,
      },
      direction: 'up',
      sourceOfTruth: 'super',
      processes: ['manager'],
    });
  });
});
