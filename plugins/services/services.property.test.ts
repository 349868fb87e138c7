/**
 * Property tests of the Service rules (issue 31 §2, §7): tenant Services are generated at random, with every field a
 * tenant could use to take an address, a node port or a load balancer of the shared cluster, under random policies.
 * Whatever the tenant wrote: the super copy carries no address or port the tenant picked, a capped type only as the
 * policy allows (type, class, ports, count), never an ExternalName (the shared ingress controllers would follow it),
 * inward names are refused by name, and the count cap decides the same whichever order the tenant's Services are
 * listed in.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ANN, isReservedKey, type KubeObject, type ServicesPolicyView } from '@virtualcluster-ts/plugin-sdk';
import { R } from '../../core/kube/resources.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import { externalNameRefusal } from './externalname.ts';
import {
  checkLoadBalancerClass,
  checkServiceType,
  ruleFor,
  servicesPlugin,
  type Service,
  type ServiceSpec,
} from './index.ts';

const CLASSES = ['platform.example/internal', 'public.example/lb', 'other.example/lb'] as const;

/** PUBLIC_NAMES are the names of EXTERNAL_NAMES not refused by name (an ExternalName is still never copied). */
const PUBLIC_NAMES = ['db.example.com', 'api.github.com', 'kubernetes.default'];

/** names an ExternalName may try: inside the cluster, private, numeric, and public ones. */
const EXTERNAL_NAMES = [
  'kubernetes.default.svc.cluster.local',
  'kubernetes.default',
  'web.team-b-ns.svc.cluster.local',
  'web.team-b-ns.svc.other.domain',
  '169-254-169-254.x.pod.cluster.local',
  'cluster.local',
  'metadata.google.internal',
  'instance-data.ec2.internal',
  'printer.local',
  'router.home.arpa',
  'x.localhost',
  'localhost',
  '169.254.169.254',
  '10.0.0.1',
  '0x7f.1',
  '2130706433',
  '::1',
  'db.example.com',
  'api.github.com',
] as const;

const policyArb: fc.Arbitrary<ServicesPolicyView> = fc.record(
  {
    nodePort: fc.record(
      { allowed: fc.boolean(), max: fc.integer({ min: 0, max: 3 }), maxPorts: fc.integer({ min: 0, max: 3 }) },
      { requiredKeys: [] },
    ),
    loadBalancer: fc.record(
      {
        allowed: fc.boolean(),
        max: fc.integer({ min: 0, max: 3 }),
        maxPorts: fc.integer({ min: 0, max: 3 }),
        classes: fc.subarray([...CLASSES]),
      },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: [] },
);

const portArb = fc.record(
  {
    name: fc.constantFrom('http', 'https', 'dns', 'p'),
    protocol: fc.constantFrom('TCP', 'UDP'),
    port: fc.integer({ min: 1, max: 65535 }),
    targetPort: fc.integer({ min: 1, max: 65535 }),
    nodePort: fc.integer({ min: 30000, max: 32767 }),
  },
  { requiredKeys: ['port'] },
);

/** externalNameArb is a name of EXTERNAL_NAMES in any letter case, with or without the trailing dot. */
const externalNameArb = fc
  .tuple(fc.constantFrom(...EXTERNAL_NAMES), fc.boolean(), fc.array(fc.boolean(), { maxLength: 40 }))
  .map(([n, dot, upper]) => [...n].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('') + (dot ? '.' : ''));

const specArb: fc.Arbitrary<ServiceSpec> = fc.record(
  {
    type: fc.constantFrom('ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'),
    clusterIP: fc.constantFrom('10.96.0.1', '10.96.0.10', 'None', '169.254.169.254'),
    clusterIPs: fc.constant(['10.96.0.1']),
    ipFamilies: fc.constant(['IPv4']),
    ports: fc.array(portArb, { maxLength: 5 }),
    externalIPs: fc.array(fc.constantFrom('10.0.0.1', '192.168.1.1', '203.0.113.7'), { maxLength: 2 }),
    loadBalancerIP: fc.constantFrom('10.0.0.2', '203.0.113.8'),
    loadBalancerClass: fc.constantFrom(...CLASSES),
    allocateLoadBalancerNodePorts: fc.boolean(),
    healthCheckNodePort: fc.integer({ min: 30000, max: 32767 }),
    externalTrafficPolicy: fc.constantFrom('Cluster', 'Local'),
    externalName: externalNameArb,
    selector: fc.constant({ app: 'web' }),
  },
  { requiredKeys: ['type'] },
);

const labelsArb = fc.dictionary(
  fc.constantFrom(
    'app',
    'tenancy.x-k8s.io/cluster',
    'tenancy.x-k8s.io/managed-by',
    'x.tenancy.x-k8s.io/owner',
    'service.beta.kubernetes.io/aws-load-balancer-internal',
    'metallb.universe.tf/address-pool',
  ),
  fc.constantFrom('web', 'true', 'other-tenant'),
  { maxKeys: 4 },
);

const service = (name: string, spec: ServiceSpec, created = '2026-01-01T00:00:00Z', meta = {}): Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { namespace: 'app', name, uid: `uid-${name}`, creationTimestamp: created, ...meta },
  spec,
});

const CAPPED = new Set(['NodePort', 'LoadBalancer']);

describe('the Service rules, on random tenant Services and policies', () => {
  it('a super copy carries no address or port the tenant picked, and a capped type only as the policy allows', () => {
    fc.assert(
      fc.property(specArb, policyArb, labelsArb, labelsArb, (spec, services, labels, annotations) => {
        const tenant = testTenant({ services });
        const svc = service('web', spec, undefined, { labels, annotations });
        const ctx = testContext({ tenant, tenantCache: new MapCache([[R.services, [svc]]]) });
        const d = servicesPlugin.toSuper(structuredClone(svc), undefined, ctx);
        const out = d.object as Service | null;
        if (!out) {
          // refused by the policy (kept as it was), or an ExternalName, which has no super copy at all
          if (d.skip) expect(d.skip.reason).toBe('ServicePolicyViolation');
          else expect(spec.type).toBe('ExternalName');
          return;
        }
        expect(spec.type).not.toBe('ExternalName');
        const s = out.spec ?? {};
        // addresses and ports of the shared cluster are the super's to assign
        expect(s.externalIPs).toBeUndefined();
        expect(s.loadBalancerIP).toBeUndefined();
        expect(s.healthCheckNodePort).toBeUndefined();
        expect(s.ipFamilies).toBeUndefined();
        expect([undefined, 'None']).toContain(s.clusterIP);
        for (const p of s.ports ?? []) expect(p.nodePort).toBeUndefined();
        // the copy stays in the tenant's namespace, with no provenance the tenant wrote
        expect(out.metadata?.namespace).toBe(ctx.names.superNamespace('app'));
        for (const k of [...Object.keys(out.metadata?.labels ?? {}), ...Object.keys(out.metadata?.annotations ?? {})])
          if (isReservedKey(k)) expect(k).toBe(ANN.tenantClusterIP);
        for (const k of Object.keys(out.metadata?.labels ?? {})) expect(k).not.toContain('/');
        // a capped type only when allowed, within its ports
        if (CAPPED.has(s.type ?? '')) {
          const rule = ruleFor(services, s.type as 'NodePort' | 'LoadBalancer');
          expect(rule.allowed).toBe(true);
          expect(rule.max).toBeGreaterThan(0);
          const free = s.type === 'LoadBalancer' && s.allocateLoadBalancerNodePorts === false;
          if (!free) expect((s.ports ?? []).length).toBeLessThanOrEqual(rule.maxPorts);
        }
        if (s.loadBalancerClass !== undefined)
          expect(services.loadBalancer?.classes ?? []).toContain(s.loadBalancerClass);
        // no alias for a super-side resolver to follow
        expect(s.type).not.toBe('ExternalName');
        expect(s.externalName).toBeUndefined();
      }),
      { numRuns: 400 },
    );
  });

  it('refuses a name in every letter case and with or without its trailing dot when it refuses the name', () => {
    fc.assert(
      fc.property(externalNameArb, (name) => {
        const bare = name.toLowerCase().replace(/\.$/, '');
        const refused = externalNameRefusal({ type: 'ExternalName', externalName: name }, 'cluster.local');
        expect(refused === undefined).toBe(PUBLIC_NAMES.includes(bare));
      }),
      { numRuns: 300 },
    );
  });

  it('admits at most max Services of a capped type, the same ones whatever order they are listed in', () => {
    const member = fc.record({
      type: fc.constantFrom('NodePort', 'LoadBalancer', 'ClusterIP'),
      ports: fc.integer({ min: 0, max: 4 }),
      created: fc.integer({ min: 0, max: 5 }),
      cls: fc.option(fc.constantFrom(...CLASSES), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        fc.array(member, { minLength: 1, maxLength: 10 }),
        policyArb,
        fc.infiniteStream(fc.nat()),
        (members, services, seeds) => {
          const tenant = testTenant({ services });
          const svcs = members.map((m, i) =>
            service(
              `s${i}`,
              {
                type: m.type,
                ports: Array.from({ length: m.ports }, (_, j) => ({ port: 80 + j })),
                ...(m.cls !== undefined && { loadBalancerClass: m.cls }),
              },
              `2026-01-01T00:00:0${m.created}Z`,
            ),
          );
          const decide = (list: KubeObject[]) => {
            const ctx = testContext({ tenant, tenantCache: new MapCache([[R.services, list]]) });
            // as toSuper decides: the class first, then the type and its cap
            return svcs.map((s) => (checkLoadBalancerClass(s, ctx) ?? checkServiceType(s, ctx)) === undefined);
          };
          const first = decide(svcs);
          const order = [...svcs].map((s) => [seeds.next().value as number, s] as const);
          const shuffled = order.sort((a, b) => a[0] - b[0]).map(([, s]) => s);
          expect(decide(shuffled)).toEqual(first);
          for (const type of ['NodePort', 'LoadBalancer'] as const) {
            const admitted = svcs.filter((s, i) => first[i] && s.spec?.type === type).length;
            expect(admitted).toBeLessThanOrEqual(ruleFor(services, type).allowed ? ruleFor(services, type).max : 0);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
