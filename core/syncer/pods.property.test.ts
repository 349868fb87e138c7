/**
 * Property tests of the Pod path (issue 31 §2, §5, §7): tenant Pods are generated at random with every field family a
 * tenant could use to reach across tenants or into the platform (pod affinity and anti-affinity with `namespaces` and
 * `namespaceSelector`, node affinity, topology spread with matchLabelKeys, volumes of every kind including ephemeral,
 * image, CSI, in-tree disks, projected service account tokens, pod certificates and trust bundles, host namespaces and
 * paths, host ports, capabilities, probes at other hosts, priority classes, schedulers, nodeName, claims, unknown
 * fields), under random pods policies and Pod Security levels, and planned through the planner with the pods plugin
 * and its mutators. Whatever the tenant wrote, a super Pod the plan creates stays in the tenant's super namespace,
 * carries the syncer's provenance only, keeps no field the allow-list refuses or the policy did not grant, runs as the
 * token-less vc-tenant-pod without NET_RAW, and tenant Pods map one-to-one to super Pods. Seeded: a failure prints the
 * seed and path that replay it (`fc.assert` options `seed`, `path`).
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import { isReservedKey, PUBLIC_LABEL, type PodsPolicyView } from '@virtualcluster-ts/plugin-sdk';
import type { PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import type { PluginContext, ResourcePlugin, TenantView } from '../plugins/contract.ts';
import { PluginHost } from '../plugins/host.ts';
import { MapCache, testContext, testTenant } from '../plugins/testing.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { checkPodFields } from '../../plugins/pods/fields.ts';
import { type Plan, planKey } from './plan.ts';

/** SEED makes every run replay the same Pods; change it (or take fast-check's report) to explore others. */
const SEED = 3131;
const FORGED = 'forged-by-tenant';
const OTHER = 'team-b-4d5e6f-prod';

const dnsLabel = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,12}[a-z0-9])?$/);
/** namespaces a term may name: the tenant's own, platform ones, another tenant's super namespace, a long one. */
const namespaceName = fc.oneof(
  fc.constantFrom('default', 'kube-system', 'team-b', `${OTHER}-default`, 'a'.repeat(63)),
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
    'x.tenancy.x-k8s.io/owner',
    'scheduler.tenancy.x-k8s.io/superCluster',
    'app',
  ),
  dnsLabel,
);
const metaArb = fc.dictionary(metaKey, fc.constantFrom(FORGED, OTHER, 'db'), { maxKeys: 4 });

const selector = fc.constantFrom(
  { matchLabels: { app: 'db' } },
  { matchExpressions: [{ key: LABEL.cluster, operator: 'In', values: [OTHER] }] },
);
/** rarely is `arb` one time in `n`, else absent: a field most generated objects leave out. */
const rarely = <T>(arb: fc.Arbitrary<T>, n = 4): fc.Arbitrary<T | undefined> =>
  fc.oneof({ weight: n - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });
/** defined drops the keys whose value is undefined. */
const defined = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

const podTerm = fc
  .record({
    topologyKey: fc.constantFrom('kubernetes.io/hostname', 'topology.kubernetes.io/zone'),
    labelSelector: selector,
    namespaces: fc.option(fc.array(namespaceName, { minLength: 1, maxLength: 3 }), { nil: undefined }),
    namespaceSelector: rarely(fc.constantFrom({}, { matchLabels: { team: 'b' } })),
    matchLabelKeys: rarely(fc.constantFrom(['app'], [LABEL.cluster])),
    mismatchLabelKeys: rarely(fc.constant(['app'])),
  })
  .map(defined);
const podAffinity = fc
  .record({
    requiredDuringSchedulingIgnoredDuringExecution: fc.option(fc.array(podTerm, { minLength: 1, maxLength: 2 })),
    preferredDuringSchedulingIgnoredDuringExecution: fc.option(
      fc.array(
        podTerm.map((podAffinityTerm) => ({ weight: 10, podAffinityTerm })),
        { minLength: 1, maxLength: 2 },
      ),
    ),
  })
  .map((a) => defined({ ...a }))
  .map((a) => Object.fromEntries(Object.entries(a).filter(([, v]) => v !== null)));
const nodeAffinity = fc
  .constantFrom('kubernetes.io/hostname', 'node-role.kubernetes.io/control-plane', 'topology.kubernetes.io/zone')
  .map((key) => ({
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'Exists' }] }],
    },
  }));
/** affinity is one of the three kinds, so that a refused node affinity does not hide every pod term */
const affinity = fc.oneof(
  podAffinity.map((podAffinity) => ({ podAffinity })),
  podAffinity.map((podAntiAffinity) => ({ podAntiAffinity })),
  nodeAffinity.map((nodeAffinity) => ({ nodeAffinity })),
);

const spread = fc.array(
  fc.record({
    maxSkew: fc.constant(1),
    topologyKey: fc.constant('kubernetes.io/hostname'),
    whenUnsatisfiable: fc.constantFrom('DoNotSchedule', 'ScheduleAnyway'),
    labelSelector: selector,
    matchLabelKeys: fc.constantFrom(['app'], [LABEL.cluster, 'pod-template-hash']),
  }),
  { minLength: 1, maxLength: 2 },
);

/** IN_TREE_BY_ID are volume kinds that name a disk or share by id, always refused. */
const IN_TREE_BY_ID = ['awsElasticBlockStore', 'gcePersistentDisk', 'azureDisk', 'cinder'] as const;
/** SERVER_VOLUMES are volume kinds the kubelet mounts from a server the tenant names; pods.volumeTypes grants them. */
const SERVER_VOLUMES = ['nfs', 'iscsi', 'cephfs', 'gitRepo'] as const;

const volume = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ emptyDir: {} }) },
  fc.constant({ hostPath: { path: '/var/run/containerd/containerd.sock' } }),
  fc.constant({ secret: { secretName: 'db-creds' } }),
  fc.constantFrom({ configMap: { name: 'kube-root-ca.crt' } }, { configMap: { name: 'app' } }),
  fc.constant({ persistentVolumeClaim: { claimName: 'data' } }),
  fc.constant({ downwardAPI: { items: [{ path: 'l', fieldRef: { fieldPath: 'metadata.labels' } }] } }),
  {
    weight: 3,
    arbitrary: fc.constantFrom('', 'vault', 'https://kubernetes.default.svc').map((audience) => ({
      projected: { sources: [{ serviceAccountToken: { path: 't', ...(audience && { audience }) } }] },
    })),
  },
  fc.constant({ projected: { sources: [{ podCertificate: { signerName: 'a/b', keyType: 'RSA3072' } }] } }),
  fc.constant({ projected: { sources: [{ clusterTrustBundle: { signerName: 'a/b', path: 'x' } }] } }),
  fc.constant({
    ephemeral: {
      volumeClaimTemplate: {
        metadata: { labels: { [LABEL.cluster]: OTHER }, annotations: { [ANN.uid]: FORGED } },
        spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'platform-only' },
      },
    },
  }),
  {
    weight: 3,
    arbitrary: fc.constant({ image: { reference: 'registry.example.com/private:1', pullPolicy: 'IfNotPresent' } }),
  },
  fc.constant({ csi: { driver: 'secrets-store.csi.k8s.io' } }),
  fc.constantFrom(...IN_TREE_BY_ID).map((k) => ({ [k]: { volumeID: 'vol-1' } })),
  fc.constantFrom(...SERVER_VOLUMES).map((k) => ({ [k]: { server: '10.0.0.1', path: '/' } })),
  fc.constant({ futureVolume: { id: 1 } }),
);
const volumes = fc
  .array(volume, { minLength: 1, maxLength: 2 })
  .map((vs) => vs.map((v, i) => ({ name: `v${i}`, ...v }) as Record<string, unknown>));

const probe = fc.constantFrom(
  { httpGet: { port: 80 } },
  { tcpSocket: { port: 80 } },
  { exec: { command: ['true'] } },
  { httpGet: { port: 8080, path: '/healthz' } },
  { httpGet: { host: '169.254.169.254', port: 80 } },
  { tcpSocket: { host: '10.0.0.1', port: 22 } },
);
const CONTAINER_KEYS = ['ports', 'securityContext', 'livenessProbe', 'lifecycle', 'env'] as const;
/** container is a tenant container: an image and up to two of its hostile fields, for the same reason as podSpecArb. */
const container = (name: string) =>
  fc
    .tuple(
      fc.record({
        image: fc.constantFrom('nginx', 'nginx:1.27', 'busybox', 'registry.example.com/app:1', 'localhost:5000/x'),
        ports: fc.constantFrom(
          [{ containerPort: 80 }],
          [{ containerPort: 8080 }],
          [{ containerPort: 80, hostPort: 80 }],
        ),
        securityContext: fc.constantFrom(
          {},
          { readOnlyRootFilesystem: true },
          { privileged: true },
          { capabilities: { add: ['NET_RAW'] } },
          { capabilities: { add: ['NET_ADMIN', 'SYS_ADMIN'] } },
          { capabilities: { drop: ['ALL'] }, runAsNonRoot: true, allowPrivilegeEscalation: false },
        ),
        livenessProbe: probe,
        lifecycle: probe.map((h) => ({ preStop: h })),
        env: fc.constant([{ name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }]),
      }),
      fc.subarray([...CONTAINER_KEYS], { maxLength: 2 }),
      fc.nat(9),
    )
    // most containers name a public image, so that the property meets the other fields too
    .map(([c, keys, n]) => ({
      name,
      image: n < 7 ? 'nginx' : c.image,
      ...Object.fromEntries(keys.map((k) => [k, c[k]])),
    }));

/** top-level Pod fields a tenant may set; each generated Pod takes up to three of them (POD_FIELD_KEYS). */
const podFields = fc.record(
  {
    affinity,
    topologySpreadConstraints: spread,
    volumes,
    initContainers: container('init').map((c) => [c]),
    ephemeralContainers: fc.constant([{ name: 'debug', image: 'busybox' }]),
    hostNetwork: fc.constant(true),
    hostPID: fc.constant(true),
    hostIPC: fc.constant(true),
    nodeName: fc.constantFrom('super-node-1', 'kind-control-plane'),
    nodeSelector: fc.constantFrom({ 'kubernetes.io/hostname': 'n1' }, { 'node-role.kubernetes.io/control-plane': '' }),
    tolerations: fc.constantFrom([{ operator: 'Exists' }], [{ key: 'dedicated', operator: 'Equal', value: 'gpu' }]),
    priorityClassName: fc.constantFrom('system-node-critical', 'high', 'low'),
    schedulerName: fc.constantFrom('default-scheduler', 'evil-scheduler'),
    runtimeClassName: fc.constantFrom('runc', 'kata'),
    serviceAccountName: fc.constantFrom('default', 'admin'),
    automountServiceAccountToken: fc.boolean(),
    dnsPolicy: fc.constantFrom('ClusterFirst', 'Default', 'None'),
    dnsConfig: fc.constant({ nameservers: ['10.96.0.10'] }),
    hostAliases: fc.constant([{ ip: '10.0.0.1', hostnames: ['kubernetes'] }]),
    resourceClaims: fc.constant([{ name: 'gpu', resourceClaimName: 'x' }]),
    schedulingGroup: fc.constant({ podGroupName: 'g' }),
    securityContext: fc.constantFrom({}, { sysctls: [{ name: 'net.ipv4.ip_forward', value: '1' }] }),
    futureField: fc.constant({ reachesAcross: true }),
  },
  { requiredKeys: [] },
);

const POD_FIELD_KEYS = [
  'affinity',
  'topologySpreadConstraints',
  'volumes',
  'initContainers',
  'ephemeralContainers',
  'hostNetwork',
  'hostPID',
  'hostIPC',
  'nodeName',
  'nodeSelector',
  'tolerations',
  'priorityClassName',
  'schedulerName',
  'runtimeClassName',
  'serviceAccountName',
  'automountServiceAccountToken',
  'dnsPolicy',
  'dnsConfig',
  'hostAliases',
  'resourceClaims',
  'schedulingGroup',
  'securityContext',
  'futureField',
] as const;

/**
 * podSpecArb is a tenant Pod spec: one or two containers and up to three of the top-level fields (with all of them at
 * once nearly every Pod would be refused for one field, and the property would say little about the others).
 */
const podSpecArb: fc.Arbitrary<PodSpec> = fc
  .tuple(
    podFields,
    fc.subarray([...POD_FIELD_KEYS], { maxLength: 3 }),
    fc.array(container('c'), { minLength: 1, maxLength: 2 }),
  )
  .map(
    ([fields, keys, cs]) =>
      ({
        ...Object.fromEntries(keys.flatMap((k) => (fields[k] === undefined ? [] : [[k, fields[k]]]))),
        containers: cs.map((c, i) => ({ ...c, name: `c${i}` })),
      }) as PodSpec,
  );

const policyArb: fc.Arbitrary<PodsPolicyView> = fc.record(
  {
    hostAccess: fc.boolean(),
    hostPorts: fc.boolean(),
    volumeTypes: fc.subarray([...SERVER_VOLUMES, 'csi']),
    priorityClasses: fc.subarray(['high', 'system-node-critical']),
    schedulerNames: fc.subarray(['evil-scheduler']),
    registries: fc.constantFrom(['*'], ['docker.io'], ['docker.io', 'registry.example.com']),
  },
  { requiredKeys: [] },
);
const levelArb = fc.constantFrom('privileged', 'privileged', 'baseline', 'baseline', 'restricted') as fc.Arbitrary<
  TenantView['podSecurityLevel']
>;

const superNamespaceObj = (tenant: TenantView, name: string, tenantNs: string): KubeObject => ({
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

/** contextFor is a tenant holding `pod` in its namespace, planned against a super cluster holding that namespace. */
function contextFor(tenant: TenantView, pod: KubeObject): PluginContext {
  const ns = pod.metadata!.namespace!;
  const sns = testContext({ tenant }).names.superNamespace(ns);
  return testContext({
    tenant,
    tenantCache: new MapCache([
      [R.namespaces, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, uid: `tns-${ns}` } }]],
      [R.pods, [pod]],
    ]),
    superCache: new MapCache([
      [R.namespaces, [superNamespaceObj(tenant, sns, ns)]],
      [
        R.serviceaccounts,
        [{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { namespace: sns, name: 'vc-tenant-pod' } }],
      ],
      [
        R.storageclasses,
        [
          {
            apiVersion: 'storage.k8s.io/v1',
            kind: 'StorageClass',
            metadata: { name: 'shared', labels: { [PUBLIC_LABEL]: 'true' } },
          },
        ],
      ],
    ]),
  });
}

const superObjects = (p: Plan): KubeObject[] =>
  [...p.steps, ...(p.afterEffects ?? [])].flatMap((s) => (s.op === 'createSuper' ? [s.obj] : []));

type Term = { namespaces?: string[]; namespaceSelector?: unknown };
/** podTermsOf lists every pod (anti-)affinity term of a spec, required and preferred. */
function podTermsOf(spec: PodSpec): Term[] {
  const a = spec.affinity as Record<string, Record<string, unknown[]> | undefined> | undefined;
  return (['podAffinity', 'podAntiAffinity'] as const).flatMap((k) => [
    ...((a?.[k]?.requiredDuringSchedulingIgnoredDuringExecution ?? []) as Term[]),
    ...((a?.[k]?.preferredDuringSchedulingIgnoredDuringExecution ?? []) as Array<{ podAffinityTerm: Term }>).map(
      (x) => x.podAffinityTerm,
    ),
  ]);
}

type Container = {
  ports?: Array<{ hostPort?: number }>;
  securityContext?: { capabilities?: { add?: string[]; drop?: string[] } };
  livenessProbe?: Record<string, { host?: string }>;
  lifecycle?: { preStop?: Record<string, { host?: string }> };
};
type Volume = Record<string, unknown> & { projected?: { sources?: Array<Record<string, unknown>> } };

/** superPodInvariants is what holds for every super Pod, whatever the tenant Pod `spec` asked. */
function superPodInvariants(o: KubeObject & { spec: PodSpec }, ctx: PluginContext, policy: PodsPolicyView): void {
  const s = o.spec;
  // nothing the allow-list refuses or does not know
  expect(checkPodFields(s)).toBeUndefined();
  for (const k of ['futureField', 'resourceClaims', 'schedulingGroup', 'ephemeralContainers', 'nodeName'])
    expect(s[k]).toBeUndefined();
  // scheduling terms stay within the tenant's super namespaces
  for (const t of podTermsOf(s)) {
    expect(t.namespaceSelector).toBeUndefined();
    for (const ns of t.namespaces ?? [])
      if (ctx.names.tenantNamespace(ns) === undefined)
        expect(ns.startsWith(`${ctx.tenant.key}-`) && ns.length === 63).toBe(true);
  }
  // host access only as the policy grants it
  if (!policy.hostAccess) for (const k of ['hostNetwork', 'hostPID', 'hostIPC']) expect(s[k] ?? false).toBe(false);
  const vols = (s.volumes ?? []) as Volume[];
  for (const v of vols) {
    if (!policy.hostAccess) expect(v.hostPath).toBeUndefined();
    expect(v.ephemeral).toBeUndefined();
    for (const k of IN_TREE_BY_ID) expect(v[k]).toBeUndefined();
    for (const k of SERVER_VOLUMES) if (v[k] !== undefined) expect(policy.volumeTypes ?? []).toContain(k);
    if (v.csi !== undefined) expect(policy.volumeTypes ?? []).toContain('csi');
    for (const src of v.projected?.sources ?? []) {
      // a projected token in the super Pod would be minted by the super cluster: a credential into the platform
      expect(src.serviceAccountToken).toBeUndefined();
      expect(src.podCertificate).toBeUndefined();
      expect(src.clusterTrustBundle).toBeUndefined();
    }
  }
  // the super Pod holds no credential of the super cluster
  expect(s.serviceAccountName).toBe('vc-tenant-pod');
  expect(s.automountServiceAccountToken).toBe(false);
  for (const c of [...s.containers, ...((s.initContainers ?? []) as typeof s.containers)] as Container[]) {
    if (!policy.hostPorts) for (const p of c.ports ?? []) expect(p.hostPort).toBeUndefined();
    const caps = c.securityContext?.capabilities;
    if (!caps?.add?.includes('NET_RAW')) expect(caps?.drop?.some((x) => x === 'NET_RAW' || x === 'ALL')).toBe(true);
    for (const h of [...Object.values(c.livenessProbe ?? {}), ...Object.values(c.lifecycle?.preStop ?? {})])
      expect(h?.host).toBeUndefined();
  }
  const pc = s.priorityClassName as string | undefined;
  if (pc !== undefined) {
    expect(pc.startsWith('system-')).toBe(false);
    expect(policy.priorityClasses ?? []).toContain(pc);
  }
  const sched = s.schedulerName as string | undefined;
  if (sched !== undefined && sched !== 'default-scheduler') expect(policy.schedulerNames ?? []).toContain(sched);
}

describe('the Pod path, for any tenant Pod under any pods policy', () => {
  let host: PluginHost;
  let pods: ResourcePlugin;
  beforeAll(async () => {
    host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    pods = builtinPlugins.find((p) => p.manifest.name === 'pods') as ResourcePlugin;
  });

  it('creates a super Pod only within the tenant, with the syncer provenance, no refused or ungranted field', () => {
    let createdPods = 0;
    let refusedPods = 0;
    /** seen counts the super Pods that carried each field family, so the invariants are known to have met them */
    const seen = { podTerms: 0, termNamespaces: 0, spread: 0, projected: 0, hostNetwork: 0, imageVolume: 0, init: 0 };
    fc.assert(
      fc.property(
        fc.constantFrom('default', 'app', 'a'.repeat(63)),
        dnsLabel,
        metaArb,
        metaArb,
        podSpecArb,
        policyArb,
        levelArb,
        (ns, name, labels, annotations, spec, policy, level) => {
          const tenant = testTenant({ pods: policy, podSecurityLevel: level });
          const pod: KubeObject & { spec: PodSpec } = {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { namespace: ns, name, uid: 'tenant-pod-uid', resourceVersion: '1', labels, annotations },
            spec,
          };
          const ctx = contextFor(tenant, pod);
          const p = planKey(host, pods, ctx, { namespace: ns, name });
          for (const st of p.steps)
            if ('namespace' in st && st.namespace && st.op.endsWith('Super'))
              expect(ctx.names.tenantNamespace(st.namespace)).toBeDefined();
          const made = superObjects(p);
          if (!made.length) refusedPods++;
          for (const o of made) {
            const m = o.metadata ?? {};
            expect(m.namespace).toBe(ctx.names.superNamespace(ns));
            expect(m.labels?.[LABEL.cluster]).toBe(tenant.key);
            expect(m.annotations?.[ANN.cluster]).toBe(tenant.key);
            expect(m.annotations?.[ANN.uid]).toBe('tenant-pod-uid');
            for (const [k, v] of [...Object.entries(m.labels ?? {}), ...Object.entries(m.annotations ?? {})])
              if (isReservedKey(k)) expect([FORGED, OTHER]).not.toContain(v);
            if (o.kind !== 'Pod') continue;
            createdPods++;
            expect(m.name).toBe(name);
            const ss = (o as KubeObject & { spec: PodSpec }).spec;
            const terms = podTermsOf(ss);
            seen.podTerms += terms.length ? 1 : 0;
            seen.termNamespaces += terms.some((t) => t.namespaces?.length) ? 1 : 0;
            seen.spread += ss.topologySpreadConstraints ? 1 : 0;
            seen.projected += ((ss.volumes ?? []) as Volume[]).some((v) => v.projected) ? 1 : 0;
            seen.imageVolume += ((ss.volumes ?? []) as Volume[]).some((v) => v.image) ? 1 : 0;
            seen.hostNetwork += ss.hostNetwork ? 1 : 0;
            seen.init += ss.initContainers ? 1 : 0;
            superPodInvariants(o as KubeObject & { spec: PodSpec }, ctx, policy);
          }
          // a Pod the allow-list refuses is never created, whatever else it asks
          if (checkPodFields(spec)) expect(made.filter((o) => o.kind === 'Pod')).toEqual([]);
        },
      ),
      { numRuns: 1500, seed: SEED },
    );
    // both sides of the property were exercised: some Pods got through, some were refused
    expect(createdPods).toBeGreaterThan(20);
    expect(refusedPods).toBeGreaterThan(20);
    for (const [family, n] of Object.entries(seen)) expect([family, n > 0]).toEqual([family, true]);
  }, 60_000);

  it('maps distinct tenant Pods to distinct super Pods, never into another tenant', () => {
    const a = testContext({ tenant: testTenant() }).names;
    const b = testContext({ tenant: testTenant({ key: OTHER }) }).names;
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.constantFrom('default', 'app', 'default-app', 'app-default'), dnsLabel), {
          minLength: 2,
          maxLength: 10,
          selector: ([ns, n]) => `${ns}/${n}`,
        }),
        (keys) => {
          const mine = keys.map(([ns, n]) => `${a.superNamespace(ns)}/${n}`);
          expect(new Set(mine).size).toBe(keys.length);
          const theirs = new Set(keys.map(([ns, n]) => `${b.superNamespace(ns)}/${n}`));
          for (const k of mine) expect(theirs.has(k)).toBe(false);
        },
      ),
      { numRuns: 300, seed: SEED },
    );
  }, 60_000);
});
