import { describe, expect, it } from 'vitest';
import { LABEL, MANAGER } from '../../core/names/names.ts';
import type { Decision, RouteContext } from '../../core/plugins/contract.ts';
import { MapCache, testTenant } from '../../core/plugins/testing.ts';
import plugin, { storageclassesPlugin, type StorageClass } from './index.ts';

const tenants = [testTenant(), testTenant({ key: 'team-b-4d5e6f-prod', vcName: 'prod', vcNamespace: 'team-b' })];

const superClass = (labels: Record<string, string>, over: Partial<StorageClass> = {}): StorageClass => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: {
    name: 'fast',
    uid: 'super-sc-uid',
    resourceVersion: '5',
    labels,
    annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
  },
  provisioner: 'csi.example.com',
  parameters: { type: 'ssd' },
  reclaimPolicy: 'Retain',
  volumeBindingMode: 'WaitForFirstConsumer',
  allowVolumeExpansion: true,
  mountOptions: ['noatime'],
  allowedTopologies: [{ matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['a'] }] }],
  ...over,
});

const publicClass = (over: Partial<StorageClass> = {}) => superClass({ [LABEL.public]: 'true', tier: 'gold' }, over);

const tenantClass: StorageClass = {
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name: 'fast', uid: 'tenant-sc-uid', resourceVersion: '3', labels: { [LABEL.managedBy]: MANAGER } },
  provisioner: 'csi.example.com',
  parameters: { type: 'hdd' },
  reclaimPolicy: 'Delete',
  volumeBindingMode: 'Immediate',
  allowVolumeExpansion: false,
  mountOptions: ['sync'],
};

const copied = {
  provisioner: 'csi.example.com',
  parameters: { type: 'ssd' },
  reclaimPolicy: 'Retain',
  volumeBindingMode: 'WaitForFirstConsumer',
  allowVolumeExpansion: true,
  mountOptions: ['noatime'],
  allowedTopologies: [{ matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['a'] }] }],
};

const cases: Array<{
  name: string;
  superObj: StorageClass | undefined;
  tenantObj?: StorageClass;
  want: Decision<StorageClass>;
}> = [
  {
    name: 'public class, new in the tenant: every field copied, public label stripped',
    superObj: publicClass(),
    want: {
      object: {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: {
          name: 'fast',
          labels: { tier: 'gold' },
          annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
        },
        ...copied,
      },
    },
  },
  {
    name: 'public class, existing in the tenant: built on it, every field brought back to the super value',
    superObj: publicClass(),
    tenantObj: tenantClass,
    want: {
      object: {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: {
          name: 'fast',
          uid: 'tenant-sc-uid',
          resourceVersion: '3',
          labels: { tier: 'gold', [LABEL.managedBy]: MANAGER },
          annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
        },
        ...copied,
      },
    },
  },
  {
    name: 'field the super class no longer has is removed from the tenant copy',
    superObj: publicClass({ mountOptions: undefined, allowedTopologies: undefined }),
    tenantObj: { ...tenantClass, allowedTopologies: [{}] },
    want: {
      object: {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: {
          name: 'fast',
          uid: 'tenant-sc-uid',
          resourceVersion: '3',
          labels: { tier: 'gold', [LABEL.managedBy]: MANAGER },
          annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
        },
        provisioner: 'csi.example.com',
        parameters: { type: 'ssd' },
        reclaimPolicy: 'Retain',
        volumeBindingMode: 'WaitForFirstConsumer',
        allowVolumeExpansion: true,
      },
    },
  },
  {
    name: 'class without the public label: not copied',
    superObj: superClass({ tier: 'gold' }),
    want: { object: null },
  },
  {
    name: 'class that lost the public label: deleted',
    superObj: superClass({ tier: 'gold' }),
    tenantObj: tenantClass,
    want: { object: null },
  },
  {
    name: 'public label not "true": deleted',
    superObj: superClass({ [LABEL.public]: 'false' }),
    tenantObj: tenantClass,
    want: { object: null },
  },
  { name: 'super class gone: deleted', superObj: undefined, tenantObj: tenantClass, want: { object: null } },
];

describe('storageclasses toTenant', () => {
  it.each(cases)('$name', (c) => {
    const before = structuredClone([c.superObj, c.tenantObj]);
    expect(storageclassesPlugin.toTenant(c.superObj, c.tenantObj)).toEqual(c.want);
    expect([c.superObj, c.tenantObj]).toEqual(before);
  });
});

const rctx: RouteContext = {
  tenants,
  superCache: new MapCache(),
  tenantsBy: () => [],
  tenantOfNamespace: () => undefined,
};

describe('storageclasses route', () => {
  it.each([
    {
      name: 'public class -> every tenant',
      sc: publicClass(),
      want: [
        { tenant: 'team-a-1a2b3c-dev', namespace: '', name: 'fast' },
        { tenant: 'team-b-4d5e6f-prod', namespace: '', name: 'fast' },
      ],
    },
    { name: 'class without the public label -> nobody', sc: superClass({ tier: 'gold' }), want: [] },
    { name: 'public label "false" -> nobody', sc: superClass({ [LABEL.public]: 'false' }), want: [] },
  ])('$name', ({ sc, want }) => {
    expect(storageclassesPlugin.route(sc, rctx)).toEqual(want);
  });
});

describe('storageclasses manifest', () => {
  it('is an up plugin of cluster-scoped StorageClasses and the default export', () => {
    expect(plugin).toBe(storageclassesPlugin);
    expect(plugin.manifest).toEqual({
      apiVersion: 'plugins.tenancy.x-k8s.io/v1',
      name: 'storageclasses',
      version: '0.1.0',
      description: expect.any(String),
      resource: {
        group: 'storage.k8s.io',
        version: 'v1',
        resource: 'storageclasses',
        kind: 'StorageClass',
        namespaced: false,
      },
      direction: 'up',
      sourceOfTruth: 'super',
      processes: ['manager'],
    });
  });
});
