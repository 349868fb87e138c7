import { describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../../core/names/names.ts';
import type { Plugin, RouteContext } from '../../core/plugins/contract.ts';
import { testContext, testTenant } from '../../core/plugins/testing.ts';
import { SUPER_INTERNAL_CIDRS, TENANT_ISOLATION_POLICY } from '../sdk/src/index.ts';
import plugin, {
  clipEgressBlock,
  networkPoliciesPlugin,
  NOT_MANAGED,
  REFUSED,
  RESERVED_NAME,
  translateNamespaceSelector,
} from './index.ts';
import {
  isolationEffect,
  isolationPolicy,
  isolationWatch,
  outsidePeers,
  tenantPeer,
} from '@virtualcluster-ts/plugin-sdk/network';
import type { LabelSelector, NetworkPolicy, NetworkPolicySpec } from '@virtualcluster-ts/plugin-sdk/network';

const tenant = testTenant();
const ctx = testContext({ tenant });
const sns = (ns: string): string => `${tenant.key}-${ns}`;
const NAME = 'kubernetes.io/metadata.name';
const own = [
  { key: LABEL.cluster, operator: 'In', values: [tenant.key] },
  { key: LABEL.managedBy, operator: 'In', values: [MANAGER] },
];
const V4_INTERNAL = SUPER_INTERNAL_CIDRS.filter((c) => !c.includes(':'));
const V6_INTERNAL = SUPER_INTERNAL_CIDRS.filter((c) => c.includes(':'));

describe('translateNamespaceSelector', () => {
  const cases: Array<{ name: string; sel: LabelSelector; want: LabelSelector }> = [
    { name: 'all namespaces ({}) becomes all of the tenant', sel: {}, want: { matchExpressions: own } },
    {
      name: 'a tenant namespace name becomes its super name',
      sel: { matchLabels: { [NAME]: 'db' } },
      want: { matchLabels: { [NAME]: sns('db') }, matchExpressions: own },
    },
    {
      name: 'In and NotIn on names are mapped; Exists is kept',
      sel: {
        matchExpressions: [
          { key: NAME, operator: 'In', values: ['a', 'b'] },
          { key: NAME, operator: 'NotIn', values: ['c'] },
          { key: NAME, operator: 'Exists' },
        ],
      },
      want: {
        matchExpressions: [
          { key: NAME, operator: 'In', values: [sns('a'), sns('b')] },
          { key: NAME, operator: 'NotIn', values: [sns('c')] },
          { key: NAME, operator: 'Exists' },
          ...own,
        ],
      },
    },
    {
      name: 'other labels are kept, ANDed with the tenant',
      sel: { matchLabels: { team: 'a' }, matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] },
      want: {
        matchLabels: { team: 'a' },
        matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }, ...own],
      },
    },
    {
      name: "another tenant's key stays, ANDed with this tenant's: it selects nothing",
      sel: { matchLabels: { [LABEL.cluster]: 'victim-key' } },
      want: { matchLabels: { [LABEL.cluster]: 'victim-key' }, matchExpressions: own },
    },
    {
      name: "another tenant's super namespace name is prefixed as this tenant's namespace",
      sel: { matchLabels: { [NAME]: 'victim-key-app' } },
      want: { matchLabels: { [NAME]: sns('victim-key-app') }, matchExpressions: own },
    },
    {
      name: 'kube-system is the tenant kube-system, not the super one',
      sel: { matchLabels: { [NAME]: 'kube-system' } },
      want: { matchLabels: { [NAME]: sns('kube-system') }, matchExpressions: own },
    },
  ];
  it.each(cases)('$name', ({ sel, want }) => {
    expect(translateNamespaceSelector(sel, ctx)).toEqual(want);
  });
});

describe('clipEgressBlock', () => {
  const field = 'spec.egress[0].to[0].ipBlock';
  it.each([
    {
      name: 'everywhere leaves every internal IPv4 range out',
      block: { cidr: '0.0.0.0/0' },
      want: { cidr: '0.0.0.0/0', except: V4_INTERNAL },
    },
    { name: 'everywhere in IPv6', block: { cidr: '::/0' }, want: { cidr: '::/0', except: V6_INTERNAL } },
    {
      name: 'an except that already covers a range is kept, the range not added twice',
      block: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8'] },
      want: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', ...V4_INTERNAL.filter((c) => c !== '10.0.0.0/8')] },
    },
    { name: 'a public block is kept as is', block: { cidr: '203.0.113.0/24' }, want: { cidr: '203.0.113.0/24' } },
    {
      name: 'a block holding one range gets that range excepted',
      block: { cidr: '8.0.0.0/5' },
      want: { cidr: '8.0.0.0/5', except: ['10.0.0.0/8'] },
    },
  ])('$name', ({ block, want }) => {
    expect(clipEgressBlock(block, field)).toEqual(want);
  });

  it.each([
    { block: { cidr: '10.96.0.10/32' }, msg: `${field}.cidr: 10.96.0.10/32 lies inside 10.0.0.0/8` },
    { block: { cidr: '169.254.169.254/32' }, msg: `${field}.cidr: 169.254.169.254/32 lies inside 169.254.0.0/16` },
    { block: { cidr: 'fd00::/64' }, msg: `${field}.cidr: fd00::/64 lies inside fc00::/7` },
    { block: { cidr: 'nonsense' }, msg: `${field}.cidr: "nonsense" is not a CIDR` },
    { block: { cidr: '0.0.0.0/0', except: ['x'] }, msg: `${field}.except[0]: "x" is not a CIDR` },
  ])('refuses $block.cidr', ({ block, msg }) => {
    expect(() => clipEgressBlock(block, field)).toThrow(msg);
  });
});

const tenantNP = (spec: NetworkPolicySpec, name = 'web'): NetworkPolicy => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { namespace: 'app', name, uid: 'np-uid', resourceVersion: '5', labels: { app: 'web' } },
  spec,
});

const superNP = (spec: NetworkPolicySpec): NetworkPolicy => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { namespace: sns('app'), name: 'web', labels: { app: 'web' } },
  spec,
});

/** syncedNP is a super policy the syncer wrote for the tenant policy app/web, with the server's fields. */
const syncedNP = (spec: NetworkPolicySpec): NetworkPolicy => ({
  ...superNP(spec),
  metadata: {
    namespace: sns('app'),
    name: 'web',
    uid: 's-uid',
    resourceVersion: '9',
    labels: { app: 'web', [LABEL.managedBy]: MANAGER, [LABEL.cluster]: tenant.key },
    annotations: { [ANN.cluster]: tenant.key, [ANN.namespace]: 'app', [ANN.name]: 'web', [ANN.uid]: 'np-uid' },
  },
});

describe('networkpolicies toSuper', () => {
  const cases: Array<{ name: string; spec: NetworkPolicySpec; want: NetworkPolicySpec }> = [
    {
      name: 'podSelector, policyTypes, ports and same-namespace peers are kept',
      spec: {
        podSelector: { matchLabels: { app: 'db' } },
        policyTypes: ['Ingress'],
        ingress: [
          { from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ protocol: 'TCP', port: 5432 }] },
        ],
      },
      want: {
        podSelector: { matchLabels: { app: 'db' } },
        policyTypes: ['Ingress'],
        ingress: [
          { from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ protocol: 'TCP', port: 5432 }] },
        ],
      },
    },
    {
      name: 'from all namespaces ({}) means all namespaces of the tenant',
      spec: {
        podSelector: {},
        ingress: [{ from: [{ namespaceSelector: {}, podSelector: { matchLabels: { a: 'b' } } }] }],
      },
      want: {
        podSelector: {},
        ingress: [
          { from: [{ namespaceSelector: { matchExpressions: own }, podSelector: { matchLabels: { a: 'b' } } }] },
        ],
      },
    },
    {
      name: 'egress to a named namespace goes to its super namespace',
      spec: {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [{ to: [{ namespaceSelector: { matchLabels: { [NAME]: 'db' } } }] }],
      },
      want: {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [{ to: [{ namespaceSelector: { matchLabels: { [NAME]: sns('db') }, matchExpressions: own } }] }],
      },
    },
    {
      name: 'egress to everywhere is everywhere the tenant may go',
      spec: {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [{ ports: [{ protocol: 'TCP', port: 443 }] }, { to: [] }],
      },
      want: {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [
          {
            to: [{ namespaceSelector: { matchExpressions: own } }, ...outsidePeers()],
            ports: [{ protocol: 'TCP', port: 443 }],
          },
          { to: [{ namespaceSelector: { matchExpressions: own } }, ...outsidePeers()] },
        ],
      },
    },
    {
      name: 'egress ipBlocks are clipped; ingress ipBlocks and ingress from everywhere are kept',
      spec: {
        podSelector: {},
        ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8' } }] }, {}],
        egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['203.0.113.0/24'] } }] }],
      },
      want: {
        podSelector: {},
        ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8' } }] }, {}],
        egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['203.0.113.0/24', ...V4_INTERNAL] } }] }],
      },
    },
  ];
  it.each(cases)('$name', ({ spec, want }) => {
    const d = networkPoliciesPlugin.toSuper(tenantNP(spec), undefined, ctx);
    expect(d.skip).toBeUndefined();
    expect(d.effects ?? []).toEqual([]);
    expect(d.object).toEqual(superNP(want));
  });

  it('builds on the existing super object and keeps its server fields', () => {
    const existing = syncedNP({ podSelector: {} });
    const d = networkPoliciesPlugin.toSuper(tenantNP({ podSelector: { matchLabels: { x: 'y' } } }), existing, ctx);
    expect(d.object?.metadata).toMatchObject({
      uid: 's-uid',
      resourceVersion: '9',
      namespace: sns('app'),
      name: 'web',
    });
    expect(d.object?.spec).toEqual({ podSelector: { matchLabels: { x: 'y' } } });
  });

  it('refuses an egress block inside the super ranges, naming the field, and removes an earlier copy', () => {
    const spec = {
      podSelector: {},
      egress: [{ to: [{ podSelector: {} }, { ipBlock: { cidr: '169.254.169.254/32' } }] }],
    };
    const d = networkPoliciesPlugin.toSuper(tenantNP(spec), syncedNP({ podSelector: {} }), ctx);
    expect(d.object).toBeNull();
    expect(d.skip).toBeUndefined();
    expect(d.effects).toEqual([
      {
        type: 'event',
        side: 'tenant',
        regarding: {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          namespace: 'app',
          name: 'web',
          uid: 'np-uid',
        },
        eventType: 'Warning',
        reason: REFUSED,
        message:
          'not synced: spec.egress[0].to[1].ipBlock.cidr: 169.254.169.254/32 lies inside 169.254.0.0/16, an address range of the super cluster',
      },
    ]);
  });

  it('never syncs a tenant policy named like the isolation policy, and never deletes the super one', () => {
    const d = networkPoliciesPlugin.toSuper(
      tenantNP({ podSelector: {}, ingress: [{}] }, TENANT_ISOLATION_POLICY),
      undefined,
      ctx,
    );
    expect(d.object).toBeNull();
    expect(d.skip?.reason).toBe(RESERVED_NAME);
    expect(d.effects?.[0]).toMatchObject({ type: 'event', eventType: 'Warning', reason: RESERVED_NAME });
  });

  it("never adopts a super policy the syncer did not write (the platform's)", () => {
    const platform: NetworkPolicy = {
      ...superNP({ podSelector: {} }),
      metadata: { namespace: sns('app'), name: 'web' },
    };
    const d = networkPoliciesPlugin.toSuper(tenantNP({ podSelector: {}, ingress: [{}] }), platform, ctx);
    expect(d.object).toBeNull();
    expect(d.skip?.reason).toBe(NOT_MANAGED);
    expect(d.effects?.[0]).toMatchObject({ type: 'event', eventType: 'Warning', reason: NOT_MANAGED });
  });

  it('is a built-in down plugin for networking.k8s.io NetworkPolicies', () => {
    const p: Plugin = plugin;
    expect(p.manifest).toMatchObject({ name: 'networkpolicies', direction: 'down', sourceOfTruth: 'tenant' });
    expect(p.manifest.resource).toEqual({ ...R.networkpolicies });
  });
});

describe('isolationPolicy', () => {
  it('admits only the tenant and lets Pods reach the tenant (its DNS too), their apiserver and the outside', () => {
    const t = testTenant({ apiserverEndpoint: { host: '127.0.0.1', port: 6443 } });
    expect(isolationPolicy(t)).toEqual({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: TENANT_ISOLATION_POLICY },
      spec: {
        podSelector: {},
        policyTypes: ['Ingress', 'Egress'],
        ingress: [
          {
            from: [
              { namespaceSelector: { matchLabels: { [LABEL.cluster]: t.key } } },
              { namespaceSelector: { matchLabels: { 'tenancy.x-k8s.io/ingress': 'true' } } },
            ],
          },
        ],
        egress: [
          { to: [{ namespaceSelector: { matchLabels: { [LABEL.cluster]: t.key } } }] },
          { to: [{ ipBlock: { cidr: '127.0.0.1/32' } }], ports: [{ protocol: 'TCP', port: 6443 }] },
          {
            to: [
              { ipBlock: { cidr: '0.0.0.0/0', except: V4_INTERNAL } },
              { ipBlock: { cidr: '::/0', except: V6_INTERNAL } },
            ],
          },
        ],
      },
    });
  });

  it("lets Pods reach the tenant's DNS view beside its apiserver (the DNS server reads its Services there)", () => {
    const t = testTenant({
      apiserverEndpoint: { host: '10.88.0.1', port: 21000 },
      dnsApiEndpoint: { host: '10.88.0.1', port: 21001 },
    });
    const egress = isolationPolicy(t).spec?.egress ?? [];
    expect(egress.slice(1, 3)).toEqual([
      { to: [{ ipBlock: { cidr: '10.88.0.1/32' } }], ports: [{ protocol: 'TCP', port: 21000 }] },
      { to: [{ ipBlock: { cidr: '10.88.0.1/32' } }], ports: [{ protocol: 'TCP', port: 21001 }] },
    ]);
    expect(egress).toHaveLength(4);
  });

  it('adds no address rule for an apiserver reached by name (native: inside the tenant already)', () => {
    const t = testTenant({ apiserverEndpoint: { host: `apiserver.${tenant.key}.svc`, port: 6443 } });
    const egress = isolationPolicy(t).spec?.egress ?? [];
    expect(egress).toHaveLength(2);
    expect(egress[0]).toEqual({ to: [tenantPeer(t)] });
  });

  it('is asked for by an effect naming the tenant namespace', () => {
    expect(isolationEffect('app', tenant)).toEqual({
      type: 'superNetworkPolicy',
      namespace: 'app',
      policy: isolationPolicy(tenant),
    });
  });
});

describe('isolationWatch', () => {
  const rctx = {
    tenantOfNamespace: (n: string) => (n === sns('app') ? { tenant: tenant.key, namespace: 'app' } : undefined),
  } as Pick<RouteContext, 'tenantOfNamespace'> as RouteContext;
  const np = (namespace: string, name: string): NetworkPolicy => ({ metadata: { namespace, name } });
  it.each([
    {
      name: 'the isolation policy requeues its tenant namespace',
      obj: np(sns('app'), TENANT_ISOLATION_POLICY),
      want: [{ tenant: tenant.key, namespace: '', name: 'app' }],
    },
    { name: 'a tenant policy does not', obj: np(sns('app'), 'web'), want: [] },
    { name: 'nor one in a namespace no tenant owns', obj: np('kube-system', TENANT_ISOLATION_POLICY), want: [] },
  ])('$name', ({ obj, want }) => {
    expect(isolationWatch.side === 'super' && isolationWatch.map(obj, rctx)).toEqual(want);
  });
});

describe("the policy's internal ranges", () => {
  const narrow = testTenant({ network: { internalCIDRs: ['10.0.0.0/8'] } });
  const nctx = testContext({ tenant: narrow });

  it('shape the isolation policy: only they are left out of egress to the outside', () => {
    expect(isolationPolicy(narrow).spec?.egress?.at(-1)).toEqual({
      to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8'] } }, { ipBlock: { cidr: '::/0' } }],
    });
  });

  it('decide which tenant egress blocks are clipped or refused', () => {
    const spec = (cidr: string): NetworkPolicySpec => ({ podSelector: {}, egress: [{ to: [{ ipBlock: { cidr } }] }] });
    expect(networkPoliciesPlugin.toSuper(tenantNP(spec('192.168.1.0/24')), undefined, nctx).object?.spec).toEqual(
      spec('192.168.1.0/24'),
    );
    const refused = networkPoliciesPlugin.toSuper(tenantNP(spec('10.1.0.0/16')), undefined, nctx);
    expect(refused.object).toBeNull();
    expect(refused.effects?.[0]).toMatchObject({ reason: REFUSED });
    expect(networkPoliciesPlugin.toSuper(tenantNP(spec('0.0.0.0/0')), undefined, nctx).object?.spec).toEqual({
      podSelector: {},
      egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8'] } }] }],
    });
  });
});

describe('networkpolicies toSuper: fields the syncer has no rule for', () => {
  it.each([
    ['a spec field newer than the table', { podSelector: {}, futureScope: 'cluster' }, 'spec.futureScope'],
    [
      'a peer field newer than the table',
      { podSelector: {}, egress: [{ to: [{ serviceAccountSelector: { matchLabels: { a: 'b' } } }] }] },
      'spec.egress[0].to[0].serviceAccountSelector',
    ],
    [
      'a port field newer than the table',
      { podSelector: {}, ingress: [{ ports: [{ port: 80, hostNetwork: true }] }] },
      'spec.ingress[0].ports[0].hostNetwork',
    ],
  ])('refuses a policy with %s by name, and removes an earlier copy', (_, spec, field) => {
    const d = networkPoliciesPlugin.toSuper(tenantNP(spec as NetworkPolicySpec), undefined, ctx);
    expect(d.object).toBeNull();
    expect(d.skip).toBeUndefined();
    expect(d.effects).toMatchObject([
      { type: 'event', reason: REFUSED, message: expect.stringContaining(`not synced: ${field}: no rule exists`) },
    ]);
  });
});
