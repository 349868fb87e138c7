/**
 * Property tests of the planner and every built-in plugin (issue 31 §7): tenant objects of every synced kind are
 * generated at random, with forged provenance, reserved keys, cross-namespace references and fields no rule knows, and
 * planned against a super cluster that holds the tenant's namespaces. Whatever the tenant wrote: nothing the plan
 * writes leaves the tenant's super namespaces, the provenance on it is the syncer's, no field the Pod allow-list
 * refuses survives, and tenant names map one-to-one to super names.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject, Resource } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import { isReservedKey, PUBLIC_LABEL } from '@virtualcluster-ts/plugin-sdk';
import type { PluginContext, ResourcePlugin } from '../plugins/contract.ts';
import { PluginHost } from '../plugins/host.ts';
import { MapCache, testContext, testTenant } from '../plugins/testing.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { checkPodFields } from '../../plugins/pods/fields.ts';
import type { PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { type Plan, planKey } from './plan.ts';

const tenant = testTenant({
  plugins: { enable: ['ingresses', 'priorityclasses', 'customresourcedefinitions'] },
});
const other = testTenant({ key: 'team-b-4d5e6f-prod', vcName: 'prod', vcNamespace: 'team-b', vcUid: 'vc-b-uid' });
const FORGED = 'forged-by-tenant';

const dnsLabel = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/);
const namespaceName = fc.oneof(
  fc.constantFrom('default', 'kube-system', 'kube-public', 'team-b', 'a'.repeat(63)),
  dnsLabel,
);
const metaKey = fc.oneof(
  fc.constantFrom(
    LABEL.cluster,
    LABEL.managedBy,
    ANN.cluster,
    ANN.uid,
    ANN.namespace,
    ANN.name,
    ANN.vcUid,
    'x.tenancy.x-k8s.io/anything',
    'tenancy.x-k8s.io/super.public',
    'app.kubernetes.io/name',
    'kubernetes.io/ingress.class',
    'nginx.ingress.kubernetes.io/server-snippet',
    'service.beta.kubernetes.io/aws-load-balancer-internal',
  ),
  dnsLabel,
);
const meta = fc.dictionary(metaKey, fc.oneof(fc.constant(FORGED), fc.constant(other.key), dnsLabel), {
  maxKeys: 6,
});

const podTerm = fc.record(
  {
    topologyKey: fc.constant('kubernetes.io/hostname'),
    labelSelector: fc.constant({ matchLabels: { app: 'db' } }),
    namespaces: fc.array(namespaceName, { maxLength: 3 }),
    namespaceSelector: fc.constantFrom({}, { matchLabels: { team: 'b' } }),
    matchLabelKeys: fc.constant(['app']),
  },
  { requiredKeys: ['topologyKey'] },
);

/** hostile parts a tenant may put in a Pod spec; each generated Pod takes any subset. */
const podParts = fc.record(
  {
    affinity: podTerm.map((t) => ({ podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [t] } })),
    volumes: fc.uniqueArray(
      fc.oneof(
        fc.constant({ name: 'e', emptyDir: {} }),
        fc.constant({
          name: 'eph',
          ephemeral: {
            volumeClaimTemplate: {
              metadata: { labels: { [LABEL.cluster]: other.key }, annotations: { [ANN.uid]: FORGED } },
              spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'platform-only' },
            },
          },
        }),
        fc.constant({
          name: 'cert',
          projected: { sources: [{ podCertificate: { signerName: 'a/b', keyType: 'RSA3072' } }] },
        }),
        fc.constant({
          name: 'ctb',
          projected: { sources: [{ clusterTrustBundle: { signerName: 'a/b', path: 'x' } }] },
        }),
        fc.constant({ name: 'csi', csi: { driver: 'secrets-store.csi.k8s.io' } }),
        fc.constant({ name: 'img', image: { reference: 'registry/private:1', pullPolicy: 'IfNotPresent' } }),
        fc.constant({ name: 'disk', awsElasticBlockStore: { volumeID: 'vol-1' } }),
        fc.constant({ name: 'n', futureVolume: { id: 1 } }),
      ),
      { maxLength: 3, selector: (v: { name: string }) => v.name },
    ),
    probeHost: fc.constantFrom('169.254.169.254', '10.0.0.1'),
    hostNetwork: fc.boolean(),
    nodeName: fc.constant('super-node-1'),
    resourceClaims: fc.constant([{ name: 'gpu', resourceClaimName: 'x' }]),
    schedulingGroup: fc.constant({ podGroupName: 'g' }),
    unknown: fc.constant(true),
  },
  { requiredKeys: [] },
);

const PART_KEYS = [
  'affinity',
  'volumes',
  'probeHost',
  'hostNetwork',
  'nodeName',
  'resourceClaims',
  'schedulingGroup',
  'unknown',
];

const podSpecOf = (parts: Record<string, unknown>): PodSpec => {
  const spec: PodSpec = {
    containers: [
      {
        name: 'c',
        image: 'nginx',
        ...(parts.probeHost !== undefined && { livenessProbe: { httpGet: { host: parts.probeHost, port: 80 } } }),
      },
    ],
  };
  for (const k of ['affinity', 'volumes', 'hostNetwork', 'nodeName', 'resourceClaims', 'schedulingGroup'])
    if (parts[k] !== undefined) spec[k] = parts[k];
  if (parts.unknown) spec.futureField = { reachesAcross: true };
  return spec;
};

/** bodyOf is a random body for a kind: hostile Pod specs for Pods, any JSON under spec and data for the others. */
const bodyOf = (kind: string): fc.Arbitrary<Record<string, unknown>> =>
  kind === 'Pod'
    ? fc
        .tuple(podParts, fc.subarray(PART_KEYS, { maxLength: 2 }))
        .map(([p, keys]) => ({ spec: podSpecOf(Object.fromEntries(keys.map((k) => [k, p[k as keyof typeof p]]))) }))
    : fc.record(
        {
          spec: fc.dictionary(dnsLabel, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
          data: fc.dictionary(dnsLabel, dnsLabel, { maxKeys: 2 }),
        },
        { requiredKeys: [] },
      );

const superNamespaceObj = (name: string, tenantNs: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: {
    name,
    uid: `ns-${tenantNs}`,
    labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: tenant.key },
    annotations: {
      [ANN.cluster]: tenant.key,
      [ANN.namespace]: '',
      [ANN.name]: tenantNs,
      [ANN.uid]: `tns-${tenantNs}`,
      [ANN.vcName]: tenant.vcName,
      [ANN.vcNamespace]: tenant.vcNamespace,
      [ANN.vcUid]: tenant.vcUid,
    },
  },
});

const superObjects = (p: Plan): KubeObject[] =>
  [...p.steps, ...(p.afterEffects ?? [])].flatMap((s) => (s.op === 'createSuper' ? [s.obj] : []));

const downPlugins = builtinPlugins.filter(
  (p): p is ResourcePlugin =>
    'toSuper' in p && !!p.toSuper && !!p.manifest.resource && p.manifest.sourceOfTruth !== 'super',
);

/** sharedDefaultClass is the super's default StorageClass, shared with tenants. */
const sharedDefaultClass: KubeObject = {
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: {
    name: 'shared-default',
    labels: { [PUBLIC_LABEL]: 'true' },
    annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
  },
};

/** NEEDS_MORE_STATE are plugins that create nothing from a lone random object (a selectorless Service, a class). */
const NEEDS_MORE_STATE = ['endpoints', 'endpointslices', 'runtimeclasses'];
const created = new Map<string, number>();

describe('planner and plugins, for any tenant object', () => {
  let host: PluginHost;
  beforeAll(async () => {
    host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
  });

  /** contextFor is a tenant holding `obj` in namespace `ns`, planned against a super cluster holding that namespace. */
  const contextFor = (r: Resource, obj: KubeObject, ns: string): PluginContext => {
    const sns = testContext({ tenant }).names.superNamespace(ns);
    const tenantNs: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, uid: `tns-${ns}` } };
    const sa: KubeObject = {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { namespace: sns, name: 'vc-tenant-pod' },
    };
    return testContext({
      tenant,
      tenantCache: new MapCache(
        r === R.namespaces
          ? [[r, [obj]]]
          : [
              [R.namespaces, [tenantNs]],
              [r, [obj]],
            ],
      ),
      superCache: new MapCache([
        [R.namespaces, [superNamespaceObj(sns, ns)]],
        [R.serviceaccounts, [sa]],
        // a claim without a class needs a default class the super shares (plugins/persistentvolumeclaims/policy.ts)
        [R.storageclasses, [sharedDefaultClass]],
      ]),
    });
  };

  it.each(downPlugins.map((p) => [p.manifest.name, p] as const))(
    '%s: writes only into the tenant namespaces, with the syncer provenance alone',
    (_name, plugin) => {
      const r = plugin.manifest.resource!;
      fc.assert(
        fc.property(namespaceName, dnsLabel, meta, meta, bodyOf(r.kind), (ns, name, labels, annotations, body) => {
          const obj: KubeObject = {
            apiVersion: r.group ? `${r.group}/${r.version}` : r.version,
            kind: r.kind,
            metadata: {
              name,
              uid: 'tenant-uid',
              resourceVersion: '1',
              ...(r.namespaced && { namespace: ns }),
              labels,
              annotations,
            },
            ...body,
          };
          const merged = contextFor(r, obj, ns);
          let p: Plan;
          try {
            p = planKey(host, plugin, merged, { namespace: r.namespaced ? ns : '', name });
          } catch (e) {
            // a plugin may refuse a malformed object by throwing; what matters is that nothing was written
            expect(e).toBeInstanceOf(Error);
            return;
          }
          for (const s of p.steps) {
            if ('namespace' in s && s.namespace && s.op.endsWith('Super'))
              expect(merged.names.tenantNamespace(s.namespace)).toBeDefined();
          }
          created.set(plugin.manifest.name, (created.get(plugin.manifest.name) ?? 0) + superObjects(p).length);
          for (const o of superObjects(p)) {
            const m = o.metadata ?? {};
            if (r.namespaced) expect(m.namespace).toBe(merged.names.superNamespace(ns));
            expect(m.labels?.[LABEL.cluster]).toBe(tenant.key);
            expect(m.annotations?.[ANN.cluster]).toBe(tenant.key);
            expect(m.annotations?.[ANN.uid]).toBe('tenant-uid');
            for (const [k, v] of [...Object.entries(m.labels ?? {}), ...Object.entries(m.annotations ?? {})]) {
              if (isReservedKey(k)) expect([k, v]).not.toEqual([k, FORGED]);
              if (isReservedKey(k)) expect([k, v]).not.toEqual([k, other.key]);
            }
            if (r.kind === 'Pod') podInvariants(o as KubeObject & { spec: PodSpec }, merged);
          }
          if (r.kind === 'Pod' && checkPodFields((obj as { spec: PodSpec }).spec)) expect(superObjects(p)).toEqual([]);
        }),
        { numRuns: 150 },
      );
      // the property says something only if some objects got through: every plugin creates from plain input
      if (!NEEDS_MORE_STATE.includes(plugin.manifest.name))
        expect(created.get(plugin.manifest.name)).toBeGreaterThan(10);
    },
  );

  it('maps distinct tenant namespaces and names to distinct super namespaces, never another tenant\u2019s', () => {
    const a = testContext({ tenant }).names;
    const b = testContext({ tenant: other }).names;
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.oneof(namespaceName, fc.stringMatching(/^[a-z]{60,63}$/)), { minLength: 2, maxLength: 8 }),
        (nss) => {
          const mine = nss.map((ns) => a.superNamespace(ns));
          expect(new Set(mine).size).toBe(nss.length);
          for (const [i, s] of mine.entries()) {
            expect(s.length).toBeLessThanOrEqual(63);
            // a cut name (over 63 characters) is told by its annotations, not by its name
            if (s !== a.superNamespace(nss[i]!) || a.tenantNamespace(s) !== undefined)
              expect(a.tenantNamespace(s)).toBe(nss[i]);
            expect(b.tenantNamespace(s)).toBeUndefined();
            expect(nss.map((ns) => b.superNamespace(ns))).not.toContain(s);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** podInvariants holds for every super Pod: no refused field, affinity within the tenant, NET_RAW gone, no template. */
function podInvariants(o: KubeObject & { spec: PodSpec }, ctx: PluginContext): void {
  expect(checkPodFields(o.spec)).toBeUndefined();
  const terms =
    (
      o.spec.affinity as {
        podAntiAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: Array<Record<string, unknown>> };
      }
    )?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
  for (const t of terms) {
    expect(t.namespaceSelector).toBeUndefined();
    // A super namespace maps back by arithmetic, except a cut and hashed one (a 63-character tenant namespace), which
    // only the syncer's namespace cache maps back: that one must still carry the tenant's prefix.
    for (const ns of (t.namespaces as string[] | undefined) ?? [])
      if (ctx.names.tenantNamespace(ns) === undefined)
        expect(ns.startsWith(`${ctx.tenant.key}-`) && ns.length === 63).toBe(true);
  }
  for (const v of o.spec.volumes ?? []) expect(v.ephemeral).toBeUndefined();
  for (const c of o.spec.containers) {
    const caps = (c.securityContext as { capabilities?: { drop?: string[] } } | undefined)?.capabilities;
    expect(caps?.drop).toContain('NET_RAW');
  }
  expect(o.spec.serviceAccountName).toBe('vc-tenant-pod');
}
