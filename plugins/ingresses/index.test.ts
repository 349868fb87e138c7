import { describe, expect, it } from 'vitest';
import { ANN, LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import type { Decision } from '../../core/plugins/contract.ts';
import { R } from '../../core/kube/resources.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import plugin, { ANNOTATIONS_IGNORED, INGRESS_POLICY_VIOLATION, ingressesPlugin, type Ingress } from './index.ts';

// The transform rows run under a policy granting the fixtures' hosts, classes and annotation; policy rows follow.
const tenant = testTenant({
  ingresses: {
    hosts: ['*.example.com'],
    classes: ['nginx', 'nginx-internal'],
    annotations: ['nginx.ingress.kubernetes.io/rewrite-target'],
  },
});
const superNs = superNamespace(tenant.key, 'web');

const rules = [
  {
    host: 'shop.example.com',
    http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'shop', port: { number: 80 } } } }] },
  },
];
const tls = [{ hosts: ['shop.example.com'], secretName: 'shop-tls' }];
const defaultBackend = { service: { name: 'fallback', port: { name: 'http' } } };
const lb = { ingress: [{ ip: '203.0.113.7', ports: [{ port: 443, protocol: 'TCP' }] }] };

const tenantIngress = (spec: Ingress['spec'], status?: Ingress['status']): Ingress => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {
    namespace: 'web',
    name: 'shop',
    uid: 'tenant-ing-uid',
    resourceVersion: '21',
    generation: 2,
    labels: { app: 'shop', [LABEL.cluster]: 'forged' },
    annotations: { 'nginx.ingress.kubernetes.io/rewrite-target': '/', [ANN.uid]: 'forged' },
    ownerReferences: [{ apiVersion: 'example.com/v1', kind: 'Shop', name: 'shop', uid: 'owner-uid' }],
    finalizers: ['example.com/cleanup'],
  },
  spec,
  ...(status ? { status } : {}),
});
const fullSpec = { ingressClassName: 'nginx', rules, tls, defaultBackend };
/** syncedSpec is fullSpec without the default backend, which the policy always refuses (policy rows below). */
const syncedSpec = { ingressClassName: 'nginx', rules, tls };

const superIngress = (spec: Ingress['spec'], status?: Ingress['status']): Ingress => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {
    namespace: superNs,
    name: 'shop',
    uid: 'super-ing-uid',
    resourceVersion: '300',
    labels: { app: 'shop', [LABEL.managedBy]: MANAGER, [LABEL.cluster]: tenant.key },
    annotations: { [ANN.cluster]: tenant.key, [ANN.uid]: 'tenant-ing-uid' },
  },
  spec,
  ...(status ? { status } : {}),
});

const downCases: Array<{ name: string; tenantObj: Ingress; superObj?: Ingress; want: Decision<Ingress> }> = [
  {
    name: 'new: spec copied with TLS secret and backend names unchanged; no owner, uid, resourceVersion or status',
    tenantObj: tenantIngress(syncedSpec, { loadBalancer: { ingress: [{ ip: '10.0.0.1' }] } }),
    want: {
      object: {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: {
          namespace: superNs,
          name: 'shop',
          labels: { app: 'shop' },
          annotations: { 'nginx.ingress.kubernetes.io/rewrite-target': '/' },
        },
        spec: syncedSpec,
      },
    },
  },
  {
    name: 'existing: built on the super ingress (uid, status and super-only spec fields kept), tenant fields win, removed ones go',
    tenantObj: tenantIngress({ ingressClassName: 'nginx-internal', rules }),
    superObj: superIngress({ ...fullSpec, 'x-defaulted': true }, { loadBalancer: lb }),
    want: {
      object: {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: {
          namespace: superNs,
          name: 'shop',
          uid: 'super-ing-uid',
          resourceVersion: '300',
          labels: { app: 'shop' },
          annotations: { 'nginx.ingress.kubernetes.io/rewrite-target': '/' },
        },
        spec: { ingressClassName: 'nginx-internal', rules, 'x-defaulted': true },
        status: { loadBalancer: lb },
      },
    },
  },
];

describe('ingresses toSuper', () => {
  it.each(downCases)('$name', (c) => {
    const before = structuredClone([c.tenantObj, c.superObj]);
    expect(ingressesPlugin.toSuper(c.tenantObj, c.superObj, testContext({ tenant }))).toStrictEqual(c.want);
    expect([c.tenantObj, c.superObj]).toEqual(before);
  });
});

const upCases: Array<{ name: string; superObj?: Ingress; tenantObj?: Ingress; want: Decision<Ingress> }> = [
  {
    name: 'load balancer status carried up, tenant spec untouched',
    superObj: superIngress({ ...fullSpec, ingressClassName: 'other' }, { loadBalancer: lb }),
    tenantObj: tenantIngress(fullSpec),
    want: { object: tenantIngress(fullSpec, { loadBalancer: lb }) },
  },
  {
    name: 'super ingress without an address: a stale tenant address is cleared',
    superObj: superIngress(fullSpec),
    tenantObj: tenantIngress(fullSpec, { loadBalancer: lb }),
    want: { object: tenantIngress(fullSpec, { loadBalancer: {} }) },
  },
  {
    name: 'super ingress not there (yet): tenant unchanged',
    tenantObj: tenantIngress(fullSpec, { loadBalancer: lb }),
    want: { object: tenantIngress(fullSpec, { loadBalancer: lb }) },
  },
  {
    name: 'tenant ingress gone: nothing to carry up',
    superObj: superIngress(fullSpec, { loadBalancer: lb }),
    want: {
      object: null,
      skip: { reason: 'NoTenantObject', message: 'the tenant ingress is gone; nothing to carry up' },
    },
  },
];

describe('ingresses toTenant', () => {
  it.each(upCases)('$name', (c) => {
    const before = structuredClone([c.superObj, c.tenantObj]);
    expect(ingressesPlugin.toTenant(c.superObj, c.tenantObj)).toStrictEqual(c.want);
    expect([c.superObj, c.tenantObj]).toEqual(before);
  });
});

describe('ingresses manifest', () => {
  it('is an opt-in both plugin of namespaced Ingresses and the default export', () => {
    expect(plugin).toBe(ingressesPlugin);
    expect(plugin.manifest).toEqual({
      apiVersion: 'plugins.tenancy.x-k8s.io/v1',
      name: 'ingresses',
      version: '0.1.0',
      description: expect.any(String),
      resource: { group: 'networking.k8s.io', version: 'v1', resource: 'ingresses', kind: 'Ingress', namespaced: true },
      direction: 'both',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
      optIn: true,
    });
  });
});

describe('ingresses toSuper under the ingresses policy', () => {
  const hijack = { ingressClassName: 'nginx', rules: [{ ...rules[0], host: 'bank.other-tenant.io' }] };
  const event = (reason: string, message: string) => ({
    type: 'event',
    side: 'tenant',
    regarding: {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      namespace: 'web',
      name: 'shop',
      uid: 'tenant-ing-uid',
    },
    eventType: 'Warning',
    reason,
    message,
  });
  const hijackMessage =
    'spec.rules[0].host: host "bank.other-tenant.io" is not among the hosts the tenant\'s policy allows (ingresses.hosts: *.example.com)';

  it("creates nothing for an Ingress claiming another tenant's host and tells the tenant why", () => {
    expect(ingressesPlugin.toSuper(tenantIngress(hijack), undefined, testContext({ tenant }))).toStrictEqual({
      object: null,
      skip: { reason: INGRESS_POLICY_VIOLATION, message: hijackMessage },
      effects: [event(INGRESS_POLICY_VIOLATION, hijackMessage)],
    });
  });

  it('keeps the allowed super Ingress as it was when an update claims a refused host', () => {
    const d = ingressesPlugin.toSuper(tenantIngress(hijack), superIngress(syncedSpec), testContext({ tenant }));
    expect(d.object).toBeNull();
    expect(d.skip?.reason).toBe(INGRESS_POLICY_VIOLATION);
  });

  it('keeps a super Ingress as it was once its host is withdrawn: the platform deletes what it wants gone', () => {
    const narrowed = testTenant({ ingresses: { ...tenant.ingresses, hosts: ['other.example.com'] } });
    const d = ingressesPlugin.toSuper(
      tenantIngress(syncedSpec),
      superIngress(syncedSpec),
      testContext({ tenant: narrowed }),
    );
    expect(d.object).toBeNull();
    expect(d.skip?.reason).toBe(INGRESS_POLICY_VIOLATION);
    expect(d.effects?.map((e) => e.type === 'event' && e.reason)).toEqual([INGRESS_POLICY_VIOLATION]);
  });

  it.each([
    ['ExternalName', true],
    ['ClusterIP', false],
    [undefined, false],
  ])('a backend Service of type %s: refused %s (the shared controller would follow an alias)', (type, refused) => {
    const svc = { apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'web', name: 'shop' }, spec: { type } };
    const tenantCache = new MapCache([[R.services, type ? [svc] : []]]);
    const d = ingressesPlugin.toSuper(tenantIngress(syncedSpec), undefined, testContext({ tenant, tenantCache }));
    const field = 'spec.rules[0].http.paths[0].backend.service.name: Service "shop" is an ExternalName Service';
    if (refused) {
      expect(d.object).toBeNull();
      expect(d.skip?.reason).toBe(INGRESS_POLICY_VIOLATION);
      expect(d.skip?.message).toContain(field);
    } else expect(d.object?.spec?.rules).toEqual(syncedSpec.rules);
  });

  it('copies only the listed annotations and names the dropped ones (a snippet) in a warning', () => {
    const i = tenantIngress(syncedSpec);
    i.metadata!.annotations = {
      ...i.metadata!.annotations,
      'nginx.ingress.kubernetes.io/server-snippet': 'location /admin { proxy_pass http://kube-system; }',
      'kubectl.kubernetes.io/last-applied-configuration': '{}',
    };
    const d = ingressesPlugin.toSuper(i, undefined, testContext({ tenant }));
    expect(d.object?.metadata?.annotations).toEqual({ 'nginx.ingress.kubernetes.io/rewrite-target': '/' });
    expect(d.effects).toEqual([
      event(
        ANNOTATIONS_IGNORED,
        'annotations not copied to the shared ingress controller: nginx.ingress.kubernetes.io/server-snippet ' +
          "(only keys the tenant's policy lists in ingresses.annotations are; snippets never)",
      ),
    ]);
  });
});
