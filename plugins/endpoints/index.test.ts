import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import type { Decision, Plugin } from '../../core/plugins/contract.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import plugin, { endpointsPlugin, type Endpoints, type EndpointSubset } from './index.ts';

const tenant = testTenant();
const sns = superNamespace(tenant.key, 'app');
const frozen = <T>(o: T): T => {
  if (o && typeof o === 'object') for (const v of Object.values(Object.freeze(o))) frozen(v);
  return o;
};

const service = (selector?: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { namespace: 'app', name: 'db' },
  spec: { ports: [{ port: 5432 }], ...(selector ? { selector } : {}) },
});

const tenantSubsets: EndpointSubset[] = [
  {
    addresses: [
      {
        ip: '10.1.0.5',
        nodeName: 'node-1',
        targetRef: { kind: 'Pod', namespace: 'app', name: 'db-0', uid: 'tenant-pod-uid', resourceVersion: '8' },
      },
      { ip: '192.168.1.10' },
    ],
    notReadyAddresses: [
      { ip: '10.1.0.6', targetRef: { kind: 'Pod', namespace: 'app', name: 'db-1', uid: 'tenant-pod-uid-1' } },
    ],
    ports: [{ port: 5432, protocol: 'TCP' }],
  },
];

const superSubsets: EndpointSubset[] = [
  {
    addresses: [
      { ip: '10.1.0.5', nodeName: 'node-1', targetRef: { kind: 'Pod', namespace: sns, name: 'db-0' } },
      { ip: '192.168.1.10' },
    ],
    notReadyAddresses: [{ ip: '10.1.0.6', targetRef: { kind: 'Pod', namespace: sns, name: 'db-1' } }],
    ports: [{ port: 5432, protocol: 'TCP' }],
  },
];

const tenantEp = (over: Partial<Endpoints> = {}, meta: Record<string, unknown> = {}): Endpoints => ({
  apiVersion: 'v1',
  kind: 'Endpoints',
  metadata: { namespace: 'app', name: 'db', uid: 'tenant-uid', resourceVersion: '5', labels: { app: 'db' }, ...meta },
  subsets: tenantSubsets,
  ...over,
});

const superServerMeta = {
  namespace: sns,
  name: 'db',
  uid: 'super-uid',
  resourceVersion: '77',
  creationTimestamp: '2025-11-02T00:00:00Z',
};
const superEp: Endpoints = {
  apiVersion: 'v1',
  kind: 'Endpoints',
  metadata: {
    ...superServerMeta,
    labels: { app: 'old', [LABEL.managedBy]: MANAGER },
    annotations: {
      'endpoints.kubernetes.io/last-change-trigger-time': '2025-11-02T00:00:00Z',
      [ANN.cluster]: tenant.key,
    },
  },
  subsets: [{ addresses: [{ ip: '10.9.9.9' }], ports: [{ port: 1 }] }],
};

interface Case {
  name: string;
  /** the tenant Service of the same name, if any */
  service?: KubeObject;
  tenant: Endpoints;
  super?: Endpoints;
  opaque?: string[];
  want: Decision<Endpoints>;
}

const cases: Case[] = [
  {
    name: 'create (Service without selector): subsets copied, targetRefs point at the super namespace without tenant uid',
    service: service(),
    tenant: tenantEp(),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { namespace: sns, name: 'db', labels: { app: 'db' } },
        subsets: superSubsets,
      },
    },
  },
  {
    name: 'an empty selector selects nothing: synced like no selector',
    service: service({}),
    tenant: tenantEp(),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { namespace: sns, name: 'db', labels: { app: 'db' } },
        subsets: superSubsets,
      },
    },
  },
  {
    name: 'update: built on the super object (server fields kept), subsets replaced',
    service: service(),
    tenant: tenantEp(),
    super: superEp,
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { ...superServerMeta, labels: { app: 'db' } },
        subsets: superSubsets,
      },
    },
  },
  {
    name: 'update: no tenant subsets removes the super ones',
    service: service(),
    tenant: tenantEp({ subsets: undefined }),
    super: superEp,
    want: { object: { apiVersion: 'v1', kind: 'Endpoints', metadata: { ...superServerMeta, labels: { app: 'db' } } } },
  },
  {
    name: "Service with a selector: must not exist (the super's endpoints controller fills it)",
    service: service({ app: 'db' }),
    tenant: tenantEp(),
    super: superEp,
    want: { object: null },
  },
  {
    name: 'no tenant Service: must not exist',
    tenant: tenantEp(),
    want: { object: null },
  },
  {
    name: 'reserved keys: a forged tenancy.x-k8s.io annotation never reaches the super',
    service: service(),
    tenant: tenantEp({ subsets: undefined }, { annotations: { [ANN.uid]: 'forged', [ANN.name]: 'other' } }),
    want: {
      object: { apiVersion: 'v1', kind: 'Endpoints', metadata: { namespace: sns, name: 'db', labels: { app: 'db' } } },
    },
  },
  {
    name: "opaque prefixes: the tenant's opaque keys are dropped",
    service: service(),
    opaque: ['secret.example.com/'],
    tenant: tenantEp(
      { subsets: undefined },
      { labels: { 'secret.example.com/a': 'b' }, annotations: { 'secret.example.com/c': 'd' } },
    ),
    want: { object: { apiVersion: 'v1', kind: 'Endpoints', metadata: { namespace: sns, name: 'db' } } },
  },
];

describe('endpoints toSuper', () => {
  it.each(cases)('$name', (c) => {
    const ctx = testContext({
      tenant: testTenant({ opaqueMetaPrefixes: c.opaque ?? [] }),
      tenantCache: new MapCache([[R.services, c.service ? [c.service] : []]]),
    });
    expect(
      endpointsPlugin.toSuper(frozen(structuredClone(c.tenant)), c.super && frozen(structuredClone(c.super)), ctx),
    ).toEqual(c.want);
  });
});

describe('endpoints manifest', () => {
  it('declares a down, tenant-truth plugin for core/v1 endpoints and is the default export', () => {
    const asPlugin: Plugin = endpointsPlugin;
    expect(asPlugin.manifest).toMatchObject({
      name: 'endpoints',
      version: '0.1.0',
      resource: { group: '', version: 'v1', resource: 'endpoints', kind: 'Endpoints', namespaced: true },
      direction: 'down',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
    });
    expect(plugin).toBe(endpointsPlugin);
  });
});
