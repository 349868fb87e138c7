/**
 * `vc up --super-clusters 2 --meta` (issue 39): the meta cluster apart from the super clusters, as the seed's demo runs
 * it. The meta cluster holds the VirtualClusters and the registrations of r1 and r2 and runs no tenant Pod; the seed's
 * experiment, as written (slice and quota on the tenant's `default` namespace, Deployment test-1 with dnsPolicy
 * ClusterFirst scaled from one replica to two), spreads its Pods over r1 and r2 (kwok nodes). The manager's process
 * and the clusters run in the platform's cpu cgroup (issue 31 §3), a tenant's control plane in its own.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { startEmbedded, type Embedded } from '../../core/dev/embedded/embedded.ts';
import { cgroupOf, cpuHierarchy, PLATFORM_CGROUP_PREFIX } from '../../core/dev/local/cpulimit.ts';
import { REGISTRATION_NAMESPACE } from '../../core/dev/local/registration.ts';
import { CLUSTERS_RESOURCE } from '../../core/programs/cli/drain.ts';
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

describe('vc up --super-clusters 2 --meta (the meta cluster apart from r1 and r2)', () => {
  let dir: string;
  let e: Embedded;
  let meta: KubeClient;
  let dev: KubeClient;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-embedded-meta-'));
    e = await startEmbedded({ stateDir: join(dir, 'state'), nodes: 1, realNodes: 0, superClusters: 2, meta: true });
    meta = await e.superCluster.cluster.client();
    dev = await KubeClient.fromString((await runningTenant(meta, 'dev')).kubeconfig, 'dev kubeconfig');
  });

  afterAll(async () => {
    dev?.close();
    meta?.close();
    await e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(!cpuHierarchy() || process.getuid?.() !== 0)(
    "runs the manager's process and the clusters in the platform's cpu cgroup, a tenant's control plane in its own",
    async () => {
      const h = cpuHierarchy()!;
      const platform = `/${PLATFORM_CGROUP_PREFIX}${process.pid}`;
      expect(cgroupOf(process.pid, h.version)).toBe(platform);
      expect(cgroupOf(e.superCluster.cluster.apiserver.pid!, h.version)).toBe(platform);
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

  it('the meta cluster holds the VirtualClusters and the registrations of r1 and r2, and has no node', async () => {
    expect(e.superClusters.map((s) => s.name)).toEqual(['r1', 'r2']);
    expect(e.superClusters.map((s) => s.kubeconfigPath)).not.toContain(e.superCluster.kubeconfigPath);
    expect(loadManagerConfig(e.configPath).superClusters).toEqual([
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
          await execP(
            process.execPath,
            [vcBin, 'superclusters', '--kubeconfig', e.superCluster.kubeconfigPath, '-o', 'json'],
            { timeout: 60_000 },
          )
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
      const client = await KubeClient.fromFile(e.superClusters.find((s) => s.name === sc)!.kubeconfigPath);
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
});
