import { describe, expect, it } from 'vitest';
import type { Tenant } from '../../core/tenancy/tenant.ts';
import { ANN, LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import type { Decision, Plugin } from '../../core/plugins/contract.ts';
import { testContext, testTenant } from '../../core/plugins/testing.ts';
import { isolationEffect } from '@virtualcluster-ts/plugin-sdk/network';
import plugin, { namespacesPlugin, type Namespace } from './index.ts';

const tenant = testTenant();
const sns = superNamespace(tenant.key, 'app');
const frozen = <T>(o: T): T => {
  if (o && typeof o === 'object') for (const v of Object.values(Object.freeze(o))) frozen(v);
  return o;
};

const psa = (level: string) => ({
  'pod-security.kubernetes.io/enforce': level,
  'pod-security.kubernetes.io/audit': level,
  'pod-security.kubernetes.io/warn': level,
});

const tenantNs = (meta: Record<string, unknown> = {}): Namespace => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: {
    name: 'app',
    uid: 'tenant-uid',
    resourceVersion: '3',
    creationTimestamp: '2025-11-01T00:00:00Z',
    labels: { team: 'a', 'kubernetes.io/metadata.name': 'app' },
    annotations: { owner: 'alice' },
    finalizers: ['example.com/tenant-finalizer'],
    ...meta,
  },
  spec: { finalizers: ['kubernetes'] },
  status: { phase: 'Active' },
});

/** superNsObj is the super Namespace as the apiserver returns it, with what the super admin and apiserver set. */
const superNsObj = (meta: Record<string, unknown> = {}): Namespace => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: {
    name: sns,
    uid: 'super-uid',
    resourceVersion: '50',
    creationTimestamp: '2025-11-02T00:00:00Z',
    finalizers: ['example.com/super-finalizer'],
    labels: {
      team: 'old',
      'kubernetes.io/metadata.name': sns,
      ...psa('baseline'),
      [LABEL.managedBy]: MANAGER,
      [LABEL.cluster]: tenant.key,
    },
    annotations: {
      owner: 'bob',
      'scheduler.alpha.kubernetes.io/node-selector': 'pool=tenants',
      [ANN.cluster]: tenant.key,
    },
    ...meta,
  },
  spec: { finalizers: ['kubernetes'] },
  status: { phase: 'Active' },
});

const superServerMeta = {
  name: sns,
  uid: 'super-uid',
  resourceVersion: '50',
  creationTimestamp: '2025-11-02T00:00:00Z',
  finalizers: ['example.com/super-finalizer'],
};

/** unprefixed is a platform that lets unprefixed tenant keys onto super Namespaces (the default lets none). */
const unprefixed: Partial<Tenant> = {
  copiedMetadata: { namespaceLabels: ['*', 'app.kubernetes.io/*'], namespaceAnnotations: ['*'] },
};

interface Case {
  name: string;
  tenant: Namespace;
  super?: Namespace;
  config?: Partial<Tenant>;
  want: Decision<Namespace>;
}

const cases: Case[] = [
  {
    name: "create: prefixed name, allowed tenant labels plus the tenant's Pod Security level; no spec, status, finalizers or tenant metadata.name label",
    tenant: tenantNs(),
    config: unprefixed,
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: sns, labels: { team: 'a', ...psa('baseline') }, annotations: { owner: 'alice' } },
      },
    },
  },
  {
    name: "create: the level is the tenant's (restricted)",
    tenant: tenantNs({ labels: undefined, annotations: undefined }),
    config: { podSecurityLevel: 'restricted' },
    want: { object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: sns, labels: psa('restricted') } } },
  },
  {
    name: 'update: built on the super object; spec, status, finalizers, metadata.name label and admin scheduling annotations stay the super ones',
    tenant: tenantNs(),
    super: superNsObj(),
    config: unprefixed,
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          ...superServerMeta,
          labels: { team: 'a', ...psa('baseline'), 'kubernetes.io/metadata.name': sns },
          annotations: { owner: 'alice', 'scheduler.alpha.kubernetes.io/node-selector': 'pool=tenants' },
        },
        spec: { finalizers: ['kubernetes'] },
        status: { phase: 'Active' },
      },
    },
  },
  {
    name: 'tenant Pod Security labels cannot loosen the policy (levels forced, version pins dropped)',
    tenant: tenantNs({
      labels: {
        'pod-security.kubernetes.io/enforce': 'privileged',
        'pod-security.kubernetes.io/enforce-version': 'v1.0',
        'pod-security.kubernetes.io/warn': 'privileged',
      },
      annotations: undefined,
    }),
    config: { podSecurityLevel: 'restricted' },
    want: { object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: sns, labels: psa('restricted') } } },
  },
  {
    name: 'tenant scheduler annotations (node selector, toleration whitelist) do not reach the super on create',
    tenant: tenantNs({
      labels: undefined,
      annotations: {
        'scheduler.alpha.kubernetes.io/node-selector': 'pool=gpu',
        'scheduler.alpha.kubernetes.io/tolerationsWhitelist': '[{"operator":"Exists"}]',
      },
    }),
    want: { object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: sns, labels: psa('baseline') } } },
  },
  {
    name: "tenant scheduler annotations do not override the super admin's on update",
    tenant: tenantNs({ labels: undefined, annotations: { 'scheduler.alpha.kubernetes.io/node-selector': 'pool=gpu' } }),
    super: superNsObj(),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          ...superServerMeta,
          labels: { ...psa('baseline'), 'kubernetes.io/metadata.name': sns },
          annotations: { 'scheduler.alpha.kubernetes.io/node-selector': 'pool=tenants' },
        },
        spec: { finalizers: ['kubernetes'] },
        status: { phase: 'Active' },
      },
    },
  },
  {
    name: 'reserved keys: a forged tenancy.x-k8s.io annotation or label never reaches the super',
    tenant: tenantNs({
      labels: { team: 'a', [LABEL.managedBy]: 'me' },
      annotations: { [ANN.uid]: 'forged', [ANN.cluster]: 'other-tenant' },
    }),
    config: { copiedMetadata: { namespaceLabels: ['*', '*/*'], namespaceAnnotations: ['*', '*/*'] } },
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: sns, labels: { team: 'a', ...psa('baseline') } },
      },
    },
  },
  {
    name: "opaque prefixes: the tenant's opaque keys are dropped",
    tenant: tenantNs({
      labels: { team: 'a', 'secret.example.com/cost': '1' },
      annotations: { 'secret.example.com/token': 't', owner: 'alice' },
    }),
    config: { ...unprefixed, opaqueMetaPrefixes: ['secret.example.com/'] },
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: sns, labels: { team: 'a', ...psa('baseline') }, annotations: { owner: 'alice' } },
      },
    },
  },
  {
    name: 'default allow-list: only app.kubernetes.io keys of the tenant reach the super Namespace',
    tenant: tenantNs({
      labels: { team: 'a', 'istio-injection': 'enabled', 'app.kubernetes.io/part-of': 'shop' },
      annotations: { owner: 'alice', 'openshift.io/node-selector': 'pool=gpu', 'app.kubernetes.io/x': 'y' },
    }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name: sns,
          labels: { 'app.kubernetes.io/part-of': 'shop', ...psa('baseline') },
          annotations: { 'app.kubernetes.io/x': 'y' },
        },
      },
    },
  },
  {
    name: "keys super policies key on stay the syncer's even when the platform allows every key",
    tenant: tenantNs({
      labels: {
        'kubernetes.io/metadata.name': 'kube-system',
        'pod-security.kubernetes.io/enforce': 'privileged',
        'tenancy.x-k8s.io/cluster': 'other-tenant',
      },
      annotations: undefined,
    }),
    super: superNsObj({ annotations: undefined }),
    config: { copiedMetadata: { namespaceLabels: ['*', '*/*'] } },
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { ...superServerMeta, labels: { ...psa('baseline'), 'kubernetes.io/metadata.name': sns } },
        spec: { finalizers: ['kubernetes'] },
        status: { phase: 'Active' },
      },
    },
  },
];

describe('namespaces toSuper', () => {
  it.each(cases)('$name', (c) => {
    const ctx = testContext({ tenant: testTenant(c.config) });
    const { effects, ...decision } = namespacesPlugin.toSuper(frozen(c.tenant), c.super && frozen(c.super), ctx);
    expect(decision).toEqual(c.want);
    // Every super namespace gets the tenant isolation NetworkPolicy (plugins/networkpolicies tests its content).
    expect(effects).toEqual([isolationEffect(c.tenant.metadata?.name ?? '', ctx.tenant)]);
  });
});

describe('namespaces superName', () => {
  it.each([
    { name: 'app', want: { name: sns } },
    { name: 'kube-system', want: { name: superNamespace(tenant.key, 'kube-system') } },
  ])('$name -> cluster-scoped $want.name', ({ name, want }) => {
    expect(namespacesPlugin.superName('', name, testContext())).toEqual(want);
  });
});

describe('namespaces manifest', () => {
  it('declares a down, tenant-truth plugin for cluster-scoped core/v1 namespaces and is the default export', () => {
    const asPlugin: Plugin = namespacesPlugin;
    expect(asPlugin.manifest).toMatchObject({
      name: 'namespaces',
      version: '0.1.0',
      resource: { group: '', version: 'v1', resource: 'namespaces', kind: 'Namespace', namespaced: false },
      direction: 'down',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
    });
    expect(plugin).toBe(namespacesPlugin);
  });
});
