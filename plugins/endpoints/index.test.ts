import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import type { Decision, Plugin } from '../../core/plugins/contract.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import { DEFAULT_POLICY } from '../../core/tenancy/policy.ts';
import type { RouteContext } from '../sdk/src/index.ts';
import plugin, {
  addressesOf,
  DEFAULT_ENDPOINTS_POLICY,
  ENDPOINTS_BY_IP,
  endpointsHolding,
  endpointsPlugin,
  FIELDS_REFUSED,
  type Endpoints,
  type EndpointSubset,
  parseCIDRs,
  REFUSED_RETRY_MS,
} from './index.ts';

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

/** superPod is a running super Pod with `ip`, of this tenant unless `cluster` names another. */
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
// The fixtures' addresses: two Pods of this tenant and one outside address its policy allows.
const ownPods = [superPod('db-0', '10.1.0.5'), superPod('db-1', '10.1.0.6')];
const endpointsPolicy = { allowedCIDRs: ['192.168.1.0/24'] };

describe('endpoints toSuper', () => {
  it.each(cases)('$name', (c) => {
    const ctx = testContext({
      tenant: testTenant({ opaqueMetaPrefixes: c.opaque ?? [], endpoints: endpointsPolicy }),
      tenantCache: new MapCache([[R.services, c.service ? [c.service] : []]]),
      superCache: new MapCache([[R.pods, ownPods]]),
    });
    expect(
      endpointsPlugin.toSuper(frozen(structuredClone(c.tenant)), c.super && frozen(structuredClone(c.super)), ctx),
    ).toEqual(c.want);
  });
});

describe("endpoints toSuper: only the tenant's own Pods and its allowed CIDRs", () => {
  const other = 'team-b-4d5e6f-prod';
  const ep = (ips: string[], notReady: string[] = []): Endpoints =>
    tenantEp({
      subsets: [
        {
          addresses: ips.map((ip) => ({ ip })),
          ...(notReady.length && { notReadyAddresses: notReady.map((ip) => ({ ip })) }),
          ports: [{ port: 5432 }],
        },
      ],
    });
  const run = (e: Endpoints, pods: KubeObject[], cidrs?: string[]) =>
    endpointsPlugin.toSuper(
      e,
      undefined,
      testContext({
        tenant: testTenant(cidrs ? { endpoints: { allowedCIDRs: cidrs } } : {}),
        tenantCache: new MapCache([[R.services, [service()]]]),
        superCache: new MapCache([[R.pods, pods]]),
      }),
    );
  const addressesOf = (d: Decision<Endpoints>) =>
    d.object?.subsets?.flatMap((s) => (s.addresses ?? []).map((a) => a.ip));
  const messageOf = (d: Decision<Endpoints>) => {
    const e = d.effects?.[0];
    return e?.type === 'event' ? `${e.reason}: ${e.message}` : undefined;
  };

  it.each<[string, string[], KubeObject[], string[] | undefined, string[], string | undefined]>([
    ['own Pod IPs', ['10.1.0.5'], ownPods, undefined, ['10.1.0.5'], undefined],
    [
      "another tenant's Pod",
      ['10.1.0.5', '10.2.0.9'],
      [...ownPods, superPod('victim', '10.2.0.9', other)],
      undefined,
      ['10.1.0.5'],
      '10.2.0.9 (the IP of a Pod of another tenant)',
    ],
    [
      "another tenant's Pod inside an allowed CIDR",
      ['10.2.0.9'],
      [superPod('victim', '10.2.0.9', other)],
      ['10.0.0.0/8'],
      [],
      '10.2.0.9 (the IP of a Pod of another tenant)',
    ],
    [
      'the apiserver address, no CIDR allowed',
      ['172.18.0.2'],
      ownPods,
      undefined,
      [],
      "172.18.0.2 (neither a Pod of this tenant nor in the policy's endpoints.allowedCIDRs (none))",
    ],
    ['an address in an allowed CIDR', ['192.168.1.10'], ownPods, ['192.168.1.0/24'], ['192.168.1.10'], undefined],
    [
      'an address just outside the allowed CIDR',
      ['192.168.2.1'],
      ownPods,
      ['192.168.1.0/24'],
      [],
      "192.168.2.1 (neither a Pod of this tenant nor in the policy's endpoints.allowedCIDRs (192.168.1.0/24))",
    ],
    ['IPv6 in an allowed CIDR', ['2001:db8::5'], [], ['2001:db8::/32'], ['2001:db8::5'], undefined],
    [
      'the IP of a finished Pod of this tenant (it may be reused)',
      ['10.1.0.7'],
      [superPod('done', '10.1.0.7', tenant.key, 'Succeeded')],
      undefined,
      [],
      "10.1.0.7 (neither a Pod of this tenant nor in the policy's endpoints.allowedCIDRs (none))",
    ],
  ])('%s', (_name, ips, pods, cidrs, kept, refused) => {
    const d = run(ep(ips), pods, cidrs);
    expect(addressesOf(d) ?? []).toEqual(kept);
    if (refused === undefined) {
      expect(d.effects).toBeUndefined();
      expect(d.requeueAfterMs).toBeUndefined();
    } else {
      expect(messageOf(d)).toBe(`EndpointAddressesRefused: addresses not copied to the super cluster: ${refused}`);
      expect(d.requeueAfterMs).toBe(REFUSED_RETRY_MS);
    }
  });

  it('drops a subset whose every address is refused and keeps the others', () => {
    const e = tenantEp({
      subsets: [
        { addresses: [{ ip: '10.9.9.9' }], notReadyAddresses: [{ ip: '10.9.9.8' }], ports: [{ port: 1 }] },
        { addresses: [{ ip: '10.9.9.7' }], notReadyAddresses: [{ ip: '10.1.0.5' }], ports: [{ port: 2 }] },
      ],
    });
    const d = run(e, ownPods);
    expect(d.object?.subsets).toEqual([
      { addresses: [], notReadyAddresses: [{ ip: '10.1.0.5' }], ports: [{ port: 2 }] },
    ]);
    expect(messageOf(d)).toContain('10.9.9.7 (');
    expect(messageOf(d)).toContain('10.9.9.8 (');
    expect(messageOf(d)).toContain('10.9.9.9 (');
  });
});

describe('endpointsHolding', () => {
  const other = 'team-b-4d5e6f-prod';
  const superEpOf = (name: string, ips: string[], cluster = tenant.key): Endpoints => ({
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: {
      namespace: superNamespace(cluster, 'app'),
      name,
      labels: { [LABEL.managedBy]: MANAGER },
      annotations: { [ANN.cluster]: cluster, [ANN.namespace]: 'app', [ANN.name]: name },
    },
    subsets: [
      { addresses: ips.slice(0, 1).map((ip) => ({ ip })), notReadyAddresses: ips.slice(1).map((ip) => ({ ip })) },
    ],
  });
  const eps = [
    superEpOf('db', ['10.1.0.5']),
    superEpOf('cache', ['10.3.0.1', '10.1.0.5']),
    superEpOf('x', ['10.1.0.5'], other),
  ];
  const index = new Map<string, string[]>();
  for (const ep of eps)
    for (const ip of addressesOf(ep))
      index.set(ip, [...new Set([...(index.get(ip) ?? []), ep.metadata!.annotations![ANN.cluster]!])]);
  const rctx: RouteContext = {
    tenants: [],
    superCache: new MapCache([[R.endpoints, eps]]),
    tenantsBy: (name, value) => (name === ENDPOINTS_BY_IP ? (index.get(value) ?? []) : []),
    tenantOfNamespace: () => undefined,
  };

  it('requeues every tenant Endpoints whose super copy holds the IP of a Pod that came, changed or went', () => {
    expect(endpointsHolding(superPod('p', '10.1.0.5', other), rctx)).toEqual([
      { tenant: tenant.key, namespace: 'app', name: 'db' },
      { tenant: tenant.key, namespace: 'app', name: 'cache' },
      { tenant: other, namespace: 'app', name: 'x' },
    ]);
  });

  it('asks nothing of the cache for a Pod whose IP no Endpoints hold', () => {
    const empty: RouteContext = { ...rctx, superCache: new MapCache() };
    expect(endpointsHolding(superPod('p', '10.9.0.1'), empty)).toEqual([]);
    expect(endpointsHolding(superPod('p', '10.1.0.5', tenant.key, 'Succeeded'), rctx)).toEqual([]);
  });

  it('is declared as a super Pod watch over an index of super Endpoints by address', () => {
    expect(endpointsPlugin.indexes).toEqual([{ name: ENDPOINTS_BY_IP, resource: R.endpoints, values: addressesOf }]);
    expect(endpointsPlugin.watches.find((w) => w.side === 'super')).toMatchObject({
      resource: R.pods,
      map: endpointsHolding,
    });
  });
});

describe('parseCIDRs', () => {
  it('leaves out what is not a CIDR, so it allows nothing', () => {
    const l = parseCIDRs(['10.0.0.0/33', 'nonsense', '10.0.0.0', '10.0.0.0/8/1', 'fe80::/129', '192.0.2.0/24']);
    expect(l.check('10.1.1.1', 'ipv4')).toBe(false);
    expect(l.check('192.0.2.7', 'ipv4')).toBe(true);
    expect(l.check('fe80::1', 'ipv6')).toBe(false);
  });

  it('keeps the built-in endpoints policy equal to the TenantPolicy defaults', () => {
    expect(DEFAULT_ENDPOINTS_POLICY).toEqual({ allowedCIDRs: DEFAULT_POLICY.endpointsAllowedCIDRs });
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

describe('endpoints toSuper: fields the syncer has no rule for', () => {
  it.each([
    ['a subset field newer than the table', { addresses: [{ ip: '10.1.0.5' }], zone: 'a' }, 'subsets[0].zone'],
    [
      'an address field newer than the table',
      { addresses: [{ ip: '10.1.0.5', hostIP: '10.0.0.1' }] },
      'subsets[0].addresses[0].hostIP',
    ],
    [
      'a targetRef field newer than the table',
      { notReadyAddresses: [{ ip: '10.1.0.5', targetRef: { kind: 'Pod', name: 'db-0', cluster: 'b' } }] },
      'subsets[0].notReadyAddresses[0].targetRef.cluster',
    ],
  ])('refuses Endpoints with %s by name; an earlier copy stays as it was', (_, subset, field) => {
    const ctx = testContext({
      tenant: testTenant({ endpoints: endpointsPolicy }),
      tenantCache: new MapCache([[R.services, [service()]]]),
      superCache: new MapCache([[R.pods, ownPods]]),
    });
    const d = endpointsPlugin.toSuper(tenantEp({ subsets: [subset as EndpointSubset] }), superEp, ctx);
    expect(d.object).toBeNull();
    expect(d.skip).toMatchObject({
      reason: FIELDS_REFUSED,
      message: expect.stringContaining(`${field}: no rule exists`),
    });
    expect(d.effects).toMatchObject([{ type: 'event', eventType: 'Warning', reason: FIELDS_REFUSED }]);
  });
});

describe("endpoints toSuper: the tenant's default/kubernetes", () => {
  const apiserver = { host: '172.18.0.1', port: 40123 };
  const kube = (port: number, labels: Record<string, string> = {}): Endpoints => ({
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: { namespace: 'default', name: 'kubernetes', labels },
    subsets: [{ addresses: [{ ip: apiserver.host }], ports: [{ name: 'https', port, protocol: 'TCP' }] }],
  });
  const run = (e: Endpoints) =>
    endpointsPlugin.toSuper(
      e,
      undefined,
      testContext({
        tenant: testTenant({ apiserverEndpoint: apiserver }),
        tenantCache: new MapCache([
          [R.services, [{ ...service(), metadata: { namespace: 'default', name: 'kubernetes' } }]],
        ]),
        superCache: new MapCache([[R.pods, ownPods]]),
      }),
    );

  it('copies its own apiserver endpoint, and the skip-mirror label that says the tenant writes its slices', () => {
    const d = run(kube(apiserver.port, { 'endpointslice.kubernetes.io/skip-mirror': 'true' }));
    expect(d.effects).toBeUndefined();
    expect(d.object).toMatchObject({
      metadata: { labels: { 'endpointslice.kubernetes.io/skip-mirror': 'true' } },
      subsets: [{ addresses: [{ ip: apiserver.host }], ports: [{ port: apiserver.port }] }],
    });
  });

  it("refuses the host on another port (another tenant's apiserver shares it)", () => {
    const d = run(kube(apiserver.port + 1));
    expect(d.object?.subsets).toBeUndefined();
    expect(d.effects).toMatchObject([{ reason: 'EndpointAddressesRefused' }]);
  });
});
