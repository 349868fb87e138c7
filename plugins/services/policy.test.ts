import { describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import { DEFAULT_POLICY } from '../../core/tenancy/policy.ts';
import type { KubeObject, ServicesPolicyView } from '../sdk/src/index.ts';
import { checkServiceType, DEFAULT_SERVICES_POLICY } from './policy.ts';

const tenant = testTenant();
const other = 'team-b-4d5e6f-prod';

const svc = (name: string, type: string, created: string, ns = 'app', deleting = false): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: {
    namespace: ns,
    name,
    uid: `uid-${name}`,
    creationTimestamp: created,
    ...(deleting && { deletionTimestamp: '2026-01-01T00:00:00Z' }),
  },
  spec: { type },
});

/** superOf is the super copy of tenant Service ns/name (of `cluster`, default this tenant) with type `type`. */
const superOf = (name: string, type: string, ns = 'app', cluster = tenant.key): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: {
    namespace: superNamespace(cluster, ns),
    name,
    labels: { [LABEL.managedBy]: MANAGER },
    annotations: { [ANN.cluster]: cluster, [ANN.namespace]: ns, [ANN.name]: name },
  },
  spec: { type },
});

const T1 = '2026-01-01T00:00:01Z';
const T2 = '2026-01-01T00:00:02Z';
const T3 = '2026-01-01T00:00:03Z';
const allowNP = (max?: number): ServicesPolicyView => ({
  nodePort: { allowed: true, ...(max !== undefined && { max }) },
});

// [name, the Service checked, its tenant's other Services, super Services, policy, refusal text or undefined]
const cases: Array<[string, KubeObject, KubeObject[], KubeObject[], ServicesPolicyView | undefined, string?]> = [
  ['ClusterIP needs no policy', svc('web', 'ClusterIP', T1), [], [], undefined],
  ['ExternalName needs no policy', svc('web', 'ExternalName', T1), [], [], undefined],
  ['a Service without a type needs no policy', svc('web', '', T1), [], [], undefined],
  ['NodePort under the built-in defaults', svc('web', 'NodePort', T1), [], [], undefined, 'services.nodePort.allowed'],
  [
    'LoadBalancer under the built-in defaults',
    svc('lb', 'LoadBalancer', T1),
    [],
    [],
    {},
    'services.loadBalancer.allowed',
  ],
  [
    'LoadBalancer when only NodePort is allowed',
    svc('lb', 'LoadBalancer', T1),
    [],
    [],
    allowNP(),
    'loadBalancer.allowed',
  ],
  ['NodePort allowed, none other', svc('web', 'NodePort', T1), [], [], allowNP()],
  ['NodePort allowed with max 0', svc('web', 'NodePort', T1), [], [], allowNP(0), 'at most 0 Services'],
  [
    'NodePort within the cap (the second of two)',
    svc('b', 'NodePort', T2),
    [svc('a', 'NodePort', T1)],
    [superOf('a', 'NodePort')],
    allowNP(2),
  ],
  [
    'NodePort over the cap: two earlier ones take both places',
    svc('c', 'NodePort', T3),
    [svc('a', 'NodePort', T1), svc('b', 'NodePort', T2, 'other-ns')],
    [],
    allowNP(2),
    'services.nodePort.max',
  ],
  [
    'NodePort: one already in the super ranks before an older Service that turned NodePort later',
    svc('old', 'NodePort', T1),
    [svc('new', 'NodePort', T3)],
    [superOf('new', 'NodePort'), superOf('old', 'ClusterIP')],
    allowNP(1),
    'services.nodePort.max',
  ],
  [
    'NodePort: a Service already NodePort in the super keeps its place',
    svc('new', 'NodePort', T3),
    [svc('old', 'NodePort', T1)],
    [superOf('new', 'NodePort')],
    allowNP(1),
  ],
  [
    'NodePort: a super Service still NodePort while its tenant Service left the type holds a place',
    svc('web', 'NodePort', T2),
    [svc('was', 'ClusterIP', T1)],
    [superOf('was', 'NodePort')],
    allowNP(1),
    'services.nodePort.max',
  ],
  [
    "NodePort: another tenant's NodePort Services do not count",
    svc('web', 'NodePort', T2),
    [],
    [superOf('x', 'NodePort', 'app', other), superOf('y', 'NodePort', 'app', other)],
    allowNP(1),
  ],
  [
    'NodePort: a Service being deleted frees its place',
    svc('web', 'NodePort', T2),
    [svc('gone', 'NodePort', T1, 'app', true)],
    [],
    allowNP(1),
  ],
  [
    'NodePort: the cap counts NodePort only, not LoadBalancer',
    svc('web', 'NodePort', T2),
    [svc('lb', 'LoadBalancer', T1)],
    [superOf('lb', 'LoadBalancer')],
    { ...allowNP(1), loadBalancer: { allowed: true } },
  ],
  [
    'LoadBalancer: an earlier Service refused for its class takes no place under the cap',
    svc('b', 'LoadBalancer', T2),
    [{ ...svc('a', 'LoadBalancer', T1), spec: { type: 'LoadBalancer', loadBalancerClass: 'internal.example.com/lb' } }],
    [],
    { loadBalancer: { allowed: true, max: 1 } },
  ],
  [
    'NodePort with more ports than maxPorts: each port is a node port of every node',
    { ...svc('many', 'NodePort', T1), spec: { type: 'NodePort', ports: [1, 2, 3].map((port) => ({ port })) } },
    [],
    [],
    { nodePort: { allowed: true, maxPorts: 2 } },
    'spec.ports: 3 ports',
  ],
  [
    'LoadBalancer with many ports but no node ports (allocateLoadBalancerNodePorts false)',
    {
      ...svc('many', 'LoadBalancer', T1),
      spec: { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false, ports: [1, 2, 3].map((port) => ({ port })) },
    },
    [],
    [],
    { loadBalancer: { allowed: true, maxPorts: 2 } },
  ],
  [
    'NodePort: an earlier Service refused for its ports takes no place under the cap',
    svc('b', 'NodePort', T2),
    [{ ...svc('a', 'NodePort', T1), spec: { type: 'NodePort', ports: [1, 2, 3].map((port) => ({ port })) } }],
    [],
    { nodePort: { allowed: true, max: 1, maxPorts: 2 } },
  ],
  [
    'NodePort: equal creation times rank by namespace and name',
    svc('b', 'NodePort', T1),
    [svc('a', 'NodePort', T1)],
    [],
    allowNP(1),
    'services.nodePort.max',
  ],
];

describe('checkServiceType', () => {
  it.each(cases)('%s', (_name, s, others, supers, services, want) => {
    const ctx = testContext({
      tenant: testTenant(services ? { services } : {}),
      tenantCache: new MapCache([[R.services, [s, ...others]]]),
      superCache: new MapCache([[R.services, supers]]),
    });
    const r = checkServiceType(s, ctx);
    if (want === undefined) expect(r).toBeUndefined();
    else expect(r?.message).toContain(want);
  });

  it('sorts out two Services both admitted by racing workers: the later one is over the cap', () => {
    const a = svc('a', 'NodePort', T1);
    const b = svc('b', 'NodePort', T1, 'z-ns');
    const ctx = testContext({
      tenant: testTenant({ services: allowNP(1) }),
      tenantCache: new MapCache([[R.services, [a, b]]]),
      superCache: new MapCache([[R.services, [superOf('a', 'NodePort'), superOf('b', 'NodePort', 'z-ns')]]]),
    });
    expect(checkServiceType(a, ctx)).toBeUndefined();
    expect(checkServiceType(b, ctx)).toMatchObject({ overCap: true });
  });

  it('gives two workers racing over the last place the same answer', () => {
    const a = svc('a', 'NodePort', T1);
    const b = svc('b', 'NodePort', T2);
    const ctx = testContext({
      tenant: testTenant({ services: allowNP(1) }),
      tenantCache: new MapCache([[R.services, [b, a]]]),
    });
    expect(checkServiceType(a, ctx)).toBeUndefined();
    expect(checkServiceType(b, ctx)?.requeueAfterMs).toBeGreaterThan(0);
  });

  it('keeps the built-in services policy equal to the TenantPolicy defaults', () => {
    expect(DEFAULT_SERVICES_POLICY).toEqual({
      nodePort: DEFAULT_POLICY.serviceNodePort,
      loadBalancer: DEFAULT_POLICY.serviceLoadBalancer,
    });
  });
});
