import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import type { Decision, Plugin } from '../../core/plugins/contract.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import { builtinPlugins } from '../registry.ts';
import type { RouteContext } from '../sdk/src/index.ts';
import { REFUSED_RETRY_MS } from './index.ts';
import {
  type EndpointSlice,
  ENDPOINTSLICES_BY_IP,
  endpointslicesPlugin,
  SLICE_FIELDS_REFUSED,
  sliceAddressesOf,
  slicesHolding,
} from './slices.ts';

const tenant = testTenant();
const sns = superNamespace(tenant.key, 'app');
const other = 'team-b-4d5e6f-prod';

const service = (name = 'db', selector?: Record<string, string>, namespace = 'app'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { namespace, name },
  spec: { ports: [{ port: 5432 }], ...(selector ? { selector } : {}) },
});

const superPod = (name: string, ip: string, cluster = tenant.key, phase = 'Running'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    namespace: superNamespace(cluster, 'app'),
    name,
    labels: { [LABEL.managedBy]: MANAGER },
    annotations: { [ANN.cluster]: cluster, [ANN.namespace]: 'app', [ANN.name]: name },
  },
  status: { phase, podIP: ip, podIPs: [{ ip }] },
});
const ownPods = [superPod('db-0', '10.1.0.5'), superPod('db-1', '10.1.0.6')];

const slice = (over: Partial<EndpointSlice> = {}, labels: Record<string, string> = {}): EndpointSlice => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: {
    namespace: 'app',
    name: 'db-manual',
    uid: 'tenant-uid',
    resourceVersion: '5',
    labels: { 'kubernetes.io/service-name': 'db', app: 'db', ...labels },
  },
  addressType: 'IPv4',
  endpoints: [
    {
      addresses: ['10.1.0.5'],
      conditions: { ready: true },
      nodeName: 'node-1',
      targetRef: { kind: 'Pod', namespace: 'app', name: 'db-0', uid: 'tenant-pod-uid', resourceVersion: '8' },
    },
    { addresses: ['10.1.0.6'], conditions: { ready: false } },
  ],
  ports: [{ name: 'pg', port: 5432, protocol: 'TCP' }],
  ...over,
});

const superSlice = (over: Partial<EndpointSlice> = {}): EndpointSlice => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: {
    namespace: sns,
    name: 'db-manual',
    labels: { app: 'db', 'kubernetes.io/service-name': 'db' },
  },
  addressType: 'IPv4',
  endpoints: [
    {
      addresses: ['10.1.0.5'],
      conditions: { ready: true },
      nodeName: 'node-1',
      targetRef: { kind: 'Pod', namespace: sns, name: 'db-0' },
    },
    { addresses: ['10.1.0.6'], conditions: { ready: false } },
  ],
  ports: [{ name: 'pg', port: 5432, protocol: 'TCP' }],
  ...over,
});

interface Case {
  name: string;
  services: KubeObject[];
  pods?: KubeObject[];
  tenant: EndpointSlice;
  cidrs?: string[];
  apiserver?: { host: string; port: number };
  want: Decision<EndpointSlice>;
}

const refused = (what: string): Partial<Decision<EndpointSlice>> => ({
  effects: [
    {
      type: 'event',
      side: 'tenant',
      regarding: {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        namespace: 'app',
        name: 'db-manual',
        uid: 'tenant-uid',
      },
      eventType: 'Warning',
      reason: 'EndpointAddressesRefused',
      message: `addresses not copied to the super cluster: ${what}`,
    },
  ],
  requeueAfterMs: REFUSED_RETRY_MS,
});

const cases: Case[] = [
  {
    name: 'a slice of a Service without a selector: copied, the Service label kept, targetRefs in the super namespace',
    services: [service()],
    tenant: slice(),
    want: { object: superSlice() },
  },
  {
    name: 'a slice of a Service with a selector: not copied (the super EndpointSlice controller makes its own)',
    services: [service('db', { app: 'db' })],
    tenant: slice(),
    want: { object: null },
  },
  {
    name: 'no tenant Service of that name: not copied',
    services: [],
    tenant: slice(),
    want: { object: null },
  },
  {
    name: 'no service-name label: not copied',
    services: [service()],
    tenant: slice({ metadata: { namespace: 'app', name: 'db-manual', labels: { app: 'db' } } }),
    want: { object: null },
  },
  {
    name: "the tenant's mirroring controller's slice: not copied (the super mirrors the copied Endpoints itself)",
    services: [service()],
    tenant: slice({}, { 'endpointslice.kubernetes.io/managed-by': 'endpointslicemirroring-controller.k8s.io' }),
    want: { object: null },
  },
  {
    name: 'a tenant controller of its own: copied, its managed-by label is not (a prefixed key)',
    services: [service()],
    tenant: slice({}, { 'endpointslice.kubernetes.io/managed-by': 'my-controller.example.com' }),
    want: { object: superSlice() },
  },
  {
    name: "another tenant's Pod IP: that endpoint is left out and named",
    services: [service()],
    pods: [...ownPods, superPod('victim', '10.2.0.9', other)],
    tenant: slice({ endpoints: [{ addresses: ['10.1.0.5'] }, { addresses: ['10.2.0.9'] }] }),
    want: {
      object: superSlice({ endpoints: [{ addresses: ['10.1.0.5'] }] }),
      ...refused('10.2.0.9 (the IP of a Pod of another tenant)'),
    },
  },
  {
    name: 'an address outside the tenant and its CIDRs (the super apiserver): left out and named',
    services: [service()],
    tenant: slice({ endpoints: [{ addresses: ['172.18.0.2'] }] }),
    want: {
      object: superSlice({ endpoints: [] }),
      ...refused("172.18.0.2 (neither a Pod of this tenant nor in the policy's endpoints.allowedCIDRs (none))"),
    },
  },
  {
    name: 'an address in an allowed CIDR: copied',
    services: [service()],
    cidrs: ['192.168.1.0/24'],
    tenant: slice({ endpoints: [{ addresses: ['192.168.1.10'] }] }),
    want: { object: superSlice({ endpoints: [{ addresses: ['192.168.1.10'] }] }) },
  },
  {
    name: 'an FQDN slice: no name is an address of the tenant, each endpoint is named',
    services: [service()],
    tenant: slice({ addressType: 'FQDN', endpoints: [{ addresses: ['db.example.com'] }] }),
    want: {
      object: superSlice({ addressType: 'FQDN', endpoints: [] }),
      ...refused("db.example.com (neither a Pod of this tenant nor in the policy's endpoints.allowedCIDRs (none))"),
    },
  },
  {
    name: "default/kubernetes at the tenant's own apiserver endpoint: copied",
    services: [service('kubernetes', undefined, 'default')],
    apiserver: { host: '172.18.0.1', port: 40123 },
    tenant: {
      ...slice({ endpoints: [{ addresses: ['172.18.0.1'] }], ports: [{ name: 'https', port: 40123 }] }),
      metadata: { namespace: 'default', name: 'kubernetes', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
    },
    want: {
      object: {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          namespace: superNamespace(tenant.key, 'default'),
          name: 'kubernetes',
          labels: { 'kubernetes.io/service-name': 'kubernetes' },
        },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['172.18.0.1'] }],
        ports: [{ name: 'https', port: 40123 }],
      },
    },
  },
];

describe('endpointslices toSuper', () => {
  it.each(cases)('$name', (c) => {
    const ctx = testContext({
      tenant: testTenant({
        endpoints: { allowedCIDRs: c.cidrs ?? [] },
        ...(c.apiserver && { apiserverEndpoint: c.apiserver }),
      }),
      tenantCache: new MapCache([[R.services, c.services]]),
      superCache: new MapCache([[R.pods, c.pods ?? ownPods]]),
    });
    expect(endpointslicesPlugin.toSuper(structuredClone(c.tenant), undefined, ctx)).toEqual(c.want);
  });

  it.each<[string, number]>([
    ["another port of the apiserver's host (another tenant's apiserver)", 40124],
    ['the right port beside another', 40123],
  ])("refuses the apiserver's host in default/kubernetes on %s", (_name, port) => {
    const ctx = testContext({
      tenant: testTenant({ apiserverEndpoint: { host: '172.18.0.1', port: 40123 } }),
      tenantCache: new MapCache([[R.services, [service('kubernetes', undefined, 'default')]]]),
      superCache: new MapCache([[R.pods, ownPods]]),
    });
    const ports = port === 40123 ? [{ port }, { port: 22 }] : [{ port }];
    const d = endpointslicesPlugin.toSuper(
      {
        ...slice({ endpoints: [{ addresses: ['172.18.0.1'] }], ports }),
        metadata: { namespace: 'default', name: 'kubernetes', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
      },
      undefined,
      ctx,
    );
    expect(d.object?.endpoints).toEqual([]);
    expect(d.effects).toMatchObject([{ reason: 'EndpointAddressesRefused' }]);
  });

  it("refuses the apiserver's address in any other Service's slice", () => {
    const ctx = testContext({
      tenant: testTenant({ apiserverEndpoint: { host: '172.18.0.1', port: 40123 } }),
      tenantCache: new MapCache([[R.services, [service()]]]),
      superCache: new MapCache([[R.pods, ownPods]]),
    });
    const d = endpointslicesPlugin.toSuper(
      slice({ endpoints: [{ addresses: ['172.18.0.1'] }], ports: [{ port: 40123 }] }),
      undefined,
      ctx,
    );
    expect(d.object?.endpoints).toEqual([]);
  });

  it('builds on the super object, so fields the super apiserver set are kept', () => {
    const ctx = testContext({
      tenantCache: new MapCache([[R.services, [service()]]]),
      superCache: new MapCache([[R.pods, ownPods]]),
    });
    const existing = superSlice({ endpoints: [{ addresses: ['10.9.9.9'] }] });
    existing.metadata = { ...existing.metadata, uid: 'super-uid', resourceVersion: '77', generation: 3 };
    const d = endpointslicesPlugin.toSuper(slice(), existing, ctx);
    expect(d.object).toEqual({
      ...superSlice(),
      metadata: { ...superSlice().metadata, uid: 'super-uid', resourceVersion: '77', generation: 3 },
    });
  });

  it.each([
    ['an endpoint field newer than the table', { addresses: ['10.1.0.5'], hostIP: '10.0.0.1' }, 'endpoints[0].hostIP'],
    [
      'a condition newer than the table',
      { addresses: ['10.1.0.5'], conditions: { drained: true } },
      'conditions.drained',
    ],
    [
      'a hint newer than the table',
      { addresses: ['10.1.0.5'], hints: { forRegions: [{ name: 'r' }] } },
      'hints.forRegions',
    ],
  ])('refuses a slice with %s by name; an earlier copy stays as it was', (_, endpoint, field) => {
    const ctx = testContext({
      tenantCache: new MapCache([[R.services, [service()]]]),
      superCache: new MapCache([[R.pods, ownPods]]),
    });
    const d = endpointslicesPlugin.toSuper(slice({ endpoints: [endpoint as never] }), superSlice(), ctx);
    expect(d.object).toBeNull();
    expect(d.skip).toMatchObject({ reason: SLICE_FIELDS_REFUSED, message: expect.stringContaining(field) });
    expect(d.effects).toMatchObject([{ type: 'event', eventType: 'Warning', reason: SLICE_FIELDS_REFUSED }]);
  });
});

describe('slicesHolding', () => {
  const held = superSlice();
  held.metadata = {
    ...held.metadata,
    annotations: { [ANN.cluster]: tenant.key, [ANN.namespace]: 'app', [ANN.name]: 'db-manual' },
    labels: { ...held.metadata?.labels, [LABEL.managedBy]: MANAGER },
  };
  const rctx = (byIp: Record<string, string[]>): RouteContext => ({
    tenants: [tenant],
    superCache: new MapCache([[R.endpointslices, [held]]]),
    tenantsBy: (index, value) => (index === ENDPOINTSLICES_BY_IP ? (byIp[value] ?? []) : []),
    tenantOfNamespace: () => undefined,
  });

  it('requeues the tenant slice whose super copy holds the IP of a Pod that came, changed or went', () => {
    expect(slicesHolding(superPod('x', '10.1.0.6', other), rctx({ '10.1.0.6': [tenant.key] }))).toEqual([
      { tenant: tenant.key, namespace: 'app', name: 'db-manual' },
    ]);
  });

  it('asks nothing of the cache for a Pod whose IP no slice holds', () => {
    expect(slicesHolding(superPod('x', '10.7.7.7'), rctx({}))).toEqual([]);
  });

  it('indexes slices by every address they hold', () => {
    expect(sliceAddressesOf(held)).toEqual(['10.1.0.5', '10.1.0.6']);
  });
});

describe('endpointslices manifest', () => {
  it('declares a down, tenant-truth plugin for discovery.k8s.io/v1 endpointslices, enabled among the built-ins', () => {
    const asPlugin: Plugin = endpointslicesPlugin;
    expect(asPlugin.manifest).toMatchObject({
      name: 'endpointslices',
      resource: {
        group: 'discovery.k8s.io',
        version: 'v1',
        resource: 'endpointslices',
        kind: 'EndpointSlice',
        namespaced: true,
      },
      direction: 'down',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
    });
    expect(builtinPlugins).toContain(endpointslicesPlugin);
  });
});
