import { describe, expect, it } from 'vitest';
import { ANN, LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import type { Decision, Plugin } from '../../core/plugins/contract.ts';
import { testContext, testTenant } from '../../core/plugins/testing.ts';
import plugin, { ORIGINAL_TYPE_ANNOTATION, secretsPlugin, type Secret } from './index.ts';

const tenant = testTenant();
const sns = superNamespace(tenant.key, 'app');
const frozen = <T>(o: T): T => {
  if (o && typeof o === 'object') for (const v of Object.values(Object.freeze(o))) frozen(v);
  return o;
};

const tenantSecret = (over: Partial<Secret> = {}, meta: Record<string, unknown> = {}): Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: {
    namespace: 'app',
    name: 'creds',
    uid: 'tenant-uid',
    resourceVersion: '7',
    labels: { app: 'web' },
    ownerReferences: [{ apiVersion: 'v1', kind: 'ServiceAccount', name: 'web', uid: 'sa-uid' }],
    ...meta,
  },
  type: 'Opaque',
  data: { password: 'cGFzcw==' },
  ...over,
});

const superServerMeta = {
  namespace: sns,
  name: 'creds',
  uid: 'super-uid',
  resourceVersion: '99',
  creationTimestamp: '2025-11-02T00:00:00Z',
  finalizers: ['example.com/super-finalizer'],
};

const superSecret = (over: Partial<Secret> = {}): Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: {
    ...superServerMeta,
    labels: { app: 'old', [LABEL.managedBy]: MANAGER, [LABEL.cluster]: tenant.key },
    annotations: { [ANN.cluster]: tenant.key, [ANN.uid]: 'tenant-uid' },
  },
  type: 'Opaque',
  data: { password: 'b2xk', stale: 'eA==' },
  immutable: false,
  ...over,
});

const tokenData = { token: 'dGVuYW50LXRva2Vu', 'ca.crt': 'Q0E=', namespace: 'YXBw' };

interface Case {
  name: string;
  tenant: Secret;
  super?: Secret;
  opaque?: string[];
  want: Decision<Secret>;
}

const cases: Case[] = [
  {
    name: 'create: type, data and immutable are copied; stringData, uid and ownerReferences are not',
    tenant: tenantSecret({ immutable: true, stringData: { extra: 'plain' } }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { namespace: sns, name: 'creds', labels: { app: 'web' } },
        type: 'Opaque',
        data: { password: 'cGFzcw==' },
        immutable: true,
      },
    },
  },
  {
    name: 'create: other types (dockerconfigjson) keep their type',
    tenant: tenantSecret({ type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': 'e30=' } }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { namespace: sns, name: 'creds', labels: { app: 'web' } },
        type: 'kubernetes.io/dockerconfigjson',
        data: { '.dockerconfigjson': 'e30=' },
      },
    },
  },
  {
    name: 'update: built on the super object (server fields and finalizers kept); data replaced, removed keys and fields gone',
    tenant: tenantSecret(),
    super: superSecret(),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { ...superServerMeta, labels: { app: 'web' } },
        type: 'Opaque',
        data: { password: 'cGFzcw==' },
      },
    },
  },
  {
    name: 'service account token: Opaque in the super, original type recorded, tenant token data kept, kubernetes.io annotations not copied',
    tenant: tenantSecret(
      { type: 'kubernetes.io/service-account-token', data: tokenData },
      {
        name: 'web-token',
        labels: undefined,
        annotations: { 'kubernetes.io/service-account.name': 'web', 'kubernetes.io/service-account.uid': 'sa-uid' },
      },
    ),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          namespace: sns,
          name: 'web-token',
          annotations: { [ORIGINAL_TYPE_ANNOTATION]: 'kubernetes.io/service-account-token' },
        },
        type: 'Opaque',
        data: tokenData,
      },
    },
  },
  {
    name: 'service account token update: stays Opaque with the annotation, new tenant token copied',
    tenant: tenantSecret({ type: 'kubernetes.io/service-account-token', data: tokenData }, { labels: undefined }),
    super: superSecret({ data: { token: 'b2xk' }, immutable: undefined }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          ...superServerMeta,
          annotations: { [ORIGINAL_TYPE_ANNOTATION]: 'kubernetes.io/service-account-token' },
        },
        type: 'Opaque',
        data: tokenData,
      },
    },
  },
  {
    name: 'reserved keys: forged uid and a forged original-type annotation never reach the super',
    tenant: tenantSecret(
      {},
      { annotations: { [ANN.uid]: 'forged', [ORIGINAL_TYPE_ANNOTATION]: 'kubernetes.io/service-account-token' } },
    ),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { namespace: sns, name: 'creds', labels: { app: 'web' } },
        type: 'Opaque',
        data: { password: 'cGFzcw==' },
      },
    },
  },
  {
    name: "opaque prefixes: the tenant's opaque keys are dropped",
    opaque: ['secret.example.com/'],
    tenant: tenantSecret(
      {},
      { labels: { app: 'web', 'secret.example.com/x': '1' }, annotations: { 'secret.example.com/vault-path': '/a/b' } },
    ),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { namespace: sns, name: 'creds', labels: { app: 'web' } },
        type: 'Opaque',
        data: { password: 'cGFzcw==' },
      },
    },
  },
];

describe('secrets toSuper', () => {
  it.each(cases)('$name', (c) => {
    const ctx = testContext({ tenant: testTenant({ opaqueMetaPrefixes: c.opaque ?? [] }) });
    expect(secretsPlugin.toSuper(frozen(c.tenant), c.super && frozen(c.super), ctx)).toEqual(c.want);
  });
});

describe('secrets manifest', () => {
  it('declares a down, tenant-truth plugin for core/v1 secrets and is the default export', () => {
    const asPlugin: Plugin = secretsPlugin;
    expect(asPlugin.manifest).toMatchObject({
      name: 'secrets',
      version: '0.1.0',
      resource: { group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true },
      direction: 'down',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
    });
    expect(plugin).toBe(secretsPlugin);
  });
});
