import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { ANN, LABEL, provenanceOf, superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { registry as metricsRegistry } from '../../core/metrics/registry.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';

/** sharedClass is a super StorageClass the platform shares with tenants (labelled public), for volumes made beforehand. */
const sharedClass = (name: string): KubeObject => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name, labels: { 'tenancy.x-k8s.io/super.public': 'true' } },
  provisioner: 'kubernetes.io/no-provisioner',
});

interface Pod extends KubeObject {
  spec: {
    nodeName?: string;
    dnsPolicy?: string;
    dnsConfig?: { nameservers?: string[]; searches?: string[] };
    runtimeClassName?: string;
    automountServiceAccountToken?: boolean;
    volumes?: Array<{ name: string; secret?: { secretName: string } }>;
  };
  status?: {
    phase?: string;
    podIP?: string;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  };
}

const sandboxPlugin = join(import.meta.dirname, '../../plugins/examples/sandbox-runtimeclass');

const deployment = (name: string, replicas: number, podSpec: Record<string, unknown> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'default' },
  spec: {
    replicas,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: { containers: [{ name: 'c', image: 'nginx' }], ...podSpec },
    },
  },
});

describe('syncer on a real super cluster with two tenant control planes', () => {
  let t: TestSuper;
  let cpA: LocalControlPlane;
  let cpB: LocalControlPlane;
  let a: KubeClient;
  let b: KubeClient;
  let tenantA: Tenant;
  let tenantB: Tenant;
  let registry: MutableTenantRegistry;
  let host: PluginHost;
  let syncer: Syncer;

  const newSyncer = () => new Syncer({ superClient: t.client, host, registry, patrolIntervalMs: 0, workers: 8 });
  const superPods = async (tenant: Tenant) =>
    (await t.client.list<Pod>(R.pods, { labelSelector: `${LABEL.cluster}=${tenant.key}` })).items;

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 2 });
    [cpA, cpB] = await Promise.all([
      t.sc.addControlPlane('tenant-a', { controllers: TENANT_CONTROLLERS }),
      t.sc.addControlPlane('tenant-b', { controllers: TENANT_CONTROLLERS }),
    ]);
    a = await cpA.client();
    b = await cpB.client();
    tenantA = tenantFor(cpA, 'team-a', 'a', '11111111-aaaa-4aaa-8aaa-000000000001', {
      pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
      transparentMetaPrefixes: ['super.example.com/'],
      opaqueMetaPrefixes: ['secret.example.com/'],
      // The allow-list lets example.com keys down; the opaque prefix still keeps secret.example.com back.
      copiedMetadata: { annotations: ['*', '*.example.com/*'] },
    });
    tenantB = tenantFor(cpB, 'team-b', 'b', '22222222-bbbb-4bbb-8bbb-000000000002', {
      pluginConfig: { nodes: { vnAgent: { port: 10550 } }, sandbox: { runtimeClassName: 'kata' } },
      // B's Pods keep a token Secret each, bound to the tenant Pod (A has the default: one per ServiceAccount).
      pods: { serviceAccountTokens: 'perPod' },
    });
    await t.client.create(R.runtimeclasses, {
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name: 'kata' },
      handler: 'kata',
    });
    registry = new MutableTenantRegistry([tenantA, tenantB]);
    host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins, thirdParty: [sandboxPlugin] });
    expect(host.failures).toEqual([]);
    syncer = newSyncer();
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenantA.key) && syncer.tenantReady(tenantB.key)).toBe(true));
  });

  afterAll(async () => {
    await syncer?.stop();
    await t?.stop();
  });

  it("runs a tenant Deployment's Pods Running in the tenant, on vNodes, from prefixed super namespaces", async () => {
    await a.create(R.deployments, deployment('web', 3));
    const pods = await eventually(async () => {
      const list = await a.list<Pod>(R.pods, { namespace: 'default', labelSelector: 'app=web' });
      expect(list.items.filter((p) => p.status?.phase === 'Running' && p.spec.nodeName)).toHaveLength(3);
      return list.items;
    }, 90_000);
    const superNs = superNamespace(tenantA.key, 'default');
    expect(superNs).toMatch(/^vc-[0-9a-f]{16}-team-a-a-default$/);
    const sp = await t.client.list<Pod>(R.pods, { namespace: superNs, labelSelector: 'app=web' });
    expect(sp.items).toHaveLength(3);
    for (const p of pods) {
      const s = sp.items.find((x) => x.metadata?.name === p.metadata?.name)!;
      expect(s.spec.nodeName).toBe(p.spec.nodeName);
      expect(provenanceOf(s)).toMatchObject({ cluster: tenantA.key, namespace: 'default', uid: p.metadata?.uid });
      expect(p.status?.podIP).toBe(s.status?.podIP);
    }
    const vnodes = await a.list(R.nodes);
    expect(vnodes.items.map((n) => n.metadata?.name).sort()).toEqual(
      [...new Set(pods.map((p) => p.spec.nodeName!))].sort(),
    );
    const vn = vnodes.items[0] as KubeObject & { status: { daemonEndpoints: { kubeletEndpoint: { Port: number } } } };
    expect(vn.status.daemonEndpoints.kubeletEndpoint.Port).toBe(10550);
  });

  it("runs a tenant DaemonSet's Pods on every vNode under the default policy, pinned to the super nodes", async () => {
    // tenant A sees the vNodes of the nodes its web Pods run on; its DaemonSet controller pins one Pod to each
    const vNodes = (await a.list(R.nodes)).items.map((n) => n.metadata!.name!).sort();
    expect(vNodes.length).toBeGreaterThan(0);
    await a.create(R.daemonsets, {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent', namespace: 'default' },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
      },
    });
    const pods = await eventually(async () => {
      const list = await a.list<Pod>(R.pods, { namespace: 'default', labelSelector: 'app=agent' });
      expect(
        list.items
          .filter((p) => p.status?.phase === 'Running')
          .map((p) => p.spec.nodeName)
          .sort(),
      ).toEqual(vNodes);
      return list.items;
    }, 90_000);
    const ds = await eventually(async () => {
      const d = await a.get<KubeObject & { status?: Record<string, number> }>(R.daemonsets, 'default', 'agent');
      expect(d.status).toMatchObject({ desiredNumberScheduled: vNodes.length, numberReady: vNodes.length });
      return d;
    }, 60_000);
    expect(ds.status?.numberMisscheduled ?? 0).toBe(0);
    // each super Pod carries its tenant Pod's pin, naming the super node behind the vNode (the same name here)
    const superNs = superNamespace(tenantA.key, 'default');
    for (const p of pods) {
      const s = await t.client.get<Pod & { spec: { affinity?: unknown } }>(R.pods, superNs, p.metadata!.name!);
      expect(s.spec.nodeName).toBe(p.spec.nodeName);
      expect(JSON.stringify(s.spec.affinity)).toContain(`"values":["${p.spec.nodeName}"]`);
    }
    await a.delete(R.daemonsets, 'default', 'agent');
    await eventually(async () =>
      expect((await t.client.list(R.pods, { namespace: superNs, labelSelector: 'app=agent' })).items).toEqual([]),
    );
  });

  it('mints the service account token from the tenant apiserver and mounts it instead of the super one', async () => {
    const superNs = superNamespace(tenantA.key, 'default');
    const [sp] = (await t.client.list<Pod>(R.pods, { namespace: superNs, labelSelector: 'app=web' })).items;
    expect(sp!.spec.automountServiceAccountToken).toBe(false);
    const vol = sp!.spec.volumes!.find((v) => v.name.startsWith('kube-api-access-'))!;
    expect(vol.secret?.secretName).toBeTruthy();
    const secret = await eventually(() =>
      t.client.get<KubeObject & { data: Record<string, string> }>(R.secrets, superNs, vol.secret!.secretName),
    );
    const token = Buffer.from(secret.data.token!, 'base64').toString();
    // The token authenticates against the tenant's own apiserver as the tenant's service account.
    const review = (await a.create(
      {
        group: 'authentication.k8s.io',
        version: 'v1',
        resource: 'tokenreviews',
        kind: 'TokenReview',
        namespaced: false,
      },
      { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', metadata: {}, spec: { token } },
    )) as KubeObject & { status: { authenticated: boolean; user: { username: string } } };
    expect(review.status.authenticated).toBe(true);
    expect(review.status.user.username).toBe('system:serviceaccount:default:default');
  });

  it('shares one token Secret per ServiceAccount, deletes it with its last Pod; per Pod where the tenant asks', async () => {
    type Secret = KubeObject & { data: Record<string, string> };
    type Review = KubeObject & {
      status: { authenticated?: boolean; user?: { username?: string; extra?: Record<string, string[]> } };
    };
    const review = async (c: KubeClient, s: Secret) =>
      (
        (await c.create(
          {
            group: 'authentication.k8s.io',
            version: 'v1',
            resource: 'tokenreviews',
            kind: 'TokenReview',
            namespaced: false,
          },
          {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenReview',
            metadata: {},
            spec: { token: Buffer.from(s.data.token!, 'base64').toString() },
          },
        )) as Review
      ).status;
    const plainPod = (name: string, namespace: string, serviceAccountName: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace },
      spec: { serviceAccountName, containers: [{ name: 'c', image: 'nginx' }] },
    });
    const tokenSecretOf = async (c: KubeClient, ns: string, pod: string) => {
      const sp = await eventually(() => c.get<Pod>(R.pods, ns, pod), 60_000);
      const name = sp.spec.volumes!.find((v) => v.name.startsWith('kube-api-access-'))!.secret!.secretName;
      const secret = await eventually(async () => {
        const x = await c.get<Secret>(R.secrets, ns, name);
        expect(x.data.token).toBeTruthy();
        return x;
      });
      return { name, secret, superPodUid: sp.metadata!.uid! };
    };
    const tokenSecrets = async (ns: string) =>
      (await t.client.list(R.secrets, { namespace: ns, labelSelector: `${LABEL.managedBy}=vc-syncer-token` })).items
        .map((x) => x.metadata!.name!)
        .sort();

    await a.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tokens' } });
    await a.create(R.serviceaccounts, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'builder', namespace: 'tokens' },
    });
    await eventually(() => a.get(R.serviceaccounts, 'tokens', 'default'));
    for (const [name, sa] of [
      ['one', 'default'],
      ['two', 'default'],
      ['other', 'builder'],
    ] as const)
      await a.create(R.pods, plainPod(name, 'tokens', sa));
    const sns = superNamespace(tenantA.key, 'tokens');
    const [one, two, other] = await Promise.all(['one', 'two', 'other'].map((p) => tokenSecretOf(t.client, sns, p)));
    expect(two!.name).toBe(one!.name);
    expect(other!.name).not.toBe(one!.name);
    expect(await tokenSecrets(sns)).toEqual([one!.name, other!.name].sort());
    // Not owned by one Pod, and its token works against the tenant apiserver as the Pods' ServiceAccount.
    expect(one!.secret.metadata?.ownerReferences).toBeUndefined();
    const said = await review(a, one!.secret);
    expect(said.authenticated).toBe(true);
    expect(said.user?.username).toBe('system:serviceaccount:tokens:default');
    expect(said.user?.extra?.['authentication.kubernetes.io/pod-name']).toBeUndefined();
    expect((await review(a, other!.secret)).user?.username).toBe('system:serviceaccount:tokens:builder');

    // The builder Secret goes with its only Pod; the default one stays while "two" reads it, then goes with it.
    await a.delete(R.pods, 'tokens', 'one', { gracePeriodSeconds: 0 });
    await eventually(async () => expect(await t.client.getOrNull(R.pods, sns, 'one')).toBeNull(), 60_000);
    await a.delete(R.pods, 'tokens', 'other', { gracePeriodSeconds: 0 });
    await eventually(async () => expect(await tokenSecrets(sns)).toEqual([one!.name]), 60_000);
    await a.delete(R.pods, 'tokens', 'two', { gracePeriodSeconds: 0 });
    await eventually(async () => expect(await tokenSecrets(sns)).toEqual([]), 60_000);

    // Tenant B (perPod): a Secret of the Pod's own, owned by its super Pod, the token bound to the tenant Pod.
    await b.create(R.pods, plainPod('own', 'default', 'default'));
    const own = await tokenSecretOf(t.client, superNamespace(tenantB.key, 'default'), 'own');
    expect(own.name).toBe('own-vc-token');
    expect(own.secret.metadata?.ownerReferences?.map((o) => o.uid)).toEqual([own.superPodUid]);
    // Asked for once the tenant Pod is bound, the token names its vNode, as a kubelet's token names its node.
    const ownExtra = (await review(b, own.secret)).user?.extra;
    expect(ownExtra?.['authentication.kubernetes.io/pod-name']).toEqual(['own']);
    const ownNode = (await b.get<Pod>(R.pods, 'default', 'own')).spec.nodeName;
    expect(ownNode).toBeTruthy();
    expect(ownExtra?.['authentication.kubernetes.io/node-name']).toEqual([ownNode]);
    await b.delete(R.pods, 'default', 'own', { gracePeriodSeconds: 0 });
  });

  it("keeps tenant A's objects out of tenant B and out of B's super namespaces", async () => {
    await a.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'a-only', namespace: 'default' },
      data: { k: 'a' },
    });
    const superNsA = superNamespace(tenantA.key, 'default');
    await eventually(() => t.client.get(R.configmaps, superNsA, 'a-only'));
    expect(await b.getOrNull(R.configmaps, 'default', 'a-only')).toBeNull();
    expect(await t.client.getOrNull(R.configmaps, superNamespace(tenantB.key, 'default'), 'a-only')).toBeNull();
    expect((await b.list(R.pods, { namespace: 'default' })).items).toHaveLength(0);
    for (const p of await superPods(tenantB)) expect(p.metadata?.namespace!.startsWith(tenantB.key)).toBe(true);
  });

  it('honours opaque prefixes going down and transparent prefixes coming up', async () => {
    await a.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'meta',
        namespace: 'default',
        annotations: { 'secret.example.com/key': 'hidden', 'team.example.com/owner': 'ana' },
      },
      spec: { containers: [{ name: 'c', image: 'nginx' }] },
    });
    const superNs = superNamespace(tenantA.key, 'default');
    const sp = await eventually(() => t.client.get<Pod>(R.pods, superNs, 'meta'));
    expect(sp.metadata?.annotations?.['secret.example.com/key']).toBeUndefined();
    expect(sp.metadata?.annotations?.['team.example.com/owner']).toBe('ana');
    await t.client.patch(
      R.pods,
      superNs,
      'meta',
      { metadata: { annotations: { 'super.example.com/zone': 'z1', 'other.example.com/x': 'no' } } },
      'merge',
    );
    await eventually(async () => {
      const tp = await a.get<Pod>(R.pods, 'default', 'meta');
      expect(tp.metadata?.annotations?.['super.example.com/zone']).toBe('z1');
      expect(tp.metadata?.annotations?.['other.example.com/x']).toBeUndefined();
    });
  });

  it('runs a tenant Pod that names one of its vNodes there, and refuses one naming another node, saying why', async () => {
    // tenant A sees the vNodes its web Pods run on (the default withPods view); one names the node of web's first
    const vNode = (await a.list(R.nodes)).items[0]!.metadata!.name!;
    const pinned = (name: string, nodeName: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: { nodeName, containers: [{ name: 'c', image: 'nginx' }] },
    });
    await a.create(R.pods, pinned('pinned', vNode));
    await a.create(R.pods, pinned('elsewhere', 'super-node-9'));
    const superNs = superNamespace(tenantA.key, 'default');
    const running = await eventually(async () => {
      const p = await a.get<Pod>(R.pods, 'default', 'pinned');
      expect(p.status?.phase).toBe('Running');
      return p;
    }, 90_000);
    expect(running.spec.nodeName).toBe(vNode);
    const s = await t.client.get<Pod & { spec: { affinity?: unknown } }>(R.pods, superNs, 'pinned');
    // created on the node the tenant named, as upstream runs such a Pod: no scheduler, the kubelet admits it
    expect(s.spec.nodeName).toBe(vNode);
    expect(s.spec.affinity).toBeUndefined();
    const ev = await eventually(async () => {
      const list = await a.list<KubeObject & { reason: string; message: string }>(R.events, {
        namespace: 'default',
        fieldSelector: 'involvedObject.name=elsewhere',
      });
      const e = list.items.find((x) => x.reason === 'NodeNameRefused');
      expect(e).toBeDefined();
      return e!;
    });
    expect(ev.message).toContain('spec.nodeName "super-node-9" is not a node of this tenant');
    await eventually(async () => {
      const refused = await a.get<Pod>(R.pods, 'default', 'elsewhere');
      expect(refused.status?.conditions?.find((c) => c.type === 'VCSynced')?.reason).toBe('NodeNameRefused');
    });
    expect(await t.client.getOrNull(R.pods, superNs, 'elsewhere')).toBeNull();
    await a.delete(R.pods, 'default', 'pinned');
    await a.delete(R.pods, 'default', 'elsewhere');
  });

  it("copies its Pods' super events up, one that came before its Pod too, none about another object, and not the scheduler's Scheduled", async () => {
    interface Ev extends KubeObject {
      reason?: string;
      involvedObject?: { apiVersion?: string; kind?: string; namespace?: string; name?: string; uid?: string };
    }
    const sns = superNamespace(tenantA.key, 'default');
    const now = new Date().toISOString();
    const superEvent = (name: string, pod: string): Ev => ({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace: sns },
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: sns, name: pod },
      reason: 'Early',
      message: `about ${pod}, written before it exists`,
      type: 'Normal',
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      source: { component: 'test' },
    });
    await t.client.create(R.events, superEvent('late.early', 'late'));
    await t.client.create(R.events, superEvent('ghost.early', 'ghost'));
    // The event was planned while its Pod did not exist: it waits for the Pod instead of being dropped.
    const waits = new RegExp(
      `vc_syncer_skips_total\\{tenant="${tenantA.key}",plugin="events",reason="WaitingForInvolvedObject"\\} [1-9]`,
    );
    await eventually(async () => expect(await metricsRegistry.metrics()).toMatch(waits));
    const pod = await a.create<Pod>(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'late', namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'nginx' }] },
    });
    const copies = await eventually(async () => {
      const list = (
        await a.list<Ev>(R.events, { namespace: 'default', fieldSelector: 'involvedObject.name=late' })
      ).items.filter((e) => e.metadata?.labels?.[LABEL.managedBy]);
      expect(list.map((e) => e.reason).sort()).toEqual(['Early']);
      return list;
    }, 30_000);
    // The scheduler's Scheduled is in the super cluster, yet no copy: the tenant Pod says it itself (nodeName and
    // PodScheduled, from the syncer's Binding). The copy of Early above was planned after it, on the same lane.
    await eventually(async () => {
      const sup = await t.client.list<Ev>(R.events, { namespace: sns, fieldSelector: 'involvedObject.name=late' });
      expect(sup.items.map((e) => e.reason)).toContain('Scheduled');
      const tp = await a.get<Pod>(R.pods, 'default', 'late');
      expect(tp.spec?.nodeName).toBeTruthy();
      expect(tp.status?.conditions?.find((c) => c.type === 'PodScheduled')?.status).toBe('True');
    }, 30_000);
    const tenantReasons = (
      await a.list<Ev>(R.events, { namespace: 'default', fieldSelector: 'involvedObject.name=late' })
    ).items.map((e) => e.reason);
    expect(tenantReasons).not.toContain('Scheduled');
    for (const e of copies)
      expect(e.involvedObject).toMatchObject({ namespace: 'default', name: 'late', uid: pod.metadata?.uid });
    expect(
      (await a.list<Ev>(R.events, { namespace: 'default', fieldSelector: 'involvedObject.name=ghost' })).items,
    ).toEqual([]);
    expect((await b.list<Ev>(R.events, { fieldSelector: 'involvedObject.name=late' })).items).toEqual([]);
  });

  it("points ClusterFirst Pods at the tenant's own kube-dns through its super cluster IP", async () => {
    await a.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system' },
      spec: { selector: { k8s_app: 'kube-dns' }, ports: [{ name: 'dns', port: 53, protocol: 'UDP' }] },
    });
    const superSvc = await eventually(async () => {
      const s = await t.client.get<KubeObject & { spec: { clusterIP: string } }>(
        R.services,
        superNamespace(tenantA.key, 'kube-system'),
        'kube-dns',
      );
      expect(s.spec.clusterIP).toMatch(/^10\./);
      return s;
    });
    const tenantSvc = await eventually(async () => {
      const s = await a.get<KubeObject & { spec: { clusterIP: string } }>(R.services, 'kube-system', 'kube-dns');
      expect(s.metadata?.annotations?.[ANN.superClusterIP]).toBe(superSvc.spec.clusterIP);
      return s;
    });
    expect(tenantSvc.spec.clusterIP).not.toBe('');
    await a.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'dns-probe', namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    });
    const sp = await eventually(() => t.client.get<Pod>(R.pods, superNamespace(tenantA.key, 'default'), 'dns-probe'));
    expect(sp.spec.dnsPolicy).toBe('None');
    expect(sp.spec.dnsConfig?.nameservers).toEqual([superSvc.spec.clusterIP]);
    expect(sp.spec.dnsConfig?.searches?.[0]).toBe('default.svc.cluster.local');
  });

  it('loads a third-party plugin by path: tenant B asked for a sandbox runtime class', async () => {
    await b.create(R.deployments, deployment('sandboxed', 1));
    const [p] = await eventually(async () => {
      const ps = await superPods(tenantB);
      expect(ps.length).toBeGreaterThan(0);
      return ps;
    });
    expect(p!.spec.runtimeClassName).toBe('kata');
    for (const pa of await superPods(tenantA)) expect(pa.spec.runtimeClassName).toBeUndefined();
  });

  it('carries PVC binding status up and mirrors the bound PV into the tenant', async () => {
    // a claim names a class the platform shares with tenants (public); the PV is made for that class beforehand
    await t.client.create(R.storageclasses, sharedClass('manual'));
    await t.client.create(R.persistentvolumes, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pv-a' },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'manual',
        hostPath: { path: '/tmp/pv-a' },
      },
    });
    await a.create(R.persistentvolumeclaims, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'manual', resources: { requests: { storage: '1Gi' } } },
    });
    const pvc = await eventually(async () => {
      const c = await a.get<KubeObject & { status?: { phase?: string }; spec: { volumeName?: string } }>(
        R.persistentvolumeclaims,
        'default',
        'data',
      );
      expect(c.status?.phase).toBe('Bound');
      return c;
    }, 90_000);
    expect(pvc.spec.volumeName).toBe('pv-a');
    const pv = await eventually(() =>
      a.get<KubeObject & { spec: { claimRef: { namespace: string; uid: string } } }>(
        R.persistentvolumes,
        undefined,
        'pv-a',
      ),
    );
    expect(pv.spec.claimRef.namespace).toBe('default');
    expect(pv.spec.claimRef.uid).toBe(pvc.metadata?.uid);
  });

  it('repairs a super object edited or deleted behind its back', async () => {
    const superNs = superNamespace(tenantA.key, 'default');
    const data = async () =>
      (await t.client.get<KubeObject & { data: { k: string } }>(R.configmaps, superNs, 'a-only')).data.k;
    await t.client.patch(R.configmaps, superNs, 'a-only', { data: { k: 'tampered' } }, 'merge');
    await eventually(async () => expect(await data()).toBe('a'));
    await t.client.delete(R.configmaps, superNs, 'a-only');
    await eventually(async () => expect(await data()).toBe('a'));
  });

  it('patrol finds drift nothing else has handled yet, reports it, and it is repaired', async () => {
    const superNs = superNamespace(tenantA.key, 'default');
    const dnsNs = superNamespace(tenantA.key, 'kube-system');
    const [victim] = (await t.client.list<Pod>(R.pods, { namespace: superNs, labelSelector: 'app=web' })).items;
    const victimName = victim!.metadata!.name!;
    syncer.pause();
    try {
      // A super Pod deleted, a super Service edited, behind the syncer's back.
      await t.client.delete(R.pods, superNs, victimName, { gracePeriodSeconds: 0 });
      await t.client.patch(R.services, dnsNs, 'kube-dns', { metadata: { labels: { tampered: 'yes' } } }, 'merge');
      await t.client.patch(R.configmaps, superNs, 'a-only', { data: { k: 'tampered' } }, 'merge');
      await t.client.create(R.configmaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: 'orphan',
          namespace: superNs,
          labels: { [LABEL.managedBy]: 'vc-syncer', [LABEL.cluster]: tenantA.key },
          annotations: {
            [ANN.cluster]: tenantA.key,
            [ANN.namespace]: 'default',
            [ANN.name]: 'orphan',
            [ANN.uid]: 'gone',
          },
        },
      });
      // Once the caches have seen the changes, patrol counts the drifted ConfigMap and Service, the orphan, and the
      // tenant Pod whose super Pod is gone.
      await eventually(() => expect(syncer.patrol()).toBeGreaterThanOrEqual(4));
      const metricsText = await metricsRegistry.metrics();
      for (const plugin of ['configmaps', 'services', 'pods'])
        expect(metricsText).toMatch(
          new RegExp(`vc_syncer_patrol_fixes_total\\{tenant="${tenantA.key}",plugin="${plugin}"\\} [1-9]`),
        );
    } finally {
      syncer.resume();
    }
    await eventually(async () => {
      expect((await t.client.get<KubeObject & { data: { k: string } }>(R.configmaps, superNs, 'a-only')).data.k).toBe(
        'a',
      );
      expect(await t.client.getOrNull(R.configmaps, superNs, 'orphan')).toBeNull();
      expect((await t.client.get(R.services, dnsNs, 'kube-dns')).metadata?.labels?.tampered).toBeUndefined();
    });
    // The tenant Pod whose super Pod was deleted goes; its ReplicaSet's replacement runs.
    await eventually(async () => {
      const list = await a.list<Pod>(R.pods, { namespace: 'default', labelSelector: 'app=web' });
      expect(list.items.map((p) => p.metadata?.name)).not.toContain(victimName);
      expect(list.items.filter((p) => p.status?.phase === 'Running' && p.spec.nodeName)).toHaveLength(3);
    }, 90_000);
  });

  it('propagates deletion down', async () => {
    await a.delete(R.deployments, 'default', 'web', { propagationPolicy: 'Foreground' });
    await eventually(async () => {
      const ps = await t.client.list<Pod>(R.pods, {
        namespace: superNamespace(tenantA.key, 'default'),
        labelSelector: 'app=web',
      });
      expect(ps.items).toHaveLength(0);
      expect((await a.list(R.pods, { namespace: 'default', labelSelector: 'app=web' })).items).toHaveLength(0);
    }, 90_000);
  });

  it('finishes a deleted Running Job Pod with a terminal phase, so the Job controller lets go of it', async () => {
    const jobs = { group: 'batch', version: 'v1', resource: 'jobs', kind: 'Job', namespaced: true };
    await a.create(jobs, {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'work', namespace: 'default' },
      spec: {
        backoffLimit: 0,
        template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } },
      },
    });
    const running = await eventually(async () => {
      const list = await a.list<Pod>(R.pods, { namespace: 'default', labelSelector: 'job-name=work' });
      const p = list.items.find((x) => x.status?.phase === 'Running' && x.spec.nodeName);
      expect(p).toBeDefined();
      expect(p!.metadata?.finalizers).toContain('batch.kubernetes.io/job-tracking');
      return p!;
    }, 90_000);
    const name = running.metadata!.name!;
    await a.delete(R.pods, 'default', name);
    // The super Pod goes, then the tenant Pod is made Failed (its container unknown, as a kubelet leaves it): the Job
    // controller counts it, removes its tracking finalizer, and the Pod is gone instead of Terminating for ever.
    await eventually(async () => {
      expect(await a.getOrNull(R.pods, 'default', name)).toBeNull();
      const job = await a.get<KubeObject & { status?: { failed?: number } }>(jobs, 'default', 'work');
      expect(job.status?.failed).toBe(1);
    }, 60_000);
    expect(await t.client.getOrNull(R.pods, superNamespace(tenantA.key, 'default'), name)).toBeNull();
    await a.delete(jobs, 'default', 'work', { propagationPolicy: 'Background' });
  });

  it('leaves a Pod no super node has room for Pending with the scheduler reason, and keeps running the others', async () => {
    // Each kwok node offers 32 CPUs: a Pod asking for 64 fits on none.
    const sized = (name: string, cpu: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu } } }] },
    });
    // run alone (-t), the service account controllers may not have made `default` yet
    for (const c of [a, b]) await eventually(() => c.get(R.serviceaccounts, 'default', 'default'), 60_000);
    await a.create(R.pods, sized('too-big', '64'));
    const unschedulable = (p: Pod | null) => p?.status?.conditions?.find((c) => c.type === 'PodScheduled');
    const pending = await eventually(async () => {
      const p = await a.get<Pod>(R.pods, 'default', 'too-big');
      expect(p.status?.phase).toBe('Pending');
      expect(unschedulable(p)).toMatchObject({ status: 'False', reason: 'Unschedulable' });
      return p;
    }, 60_000);
    expect(pending.status!.conditions!.find((c) => c.type === 'PodScheduled')!.message).toMatch(
      /0\/2 nodes are available: 2 Insufficient cpu/,
    );
    // Meanwhile a Pod of the same tenant that fits and one of the other tenant run, and the big one stays unbound.
    await a.create(R.pods, sized('fits', '100m'));
    await b.create(R.pods, sized('fits-b', '100m'));
    await eventually(async () => {
      expect((await a.get<Pod>(R.pods, 'default', 'fits')).status?.phase).toBe('Running');
      expect((await b.get<Pod>(R.pods, 'default', 'fits-b')).status?.phase).toBe('Running');
    }, 60_000);
    const still = await a.get<Pod>(R.pods, 'default', 'too-big');
    expect([still.status?.phase, still.spec.nodeName]).toEqual(['Pending', undefined]);
    expect(unschedulable(still)).toMatchObject({ status: 'False', reason: 'Unschedulable' });
    // Deleting it removes its super Pod; nothing was bound for it.
    await a.delete(R.pods, 'default', 'too-big');
    await eventually(async () =>
      expect(await t.client.getOrNull(R.pods, superNamespace(tenantA.key, 'default'), 'too-big')).toBeNull(),
    );
    // and the others go, super Pods included, before the next test counts super Pods
    for (const [c, n] of [
      [a, 'fits'],
      [b, 'fits-b'],
    ] as const)
      await c.delete(R.pods, 'default', n, { gracePeriodSeconds: 0 });
    await eventually(async () => {
      expect(await t.client.getOrNull(R.pods, superNamespace(tenantA.key, 'default'), 'fits')).toBeNull();
      expect(await t.client.getOrNull(R.pods, superNamespace(tenantB.key, 'default'), 'fits-b')).toBeNull();
    }, 60_000);
  });

  it('drops a tenant whose apiserver never answers when it is removed, and keeps serving the others', async () => {
    const dead = {
      ...tenantB,
      key: 'team-z-000000-z',
      vcName: 'z',
      vcNamespace: 'team-z',
      kubeconfig: tenantB.kubeconfig.replace(/server: https:\/\/127\.0\.0\.1:\d+/, 'server: https://127.0.0.1:1'),
    };
    registry.upsert(dead);
    for (let i = 0; i < 10; i++) registry.upsert({ ...tenantA });
    await new Promise((r) => setTimeout(r, 1000));
    expect(syncer.tenantReady(dead.key)).toBe(false);
    registry.remove(dead.key);
    await a.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'still-served', namespace: 'default' },
      data: { k: 'v' },
    });
    await eventually(() => t.client.get(R.configmaps, superNamespace(tenantA.key, 'default'), 'still-served'));
    expect(syncer.tenantReady(tenantA.key)).toBe(true);
  });

  it('creates no duplicates and loses nothing across a syncer restart', async () => {
    await syncer.stop();
    await a.create(R.deployments, deployment('after-restart', 2));
    const before = (await superPods(tenantA)).length;
    syncer = newSyncer();
    await syncer.start();
    await eventually(async () => {
      const list = await a.list<Pod>(R.pods, { namespace: 'default', labelSelector: 'app=after-restart' });
      expect(list.items.filter((p) => p.status?.phase === 'Running')).toHaveLength(2);
    }, 90_000);
    const after = await superPods(tenantA);
    const names = after.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`);
    expect(new Set(names).size).toBe(names.length);
    expect(after.length).toBe(before + 2);
  });
});
