/**
 * Property test of the generic sync (issue 31 §4, §7): a kind the platform syncs by configuration, whose copied fields
 * hold a template and references the tenant writes at random — forged provenance in the object's and the template's
 * metadata, owner references, finalizers, namespaces of its own (translated or not), of another tenant and of the
 * platform, namespace selectors. Planned through the planner with the generic plugin; whatever the tenant wrote, what
 * the plan creates stays in the tenant's super namespace, carries the syncer's provenance alone, and holds no
 * reserved key, owner reference, finalizer or foreign namespace anywhere in its copied fields. Seeded.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject, Resource } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import { isReservedKey } from '@virtualcluster-ts/plugin-sdk';
import type { ResourcePlugin } from '../plugins/contract.ts';
import { PluginHost } from '../plugins/host.ts';
import { MapCache, testContext, testTenant } from '../plugins/testing.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { genericPlugins } from '../../plugins/generic/index.ts';
import { planKey } from './plan.ts';

const SEED = 3133;
const FORGED = 'forged-by-tenant';
const OTHER = 'team-b-4d5e6f-prod';
const NS = 'app';
const tenant = testTenant();
const names = testContext({ tenant }).names;

/** the tenant namespace's super namespace, as the syncer made it: the plan waits for it otherwise */
const superNamespace: KubeObject = {
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: {
    name: names.superNamespace(NS),
    uid: 'sns-uid',
    labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: tenant.key },
    annotations: {
      [ANN.cluster]: tenant.key,
      [ANN.namespace]: '',
      [ANN.name]: NS,
      [ANN.uid]: `tns-${NS}`,
      [ANN.vcName]: tenant.vcName,
      [ANN.vcNamespace]: tenant.vcNamespace,
      [ANN.vcUid]: tenant.vcUid,
    },
  },
};

const jobs: Resource = { group: 'batch', version: 'v1', resource: 'jobs', kind: 'Job', namespaced: true };

/** rare is `a` in one run of five, else absent: so that enough objects are clean enough to be created */
const rare = <T>(a: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, { arbitrary: a, weight: 1 });

const metaArb = fc.dictionary(
  fc.constantFrom(LABEL.cluster, LABEL.managedBy, ANN.cluster, ANN.uid, 'x.tenancy.x-k8s.io/owner', 'app'),
  fc.constantFrom(FORGED, OTHER, MANAGER, tenant.key),
  { maxKeys: 3 },
);
const nsArb = fc.oneof(
  { arbitrary: fc.constant(names.superNamespace('db')), weight: 3 },
  { arbitrary: fc.constantFrom(NS, 'db', 'kube-system', `${OTHER}-db`, 'default'), weight: 1 },
);
const templateArb = fc.record(
  {
    metadata: fc.record(
      {
        labels: rare(metaArb),
        annotations: rare(metaArb),
        ownerReferences: rare(fc.constant([{ apiVersion: 'v1', kind: 'ConfigMap', name: 'c', uid: FORGED }])),
        finalizers: rare(fc.constant(['example.com/hold'])),
      },
      { requiredKeys: [] },
    ),
    spec: fc.record(
      {
        containers: fc.constant([{ name: 'c', image: 'busybox' }]),
        affinity: fc.record({
          podAffinity: fc.record({
            requiredDuringSchedulingIgnoredDuringExecution: fc.array(
              fc.record(
                {
                  topologyKey: fc.constant('kubernetes.io/hostname'),
                  namespaces: fc.array(nsArb, { maxLength: 2 }),
                  namespaceSelector: rare(fc.constantFrom({}, { matchLabels: { team: 'b' } })),
                },
                { requiredKeys: ['topologyKey'] },
              ),
              { maxLength: 2 },
            ),
          }),
        }),
      },
      { requiredKeys: ['containers'] },
    ),
  },
  { requiredKeys: ['spec'] },
);
const bodyArb = fc.record({
  spec: fc.record(
    {
      template: templateArb,
      // translated by the entry: any tenant namespace is mapped to its super namespace
      target: fc.record({ namespace: nsArb }),
      // not translated: must already be the tenant's own, or the object is refused
      secretRef: fc.record({ name: fc.constant('s'), namespace: nsArb }),
      sourceNamespace: nsArb,
    },
    { requiredKeys: ['template'] },
  ),
});

/** everywhere calls fn on every object nested in v, with its path. */
function everywhere(v: unknown, fn: (o: Record<string, unknown>, path: string) => void, path = ''): void {
  if (Array.isArray(v)) return v.forEach((x, i) => everywhere(x, fn, `${path}[${i}]`));
  if (!v || typeof v !== 'object') return;
  fn(v as Record<string, unknown>, path);
  for (const [k, x] of Object.entries(v)) everywhere(x, fn, `${path}.${k}`);
}

describe('the generic sync, for any tenant object of a platform-enabled kind', () => {
  let host: PluginHost;
  let plugin: ResourcePlugin;
  beforeAll(async () => {
    const built = genericPlugins(
      [
        {
          name: 'jobs',
          resource: jobs,
          direction: 'down',
          fields: { copy: ['spec'], translate: [{ path: 'spec.target.namespace', to: 'namespace' }] },
        },
      ],
      builtinPlugins,
    );
    expect(built.failures).toEqual([]);
    plugin = built.plugins[0]!;
    host = await PluginHost.load({ process: 'manager', builtins: [...builtinPlugins, plugin] });
  });

  it('creates only within the tenant, with the syncer provenance alone and nothing the tenant may not choose', () => {
    let created = 0;
    let refused = 0;
    fc.assert(
      fc.property(metaArb, metaArb, bodyArb, (labels, annotations, body) => {
        const obj: KubeObject = {
          apiVersion: 'batch/v1',
          kind: 'Job',
          metadata: { namespace: NS, name: 'j', uid: 'tenant-uid', resourceVersion: '1', labels, annotations },
          ...body,
        };
        const ctx = testContext({
          tenant,
          tenantCache: new MapCache([
            [jobs, [obj]],
            [R.namespaces, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, uid: `tns-${NS}` } }]],
          ]),
          superCache: new MapCache([[R.namespaces, [superNamespace]]]),
        });
        const p = planKey(host, plugin, ctx, { namespace: NS, name: 'j' });
        const made = p.steps.flatMap((s) => (s.op === 'createSuper' ? [s.obj] : []));
        if (!made.length) {
          refused++;
          expect(p.skip?.reason).toBe('GenericFieldRefused');
        }
        for (const o of made) {
          created++;
          const m = o.metadata ?? {};
          expect(m.namespace).toBe(names.superNamespace(NS));
          expect(m.annotations?.[ANN.cluster]).toBe(tenant.key);
          expect(m.annotations?.[ANN.uid]).toBe('tenant-uid');
          expect(m.ownerReferences).toBeUndefined();
          for (const [k, v] of [...Object.entries(m.labels ?? {}), ...Object.entries(m.annotations ?? {})])
            if (isReservedKey(k)) expect([FORGED, OTHER]).not.toContain(v);
          everywhere((o as { spec?: unknown }).spec, (x, path) => {
            for (const k of ['labels', 'annotations'])
              for (const key of Object.keys((x[k] as Record<string, string> | undefined) ?? {}))
                expect(isReservedKey(key), `${path}.${k}.${key}`).toBe(false);
            expect(x.ownerReferences, path).toBeUndefined();
            expect(x.finalizers, path).toBeUndefined();
            expect(x.namespaceSelector, path).toBeUndefined();
            for (const [k, v] of Object.entries(x))
              if (/^(namespace|.+Namespace)$/.test(k) && typeof v === 'string')
                expect(names.tenantNamespace(v), `${path}.${k}`).toBeDefined();
            for (const n of (x.namespaces as string[] | undefined) ?? [])
              expect(names.tenantNamespace(n), `${path}.namespaces`).toBeDefined();
          });
        }
      }),
      { numRuns: 300, seed: SEED },
    );
    // both sides of the property were exercised
    expect(created).toBeGreaterThan(5);
    expect(refused).toBeGreaterThan(5);
  }, 60_000);
});
