import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, superNamespace } from '../../core/names/names.ts';
import type { Decision, Plugin } from '../../core/plugins/contract.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import plugin, { serviceaccountsPlugin, type ServiceAccount } from './index.ts';

const tenant = testTenant();
const sns = superNamespace(tenant.key, 'app');
const frozen = <T>(o: T): T => {
  if (o && typeof o === 'object') for (const v of Object.values(Object.freeze(o))) frozen(v);
  return o;
};

const tenantSa = (over: Partial<ServiceAccount> = {}, meta: Record<string, unknown> = {}): ServiceAccount => ({
  apiVersion: 'v1',
  kind: 'ServiceAccount',
  metadata: { namespace: 'app', name: 'web', uid: 'tenant-uid', resourceVersion: '4', labels: { app: 'web' }, ...meta },
  ...over,
});

const secret = (name: string, type: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { namespace: 'app', name },
  type,
});
const tenantSecrets = [
  secret('regcred', 'kubernetes.io/dockerconfigjson'),
  secret('web-token-x', 'kubernetes.io/service-account-token'),
];

/** superDefault is the `default` ServiceAccount the super created in the namespace: no ownership, fields of its own. */
const superDefault: ServiceAccount = {
  apiVersion: 'v1',
  kind: 'ServiceAccount',
  metadata: {
    namespace: sns,
    name: 'default',
    uid: 'super-uid',
    resourceVersion: '12',
    creationTimestamp: '2025-11-02T00:00:00Z',
  },
  secrets: [{ name: 'default-token-super' }],
  imagePullSecrets: [{ name: 'super-mirror' }],
};

interface Case {
  name: string;
  tenant: ServiceAccount;
  super?: ServiceAccount;
  opaque?: string[];
  want: Decision<ServiceAccount>;
}

const cases: Case[] = [
  {
    name: 'a tenant ServiceAccount with the name reserved for the super Pods is not synced',
    tenant: tenantSa({}, { name: 'vc-tenant-pod' }),
    want: {
      object: null,
      skip: { reason: 'ReservedName', message: expect.stringContaining('vc-tenant-pod') as unknown as string },
    },
  },
  {
    name: 'create: automount forced off, no secrets list, imagePullSecrets kept by name except token Secrets',
    tenant: tenantSa({
      automountServiceAccountToken: true,
      secrets: [{ name: 'web-token-x' }],
      imagePullSecrets: [{ name: 'regcred' }, { name: 'web-token-x' }, { name: 'not-yet-created' }],
    }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { namespace: sns, name: 'web', labels: { app: 'web' } },
        automountServiceAccountToken: false,
        imagePullSecrets: [{ name: 'regcred' }, { name: 'not-yet-created' }],
      },
    },
  },
  {
    name: 'create: automount unset in the tenant is still false in the super',
    tenant: tenantSa(),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { namespace: sns, name: 'web', labels: { app: 'web' } },
        automountServiceAccountToken: false,
      },
    },
  },
  {
    name: "update of the super's own default ServiceAccount: built on it (its secrets and server fields stay), tenant metadata and pull secrets overlaid",
    tenant: tenantSa(
      {
        automountServiceAccountToken: true,
        secrets: [{ name: 'default-token-t' }],
        imagePullSecrets: [{ name: 'regcred' }],
      },
      { name: 'default', labels: undefined },
    ),
    super: superDefault,
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: {
          namespace: sns,
          name: 'default',
          uid: 'super-uid',
          resourceVersion: '12',
          creationTimestamp: '2025-11-02T00:00:00Z',
        },
        secrets: [{ name: 'default-token-super' }],
        imagePullSecrets: [{ name: 'regcred' }],
        automountServiceAccountToken: false,
      },
    },
  },
  {
    name: 'update: imagePullSecrets removed in the tenant are removed in the super',
    tenant: tenantSa({}, { name: 'default', labels: undefined }),
    super: superDefault,
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: {
          namespace: sns,
          name: 'default',
          uid: 'super-uid',
          resourceVersion: '12',
          creationTimestamp: '2025-11-02T00:00:00Z',
        },
        secrets: [{ name: 'default-token-super' }],
        automountServiceAccountToken: false,
      },
    },
  },
  {
    name: 'reserved keys: a forged tenancy.x-k8s.io annotation or label never reaches the super',
    tenant: tenantSa({}, { labels: { app: 'web', [LABEL.cluster]: 'x' }, annotations: { [ANN.uid]: 'forged' } }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { namespace: sns, name: 'web', labels: { app: 'web' } },
        automountServiceAccountToken: false,
      },
    },
  },
  {
    name: 'no tenant annotation is copied, opaque or not: super webhooks act on ServiceAccount annotations',
    opaque: ['secret.example.com/'],
    tenant: tenantSa({}, { annotations: { 'secret.example.com/role-arn': 'arn:x', keep: 'me' } }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { namespace: sns, name: 'web', labels: { app: 'web' } },
        automountServiceAccountToken: false,
      },
    },
  },
  {
    name: 'cloud workload identity annotations stay in the tenant',
    tenant: tenantSa(
      {},
      {
        annotations: {
          'eks.amazonaws.com/role-arn': 'arn:aws:iam::1:role/platform-admin',
          'iam.gke.io/gcp-service-account': 'admin@platform.iam.gserviceaccount.com',
          'azure.workload.identity/client-id': 'x',
        },
      },
    ),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { namespace: sns, name: 'web', labels: { app: 'web' } },
        automountServiceAccountToken: false,
      },
    },
  },
];

describe('serviceaccounts toSuper', () => {
  it.each(cases)('$name', (c) => {
    const ctx = testContext({
      tenant: testTenant({ opaqueMetaPrefixes: c.opaque ?? [] }),
      tenantCache: new MapCache([[R.secrets, tenantSecrets]]),
    });
    expect(serviceaccountsPlugin.toSuper(frozen(c.tenant), c.super && frozen(structuredClone(c.super)), ctx)).toEqual(
      c.want,
    );
  });
});

describe('serviceaccounts manifest', () => {
  it('declares a down, tenant-truth plugin for core/v1 serviceaccounts and is the default export', () => {
    const asPlugin: Plugin = serviceaccountsPlugin;
    expect(asPlugin.manifest).toMatchObject({
      name: 'serviceaccounts',
      version: '0.1.0',
      resource: { group: '', version: 'v1', resource: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true },
      direction: 'down',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
    });
    expect(plugin).toBe(serviceaccountsPlugin);
  });
});
