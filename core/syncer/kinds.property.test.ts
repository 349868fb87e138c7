/**
 * Property tests of the synced kinds besides Pods and Services (issue 31 §2, §4, §7), each with the fields that matter
 * for its isolation rather than random JSON: Endpoints at every kind of address, claims with every way to bind a
 * volume, service account token Secrets, ServiceAccounts with cloud identity annotations and token pull secrets,
 * ConfigMaps under reserved names, and Ingresses with hosts, classes, annotations and ExternalName backends, all with
 * forged provenance. Planned through the planner with the plugin of the kind; whatever the tenant wrote, what the plan
 * creates stays in the tenant's super namespace under the tenant's name, carries the syncer's provenance only, and
 * keeps nothing the kind's rule refuses. Seeded: a failure prints the seed and path that replay it.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject, Resource } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import { isReservedKey, PUBLIC_LABEL, type TenantView } from '@virtualcluster-ts/plugin-sdk';
import type { PluginContext, ResourcePlugin } from '../plugins/contract.ts';
import { PluginHost } from '../plugins/host.ts';
import { MapCache, testContext, testTenant } from '../plugins/testing.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { hostAllowed, isSnippet } from '../../plugins/ingresses/index.ts';
import { type Plan, planKey } from './plan.ts';

const SEED = 3132;
const FORGED = 'forged-by-tenant';
const OTHER = 'team-b-4d5e6f-prod';
const NS = 'app';

const tenant = testTenant({
  plugins: { enable: ['ingresses'] },
  endpoints: { allowedCIDRs: ['203.0.113.0/24', '10.244.0.0/16'] },
  ingresses: {
    hosts: ['*.team-a.example.com'],
    classes: ['nginx'],
    annotations: ['nginx.ingress.kubernetes.io/rewrite-target', 'nginx.ingress.kubernetes.io/*-snippet'],
  },
});
const names = testContext({ tenant }).names;
const SNS = names.superNamespace(NS);

/** Super Pods: the tenant's own, and another tenant's inside an allowed CIDR. */
const OWN_IP = '10.244.1.10';
const OTHER_IP = '10.244.2.20';
const superPod = (ip: string, owner: string, ns: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    namespace: ns,
    name: `p-${ip}`,
    labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: owner },
    annotations: { [ANN.cluster]: owner, [ANN.namespace]: NS, [ANN.name]: `p-${ip}`, [ANN.uid]: `u-${ip}` },
  },
  status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
});

const superNamespaceObj: KubeObject = {
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: {
    name: SNS,
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
const storageClass = (name: string, shared: boolean, isDefault = false): KubeObject => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: {
    name,
    ...(shared && { labels: { [PUBLIC_LABEL]: 'true' } }),
    ...(isDefault && { annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } }),
  },
});
const SHARED_CLASSES = new Set(['shared', 'shared-default']);

const metaArb = fc.dictionary(
  fc.constantFrom(
    LABEL.cluster,
    LABEL.managedBy,
    ANN.cluster,
    ANN.uid,
    ANN.name,
    'x.tenancy.x-k8s.io/owner',
    'eks.amazonaws.com/role-arn',
    'iam.gke.io/gcp-service-account',
    'kubernetes.io/service-account.name',
    'nginx.ingress.kubernetes.io/rewrite-target',
    'nginx.ingress.kubernetes.io/server-snippet',
    'nginx.ingress.kubernetes.io/auth-url',
    'kubernetes.io/ingress.class',
    'app',
  ),
  fc.constantFrom(FORGED, OTHER, 'nginx', '/'),
  { maxKeys: 4 },
);
const nameArb = fc.constantFrom('web', 'db', 'kube-root-ca.crt', 'tenant-kube-root-ca.crt', 'vc-tenant-pod', 'default');

// ---- per-kind bodies -------------------------------------------------------------------------------------------

const address = fc.record(
  {
    ip: fc.constantFrom(OWN_IP, OTHER_IP, '203.0.113.9', '10.96.0.1', '127.0.0.1', '169.254.169.254', '192.168.0.1'),
    targetRef: fc.constantFrom(
      { kind: 'Pod', namespace: NS, name: 'web', uid: FORGED },
      { kind: 'Pod', namespace: 'team-b', name: 'db' },
    ),
  },
  { requiredKeys: ['ip'] },
);
const endpointsBody = fc.record({
  subsets: fc.array(
    fc.record(
      {
        addresses: fc.array(address, { maxLength: 3 }),
        notReadyAddresses: fc.array(address, { maxLength: 2 }),
        ports: fc.constant([{ port: 80 }]),
      },
      { requiredKeys: ['ports'] },
    ),
    { maxLength: 2 },
  ),
});

const claimBody = fc.record({
  spec: fc.record(
    {
      accessModes: fc.constant(['ReadWriteOnce']),
      resources: fc.constant({ requests: { storage: '1Gi' } }),
      storageClassName: fc.constantFrom('shared', 'platform-only', '', 'shared-default', 'missing'),
      // a claim naming a volume is refused: present in one of two, so that enough claims are created too
      volumeName: fc.option(fc.constantFrom('pv-of-team-b', 'pv-platform'), { nil: undefined, freq: 2 }),
      selector: fc.constant({ matchLabels: { owner: 'team-b' } }),
      dataSource: fc.constant({ kind: 'PersistentVolumeClaim', name: 'other' }),
      dataSourceRef: fc.constantFrom(
        { kind: 'VolumeSnapshot', apiGroup: 'snapshot.storage.k8s.io', name: 's' },
        { kind: 'VolumeSnapshot', apiGroup: 'snapshot.storage.k8s.io', name: 's', namespace: 'team-b' },
      ),
    },
    { requiredKeys: ['accessModes', 'resources'] },
  ),
});

const secretBody = fc.record(
  {
    type: fc.constantFrom('Opaque', 'kubernetes.io/service-account-token', 'kubernetes.io/dockerconfigjson', 'x/y'),
    data: fc.constant({ token: 'Zm9yZ2Vk' }),
    immutable: fc.boolean(),
  },
  { requiredKeys: ['type'] },
);

const serviceAccountBody = fc.record(
  {
    automountServiceAccountToken: fc.boolean(),
    imagePullSecrets: fc.subarray([{ name: 'pull' }, { name: 'sa-token' }, { name: 'missing' }]),
    secrets: fc.constant([{ name: 'sa-token' }]),
  },
  { requiredKeys: [] },
);

const configMapBody = fc.record({ data: fc.constant({ 'ca.crt': 'forged' }) });

const backend = fc
  .constantFrom('web', 'web', 'db', 'alias', 'absent')
  .map((name) => ({ service: { name, port: { number: 80 } } }));
const ingressBody = fc.record({
  spec: fc.record(
    {
      ingressClassName: fc.constantFrom('nginx', 'nginx', 'internal'),
      rules: fc.array(
        fc.record({
          host: fc.constantFrom(
            'shop.team-a.example.com',
            'api.team-a.example.com',
            'bank.team-b.example.com',
            'team-a.example.com',
          ),
          http: backend.map((b) => ({ paths: [{ path: '/', pathType: 'Prefix', backend: b }] })),
        }),
        { minLength: 1, maxLength: 2 },
      ),
      tls: fc.constant([{ hosts: ['shop.team-a.example.com'], secretName: 'tls' }]),
      defaultBackend: fc.option(backend, { nil: undefined, freq: 4 }),
    },
    { requiredKeys: ['rules'] },
  ),
});

/** KINDS are the kinds under test: their resource, a body generator, and what must hold of a super copy. */
const KINDS: Array<{
  plugin: string;
  r: Resource;
  body: fc.Arbitrary<Record<string, unknown>>;
  holds(o: KubeObject, tenantObj: KubeObject): void;
}> = [
  {
    plugin: 'endpoints',
    r: R.endpoints,
    body: endpointsBody,
    holds(o) {
      const subsets = (
        o as {
          subsets?: Array<Record<string, Array<{ ip: string; targetRef?: { namespace?: string; uid?: string } }>>>;
        }
      ).subsets;
      for (const s of subsets ?? [])
        for (const a of [...(s.addresses ?? []), ...(s.notReadyAddresses ?? [])]) {
          // the tenant's own running Pod, or an allowed range that is no other tenant's Pod
          expect([OWN_IP, '203.0.113.9']).toContain(a.ip);
          if (a.targetRef?.namespace) expect(names.tenantNamespace(a.targetRef.namespace)).toBeDefined();
          expect(a.targetRef?.uid).toBeUndefined();
        }
    },
  },
  {
    plugin: 'persistentvolumeclaims',
    r: R.persistentvolumeclaims,
    body: claimBody,
    holds(o) {
      const spec = (o as { spec?: Record<string, unknown> & { dataSourceRef?: { namespace?: string } } }).spec ?? {};
      // binds only what the platform provisions for it: a shared class, no volume picked by name or label
      expect(SHARED_CLASSES.has(spec.storageClassName as string)).toBe(true);
      expect(spec.volumeName).toBeUndefined();
      expect(spec.selector).toBeUndefined();
      if (spec.dataSourceRef?.namespace) expect(names.tenantNamespace(spec.dataSourceRef.namespace)).toBeDefined();
    },
  },
  {
    plugin: 'secrets',
    r: R.secrets,
    body: secretBody,
    holds(o, t) {
      // a service account token Secret in the super would be filled with a token of the super cluster
      expect((o as { type?: string }).type).not.toBe('kubernetes.io/service-account-token');
      expect((o as { data?: unknown }).data).toEqual((t as { data?: unknown }).data);
    },
  },
  {
    plugin: 'serviceaccounts',
    r: R.serviceaccounts,
    body: serviceAccountBody,
    holds(o) {
      const sa = o as KubeObject & {
        automountServiceAccountToken?: boolean;
        imagePullSecrets?: Array<{ name: string }>;
      };
      expect(sa.automountServiceAccountToken).toBe(false);
      expect(sa.metadata?.name).not.toBe('vc-tenant-pod');
      expect((sa as { secrets?: unknown }).secrets).toBeUndefined();
      // cloud identity webhooks read annotations of super ServiceAccounts: none of the tenant's reaches them
      for (const k of Object.keys(sa.metadata?.annotations ?? {})) expect(isReservedKey(k)).toBe(true);
      for (const p of sa.imagePullSecrets ?? []) expect(p.name).not.toBe('sa-token');
    },
  },
  {
    plugin: 'configmaps',
    r: R.configmaps,
    body: configMapBody,
    holds(o, t) {
      // the tenant's root CA under the super's reserved name would replace what the super's kubelet mounts, and the
      // name the tenant's own root CA takes in the super is the syncer's
      expect(o.metadata?.name).not.toBe('kube-root-ca.crt');
      expect(o.metadata?.name === 'tenant-kube-root-ca.crt').toBe(t.metadata?.name === 'kube-root-ca.crt');
    },
  },
  {
    plugin: 'ingresses',
    r: R.ingresses,
    body: ingressBody,
    holds(o) {
      const spec = (o as { spec?: Record<string, unknown> }).spec ?? {};
      expect(spec.defaultBackend).toBeUndefined();
      if (spec.ingressClassName !== undefined) expect(tenant.ingresses!.classes).toContain(spec.ingressClassName);
      for (const r of (spec.rules ?? []) as Array<{
        host: string;
        http: { paths: Array<{ backend: { service: { name: string } } }> };
      }>) {
        expect(hostAllowed(r.host, tenant.ingresses!.hosts!)).toBe(true);
        for (const p of r.http.paths) expect(p.backend.service.name).not.toBe('alias');
      }
      for (const k of Object.keys(o.metadata?.annotations ?? {}))
        if (!isReservedKey(k)) {
          expect(isSnippet(k)).toBe(false);
          expect(['nginx.ingress.kubernetes.io/rewrite-target', 'kubernetes.io/ingress.class']).toContain(k);
        }
    },
  },
];

/** tenantState is what else the tenant holds: its namespace, a selectorless Service, token and pull Secrets. */
const tenantState = (r: Resource, obj: KubeObject): Array<[Resource, KubeObject[]]> => {
  const svc = (name: string, spec: Record<string, unknown>): KubeObject =>
    ({ apiVersion: 'v1', kind: 'Service', metadata: { namespace: NS, name }, spec }) as KubeObject;
  const secret = (name: string, type: string): KubeObject =>
    ({ apiVersion: 'v1', kind: 'Secret', metadata: { namespace: NS, name }, type }) as KubeObject;
  const others: Array<[Resource, KubeObject[]]> = [
    [R.namespaces, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, uid: `tns-${NS}` } }]],
    [
      R.services,
      [
        // selectorless under every name an Endpoints may take, so that its addresses are what is decided
        ...['web', 'db', 'kube-root-ca.crt', 'tenant-kube-root-ca.crt', 'vc-tenant-pod', 'default'].map((n) =>
          svc(n, { ports: [{ port: 80 }] }),
        ),
        svc('alias', { type: 'ExternalName', externalName: '127.0.0.1.nip.io' }),
      ],
    ],
    [
      R.secrets,
      [secret('pull', 'kubernetes.io/dockerconfigjson'), secret('sa-token', 'kubernetes.io/service-account-token')],
    ],
  ];
  return [...others.filter(([x]) => x !== r), [r, [...(others.find(([x]) => x === r)?.[1] ?? []), obj]]];
};

function contextFor(t: TenantView, r: Resource, obj: KubeObject): PluginContext {
  return testContext({
    tenant: t,
    tenantCache: new MapCache(tenantState(r, obj)),
    superCache: new MapCache([
      [R.namespaces, [superNamespaceObj]],
      [R.pods, [superPod(OWN_IP, tenant.key, SNS), superPod(OTHER_IP, OTHER, `${OTHER}-${NS}`)]],
      [
        R.storageclasses,
        [
          storageClass('shared', true),
          storageClass('shared-default', true, true),
          storageClass('platform-only', false),
        ],
      ],
    ]),
  });
}

const superObjects = (p: Plan): KubeObject[] =>
  [...p.steps, ...(p.afterEffects ?? [])].flatMap((s) => (s.op === 'createSuper' ? [s.obj] : []));

describe('the synced kinds, for any tenant object of the kind', () => {
  let host: PluginHost;
  beforeAll(async () => {
    host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
  });

  it.each(KINDS.map((k) => [k.plugin, k] as const))(
    '%s: within the tenant, the syncer provenance alone, nothing the rule refuses',
    (_name, kind) => {
      const plugin = builtinPlugins.find((p) => p.manifest.name === kind.plugin) as ResourcePlugin;
      let created = 0;
      let notCreated = 0;
      fc.assert(
        fc.property(nameArb, metaArb, metaArb, kind.body, (name, labels, annotations, body) => {
          const obj: KubeObject = {
            apiVersion: kind.r.group ? `${kind.r.group}/${kind.r.version}` : kind.r.version,
            kind: kind.r.kind,
            metadata: { namespace: NS, name, uid: 'tenant-uid', resourceVersion: '1', labels, annotations },
            ...body,
          };
          const ctx = contextFor(tenant, kind.r, obj);
          const p = planKey(host, plugin, ctx, { namespace: NS, name });
          for (const st of p.steps)
            if ('namespace' in st && st.namespace && st.op.endsWith('Super'))
              expect(names.tenantNamespace(st.namespace)).toBeDefined();
          const made = superObjects(p).filter((o) => o.kind === kind.r.kind);
          if (!made.length) notCreated++;
          for (const o of made) {
            created++;
            const m = o.metadata ?? {};
            expect(m.namespace).toBe(SNS);
            if (kind.plugin !== 'configmaps') expect(m.name).toBe(name);
            expect(m.labels?.[LABEL.cluster]).toBe(tenant.key);
            expect(m.annotations?.[ANN.cluster]).toBe(tenant.key);
            expect(m.annotations?.[ANN.uid]).toBe('tenant-uid');
            for (const [k, v] of [...Object.entries(m.labels ?? {}), ...Object.entries(m.annotations ?? {})])
              if (isReservedKey(k)) expect([FORGED, OTHER]).not.toContain(v);
            kind.holds(o, obj);
          }
        }),
        { numRuns: 300, seed: SEED },
      );
      // both sides of the property were exercised
      expect(created).toBeGreaterThan(10);
      if (kind.plugin !== 'secrets' && kind.plugin !== 'endpoints') expect(notCreated).toBeGreaterThan(0);
    },
  );

  it('maps distinct tenant objects to distinct super objects for every kind (configmaps rename one name)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.constantFrom('default', 'app', 'app-x', 'x'), nameArb), {
          minLength: 2,
          maxLength: 10,
          selector: ([ns, n]) => `${ns}/${n}`,
        }),
        (keys) => {
          for (const k of KINDS) {
            // tenant-kube-root-ca.crt is the super name of the tenant's kube-root-ca.crt: a tenant ConfigMap of that
            // name is refused by toSuper (the property above), so it is no tenant object of the mapping
            const mapped = k.plugin === 'configmaps' ? keys.filter(([, n]) => n !== 'tenant-kube-root-ca.crt') : keys;
            const plugin = builtinPlugins.find((p) => p.manifest.name === k.plugin) as ResourcePlugin;
            const ctx = testContext({ tenant });
            const supers = mapped.map(([ns, n]) => {
              const s = plugin.superName?.(ns, n, ctx) ?? { namespace: names.superNamespace(ns), name: n };
              return `${s.namespace ?? names.superNamespace(ns)}/${s.name}`;
            });
            expect(new Set(supers).size).toBe(mapped.length);
          }
        },
      ),
      { numRuns: 200, seed: SEED },
    );
  });
});
