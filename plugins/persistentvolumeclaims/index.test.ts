import { describe, expect, it } from 'vitest';
import { ANN, LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import type { Decision, Plugin } from '../../core/plugins/contract.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import { R } from '../../core/kube/resources.ts';
import { PUBLIC_LABEL } from '@virtualcluster-ts/plugin-sdk';
import plugin, { persistentvolumeclaimsPlugin, type PersistentVolumeClaim } from './index.ts';

const tenant = testTenant();
const sns = superNamespace(tenant.key, 'data');
const frozen = <T>(o: T): T => {
  if (o && typeof o === 'object') for (const v of Object.values(Object.freeze(o))) frozen(v);
  return o;
};

const tenantPvc = (
  over: Partial<PersistentVolumeClaim> = {},
  meta: Record<string, unknown> = {},
): PersistentVolumeClaim => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: {
    namespace: 'data',
    name: 'db',
    uid: 'tenant-uid',
    resourceVersion: '5',
    labels: { app: 'db' },
    finalizers: ['kubernetes.io/pvc-protection'],
    ...meta,
  },
  spec: {
    accessModes: ['ReadWriteOnce'],
    resources: { requests: { storage: '1Gi' } },
    storageClassName: 'fast',
    volumeMode: 'Filesystem',
  },
  status: { phase: 'Pending' },
  ...over,
});

/** sharedClasses is a super cluster sharing the StorageClass fast with tenants, and keeping platform-local to itself. */
const sharedClasses = new MapCache([
  [
    R.storageclasses,
    [
      {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: 'fast', labels: { [PUBLIC_LABEL]: 'true' } },
      },
      { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'platform-local' } },
    ],
  ],
]);

/** withDefaults is a super cluster whose StorageClasses are these, marked default, at these creation times. */
const withDefaults = (...classes: Array<{ name: string; shared: boolean; created?: string; beta?: boolean }>) =>
  new MapCache([
    [
      R.storageclasses,
      classes.map((c) => ({
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: {
          name: c.name,
          creationTimestamp: c.created ?? '2026-01-01T00:00:00Z',
          ...(c.shared && { labels: { [PUBLIC_LABEL]: 'true' } }),
          annotations: {
            [`storageclass.${c.beta ? 'beta.' : ''}kubernetes.io/is-default-class`]: 'true',
          },
        },
      })),
    ],
  ]);

const superServerMeta = {
  namespace: sns,
  name: 'db',
  uid: 'super-uid',
  resourceVersion: '88',
  creationTimestamp: '2025-11-02T00:00:00Z',
  finalizers: ['kubernetes.io/pvc-protection'],
};
const bindAnnotations = {
  'pv.kubernetes.io/bind-completed': 'yes',
  'pv.kubernetes.io/bound-by-controller': 'yes',
  'volume.kubernetes.io/storage-provisioner': 'csi.example.com',
  'volume.kubernetes.io/selected-node': 'node-1',
};
const boundStatus = {
  phase: 'Bound',
  accessModes: ['ReadWriteOnce'],
  capacity: { storage: '1Gi' },
  conditions: [{ type: 'FileSystemResizePending', status: 'True' }],
};

/** superPvc is the super claim as the apiserver returns it once bound: server fields, defaults, binding annotations. */
const superPvc = (phase: 'Bound' | 'Pending' = 'Bound'): PersistentVolumeClaim => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: {
    ...superServerMeta,
    labels: { app: 'old', [LABEL.managedBy]: MANAGER },
    annotations: { ...(phase === 'Bound' ? bindAnnotations : {}), [ANN.cluster]: tenant.key },
  },
  spec: {
    accessModes: ['ReadWriteOnce'],
    resources: { requests: { storage: '1Gi' } },
    storageClassName: 'fast',
    volumeMode: 'Filesystem',
    ...(phase === 'Bound' ? { volumeName: 'pvc-123' } : {}),
  },
  status: phase === 'Bound' ? boundStatus : { phase: 'Pending' },
});

interface DownCase {
  name: string;
  tenant: PersistentVolumeClaim;
  super?: PersistentVolumeClaim;
  opaque?: string[];
  want: Decision<PersistentVolumeClaim>;
}

const down: DownCase[] = [
  {
    name: 'create: spec fields copied; status, tenant binding annotations and finalizers not; dataSourceRef namespace mapped',
    tenant: tenantPvc(
      {
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
          storageClassName: 'fast',
          volumeMode: 'Block',
          dataSource: { kind: 'PersistentVolumeClaim', name: 'seed' },
          dataSourceRef: {
            apiGroup: 'snapshot.storage.k8s.io',
            kind: 'VolumeSnapshot',
            name: 'snap',
            namespace: 'backups',
          },
        },
        status: { phase: 'Bound' },
      },
      {
        annotations: {
          note: 'x',
          'pv.kubernetes.io/bind-completed': 'yes',
          'volume.kubernetes.io/selected-node': 'tenant-node',
        },
      },
    ),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { namespace: sns, name: 'db', labels: { app: 'db' }, annotations: { note: 'x' } },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
          storageClassName: 'fast',
          volumeMode: 'Block',
          dataSource: { kind: 'PersistentVolumeClaim', name: 'seed' },
          dataSourceRef: {
            apiGroup: 'snapshot.storage.k8s.io',
            kind: 'VolumeSnapshot',
            name: 'snap',
            namespace: superNamespace(tenant.key, 'backups'),
          },
        },
      },
    },
  },
  {
    name: 'update (bound): only resources.requests follows the tenant; super spec, binding annotations, finalizers, status stay',
    tenant: tenantPvc(
      {
        spec: {
          accessModes: ['ReadWriteMany'],
          resources: { requests: { storage: '2Gi' } },
          storageClassName: 'slow',
          volumeName: 'pvc-123',
        },
      },
      { annotations: { note: 'x', 'pv.kubernetes.io/bind-completed': 'no' } },
    ),
    super: superPvc('Bound'),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { ...superServerMeta, labels: { app: 'db' }, annotations: { note: 'x', ...bindAnnotations } },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '2Gi' } },
          storageClassName: 'fast',
          volumeMode: 'Filesystem',
          volumeName: 'pvc-123',
        },
        status: boundStatus,
      },
    },
  },
  {
    name: 'update (pending): resources.requests is immutable until bound, so the super spec is kept whole',
    tenant: tenantPvc({ spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '5Gi' } } } }),
    super: superPvc('Pending'),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { ...superServerMeta, labels: { app: 'db' } },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
          storageClassName: 'fast',
          volumeMode: 'Filesystem',
        },
        status: { phase: 'Pending' },
      },
    },
  },
  {
    name: 'reserved keys: a forged tenancy.x-k8s.io annotation never reaches the super',
    tenant: tenantPvc({}, { annotations: { [ANN.uid]: 'forged' }, labels: { [LABEL.managedBy]: 'me' } }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { namespace: sns, name: 'db' },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
          storageClassName: 'fast',
          volumeMode: 'Filesystem',
        },
      },
    },
  },
  {
    name: "opaque prefixes: the tenant's opaque keys are dropped",
    opaque: ['secret.example.com/'],
    tenant: tenantPvc({}, { annotations: { 'secret.example.com/k': 'v', keep: 'me' } }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { namespace: sns, name: 'db', labels: { app: 'db' }, annotations: { keep: 'me' } },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
          storageClassName: 'fast',
          volumeMode: 'Filesystem',
        },
      },
    },
  },
];

describe('persistentvolumeclaims toSuper', () => {
  it.each(down)('$name', (c) => {
    const ctx = testContext({ tenant: testTenant({ opaqueMetaPrefixes: c.opaque ?? [] }), superCache: sharedClasses });
    expect(persistentvolumeclaimsPlugin.toSuper(frozen(c.tenant), c.super && frozen(c.super), ctx)).toEqual(c.want);
  });
});

describe('persistentvolumeclaims toSuper: claims that would bind what the platform did not provision for the tenant', () => {
  it.each([
    ['an empty class (binds any classless volume)', { storageClassName: '' }, 'spec.storageClassName'],
    ['a selector (binds volumes by label)', { selector: { matchLabels: { team: 'b' } } }, 'spec.selector'],
    ['a class the super cluster does not share', { storageClassName: 'platform-local' }, 'spec.storageClassName'],
    ['a class name without a StorageClass (static volumes)', { storageClassName: 'manual' }, 'spec.storageClassName'],
    [
      'no class where the super has no default (binds any classless volume, as an empty class)',
      { storageClassName: undefined },
      'spec.storageClassName',
    ],
    [
      "no class where the super's default is a class it keeps to itself",
      { storageClassName: undefined },
      'spec.storageClassName',
      withDefaults({ name: 'platform-local', shared: false }),
    ],
    [
      'a volume named by the tenant (binds it, another tenant\u2019s included)',
      { volumeName: 'pv-b' },
      'spec.volumeName',
    ],
    [
      'a VolumeAttributesClass (the platform\u2019s)',
      { volumeAttributesClassName: 'gold' },
      'spec.volumeAttributesClassName',
    ],
    ['a field newer than the table', { futureBinding: 'x' }, 'spec.futureBinding: no rule exists for this field yet'],
    ['a resources field newer than the table', { resources: { claims: [{ name: 'x' }] } }, 'spec.resources.claims'],
    [
      'a dataSourceRef field newer than the table',
      { dataSourceRef: { kind: 'X', name: 'y', cluster: 'b' } },
      'spec.dataSourceRef.cluster',
    ],
    ['a shared class', { storageClassName: 'fast' }, undefined],
  ])('%s', (_n, over, field, cache = sharedClasses) => {
    const claim = tenantPvc();
    claim.spec = { ...claim.spec, ...over } as PersistentVolumeClaim['spec'];
    if ('storageClassName' in over && over.storageClassName === undefined) delete claim.spec!.storageClassName;
    const d = persistentvolumeclaimsPlugin.toSuper(claim, undefined, testContext({ superCache: cache }));
    if (!field) return expect(d.object).not.toBeNull();
    expect(d.object).toBeNull();
    expect(d.skip).toMatchObject({ reason: 'ClaimPolicyViolation', message: expect.stringContaining(field) });
    expect(d.effects).toMatchObject([{ type: 'event', side: 'tenant', reason: 'ClaimPolicyViolation' }]);
  });
});

describe('persistentvolumeclaims toSuper: a claim without a class', () => {
  it.each([
    ['gets the shared default, named in the super claim', withDefaults({ name: 'fast', shared: true }), 'fast'],
    ['gets a shared default marked by the beta key', withDefaults({ name: 'old', shared: true, beta: true }), 'old'],
    [
      'gets the shared default, not a newer default the platform keeps to itself',
      withDefaults(
        { name: 'fast', shared: true, created: '2026-01-01T00:00:00Z' },
        { name: 'platform-local', shared: false, created: '2026-06-01T00:00:00Z' },
      ),
      'fast',
    ],
    [
      'gets the newest of two shared defaults, as the super admission would',
      withDefaults(
        { name: 'fast', shared: true, created: '2026-01-01T00:00:00Z' },
        { name: 'faster', shared: true, created: '2026-06-01T00:00:00Z' },
      ),
      'faster',
    ],
  ])('%s', (_n, cache, want) => {
    const claim = tenantPvc();
    delete claim.spec!.storageClassName;
    const d = persistentvolumeclaimsPlugin.toSuper(frozen(claim), undefined, testContext({ superCache: cache }));
    expect(d.object?.spec?.storageClassName).toBe(want);
  });
});

interface UpCase {
  name: string;
  super: PersistentVolumeClaim;
  tenant: PersistentVolumeClaim;
  want: Decision<PersistentVolumeClaim>;
}

const pendingTenant = tenantPvc();
const withVolume = (p: PersistentVolumeClaim, volumeName: string, status = boundStatus): PersistentVolumeClaim => ({
  ...p,
  spec: { ...p.spec, volumeName },
  status,
});

const up: UpCase[] = [
  {
    name: 'bound in the super: status and spec.volumeName carried up, nothing else changes',
    super: superPvc('Bound'),
    tenant: pendingTenant,
    want: { object: withVolume(pendingTenant, 'pvc-123') },
  },
  {
    name: 'already bound in the tenant to the same volume: no change',
    super: superPvc('Bound'),
    tenant: withVolume(pendingTenant, 'pvc-123'),
    want: { object: withVolume(pendingTenant, 'pvc-123') },
  },
  {
    name: 'tenant names another volume: volumeName cannot change once set, kept, with a warning event; status still follows',
    super: superPvc('Bound'),
    tenant: withVolume(pendingTenant, 'pvc-tenant', { phase: 'Pending' } as typeof boundStatus),
    want: {
      object: withVolume(pendingTenant, 'pvc-tenant'),
      effects: [
        {
          type: 'event',
          side: 'tenant',
          regarding: {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            namespace: 'data',
            name: 'db',
            uid: 'tenant-uid',
          },
          eventType: 'Warning',
          reason: 'VolumeNameMismatch',
          message: expect.stringContaining('pvc-123') as unknown as string,
        },
      ],
    },
  },
  {
    name: 'pending in the super: status follows (stale conditions and capacity removed), no volumeName',
    super: superPvc('Pending'),
    tenant: {
      ...pendingTenant,
      status: { phase: 'Lost', capacity: { storage: '1Gi' }, conditions: [{ type: 'Resizing' }] },
    },
    want: { object: { ...pendingTenant, status: { phase: 'Pending' } } },
  },
];

describe('persistentvolumeclaims toTenant', () => {
  it.each(up)('$name', (c) => {
    expect(
      persistentvolumeclaimsPlugin.toTenant(
        frozen(structuredClone(c.super)),
        frozen(structuredClone(c.tenant)),
        testContext(),
      ),
    ).toEqual(c.want);
  });
});

describe('persistentvolumeclaims manifest', () => {
  it('declares a both, tenant-truth plugin for core/v1 persistentvolumeclaims and is the default export', () => {
    const asPlugin: Plugin = persistentvolumeclaimsPlugin;
    expect(asPlugin.manifest).toMatchObject({
      name: 'persistentvolumeclaims',
      version: '0.1.0',
      resource: {
        group: '',
        version: 'v1',
        resource: 'persistentvolumeclaims',
        kind: 'PersistentVolumeClaim',
        namespaced: true,
      },
      direction: 'both',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
    });
    expect(plugin).toBe(persistentvolumeclaimsPlugin);
  });
});
