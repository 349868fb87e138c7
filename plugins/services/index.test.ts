import { describe, expect, it } from 'vitest';
import { ANN, LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import { MAX_RECORDED_ENDPOINTS, R, readyEndpointsOn, superClusterIPOn } from '@virtualcluster-ts/plugin-sdk';
import type { Decision, Plugin } from '../../core/plugins/contract.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import plugin, {
  matchPort,
  readyAddresses,
  serviceOfSlice,
  SERVICE_POLICY_VIOLATION,
  servicesPlugin,
  SYNCED_CONDITION,
  TENANT_ONLY,
  TRIED_TENANT_PORTS,
  type Service,
  type ServicePort,
  type ServiceSpec,
} from './index.ts';
import { CAP_RETRY_MS } from './policy.ts';

const tenant = testTenant();
const sns = superNamespace(tenant.key, 'app');
const frozen = <T>(o: T): T => {
  if (o && typeof o === 'object') for (const v of Object.values(Object.freeze(o))) frozen(v);
  return o;
};

const http: ServicePort = { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 };
const https: ServicePort = { name: 'https', protocol: 'TCP', port: 443, targetPort: 8443 };

/** tenantSpec is a spec as the tenant apiserver returns it: its own cluster IP and defaults. */
const tenantSpec = (over: ServiceSpec = {}): ServiceSpec => ({
  type: 'ClusterIP',
  clusterIP: '10.96.0.20',
  clusterIPs: ['10.96.0.20'],
  ipFamilies: ['IPv4'],
  ipFamilyPolicy: 'SingleStack',
  ports: [http],
  selector: { app: 'web' },
  sessionAffinity: 'None',
  internalTrafficPolicy: 'Cluster',
  ...over,
});

const tenantSvc = (
  spec: ServiceSpec = tenantSpec(),
  meta: Record<string, unknown> = {},
  status?: Service['status'],
): Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { namespace: 'app', name: 'web', uid: 'tenant-uid', resourceVersion: '6', labels: { app: 'web' }, ...meta },
  spec,
  status: status ?? { loadBalancer: {} },
});

const superServerMeta = {
  namespace: sns,
  name: 'web',
  uid: 'super-uid',
  resourceVersion: '70',
  creationTimestamp: '2025-11-02T00:00:00Z',
  finalizers: ['service.kubernetes.io/load-balancer-cleanup'],
};

/** superSvc is the super Service as the apiserver returns it: the super's cluster IP, node ports and defaults. */
const superSvc = (spec: ServiceSpec, status?: Service['status']): Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: {
    ...superServerMeta,
    labels: { app: 'old', [LABEL.managedBy]: MANAGER },
    annotations: { [ANN.tenantClusterIP]: '10.96.0.20', [ANN.cluster]: tenant.key },
  },
  spec: {
    clusterIP: '10.0.0.5',
    clusterIPs: ['10.0.0.5'],
    ipFamilies: ['IPv4'],
    ipFamilyPolicy: 'SingleStack',
    ...spec,
  },
  status: status ?? { loadBalancer: {} },
});

const createdMeta = (ip = '10.96.0.20') => ({
  namespace: sns,
  name: 'web',
  labels: { app: 'web' },
  annotations: { [ANN.tenantClusterIP]: ip },
});
const updatedMeta = {
  ...superServerMeta,
  labels: { app: 'web' },
  annotations: { [ANN.tenantClusterIP]: '10.96.0.20' },
};
const superIPs = { clusterIP: '10.0.0.5', clusterIPs: ['10.0.0.5'], ipFamilies: ['IPv4'] };
const superStatus = { status: { loadBalancer: {} } };
const mirrored = {
  selector: { app: 'web' },
  sessionAffinity: 'None',
  internalTrafficPolicy: 'Cluster',
  ipFamilyPolicy: 'SingleStack',
};

interface DownCase {
  name: string;
  tenant: Service;
  super?: Service;
  opaque?: string[];
  want: Decision<Service>;
}

const down: DownCase[] = [
  {
    name: "create ClusterIP: no cluster IP(s) or IP families (the super assigns them); the tenant's IP recorded in an annotation",
    tenant: tenantSvc(),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: createdMeta(),
        spec: { type: 'ClusterIP', ports: [http], ...mirrored },
      },
    },
  },
  {
    name: 'create NodePort: node ports zeroed, traffic policies copied',
    tenant: tenantSvc(
      tenantSpec({
        type: 'NodePort',
        externalTrafficPolicy: 'Local',
        ports: [
          { ...http, nodePort: 30001 },
          { ...https, nodePort: 30002 },
        ],
      }),
    ),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: createdMeta(),
        spec: { type: 'NodePort', externalTrafficPolicy: 'Local', ports: [http, https], ...mirrored },
      },
    },
  },
  {
    name: 'create headless: stays headless',
    tenant: tenantSvc(tenantSpec({ clusterIP: 'None', clusterIPs: ['None'], publishNotReadyAddresses: true })),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: createdMeta('None'),
        spec: {
          type: 'ClusterIP',
          clusterIP: 'None',
          clusterIPs: ['None'],
          ports: [http],
          publishNotReadyAddresses: true,
          ...mirrored,
        },
      },
    },
  },
  {
    name: "update NodePort: the super's cluster IPs and node ports (matched by name, else port) are kept over the tenant's",
    tenant: tenantSvc(
      tenantSpec({
        type: 'NodePort',
        externalTrafficPolicy: 'Cluster',
        ports: [
          { ...http, port: 8000, nodePort: 30001 },
          { name: 'tls', protocol: 'TCP', port: 443, targetPort: 8443, nodePort: 30002 },
          { name: 'metrics', protocol: 'TCP', port: 9090, nodePort: 30003 },
        ],
      }),
    ),
    super: superSvc({
      type: 'NodePort',
      externalTrafficPolicy: 'Cluster',
      ports: [
        { ...http, nodePort: 31000 },
        { ...https, nodePort: 31001 },
      ],
      ...mirrored,
    }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: updatedMeta,
        ...superStatus,
        spec: {
          ...superIPs,
          type: 'NodePort',
          externalTrafficPolicy: 'Cluster',
          ports: [
            { ...http, port: 8000, nodePort: 31000 },
            { name: 'tls', protocol: 'TCP', port: 443, targetPort: 8443, nodePort: 31001 },
            { name: 'metrics', protocol: 'TCP', port: 9090 },
          ],
          ...mirrored,
        },
      },
    },
  },
  {
    name: 'update NodePort -> ClusterIP: node ports and externalTrafficPolicy dropped',
    tenant: tenantSvc(),
    super: superSvc({
      type: 'NodePort',
      externalTrafficPolicy: 'Cluster',
      ports: [{ ...http, nodePort: 31000 }],
      ...mirrored,
    }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: updatedMeta,
        ...superStatus,
        spec: { ...superIPs, type: 'ClusterIP', ports: [http], ...mirrored },
      },
    },
  },
  {
    name: 'update -> ExternalName: the super copy is deleted, the tenant told why (no ingress controller follows it)',
    tenant: tenantSvc({ type: 'ExternalName', externalName: 'db.example.com', sessionAffinity: 'None' }),
    super: superSvc({ type: 'ClusterIP', ports: [http], ...mirrored }),
    want: {
      object: null,
      effects: [
        {
          type: 'tenantCondition',
          namespace: 'app',
          name: 'web',
          uid: 'tenant-uid',
          condition: {
            type: SYNCED_CONDITION,
            status: 'False',
            reason: TENANT_ONLY,
            message: expect.stringContaining('not copied to the super cluster') as string,
          },
        },
      ],
    },
  },
  {
    name: 'ExternalName already told: nothing in the super, no effect again',
    tenant: tenantSvc({ type: 'ExternalName', externalName: 'db.example.com' }, undefined, {
      conditions: [
        {
          type: SYNCED_CONDITION,
          status: 'False',
          reason: TENANT_ONLY,
          message:
            "an ExternalName Service is answered by the tenant's own DNS and not copied to the super cluster, whose " +
            'shared ingress controllers would follow the alias from the platform network; an Ingress cannot use it as ' +
            'a backend',
        },
      ],
    }),
    want: { object: null },
  },
  {
    name: 'ExternalName -> ClusterIP over a copy an older syncer left: the old externalName does not stay',
    tenant: tenantSvc(tenantSpec()),
    super: superSvc({ type: 'ExternalName', externalName: 'db.example.com.', sessionAffinity: 'None' }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { ...updatedMeta },
        ...superStatus,
        spec: {
          ...superIPs,
          type: 'ClusterIP',
          ports: [http],
          selector: { app: 'web' },
          sessionAffinity: 'None',
          internalTrafficPolicy: 'Cluster',
          ipFamilyPolicy: 'SingleStack',
        },
      },
    },
  },
  {
    name: "update LoadBalancer Local: the super's healthCheckNodePort and node ports kept, LB fields copied",
    tenant: tenantSvc(
      tenantSpec({
        type: 'LoadBalancer',
        externalTrafficPolicy: 'Local',
        healthCheckNodePort: 32000,
        loadBalancerClass: 'example.com/lb',
        loadBalancerSourceRanges: ['10.0.0.0/8'],
        allocateLoadBalancerNodePorts: true,
        ports: [{ ...http, nodePort: 30001 }],
      }),
    ),
    super: superSvc({
      type: 'LoadBalancer',
      externalTrafficPolicy: 'Local',
      healthCheckNodePort: 31500,
      loadBalancerClass: 'example.com/lb',
      allocateLoadBalancerNodePorts: true,
      ports: [{ ...http, nodePort: 31000 }],
      ...mirrored,
    }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: updatedMeta,
        ...superStatus,
        spec: {
          ...superIPs,
          ...mirrored,
          type: 'LoadBalancer',
          externalTrafficPolicy: 'Local',
          healthCheckNodePort: 31500,
          loadBalancerClass: 'example.com/lb',
          loadBalancerSourceRanges: ['10.0.0.0/8'],
          allocateLoadBalancerNodePorts: true,
          ports: [{ ...http, nodePort: 31000 }],
        },
      },
    },
  },
  {
    name: 'update LoadBalancer Local -> Cluster: healthCheckNodePort dropped',
    tenant: tenantSvc(
      tenantSpec({ type: 'LoadBalancer', externalTrafficPolicy: 'Cluster', ports: [{ ...http, nodePort: 30001 }] }),
    ),
    super: superSvc({
      type: 'LoadBalancer',
      externalTrafficPolicy: 'Local',
      healthCheckNodePort: 31500,
      ports: [{ ...http, nodePort: 31000 }],
      ...mirrored,
    }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: updatedMeta,
        ...superStatus,
        spec: {
          ...superIPs,
          ...mirrored,
          type: 'LoadBalancer',
          externalTrafficPolicy: 'Cluster',
          ports: [{ ...http, nodePort: 31000 }],
        },
      },
    },
  },
  {
    name: 'update: selector removed in the tenant is removed in the super',
    tenant: tenantSvc(tenantSpec({ selector: undefined })),
    super: superSvc({ type: 'ClusterIP', ports: [http], ...mirrored }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: updatedMeta,
        ...superStatus,
        spec: {
          ...superIPs,
          type: 'ClusterIP',
          ports: [http],
          sessionAffinity: 'None',
          internalTrafficPolicy: 'Cluster',
          ipFamilyPolicy: 'SingleStack',
        },
      },
    },
  },
  {
    name: 'reserved keys: forged uid, a forged tenant cluster IP and the super cluster IP shown to the tenant never reach the super',
    tenant: tenantSvc(tenantSpec(), {
      annotations: { [ANN.uid]: 'forged', [ANN.tenantClusterIP]: '6.6.6.6', [ANN.superClusterIP]: '10.0.0.5' },
    }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: createdMeta(),
        spec: { type: 'ClusterIP', ports: [http], ...mirrored },
      },
    },
  },
  {
    name: "opaque prefixes: the tenant's opaque keys are dropped",
    opaque: ['secret.example.com/'],
    tenant: tenantSvc(tenantSpec(), {
      labels: { app: 'web', 'secret.example.com/x': 'y' },
      annotations: { 'secret.example.com/z': 'w' },
    }),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: createdMeta(),
        spec: { type: 'ClusterIP', ports: [http], ...mirrored },
      },
    },
  },
];

describe('services toSuper', () => {
  it.each(down)('$name', (c) => {
    // These rows are about the transform; the policy rows are in policy.test.ts and below.
    const services = { nodePort: { allowed: true }, loadBalancer: { allowed: true, classes: ['example.com/lb'] } };
    const ctx = testContext({ tenant: testTenant({ opaqueMetaPrefixes: c.opaque ?? [], services }) });
    expect(
      servicesPlugin.toSuper(frozen(structuredClone(c.tenant)), c.super && frozen(structuredClone(c.super)), ctx),
    ).toEqual(c.want);
  });
});

describe('services toSuper: the tenant node ports, where the policy keeps them', () => {
  const nodePortSvc = (type = 'NodePort') =>
    tenantSvc(
      tenantSpec({
        type,
        ports: [
          { ...http, nodePort: 30001 },
          { ...https, nodePort: 30002 },
        ],
      }),
    );
  const assigned: Service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { ...superServerMeta },
    spec: {
      type: 'NodePort',
      ports: [
        { ...http, nodePort: 31000 },
        { ...https, nodePort: 31001 },
      ],
    },
  };
  const ctxWith = (keepTenantPorts: boolean | undefined, remembered?: string) => ({
    ...testContext({
      tenant: testTenant({
        services: {
          nodePort: { allowed: true, ...(keepTenantPorts !== undefined && { keepTenantPorts }) },
          loadBalancer: { allowed: true, ...(keepTenantPorts !== undefined && { keepTenantPorts }) },
        },
      }),
    }),
    ...(remembered !== undefined && { remembered }),
  });
  const ports = (d: Decision<Service>) => d.object?.spec?.ports?.map((p) => p.nodePort ?? null);

  it.each<[string, Service, Service | undefined, ReturnType<typeof ctxWith>, Array<number | null>, string | undefined]>(
    [
      [
        'kept: a create asks for the tenant numbers, noting it',
        nodePortSvc(),
        undefined,
        ctxWith(true),
        [30001, 30002],
        TRIED_TENANT_PORTS,
      ],
      [
        'kept, LoadBalancer too',
        nodePortSvc('LoadBalancer'),
        undefined,
        ctxWith(true),
        [30001, 30002],
        TRIED_TENANT_PORTS,
      ],
      [
        'kept, but the create asked once already: the super cluster picks',
        nodePortSvc(),
        undefined,
        ctxWith(true, TRIED_TENANT_PORTS),
        [null, null],
        undefined,
      ],
      [
        'not kept (the default): the super cluster picks',
        nodePortSvc(),
        undefined,
        ctxWith(undefined),
        [null, null],
        undefined,
      ],
      [
        'kept, the copy exists: its own numbers stay',
        nodePortSvc(),
        assigned,
        ctxWith(true),
        [31000, 31001],
        undefined,
      ],
      ['kept, a ClusterIP Service has none', tenantSvc(), undefined, ctxWith(true), [null], undefined],
    ],
  )('%s', (_n, t, sup, ctx, want, note) => {
    const d = servicesPlugin.toSuper(frozen(structuredClone(t)), sup && frozen(structuredClone(sup)), ctx);
    expect(ports(d)).toEqual(want);
    expect(d.remember).toBe(note);
  });
});

interface UpCase {
  name: string;
  super: Service;
  tenant: Service;
  want: Decision<Service>;
}

const lbIngress = { loadBalancer: { ingress: [{ ip: '203.0.113.7', ipMode: 'VIP' }] } };

const up: UpCase[] = [
  {
    name: "ClusterIP: the tenant keeps its own cluster IP and is shown the super's in an annotation",
    super: superSvc({ type: 'ClusterIP', ports: [http], ...mirrored }),
    tenant: tenantSvc(),
    want: { object: tenantSvc(tenantSpec(), { annotations: { [ANN.superClusterIP]: '10.0.0.5' } }) },
  },
  {
    name: 'LoadBalancer: load balancer status copied; tenant node ports follow the super where the super assigned one',
    super: superSvc(
      {
        type: 'LoadBalancer',
        ports: [
          { ...http, nodePort: 31000 },
          { ...https, nodePort: 0 },
        ],
        ...mirrored,
      },
      lbIngress,
    ),
    tenant: tenantSvc(
      tenantSpec({
        type: 'LoadBalancer',
        ports: [
          { ...http, nodePort: 30001 },
          { ...https, nodePort: 30002 },
        ],
      }),
      {
        annotations: { keep: 'me' },
      },
    ),
    want: {
      object: tenantSvc(
        tenantSpec({
          type: 'LoadBalancer',
          ports: [
            { ...http, nodePort: 31000 },
            { ...https, nodePort: 30002 },
          ],
        }),
        { annotations: { keep: 'me', [ANN.superClusterIP]: '10.0.0.5' } },
        lbIngress,
      ),
    },
  },
  {
    name: 'in sync: the desired tenant object equals the tenant object',
    super: superSvc({ type: 'NodePort', ports: [{ ...http, nodePort: 31000 }], ...mirrored }),
    tenant: tenantSvc(tenantSpec({ type: 'NodePort', ports: [{ ...http, nodePort: 31000 }] }), {
      annotations: { [ANN.superClusterIP]: '10.0.0.5' },
    }),
    want: {
      object: tenantSvc(tenantSpec({ type: 'NodePort', ports: [{ ...http, nodePort: 31000 }] }), {
        annotations: { [ANN.superClusterIP]: '10.0.0.5' },
      }),
    },
  },
  {
    name: 'ClusterIP tenant: stale super node ports are not copied; a stale load balancer status is cleared',
    super: superSvc({ type: 'NodePort', ports: [{ ...http, nodePort: 31000 }], ...mirrored }),
    tenant: tenantSvc(tenantSpec(), { annotations: { [ANN.superClusterIP]: '10.0.0.5' } }, lbIngress),
    want: {
      object: tenantSvc(tenantSpec(), { annotations: { [ANN.superClusterIP]: '10.0.0.5' } }, { loadBalancer: {} }),
    },
  },
  {
    name: 'headless super: the annotation shows None',
    super: superSvc({ clusterIP: 'None', clusterIPs: ['None'], type: 'ClusterIP', ports: [http], ...mirrored }),
    tenant: tenantSvc(tenantSpec({ clusterIP: 'None', clusterIPs: ['None'] })),
    want: {
      object: tenantSvc(tenantSpec({ clusterIP: 'None', clusterIPs: ['None'] }), {
        annotations: { [ANN.superClusterIP]: 'None' },
      }),
    },
  },
];

describe('services toTenant', () => {
  it.each(up)('$name', (c) => {
    expect(
      servicesPlugin.toTenant(frozen(structuredClone(c.super)), frozen(structuredClone(c.tenant)), testContext()),
    ).toEqual(c.want);
  });
});

describe('services toTenant with several super clusters', () => {
  // Each super cluster's syncer records its own copy's IP under its own key and leaves the others' (and the
  // single-cluster key) alone, so two syncers of one spread namespace never flip one annotation between them.
  // Each also records its copy's ready addresses (none here: no EndpointSlice in the cache).
  const r1 = superClusterIPOn('r1')!;
  const r2 = superClusterIPOn('r2')!;
  const e1 = readyEndpointsOn('r1')!;
  const e2 = readyEndpointsOn('r2')!;
  it.each([
    { name: 'first record on r2', cluster: 'r2', had: {}, want: { [r2]: '10.0.0.5', [e2]: '' } },
    {
      name: "r1's record is kept",
      cluster: 'r2',
      had: { [r1]: '10.9.9.9', [e1]: '10.244.1.5' },
      want: { [r1]: '10.9.9.9', [e1]: '10.244.1.5', [r2]: '10.0.0.5', [e2]: '' },
    },
    {
      name: 'a stale own record is replaced',
      cluster: 'r2',
      had: { [r2]: '10.1.1.1', [e2]: '10.244.2.2' },
      want: { [r2]: '10.0.0.5', [e2]: '' },
    },
    {
      name: 'the single-cluster key is not touched',
      cluster: 'r1',
      had: { [ANN.superClusterIP]: '10.7.7.7' },
      want: { [ANN.superClusterIP]: '10.7.7.7', [r1]: '10.0.0.5', [e1]: '' },
    },
  ])('$name', ({ cluster, had, want }) => {
    const got = servicesPlugin.toTenant(
      frozen(superSvc({ type: 'ClusterIP', ports: [http], ...mirrored })),
      frozen(tenantSvc(tenantSpec(), { annotations: had })),
      testContext({ superCluster: cluster, sharedTenants: true }),
    );
    expect(got.object?.metadata?.annotations).toEqual(want);
  });

  it('a super cluster name too long for an annotation key gets no record', () => {
    expect(superClusterIPOn('a'.repeat(53))).toBe(`${ANN.superClusterIP}.${'a'.repeat(53)}`);
    expect(superClusterIPOn('a'.repeat(54))).toBeUndefined();
    expect(readyEndpointsOn('a'.repeat(53))).toBe(`transparency.tenancy.x-k8s.io/endpoints.${'a'.repeat(53)}`);
    expect(readyEndpointsOn('a'.repeat(54))).toBeUndefined();
  });

  const slice = (name: string, service: string, endpoints: unknown[], namespace = sns) => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace, labels: { 'kubernetes.io/service-name': service, [LABEL.managedBy]: MANAGER } },
    addressType: 'IPv4',
    endpoints,
  });
  const up = (slices: unknown[], superCluster = 'r1', sharedTenants = true) =>
    servicesPlugin.toTenant(
      frozen(superSvc({ type: 'ClusterIP', ports: [http], ...mirrored })),
      frozen(tenantSvc(tenantSpec())),
      testContext({
        superCluster,
        sharedTenants,
        superCache: new MapCache([[R.endpointslices, slices as never]]),
      }),
    ).object?.metadata?.annotations;
  it.each([
    {
      name: 'ready and unset-ready endpoints of its slices, sorted, each once',
      slices: [
        slice('web-a', 'web', [
          { addresses: ['10.244.1.9'], conditions: { ready: true } },
          { addresses: ['10.244.1.10'] },
        ]),
        slice('web-b', 'web', [{ addresses: ['10.244.1.9'], conditions: { ready: true } }]),
      ],
      want: '10.244.1.10,10.244.1.9',
    },
    {
      name: 'not a not-ready endpoint',
      slices: [slice('web-a', 'web', [{ addresses: ['10.244.1.9'], conditions: { ready: false, serving: true } }])],
      want: '',
    },
    {
      name: "not another Service's slice, nor one of another namespace",
      slices: [
        slice('db-a', 'db', [{ addresses: ['10.244.1.7'] }]),
        slice('web-x', 'web', [{ addresses: ['10.244.9.9'] }], superNamespace('other-tenant-key', 'app')),
      ],
      want: '',
    },
  ])('records $name', ({ slices, want }) => {
    expect(up(slices)?.[e1]).toBe(want);
  });
  it('records at most MAX_RECORDED_ENDPOINTS addresses', () => {
    const many = Array.from({ length: MAX_RECORDED_ENDPOINTS + 5 }, (_, i) => ({ addresses: [`10.244.${i}.1`] }));
    const got = up([slice('web-a', 'web', many)])?.[e1];
    expect(got?.split(',')).toHaveLength(MAX_RECORDED_ENDPOINTS);
    expect(
      readyAddresses(superSvc({}), {
        superCache: new MapCache([[R.endpointslices, [slice('w', 'web', many)] as never]]),
      }),
    ).toEqual(got?.split(','));
  });
  it('one super cluster records none (no key of its own)', () => {
    expect(up([slice('web-a', 'web', [{ addresses: ['10.244.1.9'] }])], 'r1', false)).toEqual({
      [ANN.superClusterIP]: '10.0.0.5',
    });
  });
  it('a headless copy records none', () => {
    const got = servicesPlugin.toTenant(
      frozen(superSvc({ type: 'ClusterIP', clusterIP: 'None', clusterIPs: ['None'], ports: [http] })),
      frozen(tenantSvc(tenantSpec({ clusterIP: 'None', clusterIPs: ['None'] }))),
      testContext({ superCluster: 'r1', sharedTenants: true }),
    );
    expect(got.object?.metadata?.annotations?.[e1]).toBeUndefined();
  });
  it('a super EndpointSlice requeues the tenant Service of its copy, with several super clusters only', () => {
    const rctx = (sharedTenants: boolean) => ({
      tenants: [tenant],
      superCache: new MapCache(),
      tenantsBy: () => [],
      tenantOfNamespace: (ns: string) => (ns === sns ? { tenant: tenant.key, namespace: 'app' } : undefined),
      superCluster: 'r1',
      sharedTenants,
    });
    const s = slice('web-a', 'web', []);
    expect(serviceOfSlice(s, rctx(true))).toEqual([{ tenant: tenant.key, namespace: 'app', name: 'web' }]);
    expect(serviceOfSlice(s, rctx(false))).toEqual([]);
    expect(serviceOfSlice(slice('x', 'web', [], 'kube-system'), rctx(true))).toEqual([]);
    expect(servicesPlugin.watches).toEqual([{ resource: R.endpointslices, side: 'super', map: serviceOfSlice }]);
  });
});

describe('services matchPort', () => {
  it.each([
    { name: 'same name and protocol', p: { name: 'http', port: 8000 }, want: 31000 },
    { name: 'renamed, same port', p: { name: 'web', port: 443, protocol: 'TCP' }, want: 31001 },
    { name: 'same port, other protocol', p: { name: 'dns', port: 80, protocol: 'UDP' }, want: undefined },
    { name: 'unnamed single port', p: { port: 80 }, want: 31000 },
  ] as Array<{ name: string; p: ServicePort; want: number | undefined }>)('$name', ({ p, want }) => {
    const candidates: ServicePort[] = [
      { ...http, nodePort: 31000 },
      { ...https, nodePort: 31001 },
    ];
    const unnamed: ServicePort[] = [{ port: 80, nodePort: 31000 }];
    expect(matchPort(p, p.name === undefined ? unnamed : candidates)?.nodePort).toBe(want);
  });
});

describe('services manifest', () => {
  it('declares a both, tenant-truth plugin for core/v1 services and is the default export', () => {
    const asPlugin: Plugin = servicesPlugin;
    expect(asPlugin.manifest).toMatchObject({
      name: 'services',
      version: '0.1.0',
      resource: { group: '', version: 'v1', resource: 'services', kind: 'Service', namespaced: true },
      direction: 'both',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
    });
    expect(plugin).toBe(servicesPlugin);
  });
});

describe('services toSuper under the services policy', () => {
  const nodePort = tenantSvc(tenantSpec({ type: 'NodePort' }));
  const refusalEffects = (message: string) => [
    {
      type: 'event',
      side: 'tenant',
      regarding: { apiVersion: 'v1', kind: 'Service', namespace: 'app', name: 'web', uid: 'tenant-uid' },
      eventType: 'Warning',
      reason: SERVICE_POLICY_VIOLATION,
      message,
    },
    {
      type: 'tenantCondition',
      namespace: 'app',
      name: 'web',
      uid: 'tenant-uid',
      condition: { type: SYNCED_CONDITION, status: 'False', reason: SERVICE_POLICY_VIOLATION, message },
    },
  ];
  const notAllowed =
    "spec.type NodePort is not allowed by the tenant's policy (services.nodePort.allowed); use ClusterIP or ask the platform administrator";

  it('creates nothing for a refused NodePort Service and tells the tenant why (event and VCSynced=False)', () => {
    expect(servicesPlugin.toSuper(nodePort, undefined, testContext())).toEqual({
      object: null,
      skip: { reason: SERVICE_POLICY_VIOLATION, message: notAllowed },
      effects: refusalEffects(notAllowed),
    });
  });

  it('keeps the super Service as it was when a ClusterIP Service is changed to a refused type', () => {
    const d = servicesPlugin.toSuper(nodePort, superSvc({ type: 'ClusterIP', ports: [http] }), testContext());
    expect(d.object).toBeNull();
    expect(d.skip?.reason).toBe(SERVICE_POLICY_VIOLATION);
  });

  it('keeps a super NodePort Service as it was once the policy no longer allows it: no running Service is torn down', () => {
    const super_ = superSvc({ type: 'NodePort', ports: [{ ...http, nodePort: 31000 }] });
    const d = servicesPlugin.toSuper(nodePort, super_, testContext());
    expect(d).toEqual({
      object: null,
      skip: { reason: SERVICE_POLICY_VIOLATION, message: notAllowed },
      effects: refusalEffects(notAllowed),
    });
  });

  it('deletes a super NodePort Service that ranks beyond the cap: the cap holds whatever the timing', () => {
    const tenant = testTenant({ services: { nodePort: { allowed: true, max: 0 } } });
    const super_ = superSvc({ type: 'NodePort', ports: [{ ...http, nodePort: 31000 }] });
    const d = servicesPlugin.toSuper(nodePort, super_, testContext({ tenant }));
    expect(d.object).toBeNull();
    expect(d.skip).toBeUndefined();
    expect(d.effects?.map((e) => e.type)).toEqual(['event', 'tenantCondition']);
  });

  it.each([
    ['a class the policy does not list', ['example.com/lb'], 'internal.example.com/lb', true],
    ['any class under the default policy (none listed)', undefined, 'example.com/lb', true],
    ['a class the policy lists', ['example.com/lb'], 'example.com/lb', false],
    ['no class: the super default load balancer', [], undefined, false],
  ])('loadBalancerClass: %s', (_what, classes, loadBalancerClass, refused) => {
    const tenant = testTenant({ services: { loadBalancer: { allowed: true, ...(classes && { classes }) } } });
    const lb = tenantSvc(tenantSpec({ type: 'LoadBalancer', ...(loadBalancerClass && { loadBalancerClass }) }));
    const d = servicesPlugin.toSuper(lb, undefined, testContext({ tenant }));
    if (!refused) return expect(d.object?.spec?.loadBalancerClass).toBe(loadBalancerClass);
    expect(d.object).toBeNull();
    expect(d.skip?.message).toContain(`spec.loadBalancerClass "${loadBalancerClass}" is not allowed`);
    expect(d.skip?.message).toContain('services.loadBalancer.classes');
  });

  it('retries a Service refused by the count cap, as a place may free up', () => {
    const tenant = testTenant({ services: { nodePort: { allowed: true, max: 0 } } });
    const d = servicesPlugin.toSuper(nodePort, undefined, testContext({ tenant }));
    expect(d.skip?.message).toContain('services.nodePort.max');
    expect(d.requeueAfterMs).toBe(CAP_RETRY_MS);
  });

  it('sets VCSynced=True again once a refused Service is synced', () => {
    const refused = tenantSvc(
      tenantSpec(),
      {},
      {
        loadBalancer: {},
        conditions: [{ type: SYNCED_CONDITION, status: 'False', reason: SERVICE_POLICY_VIOLATION, message: 'x' }],
      },
    );
    const d = servicesPlugin.toSuper(refused, undefined, testContext());
    expect(d.object?.spec?.type).toBe('ClusterIP');
    expect(d.effects).toEqual([
      {
        type: 'tenantCondition',
        namespace: 'app',
        name: 'web',
        uid: 'tenant-uid',
        condition: {
          type: SYNCED_CONDITION,
          status: 'True',
          reason: 'Synced',
          message: 'the Service is in the super cluster',
        },
      },
    ]);
  });

  it.each([
    ['externalIPs', { externalIPs: ['10.0.0.1'] }, /^spec\.externalIPs: .*capture traffic/],
    ['loadBalancerIP', { loadBalancerIP: '1.2.3.4' }, /^spec\.loadBalancerIP: .*capture traffic/],
    ['a field newer than the table', { futureRouting: 'any' }, /^spec\.futureRouting: no rule exists .*v1\.36/],
    ['a port field newer than the table', { ports: [{ port: 80, hostIP: '10.0.0.1' }] }, /^spec\.ports\[0\]\.hostIP: /],
    ['a sessionAffinityConfig field newer than the table', { sessionAffinityConfig: { cookie: {} } }, /cookie/],
  ])('refuses a Service with %s by name, on an event and the VCSynced condition', (_, over, message) => {
    const d = servicesPlugin.toSuper(tenantSvc(tenantSpec(over)), undefined, testContext());
    expect(d.object).toBeNull();
    expect(d.skip).toEqual({ reason: 'ServicePolicyViolation', message: expect.stringMatching(message) });
    expect(d.effects).toEqual([
      expect.objectContaining({ type: 'event', reason: 'ServicePolicyViolation', message: d.skip?.message }),
      expect.objectContaining({
        type: 'tenantCondition',
        condition: expect.objectContaining({ type: 'VCSynced', status: 'False', message: d.skip?.message }),
      }),
    ]);
  });

  it('keeps an existing super copy as it was when an update adds a refused field', () => {
    const d = servicesPlugin.toSuper(
      tenantSvc(tenantSpec({ externalIPs: ['10.0.0.1'] })),
      { apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'x', name: 'web' }, spec: { type: 'ClusterIP' } },
      testContext(),
    );
    expect(d.object).toBeNull();
    expect(d.skip?.reason).toBe('ServicePolicyViolation');
  });
});
