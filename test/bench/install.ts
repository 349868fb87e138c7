import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { freemem, loadavg } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import type { KubeClient } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { TcpForwarder } from '../../core/dev/local/forwarder.ts';
import { eventually, realNodeSkipReason } from '../harness.ts';
import { InstallFlow } from '../installflow.ts';
import { killManager, ManagerSpawner } from '../managerproc.ts';
import type { BenchResult } from './main.ts';
import { envSized } from './pods.ts';
import { pool } from './podwatch.ts';
import { type ArmFigures, repeatFigures, repsOf } from './repeat.ts';

const MiB = 1024 * 1024;
const repo = join(import.meta.dirname, '../..');
const TENANTS = envSized('BENCH_INSTALL_TENANTS', { full: 20, small: 5 });
const CONFIGMAPS = 5;
const SETTLE_MS = 30_000;
const log = (m: string) => process.stderr.write(`install: ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** rssOf is the resident memory (MiB) of one process, or undefined when it has ended. */
function rssOf(pid: number | string): number | undefined {
  try {
    const kB = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kB ? (Number(kB) * 1024) / MiB : undefined;
  } catch {
    return undefined;
  }
}

/** managerRss is the resident memory (MiB) of each in-cluster manager process on this host, by pid. */
function managerRss(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
      if (!cmd.includes('/app/core/programs/cli/vc.mjs') || cmd[2] !== 'manager') continue;
      const rss = rssOf(e);
      if (rss !== undefined) out[e] = rss;
    } catch {
      // the process ended meanwhile
    }
  }
  return out;
}

/** processAgeS is how long ago (s) process pid started, from /proc (clock ticks since boot, USER_HZ 100). */
function processAgeS(pid: string): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const started = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]) / 100;
  return Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) - started;
}

/**
 * settledManagerRss waits until `replicas` in-cluster manager processes have each run for SETTLE_MS (a replica the
 * kubelet restarted starts its wait again) and returns their resident memory by pid.
 */
async function settledManagerRss(replicas: number): Promise<Record<string, number>> {
  return eventually(
    () => {
      const m = managerRss();
      const young = Object.keys(m).filter((pid) => processAgeS(pid) * 1000 < SETTLE_MS);
      if (Object.keys(m).length < replicas || young.length)
        throw new Error(`${Object.keys(m).length} manager processes, ${young.length} younger than the settle time`);
      return m;
    },
    900_000,
    2000,
  );
}

/** managerPodStates says, for a replica that is not Ready, why: its phase, failing conditions and container state. */
async function managerPodStates(c: KubeClient): Promise<string> {
  const pods = await c.list<{
    metadata?: { name?: string };
    status?: {
      phase?: string;
      conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }>;
      containerStatuses?: Array<{ restartCount?: number; state?: Record<string, { reason?: string }> }>;
    };
  }>(R.pods, { namespace: 'vc-system', labelSelector: 'app.kubernetes.io/name=vc-manager' });
  return pods.items
    .map((p) => {
      const bad = (p.status?.conditions ?? []).filter((x) => x.status !== 'True');
      const cs = p.status?.containerStatuses?.[0];
      const state = Object.entries(cs?.state ?? {}).map(([k, v]) => `${k}${v.reason ? ` ${v.reason}` : ''}`);
      const why = bad.map((x) => `${x.type}: ${x.reason ?? ''} ${x.message ?? ''}`).join('; ');
      return `${p.metadata?.name} ${p.status?.phase} [${why}] ${state.join(',')} restarts ${cs?.restartCount ?? 0}`;
    })
    .join(' | ');
}

/** restarts is the restart count of each manager Pod's container. */
async function restarts(c: KubeClient): Promise<Record<string, number>> {
  const pods = await c.list<{
    metadata?: { name?: string };
    status?: { containerStatuses?: Array<{ restartCount?: number }> };
  }>(R.pods, { namespace: 'vc-system', labelSelector: 'app.kubernetes.io/name=vc-manager' });
  return Object.fromEntries(
    pods.items.map((p) => [p.metadata!.name!, p.status?.containerStatuses?.[0]?.restartCount ?? 0]),
  );
}

/** host is what limits the machine at a measurement: load average and available memory. */
function host(): { load1: number; memAvailableMiB: number } {
  const avail = /^MemAvailable:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1];
  return { load1: loadavg()[0]!, memAvailableMiB: avail ? Number(avail) / 1024 : freemem() / MiB };
}

/**
 * podProcesses sums the resident memory (MiB) and CPU time (s) of the processes on this host that belong to the given
 * Pods (by the Pod uid in their cgroup path, as the kubelet names it with either cgroup driver).
 */
function podProcesses(uids: readonly string[]): { processes: number; rssMiB: number; cpuS: number } {
  const marks = uids.flatMap((u) => [u, u.replace(/-/g, '_')]);
  const tick = 100; // USER_HZ on Linux
  const out = { processes: 0, rssMiB: 0, cpuS: 0 };
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cg = readFileSync(`/proc/${e}/cgroup`, 'utf8');
      if (!marks.some((m) => cg.includes(m))) continue;
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.processes++;
      out.rssMiB += rssOf(e) ?? 0;
      out.cpuS += (Number(f[11]) + Number(f[12])) / tick;
    } catch {
      // the process ended meanwhile
    }
  }
  return out;
}

const max = (m: Record<string, number>) => Math.max(0, ...Object.values(m));

async function allRunning(c: KubeClient, ns: string, names: readonly string[], timeoutMs: number): Promise<void> {
  await eventually(
    async () => {
      const items = (await c.list<VirtualCluster>(R.virtualclusters, { namespace: ns })).items;
      const notYet = names.filter((n) => items.find((v) => v.metadata?.name === n)?.status?.phase !== 'Running');
      if (notYet.length) throw new Error(`${notYet.length} not Running yet, e.g. ${notYet[0]}`);
    },
    timeoutMs,
    1000,
  );
}

/**
 * installBench measures the in-cluster installation on the local super cluster with a real node, with the steps
 * test/realnode/install.it.test.ts asserts, and sets its manager beside the manager as `vc up` runs it (a process on
 * this host) in the same run, on the same super cluster and with the same tenants:
 *
 * 1. the image's size; `vc install` (image pulled from the local registry, both manager replicas and the vn-agent
 *    Ready); the managers' memory at rest; the first native tenant Running from git, and the managers with it.
 * 2. the native tenant and its GitSource go; the in-cluster manager is scaled to 0 and the same manager configuration
 *    runs as `vc manager` on this host (compiled dist/, the image's Node 22): its memory at rest; then
 *    BENCH_INSTALL_TENANTS (20) imported tenants, each an apiserver on this host relayed on the real node's bridge so
 *    Pods reach it, with a namespace and 5 ConfigMaps that the syncer copies down; the local manager with them.
 * 3. the local manager stops; the in-cluster Deployment is scaled back to 2 and its leader takes the same 20 tenants:
 *    its memory with them.
 *
 * The tenants are imported, not native: a native tenant is three Pods (etcd, apiserver, controller manager) on the
 * one real node, and 20 of them beside the rest of the machine's work do not fit in 2 cores (see docs/benchmarks.md).
 * What the manager holds per tenant (informers, queues, the syncer's caches) does not depend on the provisioner.
 * Each of BENCH_REPS repetitions (default 3) is a whole run of the above on a super cluster of its own; every figure is
 * the median with its min and max. BENCH_SIZE=small imports 5 tenants.
 */
export async function installBench(): Promise<BenchResult> {
  const skip = await realNodeSkipReason();
  if (skip) return { name: 'install', figures: {}, detail: { skipped: skip } };
  const { figures, notes, runs } = await repeatFigures([{ name: 'install', run: installRun }], repsOf());
  return { name: 'install', figures, notes, detail: { runs } };
}

/** installRun is one repetition: a super cluster with a real node, the installation and the managers measured on it. */
async function installRun(): Promise<ArmFigures> {
  const f = await InstallFlow.start();
  const spawner = new ManagerSpawner();
  const relays: TcpForwarder[] = [];
  let installed = false;
  try {
    await f.buildAndPush();
    const imageMiB = statSync(join(f.dir, 'image.tar')).size / MiB;
    log(`image ${imageMiB.toFixed(1)} MiB; vc install`);
    const t0 = performance.now();
    await f.vc(...f.installArgs());
    installed = true;
    const installS = (performance.now() - t0) / 1000;
    // at rest: both replicas Ready, one leading, no tenant; give them the time a first reconcile takes
    const rest = await settledManagerRss(2);
    const hostRest = host();
    log(`in-cluster at rest ${JSON.stringify(rest)}; first native tenant`);
    await f.prepareTenants(['team-a']);
    await allRunning(f.t.client, 'tenants', ['team-a'], 600_000);
    const firstTenantS = (performance.now() - t0) / 1000;
    await sleep(SETTLE_MS);
    const withTenant = await settledManagerRss(2);
    // what one native tenant's control plane (etcd, apiserver, controller manager Pods) costs this host
    const c = f.t.client;
    const teamA = await c.get<VirtualCluster>(R.virtualclusters, 'tenants', 'team-a');
    const cpPods = (await c.list(R.pods, { namespace: teamA.status!.clusterNamespace! })).items;
    const nativeTenant = podProcesses(cpPods.map((p) => p.metadata!.uid!));
    log(`in-cluster with team-a ${JSON.stringify(withTenant)}; its control plane ${JSON.stringify(nativeTenant)}`);

    // ---- 2. the same configuration as a process on this host --------------------------------------------------------
    await f.kubectl('delete', 'gitsources.tenancy.x-k8s.io', '--all', '-A');
    await f.kubectl('delete', 'virtualclusters.tenancy.x-k8s.io', '--all', '-n', 'tenants', '--wait=false');
    await eventually(
      async () => {
        const left = (await c.list(R.virtualclusters, { namespace: 'tenants' })).items.length;
        if (left) throw new Error(`${left} VirtualClusters still in tenants`);
      },
      600_000,
      1000,
    );
    await f.kubectl('scale', 'deployment/vc-manager', '-n', 'vc-system', '--replicas=0');
    await eventually(
      () => {
        if (Object.keys(managerRss()).length) throw new Error('in-cluster managers still running');
      },
      120_000,
      1000,
    );
    const cfg = parse(readFileSync(join(f.dir, 'manager.yaml'), 'utf8')) as Record<string, Record<string, unknown>>;
    delete cfg.metrics;
    // The in-cluster manager's own identity (its ServiceAccount, by a token): the admission policies let only it
    // write the objects it owns, and its RBAC is what the in-cluster replicas run with.
    const token = (await f.kubectl('create', 'token', 'vc-manager', '-n', 'vc-system', '--duration', '3h')).trim();
    const admin = parse(readFileSync(f.t.sc.kubeconfigPath, 'utf8')) as {
      clusters: Array<{ name: string; cluster: Record<string, unknown> }>;
    };
    const saKubeconfig = join(f.dir, 'local-manager.kubeconfig');
    writeFileSync(
      saKubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'super', cluster: admin.clusters[0]!.cluster }],
        users: [{ name: 'vc-manager', user: { token } }],
        contexts: [{ name: 'super', context: { cluster: 'super', user: 'vc-manager' } }],
        'current-context': 'super',
      }),
      { mode: 0o600 },
    );
    cfg.superClusters = [{ name: 'default', kubeconfig: saKubeconfig }] as never;
    cfg.gitops = { ...cfg.gitops, cacheDir: join(f.dir, 'gitops-cache') };
    delete cfg.gitops.webhook;
    const localConfig = join(f.dir, 'local-manager.yaml');
    writeFileSync(localConfig, stringify(cfg));
    const local = spawner.spawn({
      config: localConfig,
      compiled: true,
      node: join(repo, 'node_modules/.bin/node'),
      logFile: 'bench-results/install-local-manager.log',
    });
    await local.ready;
    await eventually(
      () => {
        if (local.leaderAt === undefined) throw new Error('local manager not leading yet');
      },
      120_000,
      500,
    );
    await sleep(SETTLE_MS);
    const localRest = rssOf(local.child.pid!) ?? NaN;
    log(`local at rest ${localRest.toFixed(1)} MiB; ${TENANTS} imported tenants`);

    await c.create(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'bench-import' },
      spec: {
        grants: {
          subjects: [{ kind: 'Namespace', name: 'bench' }],
          importSecrets: Array.from({ length: TENANTS }, (_, i) => ({ namespace: 'bench', name: `t${i}-src` })),
        },
        provisioners: { allowed: ['import'] },
      },
    });
    await f.kubectl('create', 'namespace', 'bench');
    const names = Array.from({ length: TENANTS }, (_, i) => `t${i}`);
    const nodeIP = f.node.nodeIP;
    const tStart = performance.now();
    await pool(
      names.map((_, i) => i),
      4,
      async (i) => {
        const cp = await f.t.sc.addControlPlane(`bench-t${i}`, { controllerManager: false, apiserverIPs: [nodeIP] });
        const relay = await TcpForwarder.start({
          host: nodeIP,
          port: 0,
          target: { host: '127.0.0.1', port: cp.ports.apiserver },
        });
        relays.push(relay);
        const tc = await cp.client();
        await tc.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'app' } });
        for (let k = 0; k < CONFIGMAPS; k++)
          await tc.create(R.configmaps, {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: `cm-${k}`, namespace: 'app' },
            data: { k: String(k).repeat(512) },
          });
        const kc = parse(readFileSync(cp.kubeconfigPath, 'utf8')) as {
          clusters: Array<{ cluster: { server: string } }>;
        };
        kc.clusters[0]!.cluster.server = `https://${nodeIP}:${relay.port}`;
        await c.create(R.secrets, {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: `t${i}-src`, namespace: 'bench' },
          data: { kubeconfig: Buffer.from(stringify(kc)).toString('base64') },
        });
        await c.create(R.virtualclusters, {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'VirtualCluster',
          metadata: { name: `t${i}`, namespace: 'bench' },
          spec: {
            policyName: 'bench-import',
            provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: `t${i}-src` } } },
          },
        });
      },
    );
    await allRunning(c, 'bench', names, 600_000);
    const localTenantsS = (performance.now() - tStart) / 1000;
    await sleep(SETTLE_MS);
    const localWith = rssOf(local.child.pid!) ?? NaN;
    const hostLocal = host();
    log(`local with ${TENANTS}: ${localWith.toFixed(1)} MiB; back to the in-cluster manager`);

    // ---- 3. the in-cluster manager takes the same tenants ------------------------------------------------------------
    await killManager(local);
    const tBack = performance.now();
    await f.kubectl('scale', 'deployment/vc-manager', '-n', 'vc-system', '--replicas=2');
    // (f.kubectl gives kubectl 30 s: the waits are here, not kubectl's)
    await eventually(
      async () => {
        const d = await c.get<{ status?: { readyReplicas?: number } }>(R.deployments, 'vc-system', 'vc-manager');
        if ((d.status?.readyReplicas ?? 0) < 2)
          throw new Error(`${d.status?.readyReplicas ?? 0}/2 replicas ready: ${await managerPodStates(c)}`);
      },
      600_000,
      1000,
    );
    const rolloutS = (performance.now() - tBack) / 1000;
    // the status the local manager wrote stays: this only checks that no tenant left Running under the new leader
    await allRunning(c, 'bench', names, 300_000);
    await sleep(SETTLE_MS);
    const inClusterWith = await settledManagerRss(2);
    const managerRestarts = await restarts(c);
    const hostInCluster = host();
    log(`in-cluster with ${TENANTS}: ${JSON.stringify(inClusterWith)}`);
    await f.kubectl('delete', 'virtualclusters.tenancy.x-k8s.io', '--all', '-n', 'bench', '--wait=false');

    const inRest = max(rest);
    const inWith = max(inClusterWith);
    return {
      figures: {
        image_archive_mib: imageMiB,
        vc_install_s: installS,
        install_to_first_running_tenant_s: firstTenantS,
        manager_rss_mib_at_rest: inRest,
        manager_rss_mib_with_1_tenant: max(withTenant),
        [`manager_rss_mib_with_${TENANTS}_tenants`]: inWith,
        local_manager_rss_mib_at_rest: localRest,
        [`local_manager_rss_mib_with_${TENANTS}_tenants`]: localWith,
        in_cluster_over_local_at_rest: inRest / localRest,
        [`in_cluster_over_local_with_${TENANTS}`]: inWith / localWith,
        in_cluster_mib_per_tenant: (inWith - inRest) / TENANTS,
        local_mib_per_tenant: (localWith - localRest) / TENANTS,
        native_tenant_control_plane_rss_mib: nativeTenant.rssMiB,
        native_tenant_control_plane_cpu_s: nativeTenant.cpuS,
      },
      detail: {
        image: f.image,
        tenants: `${TENANTS} imported (apiserver only, ${CONFIGMAPS} ConfigMaps in one namespace each)`,
        managerRssAtRest: rest,
        managerRssWith1Tenant: withTenant,
        nativeTenantControlPlane: nativeTenant,
        managerRssWithTenants: inClusterWith,
        localTenantsRunningS: localTenantsS,
        inClusterScaleBackReadyS: rolloutS,
        managerRestarts,
        host: { atRest: hostRest, localWithTenants: hostLocal, inClusterWithTenants: hostInCluster },
      },
    };
  } finally {
    await spawner.stopAll();
    await f
      .kubectl('delete', 'virtualclusters.tenancy.x-k8s.io', '--all', '-n', 'bench', '--wait=false')
      .catch(() => undefined);
    for (const r of relays) await r.stop();
    await f.stop(installed);
  }
}
