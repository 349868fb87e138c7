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
import { DAY_TWO_RATIOS, type DayTwoValue, dayTwoArms } from './daytwo.ts';
import { benchSize, envSized } from './pods.ts';
import {
  figureSpreads,
  interleave,
  loadBetween,
  readLoad,
  repsOf,
  reportRatios,
  type RepRun,
  spread,
  spreadFigures,
} from './repeat.ts';

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
/** the ClusterVersion on the older minor of repetition `rep` (0-based): each repetition upgrades a tenant of its own */
const olderCv = (rep: number) => `bench-older-r${rep + 1}`;
const VC_GONE_MS = 180_000;

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
 * memory available at the start less a 2 GiB reserve: an extrapolation beyond the measured count (BENCH_SIZE=small:
 * 5). Then, in BENCH_REPS repetitions (default 3), the arms interleaved: (d) one more tenant created and timed to a
 * usable kubeconfig, deleted after (arm `create`), and unless BENCH_LIFECYCLE_DAY_TWO is 0 the day-two arms on the
 * same tenants (test/bench/daytwo.ts): a killed component noticed and restored, an upgrade from the older minor (when
 * its binaries are built, or BENCH_LIFECYCLE_UPGRADE=build builds them) and a ClusterVersion change rolled through
 * every tenant with BENCH_MAX_UNAVAILABLE (default 1), each followed by the same restarts by hand. Times are the
 * median, min and max over the repetitions; a ratio to the by-hand arm counts in a repetition only when the two arms
 * ran under like other load (repeat.ts).
 */
export async function lifecycleBench(): Promise<BenchResult> {
  const maxTenants = Math.max(
    SEQUENTIAL,
    Math.floor(envSized('BENCH_MAX_TENANTS', { full: 20, small: SEQUENTIAL }) / BATCH) * BATCH,
  );
  const reps = repsOf();
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
    const olderCvs = upgradeFrom ? Array.from({ length: reps }, (_, r) => olderCv(r)) : [];
    const clusterVersions: Array<[string, string]> = [
      [CURRENT_CV, pinnedVersions().kubernetes],
      ...olderCvs.map((n): [string, string] => [n, upgradeFrom!]),
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
      spec: { provisioners: { allowed: ['local'] }, grants: { clusterVersions: [CURRENT_CV, ...olderCvs] } },
    });
    local = new LocalProvisioner(join(dir, 'tenants'), sc.etcd);
    controller = new VirtualClusterController({
      meta: client,
      superClient: client,
      provisioners: { local },
      tenants: new MutableTenantRegistry(),
      workers: BATCH,
      // All the bench's tenants share one namespace: the measured ones, and in each repetition one created and one
      // upgraded (each deleted after its arm). A platform running this many in one namespace raises
      // virtualClusters.maxPerNamespace the same way.
      maxPerNamespace: maxTenants + 2 * reps,
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

    /**
     * usable creates a VirtualCluster and resolves with the seconds until its kubeconfig answers GET /api; a tenant
     * the memory samples count (`measured`) joins `roots`.
     */
    const usable = async (name: string, clusterVersionName = CURRENT_CV, measured = true): Promise<number> => {
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
              if (measured) roots.push(vc.status.clusterNamespace!);
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
    /** remove deletes a VirtualCluster a repetition made and waits until it is gone (its processes with it). */
    const remove = async (name: string) => {
      await client.delete(R.virtualclusters, 'default', name);
      const end = Date.now() + VC_GONE_MS;
      while (await client.getOrNull(R.virtualclusters, 'default', name)) {
        if (Date.now() > end)
          throw new Error(`VirtualCluster ${name} not gone ${VC_GONE_MS / 1000} s after its delete`);
        await sleep(250);
      }
    };

    // (d) and day two: the arms interleaved over the repetitions.
    const createArm = {
      name: 'create',
      run: async (rep: number) => {
        const l0 = readLoad();
        const s = await usable(`bench-create-r${rep + 1}`, CURRENT_CV, false);
        process.stderr.write(`lifecycle: repetition ${rep + 1}: a tenant usable ${s.toFixed(2)} s after its create\n`);
        return { value: { figures: { createToKubeconfigSeconds: s }, detail: {} }, load: loadBetween(l0, readLoad()) };
      },
    };
    const arms = [
      createArm,
      ...(process.env.BENCH_LIFECYCLE_DAY_TWO === '0'
        ? []
        : dayTwoArms({
            sc,
            client,
            local,
            tenants: tenantNames,
            clusterVersion: CURRENT_CV,
            ...(upgradeFrom && { olderClusterVersions: olderCvs }),
            newerVersion: pinnedVersions().kubernetes,
            create: async (name, cv) => void (await usable(name, cv, false)),
            remove,
            reserveMiB: RESERVE_BYTES / MiB,
          })),
    ];
    process.stderr.write(`lifecycle: ${reps} repetitions of ${arms.map((a) => a.name).join(', ')}\n`);
    const runs = await interleave<DayTwoValue>(arms, reps, async (rep, arm) => {
      if (arm === 'create') await remove(`bench-create-r${rep + 1}`);
    });
    const { figures: repeated, notes } = lifecycleFigures(runs);
    return {
      name: 'lifecycle',
      notes,
      figures: {
        ...repeated,
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
        size: benchSize(),
        repetitions: reps,
        runs,
        kamajiSeconds: KAMAJI_SECONDS,
        sequentialSeconds: seconds,
        sequentialP50Seconds: percentile(seconds, 50),
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

/**
 * lifecycleFigures turns the interleaved runs into figures: every time of every arm as its median, min and max over
 * the repetitions, the Kamaji ratio of the create arm's (against a published constant, so no load bound), and the
 * day-two ratios of each manager's arm to its by-hand arm within a repetition, left out where their other load
 * differs beyond the bound; with the notes that print each ratio's spread or why it is missing.
 */
export function lifecycleFigures(runs: ReadonlyArray<RepRun<DayTwoValue>>): {
  figures: Record<string, number>;
  notes: string[];
} {
  const figures: Record<string, number> = {};
  const notes: string[] = [];
  figureSpreads(runs, (v) => v.figures, figures);
  const creates = runs.filter((r) => r.arm === 'create').map((r) => r.value.figures.createToKubeconfigSeconds!);
  Object.assign(figures, spreadFigures('kamajiRatio', spread(creates.map((x) => x / KAMAJI_SECONDS))));
  const arms = new Set(runs.map((r) => r.arm));
  const ratios = Object.fromEntries(
    Object.entries(DAY_TWO_RATIOS).filter(([, r]) => arms.has(r.numerator) && arms.has(r.denominator)),
  );
  reportRatios(runs, ratios, figures, notes);
  return { figures, notes };
}
