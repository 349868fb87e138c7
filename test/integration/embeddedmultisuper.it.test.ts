import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { startEmbedded, type Embedded } from '../../core/dev/embedded/embedded.ts';
import { superNamespace } from '../../core/names/names.ts';
import { PLACEMENTS, SUPER_CLUSTER } from '../../core/scheduler/annotations.ts';
import { STATE_CONFIGMAP, type SchedulerState } from '../../core/scheduler/state.ts';
import { REGISTRATION_NAMESPACE } from '../../core/dev/local/registration.ts';
import { CLUSTERS_RESOURCE } from '../../core/programs/cli/drain.ts';
import { confinementUnavailable } from '../../core/dev/local/netconfine.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { eventually } from '../harness.ts';
import { demoDeployment, runningTenant, slicedNamespace } from '../tenants.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');

// `vc up --super-clusters 2` as a user starts it (kwok nodes only), where a hand-started manager passed but the
// embedded default left a Deployment Pending: spread had put dev's default namespace on one super cluster and its
// kube-system, with the tenant DNS every ClusterFirst Pod waits for, on the other.
describe('vc up --super-clusters 2 (the embedded default with two super clusters)', () => {
  let dir: string;
  let e: Embedded;
  let dev: KubeClient;
  let meta: KubeClient;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-embedded-multisuper-'));
    e = await startEmbedded({ stateDir: join(dir, 'state'), nodes: 1, realNodes: 0, superClusters: 2 });
    meta = await e.superCluster.cluster.client();
    dev = await KubeClient.fromString((await runningTenant(meta, 'dev')).kubeconfig, 'dev kubeconfig');
  });

  afterAll(async () => {
    if (await meta?.getOrNull(R.virtualclusters, 'default', 'pinned')) {
      await meta.delete(R.virtualclusters, 'default', 'pinned');
      await eventually(
        async () => expect(await meta.getOrNull(R.virtualclusters, 'default', 'pinned')).toBeNull(),
        120_000,
      );
    }
    dev?.close();
    meta?.close();
    await e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("places a tenant's whole namespaces on one super cluster, and a Deployment in default runs there", async () => {
    const placements = await eventually(async () => {
      const ns = (await dev.list(R.namespaces)).items;
      const byName = Object.fromEntries(ns.map((n) => [n.metadata!.name!, n.metadata?.annotations?.[PLACEMENTS]]));
      expect(byName['default']).toMatch(/^\{"r[12]":1\}$/);
      expect(byName['kube-system']).toBe(byName['default']);
      expect(byName['kube-public']).toBe(byName['default']);
      return byName['default']!;
    }, 60_000);
    await dev.create(R.deployments, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'web', image: 'busybox' }] },
        },
      },
    });
    const home = Object.keys(JSON.parse(placements) as Record<string, number>)[0]!;
    await eventually(async () => {
      const pods = (await dev.list(R.pods, { namespace: 'default', labelSelector: 'app=web' })).items as Array<
        KubeObject & { status?: { phase?: string }; spec?: { nodeName?: string } }
      >;
      expect(pods.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
      for (const p of pods) expect(p.spec?.nodeName).toMatch(home === 'r1' ? /^r1\.super-node-/ : /^r2\.r2-node-/);
    }, 90_000);
  });

  it("confines the local tenants' control planes: a tenant admin's webhook to the super apiserver is refused", async () => {
    const unavailable = await confinementUnavailable();
    const local = loadManagerConfig(e.configPath).virtualClusters?.local;
    if (unavailable) {
      // The host cannot confine: vc up says so and runs the tenants unconfined; nothing more to show here.
      expect(local?.confine).toBeUndefined();
      return;
    }
    expect(local?.confine?.endpoints).toContainEqual({ host: '127.0.0.1', port: e.vnAgentPort });
    const superPort = new URL(meta.server).port;
    await dev.request('POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'door-super' },
        webhooks: [
          {
            name: 'door.example.com',
            clientConfig: { url: `https://127.0.0.1:${superPort}/validate`, caBundle: '' },
            rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }],
            objectSelector: { matchLabels: { door: 'super' } },
            failurePolicy: 'Fail',
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
          },
        ],
      },
    });
    // The apiserver uses the webhook once its informer has it: until then the create goes through.
    let n = 0;
    const refused = await eventually(async () => {
      const name = `probe-${n++}`;
      const e2 = await dev
        .create(R.configmaps, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name, namespace: 'default', labels: { door: 'super' } },
        })
        .then(
          () => undefined,
          (err: Error) => err.message,
        );
      expect(e2).toContain('failed calling webhook');
      return e2!;
    }, 30_000);
    expect(refused).toContain('connection refused');
    await dev.request('DELETE', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/door-super');
  });

  it('vc superclusters lists the static r1 next to the registered r2, with capacity', async () => {
    const rows = await eventually(async () => {
      const out = JSON.parse(
        (
          await execP(
            process.execPath,
            [vcBin, 'superclusters', '--kubeconfig', e.superCluster.kubeconfigPath, '-o', 'json'],
            { timeout: 60_000 },
          )
        ).stdout,
      ) as Array<Record<string, string>>;
      expect(out.map((r) => r.name).sort()).toEqual(['r1', 'r2']);
      return out;
    }, 30_000);
    const r1 = rows.find((r) => r.name === 'r1')!;
    expect(r1).toMatchObject({ namespace: '(static)', state: 'ready', capacity: 'cpu=32,memory=256Gi,pods=110' });
    expect(Number(r1.namespaces)).toBeGreaterThan(0);
    expect(rows.find((r) => r.name === 'r2')).toMatchObject({ namespace: 'vc-system', state: 'ready' });
  });

  // The seed's demo exactly: slice annotation and ResourceQuota on the namespace, placements {"r1":1,"r2":1}, a
  // two-replica Deployment with the default dnsPolicy. The Pod away from the tenant's home runs too, pointed at the
  // copy of the tenant's DNS on its own super cluster (the tenant's kube-system follows it there, down only).
  it('the demo: a spread Deployment with the default dnsPolicy runs on both, each Pod on its own tenant DNS; vc get -o wide', async () => {
    type P = KubeObject & {
      status?: { phase?: string };
      spec?: { nodeName?: string; dnsPolicy?: string; dnsConfig?: { nameservers?: string[] } };
    };
    await slicedNamespace(dev, 'sliced', { r1: 1, r2: 1 });
    await demoDeployment(dev, 'sliced');
    const home = Object.keys(
      JSON.parse((await dev.get(R.namespaces, undefined, 'kube-system')).metadata!.annotations![PLACEMENTS]!) as Record<
        string,
        number
      >,
    );
    expect(home).toHaveLength(1);
    const pods = await eventually(async () => {
      const items = (await dev.list<P>(R.pods, { namespace: 'sliced', labelSelector: 'app=web' })).items;
      expect(items.map((p) => p.metadata?.annotations?.[SUPER_CLUSTER]).sort()).toEqual(['r1', 'r2']);
      expect(items.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
      return items;
    }, 120_000);
    const tenantKey = (await meta.get<VirtualCluster>(R.virtualclusters, 'default', 'dev')).status!.clusterNamespace!;
    const tenantDns = (await dev.list<P>(R.pods, { namespace: 'kube-system', labelSelector: 'k8s-app=kube-dns' }))
      .items;
    expect(tenantDns).toHaveLength(1);
    for (const pod of pods) {
      const sc = pod.metadata!.annotations![SUPER_CLUSTER]!;
      const client = await KubeClient.fromFile(e.superClusters.find((s) => s.name === sc)!.kubeconfigPath);
      try {
        const kubeSystem = superNamespace(tenantKey, 'kube-system');
        const dnsSvc = await client.get<KubeObject & { spec?: { clusterIP?: string } }>(
          R.services,
          kubeSystem,
          'kube-dns',
        );
        const copy = await client.get<P>(R.pods, superNamespace(tenantKey, 'sliced'), pod.metadata!.name!);
        // the Pod asks the tenant DNS of its own super cluster, whose server runs there
        expect(copy.spec?.dnsPolicy).toBe('None');
        expect(copy.spec?.dnsConfig?.nameservers?.[0]).toBe(dnsSvc.spec?.clusterIP);
        await eventually(async () => {
          const servers = (await client.list<P>(R.pods, { namespace: kubeSystem, labelSelector: 'k8s-app=kube-dns' }))
            .items;
          expect(servers.map((p) => p.status?.phase)).toEqual(['Running']);
        }, 60_000);
      } finally {
        client.close();
      }
    }
    // The tenant sees its one DNS Pod, bound and reported by its home's syncer only.
    expect(tenantDns[0]!.spec?.nodeName).toMatch(new RegExp(`^${home[0]}\\.`));
    // A Service of the spread namespace has a copy, and an IP, on each super cluster, each recorded under its own key
    // (a followed kube-system copy writes nothing up: the tenant's kube-dns shows its home's only).
    await dev.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'sliced' },
      spec: { selector: { app: 'web' }, ports: [{ port: 80 }] },
    });
    const recorded = async (ns: string, name: string) =>
      Object.keys((await dev.get(R.services, ns, name)).metadata?.annotations ?? {})
        .filter((k) => k.startsWith('transparency.tenancy.x-k8s.io/clusterIP.'))
        .sort();
    await eventually(async () => {
      expect(await recorded('sliced', 'web')).toEqual([
        'transparency.tenancy.x-k8s.io/clusterIP.r1',
        'transparency.tenancy.x-k8s.io/clusterIP.r2',
      ]);
      expect(await recorded('kube-system', 'kube-dns')).toEqual([`transparency.tenancy.x-k8s.io/clusterIP.${home[0]}`]);
    }, 30_000);

    // vc get reads the summary the scheduler publishes every 2 s: it shows the slices at the latest one period on.
    await eventually(async () => {
      const out = (
        await execP(process.execPath, [vcBin, 'get', '-o', 'wide', '--kubeconfig', e.superCluster.kubeconfigPath], {
          timeout: 60_000,
        })
      ).stdout;
      const row = out.split('\n').find((l) => /^default\s+dev\s/.test(l));
      expect(out.split('\n')[0]).toMatch(/PINNED\s+PLACEMENTS$/);
      expect(row).toMatch(/\sr1=\d+ns\/1sl,r2=\d+ns\/1sl$/);
    }, 30_000);
  });

  it("honours a VirtualCluster's spec.superCluster end to end: its namespaces and Pods go to r2 only", async () => {
    await meta.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'pinned', namespace: 'default' },
      spec: { provisioner: { type: 'local' }, superCluster: 'r2' },
    });
    let pinned: KubeClient | undefined;
    const r2 = await KubeClient.fromFile(e.superClusters.find((s) => s.name === 'r2')!.kubeconfigPath);
    try {
      const { root, kubeconfig } = await runningTenant(meta, 'pinned');
      pinned = await KubeClient.fromString(kubeconfig, 'pinned');
      await eventually(async () => {
        for (const ns of ['default', 'kube-system']) {
          const n = await pinned!.get(R.namespaces, undefined, ns);
          expect(n.metadata?.annotations?.[PLACEMENTS], ns).toBe('{"r2":1}');
        }
      }, 60_000);
      await eventually(() => pinned!.get(R.serviceaccounts, 'default', 'default'), 60_000);
      // a ClusterFirst Pod: its tenant DNS is on r2 as well, so nothing waits
      await pinned.create(R.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'here', namespace: 'default' },
        spec: { containers: [{ name: 'c', image: 'busybox' }] },
      });
      await eventually(async () => {
        const pod = await pinned!.get<KubeObject & { status?: { phase?: string }; spec?: { nodeName?: string } }>(
          R.pods,
          'default',
          'here',
        );
        expect(pod.status?.phase).toBe('Running');
        expect(pod.spec?.nodeName).toMatch(/^r2\./);
      }, 90_000);
      expect(await r2.getOrNull(R.pods, superNamespace(root, 'default'), 'here')).not.toBeNull();
      expect(await meta.getOrNull(R.namespaces, undefined, superNamespace(root, 'default'))).toBeNull();
      const out = (
        await execP(process.execPath, [vcBin, 'get', '-o', 'wide', '--kubeconfig', e.superCluster.kubeconfigPath], {
          timeout: 60_000,
        })
      ).stdout;
      expect(out.split('\n').find((l) => /^default\s+pinned\s/.test(l))).toMatch(/\sr2\s+r2=\d+ns$/);
    } finally {
      pinned?.close();
      r2.close();
      // 'pinned' stays on r2 for the drain below (another tenant's copy there must be left whole); afterAll deletes it.
    }
  });

  // Removing a registration (its Secret, then its Cluster) stops new placements there and moves nothing: what is
  // placed stays, Pods included, until the admin registers it again and drains it with `vc superclusters drain`.
  // Undrained, it takes slices back only when asked: `vc superclusters rebalance`.
  it('a super cluster whose registration goes keeps its placements until drained; undrained, a rebalance moves slices back', async () => {
    type Pod = KubeObject & {
      status?: { phase?: string };
      spec?: { nodeName?: string; dnsPolicy?: string; dnsConfig?: { nameservers?: string[] } };
    };
    type Svc = KubeObject & { spec?: { clusterIP?: string } };
    const vc = (args: string[]) => execP(process.execPath, [vcBin, ...args], { timeout: 60_000 });
    const r1 = await KubeClient.fromFile(e.superClusters.find((s) => s.name === 'r1')!.kubeconfigPath);
    const r2 = await KubeClient.fromFile(e.superClusters.find((s) => s.name === 'r2')!.kubeconfigPath);
    const tenantKey = await eventually(async () => {
      const v = await meta.get<VirtualCluster>(R.virtualclusters, 'default', 'dev');
      expect(v.status?.clusterNamespace).toBeTruthy();
      return v.status!.clusterNamespace!;
    });
    const placementsOf = async (ns: string) =>
      (await dev.get(R.namespaces, undefined, ns)).metadata?.annotations?.[PLACEMENTS];
    const pods = async () =>
      (await dev.list<Pod>(R.pods, { namespace: 'spread' })).items.filter((p) => !p.metadata?.deletionTimestamp);
    // Published in the manager's namespace, as `vc superclusters` looks for it.
    const summary = async () => {
      for (const ns of ['vc-system', 'kube-system']) {
        const cm = await meta.getOrNull<KubeObject & { data?: Record<string, string> }>(
          R.configmaps,
          ns,
          STATE_CONFIGMAP.name,
        );
        if (cm) return (JSON.parse(cm.data![STATE_CONFIGMAP.key]!) as SchedulerState).clusters;
      }
      throw new Error(`no ConfigMap ${STATE_CONFIGMAP.name} yet`);
    };
    try {
      await slicedNamespace(dev, 'spread', { r1: 1, r2: 1 });
      // The default dnsPolicy (ClusterFirst): each Pod asks the tenant DNS of its own super cluster, before and after
      // the drain moves it.
      await eventually(
        () =>
          dev.create(R.deployments, {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: 'web', namespace: 'spread' },
            spec: {
              replicas: 2,
              selector: { matchLabels: { app: 'web' } },
              template: {
                metadata: { labels: { app: 'web' } },
                spec: {
                  containers: [
                    { name: 'web', image: 'busybox', resources: { requests: { cpu: '100m', memory: '100Mi' } } },
                  ],
                },
              },
            },
          }),
        30_000,
      );
      const before = await eventually(async () => {
        const ps = await pods();
        expect(ps.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
        expect(ps.map((p) => p.metadata?.annotations?.[SUPER_CLUSTER]).sort()).toEqual(['r1', 'r2']);
        return Object.fromEntries(ps.map((p) => [p.metadata!.name!, p.metadata!.annotations![SUPER_CLUSTER]!]));
      }, 90_000);
      const onR2 = Object.keys(before).find((n) => before[n] === 'r2')!;
      const stays = async () => {
        expect(await placementsOf('spread')).toBe('{"r1":1,"r2":1}');
        const ps = await pods();
        expect(
          Object.fromEntries(ps.map((p) => [p.metadata!.name!, p.metadata?.annotations?.[SUPER_CLUSTER]])),
        ).toEqual(before);
        expect(ps.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
        expect(await r2.getOrNull(R.pods, superNamespace(tenantKey, 'spread'), onR2)).not.toBeNull();
      };

      // 1. Its kubeconfig Secret removed: the registration is unreachable (SecretMissing).
      const secret = await meta.get(R.secrets, REGISTRATION_NAMESPACE, 'r2-kubeconfig');
      const cluster = await meta.get(CLUSTERS_RESOURCE, REGISTRATION_NAMESPACE, 'r2');
      await meta.delete(R.secrets, REGISTRATION_NAMESPACE, 'r2-kubeconfig');
      await eventually(async () => expect((await summary()).r2?.state).toBe('unreachable'), 30_000);
      await slicedNamespace(dev, 'later', { r1: 2 });
      await stays();

      // 2. Its Cluster deleted as well: deregistered, still counted where its placements are.
      await meta.delete(CLUSTERS_RESOURCE, REGISTRATION_NAMESPACE, 'r2');
      await eventually(async () => expect((await summary()).r2?.state).toBe('deregistered'), 30_000);
      await slicedNamespace(dev, 'after', { r1: 2 });
      await stays();
      const out = await vc(['superclusters', '--kubeconfig', e.superCluster.kubeconfigPath, '-o', 'json']);
      const row = (JSON.parse(out.stdout) as Array<Record<string, string>>).find((r) => r.name === 'r2');
      expect(row?.state).toBe('deregistered');
      expect(Number(row?.slices)).toBe((await summary()).r2?.placedSlices);
      expect(Number(row?.slices)).toBeGreaterThanOrEqual(1);

      // 3. Registered again, then drained: the slice moves to r1 and the Pod there is recreated on r1.
      const strip = (o: KubeObject): KubeObject => ({
        ...o,
        metadata: { name: o.metadata!.name!, namespace: o.metadata!.namespace!, labels: o.metadata?.labels ?? {} },
        status: undefined,
      });
      await meta.create(R.secrets, strip(secret));
      await meta.create(CLUSTERS_RESOURCE, strip(cluster));
      await eventually(async () => expect((await summary()).r2?.state).toBe('ready'), 30_000);
      await stays();
      // dev's DNS is on r2 before the drain (its home's, or the copy that follows it there).
      const kubeSystem = superNamespace(tenantKey, 'kube-system');
      expect(await r2.getOrNull(R.services, kubeSystem, 'kube-dns')).not.toBeNull();
      await vc(['superclusters', 'drain', 'r2', '--kubeconfig', e.superCluster.kubeconfigPath]);
      await eventually(async () => expect(await placementsOf('spread')).toBe('{"r1":2}'), 30_000);
      const moved = await eventually(async () => {
        const ps = await pods();
        expect(ps.map((p) => p.metadata?.annotations?.[SUPER_CLUSTER])).toEqual(['r1', 'r1']);
        expect(ps.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
        return ps;
      }, 60_000);
      // DNS moved with them: each copy on r1 asks dev's kube-dns there, whose server runs on r1.
      const dnsIP = (await r1.get<Svc>(R.services, kubeSystem, 'kube-dns')).spec?.clusterIP;
      expect(dnsIP).toBeTruthy();
      for (const p of moved) {
        const copy = await r1.get<Pod>(R.pods, superNamespace(tenantKey, 'spread'), p.metadata!.name!);
        expect(copy.spec?.dnsPolicy).toBe('None');
        expect(copy.spec?.dnsConfig?.nameservers).toEqual([dnsIP]);
      }
      await eventually(async () => {
        const servers = (await r1.list<Pod>(R.pods, { namespace: kubeSystem, labelSelector: 'k8s-app=kube-dns' }))
          .items;
        expect(servers.map((p) => p.status?.phase)).toEqual(['Running']);
      }, 60_000);
      // dev has left r2 (nothing of it is placed or running there): its copy of kube-system there is removed, while
      // the pinned tenant, whose slices cannot leave r2, keeps its own whole.
      await eventually(async () => {
        const left = await r2.getOrNull(R.namespaces, undefined, kubeSystem);
        expect(left === null || !!left.metadata?.deletionTimestamp, 'dev kube-system on r2 removed').toBe(true);
      }, 60_000);
      const pinnedKey = (await meta.get<VirtualCluster>(R.virtualclusters, 'default', 'pinned')).status!
        .clusterNamespace!;
      const pinnedSystem = await r2.get(R.namespaces, undefined, superNamespace(pinnedKey, 'kube-system'));
      expect(pinnedSystem.metadata?.deletionTimestamp).toBeUndefined();
      expect(await r2.getOrNull(R.services, superNamespace(pinnedKey, 'kube-system'), 'kube-dns')).not.toBeNull();
      expect(await r2.getOrNull(R.pods, superNamespace(pinnedKey, 'default'), 'here')).not.toBeNull();

      // 4. Undrained: r2 takes new placements, but nothing placed moves by itself.
      const kc = e.superCluster.kubeconfigPath;
      await vc(['superclusters', 'undrain', 'r2', '--kubeconfig', kc]);
      await eventually(async () => expect((await summary()).r2?.state).toBe('ready'), 30_000);
      const sliced = ['after', 'later', 'sliced', 'spread'];
      const all = async () =>
        Object.fromEntries(await Promise.all(sliced.map(async (n) => [n, await placementsOf(n)])));
      const drained = await all();
      expect(drained).toEqual({ after: '{"r1":2}', later: '{"r1":2}', sliced: '{"r1":2}', spread: '{"r1":2}' });
      const movesIn = (out: string) =>
        out
          .split('\n')
          .filter((l) => l.startsWith(`${tenantKey} `) || l.startsWith(`${pinnedKey} `))
          .map((l) => l.split(/\s+/).slice(1).join(' '));

      // A dry run lists the moves and changes nothing.
      const dry = await vc(['superclusters', 'rebalance', '--dry-run', '--max-moves', '100', '--kubeconfig', kc]);
      expect(dry.stdout).toMatch(/^dry run \(spread\): \d+ slice move\(s\) planned, nothing changed, requested at /);
      const planned = movesIn(dry.stdout);
      // Both super clusters hold one kwok node alike: half of dev's 8 slices go back, one of each namespace.
      expect([...planned].sort()).toEqual(sliced.map((n) => `${n} r1 -> r2`));
      expect(await all()).toEqual(drained);
      expect((await pods()).map((p) => p.metadata?.annotations?.[SUPER_CLUSTER])).toEqual(['r1', 'r1']);

      // Bounded: one move at most, the first one planned; the report says how many are left.
      const one = await vc(['superclusters', 'rebalance', '--max-moves', '1', '--kubeconfig', kc]);
      expect(movesIn(one.stdout)).toEqual(planned.slice(0, 1));
      expect(one.stdout).toContain('3 more move(s) past --max-moves 1: run it again to go on');
      const first = planned[0]!.split(' ')[0]!;
      await eventually(async () => expect(await placementsOf(first)).toBe('{"r1":1,"r2":1}'), 30_000);
      expect(Object.values(await all()).filter((p) => p === '{"r1":2}')).toHaveLength(3);

      // The rest, then nothing is left to move.
      const rest = await vc(['superclusters', 'rebalance', '--kubeconfig', kc]);
      expect(movesIn(rest.stdout)).toEqual(planned.slice(1));
      await eventually(
        async () => expect(Object.values(await all())).toEqual(sliced.map(() => '{"r1":1,"r2":1}')),
        30_000,
      );
      const again = await vc(['superclusters', 'rebalance', '--dry-run', '--kubeconfig', kc]);
      expect(again.stdout).toContain('0 slice move(s) planned');
      const listed = await vc(['superclusters', '--kubeconfig', kc]);
      expect(listed.stdout).toMatch(/\nLast rebalance \(spread, dry run\) at \S+: 0 slice move\(s\)\n$/);

      // spread's Pod over its one slice left on r1 is evicted and comes back Running on r2, asking dev's kube-dns
      // there, whose copy of kube-system (gone from r2 after the drain) is started on r2 again.
      const back = await eventually(async () => {
        const ps = await pods();
        expect(ps.map((p) => p.metadata?.annotations?.[SUPER_CLUSTER]).sort()).toEqual(['r1', 'r2']);
        expect(ps.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
        return ps;
      }, 90_000);
      const r2DNS = await eventually(async () => {
        const ip = (await r2.get<Svc>(R.services, kubeSystem, 'kube-dns')).spec?.clusterIP;
        expect(ip).toBeTruthy();
        return ip;
      }, 60_000);
      for (const p of back) {
        const sc = p.metadata!.annotations![SUPER_CLUSTER]!;
        const client = sc === 'r1' ? r1 : r2;
        const copy = await client.get<Pod>(R.pods, superNamespace(tenantKey, 'spread'), p.metadata!.name!);
        expect(copy.spec?.dnsPolicy).toBe('None');
        expect(copy.spec?.dnsConfig?.nameservers).toEqual([sc === 'r1' ? dnsIP : r2DNS]);
      }
      await eventually(async () => {
        const servers = (await r2.list<Pod>(R.pods, { namespace: kubeSystem, labelSelector: 'k8s-app=kube-dns' }))
          .items;
        expect(servers.map((p) => p.status?.phase)).toEqual(['Running']);
      }, 60_000);
      // Nothing is left wrongly on r1: its copies of spread's Pods are the one the tenant shows there.
      const onR1 = back.filter((p) => p.metadata!.annotations![SUPER_CLUSTER] === 'r1').map((p) => p.metadata!.name);
      await eventually(async () => {
        const copies = (await r1.list<Pod>(R.pods, { namespace: superNamespace(tenantKey, 'spread') })).items;
        expect(copies.filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.metadata!.name)).toEqual(onR1);
      }, 60_000);
      // Each moved namespace says so in an Event; the evicted Pod's Event names the rebalance.
      await eventually(async () => {
        const events = (
          await dev.list<KubeObject & { reason?: string; message?: string }>(R.events, {
            namespace: 'spread',
          })
        ).items;
        expect(events.find((x) => x.reason === 'Rebalanced')?.message).toMatch(/moved 1 slice\(s\) r1->r2/);
        expect(events.some((x) => x.reason === 'Evicted' && /rebalance/.test(x.message ?? ''))).toBe(true);
      }, 30_000);
      // The pinned tenant was never in a plan and is untouched.
      expect(
        (await r2.get(R.namespaces, undefined, superNamespace(pinnedKey, 'kube-system'))).metadata?.deletionTimestamp,
      ).toBeUndefined();
      expect(await r2.getOrNull(R.pods, superNamespace(pinnedKey, 'default'), 'here')).not.toBeNull();
    } finally {
      r1.close();
      r2.close();
    }
  });
});
