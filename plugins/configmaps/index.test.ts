import { describe, expect, it } from 'vitest';
import { ANN, LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import type { Decision, Plugin } from '../../core/plugins/contract.ts';
import { testContext, testTenant } from '../../core/plugins/testing.ts';
import plugin, { configmapsPlugin, superConfigMapName, type ConfigMap } from './index.ts';

const tenant = testTenant();
const sns = superNamespace(tenant.key, 'app');
const frozen = <T>(o: T): T => {
  if (o && typeof o === 'object') for (const v of Object.values(Object.freeze(o))) frozen(v);
  return o;
};

const tenantCm = (name: string, over: Partial<ConfigMap> = {}, meta: Record<string, unknown> = {}): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    namespace: 'app',
    name,
    uid: 'tenant-uid',
    resourceVersion: '7',
    creationTimestamp: '2025-11-01T00:00:00Z',
    labels: { app: 'web' },
    annotations: { note: 'hello' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'dep-uid' }],
    finalizers: ['example.com/tenant-finalizer'],
    ...meta,
  },
  data: { 'app.conf': 'port=80' },
  ...over,
});

/** superCm is a super ConfigMap as the apiserver returns it: server fields, ownership stamped, a super finalizer. */
const superCm = (name: string, over: Partial<ConfigMap> = {}): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    namespace: sns,
    name,
    uid: 'super-uid',
    resourceVersion: '99',
    creationTimestamp: '2025-11-02T00:00:00Z',
    managedFields: [{ manager: MANAGER, operation: 'Update' }],
    finalizers: ['example.com/super-finalizer'],
    labels: { app: 'old', [LABEL.managedBy]: MANAGER, [LABEL.cluster]: tenant.key },
    annotations: { stale: 'yes', [ANN.cluster]: tenant.key, [ANN.uid]: 'tenant-uid' },
  },
  data: { 'app.conf': 'port=8080', removed: 'x' },
  binaryData: { blob: 'AAEC' },
  immutable: false,
  ...over,
});

interface Case {
  name: string;
  tenant: ConfigMap;
  super?: ConfigMap;
  opaque?: string[];
  want: Decision<ConfigMap>;
}

const cases: Case[] = [
  {
    name: 'create: metadata, data, binaryData and immutable are copied; uid, ownerReferences, finalizers are not',
    tenant: tenantCm('cfg', { binaryData: { blob: 'AAEC' }, immutable: true }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { namespace: sns, name: 'cfg', labels: { app: 'web' }, annotations: { note: 'hello' } },
        data: { 'app.conf': 'port=80' },
        binaryData: { blob: 'AAEC' },
        immutable: true,
      },
    },
  },
  {
    name: 'update: built on the super object (server fields, super finalizers kept); tenant data, labels, annotations win; absent fields removed',
    tenant: tenantCm('cfg'),
    super: superCm('cfg'),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          namespace: sns,
          name: 'cfg',
          uid: 'super-uid',
          resourceVersion: '99',
          creationTimestamp: '2025-11-02T00:00:00Z',
          managedFields: [{ manager: MANAGER, operation: 'Update' }],
          finalizers: ['example.com/super-finalizer'],
          labels: { app: 'web' },
          annotations: { note: 'hello' },
        },
        data: { 'app.conf': 'port=80' },
      },
    },
  },
  {
    name: 'reserved keys: a forged tenancy.x-k8s.io annotation or label never reaches the super',
    tenant: tenantCm(
      'cfg',
      {},
      {
        labels: { app: 'web', [LABEL.cluster]: 'someone-else' },
        annotations: { note: 'hello', [ANN.uid]: 'forged', [ANN.superClusterIP]: '1.2.3.4' },
      },
    ),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { namespace: sns, name: 'cfg', labels: { app: 'web' }, annotations: { note: 'hello' } },
        data: { 'app.conf': 'port=80' },
      },
    },
  },
  {
    name: "opaque prefixes: the tenant's opaque keys are dropped",
    opaque: ['secret.example.com/'],
    tenant: tenantCm(
      'cfg',
      {},
      { labels: { 'secret.example.com/team': 'a' }, annotations: { note: 'hello', 'secret.example.com/token': 't' } },
    ),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { namespace: sns, name: 'cfg', annotations: { note: 'hello' } },
        data: { 'app.conf': 'port=80' },
      },
    },
  },
  {
    name: "kube-root-ca.crt: the tenant's root CA lands as tenant-kube-root-ca.crt",
    tenant: tenantCm(
      'kube-root-ca.crt',
      { data: { 'ca.crt': 'TENANT CA' } },
      { labels: undefined, annotations: undefined },
    ),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { namespace: sns, name: 'tenant-kube-root-ca.crt' },
        data: { 'ca.crt': 'TENANT CA' },
      },
    },
  },
  {
    name: 'kube-root-ca.crt update: the renamed super object is built on',
    tenant: tenantCm(
      'kube-root-ca.crt',
      { data: { 'ca.crt': 'ROTATED CA' } },
      { labels: undefined, annotations: undefined },
    ),
    super: superCm('tenant-kube-root-ca.crt', {
      data: { 'ca.crt': 'TENANT CA' },
      binaryData: undefined,
      immutable: undefined,
    }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          namespace: sns,
          name: 'tenant-kube-root-ca.crt',
          uid: 'super-uid',
          resourceVersion: '99',
          creationTimestamp: '2025-11-02T00:00:00Z',
          managedFields: [{ manager: MANAGER, operation: 'Update' }],
          finalizers: ['example.com/super-finalizer'],
        },
        data: { 'ca.crt': 'ROTATED CA' },
      },
    },
  },
  {
    name: 'a tenant ConfigMap named tenant-kube-root-ca.crt is skipped with a tenant event (the name is taken)',
    tenant: tenantCm('tenant-kube-root-ca.crt'),
    want: {
      object: null,
      skip: { reason: 'ReservedName', message: expect.stringContaining('reserved') as unknown as string },
      effects: [
        {
          type: 'event',
          side: 'tenant',
          regarding: {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            namespace: 'app',
            name: 'tenant-kube-root-ca.crt',
            uid: 'tenant-uid',
          },
          eventType: 'Warning',
          reason: 'ReservedName',
          message: expect.stringContaining('tenant-kube-root-ca.crt') as unknown as string,
        },
      ],
    },
  },
];

describe('configmaps toSuper', () => {
  it.each(cases)('$name', (c) => {
    const ctx = testContext({ tenant: testTenant({ opaqueMetaPrefixes: c.opaque ?? [] }) });
    expect(configmapsPlugin.toSuper(frozen(c.tenant), c.super && frozen(c.super), ctx)).toEqual(c.want);
  });
});

describe('configmaps superName', () => {
  it.each([
    { tenantName: 'cfg', want: { namespace: sns, name: 'cfg' } },
    { tenantName: 'kube-root-ca.crt', want: { namespace: sns, name: 'tenant-kube-root-ca.crt' } },
    { tenantName: 'tenant-kube-root-ca.crt', want: { namespace: sns, name: 'tenant-kube-root-ca.crt' } },
  ])('$tenantName -> $want.name', ({ tenantName, want }) => {
    expect(configmapsPlugin.superName('app', tenantName, testContext())).toEqual(want);
    expect(superConfigMapName(tenantName)).toBe(want.name);
  });
});

describe('configmaps manifest', () => {
  it('declares a down, tenant-truth plugin for core/v1 configmaps and is the default export', () => {
    const asPlugin: Plugin = configmapsPlugin;
    expect(asPlugin.manifest).toMatchObject({
      name: 'configmaps',
      version: '0.1.0',
      resource: { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true },
      direction: 'down',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
    });
    expect(plugin).toBe(configmapsPlugin);
  });
});
