import { LocalSuperCluster } from '../../core/dev/local/supercluster.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import type { BenchResult } from './main.ts';
import { type ArmFigures, repeatFigures, repsOf } from './repeat.ts';
import { removeStateDir, stateDir } from '../statedirs.ts';
import { procCpuSeconds } from './procstat.ts';

const MiB = 1024 * 1024;

/**
 * controlPlaneBench measures how long the local super cluster and one extra tenant control plane take to become
 * ready, their resident memory once idle, and how long a tenant control plane takes to stop, gracefully and when its
 * state is thrown away (as tests' teardown does), and the CPU time the tenant's apiserver took to become ready (run it
 * with GOGC=200 in the environment, as the tests' vitest configuration sets, to see what that setting saves): each of
 * BENCH_REPS repetitions (default 3) starts its own super
 * cluster, and every figure is the median over them with its min and max.
 */
export async function controlPlaneBench(): Promise<BenchResult> {
  const { figures, notes, runs } = await repeatFigures([{ name: 'controlplane', run: controlPlaneRun }], repsOf());
  return { name: 'controlplane', figures, notes, detail: { runs } };
}

/** controlPlaneRun is one repetition: a super cluster and two tenant control planes started, measured, stopped. */
async function controlPlaneRun(): Promise<ArmFigures> {
  const dir = stateDir('vc-bench-');
  const t0 = performance.now();
  const sc = await LocalSuperCluster.start({ stateDir: dir, nodes: 3 });
  const superReadyMs = performance.now() - t0;
  try {
    const t1 = performance.now();
    const tenant = await sc.addControlPlane('tenant-bench', { controllers: TENANT_CONTROLLERS });
    const tenantReadyMs = performance.now() - t1;
    // CPU its apiserver took to become ready: most of what a start costs (GOGC in the environment moves it)
    const tenantApiserverReadyCpuSeconds = procCpuSeconds(tenant.apiserver.pid);
    await new Promise((r) => setTimeout(r, 10_000));
    const perComponent: Record<string, number> = { etcd: sc.etcd.process.rssBytes() / MiB };
    for (const p of sc.cluster.processes()) perComponent[p.spec.name] = p.rssBytes() / MiB;
    for (const p of tenant.processes()) perComponent[p.spec.name] = p.rssBytes() / MiB;
    const superMiB = perComponent.etcd! + sc.cluster.rssBytes() / MiB;
    const tenantMiB = tenant.rssBytes() / MiB;
    // A stop as a deleted tenant gets it (graceful) against one as a test's teardown does it (state thrown away).
    const t2 = performance.now();
    await tenant.stop();
    const tenantStopMs = performance.now() - t2;
    const other = await sc.addControlPlane('tenant-bench-2', { controllers: TENANT_CONTROLLERS });
    const t3 = performance.now();
    await other.stop({ discard: true });
    const tenantDiscardStopMs = performance.now() - t3;
    return {
      figures: {
        superReadySeconds: superReadyMs / 1000,
        tenantReadySeconds: tenantReadyMs / 1000,
        tenantApiserverReadyCpuSeconds,
        superRssMiB: superMiB,
        tenantRssMiB: tenantMiB,
        tenantToSuperMemoryRatio: tenantMiB / superMiB,
        tenantStopSeconds: tenantStopMs / 1000,
        tenantDiscardStopSeconds: tenantDiscardStopMs / 1000,
      },
      detail: { rssMiBByComponent: perComponent },
    };
  } finally {
    await sc.stop();
    removeStateDir(dir);
  }
}
