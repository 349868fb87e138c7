/**
 * `vc up --super-clusters 2 --meta` (issue 39): the meta cluster apart from the super clusters, as the seed's demo runs
 * it, started as a user starts it (`vc up --detach`). The meta cluster holds the VirtualClusters and the registrations
 * of r1 and r2 and runs no tenant Pod; the seed's experiment, as written (slice and quota on the tenant's `default`
 * namespace, Deployment test-1 with dnsPolicy ClusterFirst scaled from one replica to two), spreads its Pods over r1
 * and r2 (kwok nodes). `vc status` names the three clusters' kubeconfigs; the meta cluster runs no scheduler. The
 * manager's process and the clusters run in the platform's cpu cgroup (issue 31 §3), a tenant's control plane in its
 * own. `vc down` leaves no process; `vc up` again on the state directory refuses fewer super clusters and, without the
 * options, runs the meta cluster apart and r1, r2 again, the demo's Pods still on them; the last `vc down` leaves no
 * process either.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { cgroupOf, cpuHierarchy, PLATFORM_CGROUP_PREFIX } from '../../core/dev/local/cpulimit.ts';
import { REGISTRATION_NAMESPACE } from '../../core/dev/local/registration.ts';
import { CLUSTERS_RESOURCE } from '../../core/programs/cli/drain.ts';
import type { UpStatus } from '../../core/programs/cli/up.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { rootNamespace, superNamespace } from '../../core/names/names.ts';
import { confinementNames } from '../../core/dev/local/netconfine.ts';
import { SUPER_CLUSTER } from '../../core/scheduler/annotations.ts';
import { eventually } from '../harness.ts';
import { runningTenant, SEED_DEMO, seedDemo } from '../tenants.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');

type P = KubeObject & {
  status?: { phase?: string };
  spec?: { nodeName?: string; dnsPolicy?: string; dnsConfig?: { nameservers?: string[] } };
};

/** START_MS bounds one `vc up --detach` (three clusters and two tenants on a loaded host). */
const START_MS = 15 * 60_000;
/** UP is how the test starts it, but for the shape options: kwok nodes only, one on each super cluster. */
const UP = ['up', '--detach', '--nodes', '1', '--real-nodes', '0', '--no-metrics-server'];

describe('vc up --super-clusters 2 --meta (the meta cluster apart from r1 and r2)', () => {
  let dir: string;
  let state: string;
  let s: UpStatus;
  let meta: KubeClient;
  let dev: KubeClient;

  /** vc runs the CLI; a failure's error carries its stdout, stderr and exit code. */
  const vc = (...args: string[]) => execP(process.execPath, [vcBin, ...args], { timeout: START_MS });
  const status = () => JSON.parse(readFileSync(join(state, 'status.json'), 'utf8')) as UpStatus;
  /** processes are the command lines of every process naming the state directory (none once vc down returned) */
  const processes = () =>
    execP('pgrep', ['-a', '-f', state]).then(
      (r) => r.stdout.trim().split('\n'),
      () => [],
    );
  const kubeconfigOf = (sc: string) => s.superClusters!.find((x) => x.name === sc)!.kubeconfig;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-embedded-meta-'));
    state = join(dir, 'state');
    await vc(...UP, '--state-dir', state, '--super-clusters', '2', '--meta');
    s = status();
    meta = await KubeClient.fromFile(s.superKubeconfig);
    dev = await KubeClient.fromString((await runningTenant(meta, 'dev')).kubeconfig, 'dev kubeconfig');
  }, START_MS);

  afterAll(async () => {
    dev?.close();
    meta?.close();
    if (state) await vc('down', '--state-dir', state).catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 180_000);

  it.skipIf(!cpuHierarchy() || process.getuid?.() !== 0)(
    "runs the manager's process and the clusters in the platform's cpu cgroup, a tenant's control plane in its own",
    async () => {
      const h = cpuHierarchy()!;
      const platform = `/${PLATFORM_CGROUP_PREFIX}${s.pid}`;
      expect(cgroupOf(s.pid, h.version)).toBe(platform);
      const apiservers = (await processes())
        // its serving files under the clusters' directories (a tenant's apiserver names the first's CA file too)
        .filter((l) => l.includes('kube-apiserver') && l.includes(`--tls-cert-file=${join(state, 'clusters')}/`))
        .map((l) => Number(l.split(' ')[0]));
      // the meta cluster's, r1's and r2's
      expect(apiservers).toHaveLength(3);
      for (const pid of apiservers) expect(cgroupOf(pid, h.version)).toBe(platform);
      const vc = await meta.get<VirtualCluster>(R.virtualclusters, 'default', 'dev');
      const own = confinementNames(rootNamespace('default', 'dev', vc.metadata!.uid!)).cgroup;
      const pids = readFileSync(join(h.root, own, 'cgroup.procs'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map(Number);
      // its kube-apiserver and kube-controller-manager, and its etcd where it has its own
      expect(pids.length).toBeGreaterThanOrEqual(2);
      for (const pid of pids) expect(cgroupOf(pid, h.version)).toBe(`/${own}`);
    },
  );

  it("vc status names the meta cluster and r1 and r2, three clusters of their own, and writes the tenants' kubeconfigs", async () => {
    const out = JSON.parse((await vc('status', '--state-dir', state, '-o', 'json')).stdout) as UpStatus & {
      tenants: Array<{ name: string; phase: string; kubeconfig?: string }>;
    };
    expect(out.meta).toBe(true);
    expect(out.superClusters!.map((x) => x.name)).toEqual(['r1', 'r2']);
    const kubeconfigs = [out.superKubeconfig, ...out.superClusters!.map((x) => x.kubeconfig)];
    const servers = await Promise.all(
      kubeconfigs.map(async (k) => {
        const c = await KubeClient.fromFile(k);
        try {
          return { server: c.server, nodes: (await c.list(R.nodes)).items.map((n) => n.metadata!.name) };
        } finally {
          c.close();
        }
      }),
    );
    expect(new Set(servers.map((x) => x.server)).size).toBe(3);
    expect(servers.map((x) => x.nodes)).toEqual([[], ['r1-node-0'], ['r2-node-0']]);
    // a kube-scheduler for each super cluster, none for the meta cluster, which runs no Pod
    const schedulers = (await processes())
      .filter((l) => l.includes('kube-scheduler'))
      .map((l) => /--kubeconfig=\S*\/clusters\/([^/]+)\//.exec(l)?.[1])
      .sort();
    expect(schedulers).toEqual(['r1', 'r2']);
    const dev = out.tenants.find((t) => t.name === 'dev')!;
    expect(dev.phase).toBe('Running');
    expect(existsSync(dev.kubeconfig!)).toBe(true);
    const text = (await vc('status', '--state-dir', state)).stdout;
    expect(text).toContain(`meta cluster kubeconfig: ${out.superKubeconfig}`);
    for (const x of out.superClusters!) expect(text).toMatch(new RegExp(`super cluster ${x.name}: +${x.kubeconfig}`));
  });

  it('the meta cluster holds the VirtualClusters and the registrations of r1 and r2, and has no node', async () => {
    expect(loadManagerConfig(s.managerConfig).superClusters).toEqual([
      expect.objectContaining({ name: 'meta', metaOnly: true }),
    ]);
    const vcs = (await meta.list<VirtualCluster>(R.virtualclusters, { namespace: 'default' })).items;
    expect(vcs.map((v) => v.metadata!.name).sort()).toEqual(['dev', 'staging']);
    const clusters = (await meta.list(CLUSTERS_RESOURCE, { namespace: REGISTRATION_NAMESPACE })).items;
    expect(clusters.map((c) => c.metadata!.name).sort()).toEqual(['r1', 'r2']);
    expect((await meta.list(R.nodes)).items).toEqual([]);
    // vc superclusters lists the two super clusters, both registered; the meta cluster is none of them.
    const rows = await eventually(async () => {
      const out = JSON.parse(
        (
          await execP(process.execPath, [vcBin, 'superclusters', '--kubeconfig', s.superKubeconfig, '-o', 'json'], {
            timeout: 60_000,
          })
        ).stdout,
      ) as Array<Record<string, string>>;
      expect(out.map((r) => [r.name, r.namespace, r.state])).toEqual([
        ['r1', REGISTRATION_NAMESPACE, 'ready'],
        ['r2', REGISTRATION_NAMESPACE, 'ready'],
      ]);
      return out;
    }, 60_000);
    expect(rows.map((r) => r.name)).not.toContain('meta');
  });

  // The seed's experiment as written: slice annotation and ResourceQuota on the tenant's `default` namespace,
  // placements {"r1":1,"r2":1}, Deployment test-1 (dnsPolicy ClusterFirst) scaled from one replica to two.
  it('the demo spreads a ClusterFirst Deployment over r1 and r2; no tenant Pod or namespace is on the meta cluster', async () => {
    await seedDemo(dev, { r1: 1, r2: 1 });
    const pods = await eventually(async () => {
      const items = (await dev.list<P>(R.pods, { namespace: SEED_DEMO.namespace, labelSelector: SEED_DEMO.selector }))
        .items;
      expect(items.map((p) => p.metadata?.annotations?.[SUPER_CLUSTER]).sort()).toEqual(['r1', 'r2']);
      expect(items.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
      return items;
    }, 120_000);
    expect(pods.map((p) => p.spec?.dnsPolicy)).toEqual(['ClusterFirst', 'ClusterFirst']);
    for (const p of pods) {
      const sc = p.metadata!.annotations![SUPER_CLUSTER]!;
      expect(p.spec?.nodeName).toBe(`${sc}.${sc}-node-0`);
    }
    const tenantKey = (await meta.get<VirtualCluster>(R.virtualclusters, 'default', 'dev')).status!.clusterNamespace!;
    // Each Pod asks the tenant DNS on its own super cluster, which runs there.
    for (const pod of pods) {
      const sc = pod.metadata!.annotations![SUPER_CLUSTER]!;
      const client = await KubeClient.fromFile(kubeconfigOf(sc));
      try {
        const kubeSystem = superNamespace(tenantKey, 'kube-system');
        const dns = await client.get<KubeObject & { spec?: { clusterIP?: string } }>(
          R.services,
          kubeSystem,
          'kube-dns',
        );
        const copy = await client.get<P>(R.pods, superNamespace(tenantKey, SEED_DEMO.namespace), pod.metadata!.name!);
        expect(copy.spec?.dnsConfig?.nameservers?.[0]).toBe(dns.spec?.clusterIP);
        await eventually(async () => {
          const servers = (await client.list<P>(R.pods, { namespace: kubeSystem, labelSelector: 'k8s-app=kube-dns' }))
            .items;
          expect(servers.map((s) => s.status?.phase)).toEqual(['Running']);
        }, 60_000);
      } finally {
        client.close();
      }
    }
    // The meta cluster: no Pod at all, and none of the tenants' namespaces (`<root>-<namespace>`); the root namespace
    // itself is the VirtualCluster's own, where the manager keeps what belongs to its control plane.
    expect((await meta.list(R.pods)).items.map((p) => `${p.metadata!.namespace}/${p.metadata!.name}`)).toEqual([]);
    const roots = (await meta.list<VirtualCluster>(R.virtualclusters, { namespace: 'default' })).items.map(
      (v) => v.status!.clusterNamespace!,
    );
    expect(roots).toHaveLength(2);
    const names = (await meta.list(R.namespaces)).items.map((n) => n.metadata!.name!);
    for (const root of roots) expect(names.filter((n) => n.startsWith(`${root}-`))).toEqual([]);
    expect(names).not.toContain(superNamespace(tenantKey, SEED_DEMO.namespace));
  });

  it(
    'vc down leaves no process; vc up again refuses fewer super clusters, and without options runs all three again',
    async () => {
      const placed = (
        await dev.list<P>(R.pods, { namespace: SEED_DEMO.namespace, labelSelector: SEED_DEMO.selector })
      ).items.map((p) => `${p.metadata!.name} ${p.metadata!.annotations![SUPER_CLUSTER]}`);
      expect(placed).toHaveLength(2);
      dev.close();
      meta.close();
      await vc('down', '--state-dir', state);
      expect(await processes()).toEqual([]);
      expect(existsSync(join(state, 'status.json'))).toBe(false);

      // one super cluster fewer would leave the tenants' namespaces placed on r2 without it: refused, nothing started
      const refused = await vc(...UP, '--state-dir', state, '--super-clusters', '1').then(
        () => undefined,
        (err: { stderr?: string; code?: number }) => err,
      );
      expect(refused?.code).not.toBe(0);
      expect(refused?.stderr).toContain(`--super-clusters 1: ${state} runs 2 super clusters (r1..r2)`);
      expect(await processes()).toEqual([]);

      // neither --meta nor --super-clusters: the state directory's shape
      await vc(...UP, '--state-dir', state);
      s = status();
      expect(s.meta).toBe(true);
      expect(s.superClusters!.map((x) => x.name)).toEqual(['r1', 'r2']);
      meta = await KubeClient.fromFile(s.superKubeconfig);
      expect((await meta.list(R.nodes)).items).toEqual([]);
      dev = await KubeClient.fromString((await runningTenant(meta, 'dev')).kubeconfig, 'dev kubeconfig');
      await eventually(async () => {
        const pods = (await dev.list<P>(R.pods, { namespace: SEED_DEMO.namespace, labelSelector: SEED_DEMO.selector }))
          .items;
        expect(pods.map((p) => `${p.metadata!.name} ${p.metadata!.annotations![SUPER_CLUSTER]}`).sort()).toEqual(
          placed.sort(),
        );
        expect(pods.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
      }, 120_000);
      expect((await meta.list(R.pods)).items).toEqual([]);
      dev.close();
      meta.close();
      await vc('down', '--state-dir', state);
      expect(await processes()).toEqual([]);
      const after = await vc('status', '--state-dir', state).then(
        () => '',
        (err: { stderr?: string }) => err.stderr ?? '',
      );
      expect(after).toContain(`nothing is running in ${state}`);
    },
    2 * START_MS,
  );
});
