import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { LocalSuperCluster } from '../../core/dev/local/supercluster.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import type { BenchResult } from './main.ts';
import { removeStateDir, stateDir } from '../statedirs.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { pinnedVersions } from '../../core/toolchain/toolchain.ts';
import {
  ensureKubernetesMinor,
  isMinorComplete,
  kubernetesMinorDir,
  previousKubernetes,
} from '../../core/toolchain/minors.ts';
import { dayTwoBench } from './daytwo.ts';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** Kamaji's reported time from creating a TenantControlPlane to a usable kubeconfig. */
const KAMAJI_SECONDS = 16;
const SEQUENTIAL = 5;
const BATCH = 5;
const IDLE_MS = 10_000;
const SETTLE_MS = 5_000;
const RESERVE_BYTES = 2 * GiB;
const TENANT_DEADLINE_MS = 180_000;
const crdDir = join(import.meta.dirname, '../../deploy/crds');
/** the ClusterVersion every bench tenant names (the pinned Kubernetes), and the one on the older minor */
const CURRENT_CV = 'bench-current';
const OLDER_CV = 'bench-older';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** memAvailableBytes reads MemAvailable from /proc/meminfo. */
function memAvailableBytes(): number {
  const m = /MemAvailable:\s+(\d+) kB/.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/**
 * pssBytes reads the proportional set size of a process (shared pages such as the kube-apiserver binary's text
 * divided among the processes mapping them), 0 when it is gone. RSS counts shared pages once per process.
 */
function pssBytes(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** slope is the least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

interface Sample {
  tenants: number;
  /** etcd + super control plane + every tenant control plane + this process (the manager) */
  everythingMiB: number;
  tenantsMiB: number;
  /** the same as everythingMiB, by proportional set size */
  everythingPssMiB: number;
  tenantsPssMiB: number;
  etcdMiB: number;
  superMiB: number;
  managerMiB: number;
  memAvailableMiB: number;
  /** wall time to bring this batch to a usable kubeconfig */
  batchSeconds?: number;
}

/**
 * lifecycleBench drives the VirtualClusterController with the LocalProvisioner on a real local super cluster and
 * measures (a) the time from creating a VirtualCluster to a usable kubeconfig (phase Running and GET /api through
 * the kubeconfig Secret) for tenants created one after another, against Kamaji's reported 16 s; (b) the resident
 * memory of one idle tenant control plane (apiserver + controller-manager); (c) memory growth over batches of
 * tenants up to BENCH_MAX_TENANTS (default 20), the etcd growth per tenant, and how many tenants would fit in the
 * memory available at the start less a 2 GiB reserve: an extrapolation beyond the measured count. Then, unless
 * BENCH_LIFECYCLE_DAY_TWO is 0, the day-two figures on the same tenants (test/bench/daytwo.ts): a killed component
 * noticed and restored, an upgrade from the older minor (when its binaries are built, or BENCH_LIFECYCLE_UPGRADE=build
 * builds them) and a ClusterVersion change rolled through every tenant with BENCH_MAX_UNAVAILABLE (default 1), each
 * against the same restarts by hand in the same run.
 */
export async function lifecycleBench(): Promise<BenchResult> {
  const maxTenants = Math.max(SEQUENTIAL, Math.floor(Number(process.env.BENCH_MAX_TENANTS ?? 20) / BATCH) * BATCH);
  const dir = stateDir('vc-bench-lifecycle-');
  const sc = await LocalSuperCluster.start({ stateDir: join(dir, 'super'), nodes: 1 });
  let local: LocalProvisioner | undefined;
  let controller: VirtualClusterController | undefined;
  try {
    const client = await sc.cluster.client();
    for (const f of ['virtualclusters.yaml', 'clusterversions.yaml', 'tenantpolicies.yaml']) {
      for (const d of parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')))
        await client.apply(R.crds, d.toJS() as KubeObject, 'bench');
    }
    for (let i = 0; ; i++) {
      try {
        await client.list(R.virtualclusters);
        await client.list(R.tenantpolicies);
        await client.list(R.clusterversions);
        break;
      } catch (e) {
        if (i > 100) throw e;
        await sleep(100);
      }
    }
    const older = previousKubernetes();
    if (older && !isMinorComplete(kubernetesMinorDir(older)) && process.env.BENCH_LIFECYCLE_UPGRADE === 'build')
      await ensureKubernetesMinor({ version: older });
    const upgradeFrom = older && isMinorComplete(kubernetesMinorDir(older)) ? older : undefined;
    const maxUnavailable = Number(process.env.BENCH_MAX_UNAVAILABLE ?? 1);
    const clusterVersions: Array<[string, string]> = [
      [CURRENT_CV, pinnedVersions().kubernetes],
      ...(upgradeFrom ? [[OLDER_CV, upgradeFrom] as [string, string]] : []),
    ];
    for (const [name, kubernetesVersion] of clusterVersions)
      await client.create(R.clusterversions, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ClusterVersion',
        metadata: { name },
        spec: { kubernetesVersion, rollout: { maxUnavailable } },
      });
    await client.create(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'bench', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
      spec: { provisioners: { allowed: ['local'] }, grants: { clusterVersions: [CURRENT_CV, OLDER_CV] } },
    });
    local = new LocalProvisioner(join(dir, 'tenants'), sc.etcd);
    controller = new VirtualClusterController({
      meta: client,
      superClient: client,
      provisioners: { local },
      tenants: new MutableTenantRegistry(),
      workers: BATCH,
      // All the bench's tenants share one namespace: the measured ones and the day-two bench's upgrade tenant. A
      // platform running this many in one namespace raises virtualClusters.maxPerNamespace the same way.
      maxPerNamespace: maxTenants + 1,
    });
    await controller.start();

    const roots: string[] = [];
    const sample = (tenants: number): Sample => {
      const tenantProcs = roots.flatMap((r) => local!.controlPlane(r)?.processes() ?? []);
      const tenantsBytes = tenantProcs.reduce((a, p) => a + p.rssBytes(), 0);
      const etcd = sc.etcd.process.rssBytes();
      const sup = sc.cluster.rssBytes();
      const manager = process.memoryUsage().rss;
      const tenantsPss = tenantProcs.reduce((a, p) => a + pssBytes(p.pid), 0);
      const otherPss =
        [sc.etcd.process, ...sc.cluster.processes()].reduce((a, p) => a + pssBytes(p.pid), 0) + pssBytes(process.pid);
      return {
        tenants,
        everythingMiB: (tenantsBytes + etcd + sup + manager) / MiB,
        tenantsMiB: tenantsBytes / MiB,
        everythingPssMiB: (tenantsPss + otherPss) / MiB,
        tenantsPssMiB: tenantsPss / MiB,
        etcdMiB: etcd / MiB,
        superMiB: sup / MiB,
        managerMiB: manager / MiB,
        memAvailableMiB: memAvailableBytes() / MiB,
      };
    };

    /** usable creates a VirtualCluster and resolves with the seconds until its kubeconfig answers GET /api. */
    const usable = async (name: string, clusterVersionName = CURRENT_CV): Promise<number> => {
      const t0 = performance.now();
      const created = await client.create<VirtualCluster>(R.virtualclusters, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name, namespace: 'default' },
        spec: { provisioner: { type: 'local' }, clusterVersionName },
      });
      const deadline = Date.now() + TENANT_DEADLINE_MS;
      let last = '';
      while (Date.now() < deadline) {
        const vc = await client.get<VirtualCluster>(R.virtualclusters, 'default', name);
        last = `${vc.status?.phase}: ${vc.status?.message}`;
        if (vc.status?.phase === 'Error') throw new Error(`VirtualCluster ${name} failed: ${last}`);
        if (vc.status?.phase === 'Running' && vc.status.kubeconfigSecretName) {
          const s = await client.getOrNull<{ data?: { kubeconfig?: string } }>(
            R.secrets,
            'default',
            vc.status.kubeconfigSecretName,
          );
          if (s?.data?.kubeconfig) {
            const tc = await KubeClient.fromString(Buffer.from(s.data.kubeconfig, 'base64').toString('utf8'));
            try {
              await tc.request('GET', '/api', { timeoutMs: 2000 });
              if (clusterVersionName === CURRENT_CV) roots.push(vc.status.clusterNamespace!);
              return (performance.now() - t0) / 1000;
            } catch {
              /* not answering yet */
            } finally {
              tc.close();
            }
          }
        }
        await sleep(100);
      }
      throw new Error(
        `VirtualCluster ${name} (uid ${created.metadata?.uid}) not usable after ${TENANT_DEADLINE_MS / 1000} s (${last})`,
      );
    };

    // Start of the tenant part: the super cluster and the manager are up, no tenant yet.
    await sleep(SETTLE_MS);
    const memAtStart = memAvailableBytes();
    const samples: Sample[] = [sample(0)];
    process.stderr.write(
      `lifecycle: super cluster up, MemAvailable ${(memAtStart / GiB).toFixed(1)} GiB; creating ${SEQUENTIAL} tenants one after another\n`,
    );

    // (a) creation to usable kubeconfig, one tenant after another
    const seconds: number[] = [];
    for (let i = 0; i < SEQUENTIAL; i++) seconds.push(await usable(`bench-${i}`));
    process.stderr.write(
      `lifecycle: sequential create-to-kubeconfig seconds ${seconds.map((s) => s.toFixed(2)).join(' ')}\n`,
    );

    // (b) memory per idle tenant control plane
    await sleep(IDLE_MS);
    const perTenantMiB = roots.map(
      (r) =>
        local!
          .controlPlane(r)!
          .processes()
          .reduce((s, p) => s + p.rssBytes(), 0) / MiB,
    );
    const perTenantPssMiB = roots.map(
      (r) =>
        local!
          .controlPlane(r)!
          .processes()
          .reduce((s, p) => s + pssBytes(p.pid), 0) / MiB,
    );
    const byComponent: Record<string, number> = {};
    for (const p of local.controlPlane(roots[0]!)!.processes())
      byComponent[p.spec.name.split('/')[1]!] = p.rssBytes() / MiB;
    samples.push(sample(roots.length));

    // (c) batches of five up to maxTenants
    while (roots.length < maxTenants) {
      const from = roots.length;
      const t0 = performance.now();
      await Promise.all(Array.from({ length: BATCH }, (_, j) => usable(`bench-${from + j}`)));
      const batchSeconds = (performance.now() - t0) / 1000;
      await sleep(SETTLE_MS);
      samples.push({ ...sample(roots.length), batchSeconds });
      process.stderr.write(
        `lifecycle: ${roots.length} tenants usable (batch took ${batchSeconds.toFixed(1)} s), MemAvailable ${(memAvailableBytes() / GiB).toFixed(1)} GiB\n`,
      );
    }

    const mibPerTenant = slope(samples.map((s) => [s.tenants, s.everythingMiB]));
    const memDropPerTenant = -slope(samples.map((s) => [s.tenants, s.memAvailableMiB]));
    const etcdPerTenant = slope(samples.map((s) => [s.tenants, s.etcdMiB]));
    const pssPerTenant = slope(samples.map((s) => [s.tenants, s.everythingPssMiB]));
    const fit = Math.floor((memAtStart - RESERVE_BYTES) / MiB / mibPerTenant);
    const fitByPss = Math.floor((memAtStart - RESERVE_BYTES) / MiB / pssPerTenant);
    const note =
      `extrapolatedTenantsFit is an extrapolation beyond the ${roots.length} tenants measured: ` +
      `(MemAvailable at start ${(memAtStart / GiB).toFixed(1)} GiB - 2 GiB reserve) / ${mibPerTenant.toFixed(0)} MiB RSS per tenant ` +
      `(${fitByPss} by ${pssPerTenant.toFixed(0)} MiB PSS per tenant, which shares the binaries' pages among tenants); ` +
      `memory only, CPU (2 cores here) and etcd load are not modelled`;
    process.stderr.write(`lifecycle: ${note}\n`);
    const tenantNames = Array.from({ length: roots.length }, (_, i) => `bench-${i}`);
    const dayTwo =
      process.env.BENCH_LIFECYCLE_DAY_TWO === '0'
        ? undefined
        : await dayTwoBench({
            sc,
            client,
            local,
            tenants: tenantNames,
            clusterVersion: CURRENT_CV,
            ...(upgradeFrom && { olderClusterVersion: OLDER_CV }),
            newerVersion: pinnedVersions().kubernetes,
            create: async (name, cv) => void (await usable(name, cv)),
            reserveMiB: RESERVE_BYTES / MiB,
          });
    const p50 = percentile(seconds, 50);
    return {
      name: 'lifecycle',
      figures: {
        ...dayTwo?.figures,
        createToKubeconfigP50Seconds: p50,
        createToKubeconfigMaxSeconds: Math.max(...seconds),
        kamajiRatio: p50 / KAMAJI_SECONDS,
        tenantRssMiB: perTenantMiB.reduce((s, x) => s + x, 0) / perTenantMiB.length,
        tenantPssMiB: perTenantPssMiB.reduce((s, x) => s + x, 0) / perTenantPssMiB.length,
        measuredTenants: roots.length,
        mibPerTenant,
        pssMiBPerTenant: pssPerTenant,
        memAvailableDropMiBPerTenant: memDropPerTenant,
        etcdRssMiBPerTenant: etcdPerTenant,
        extrapolatedTenantsFit: fit,
        extrapolatedTenantsFitByPss: fitByPss,
      },
      detail: {
        note,
        ...(dayTwo && { dayTwo: dayTwo.detail }),
        kamajiSeconds: KAMAJI_SECONDS,
        sequentialSeconds: seconds,
        tenantRssMiBEach: perTenantMiB,
        tenantPssMiBEach: perTenantPssMiB,
        tenantRssMiBByComponent: byComponent,
        memAvailableAtStartMiB: memAtStart / MiB,
        reserveMiB: RESERVE_BYTES / MiB,
        samples,
        controllerWorkers: BATCH,
        cpus: cpus().length,
        loadAverageAtEnd: loadavg(),
        idleSecondsBeforeTenantRss: IDLE_MS / 1000,
        settleSecondsPerBatch: SETTLE_MS / 1000,
      },
    };
  } finally {
    // Each step runs even when an earlier one fails: no process may outlive the scenario.
    await controller
      ?.stop()
      .catch((e: unknown) => process.stderr.write(`lifecycle: stopping the controller: ${String(e)}\n`));
    await local?.stop().catch((e: unknown) => process.stderr.write(`lifecycle: stopping the tenants: ${String(e)}\n`));
    await sc.stop();
    removeStateDir(dir);
  }
}
