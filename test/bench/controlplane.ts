import { LocalSuperCluster } from '../../core/dev/local/supercluster.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import type { BenchResult } from './main.ts';
import { removeStateDir, stateDir } from '../statedirs.ts';

const MiB = 1024 * 1024;

/**
 * controlPlaneBench measures how long the local super cluster and one extra tenant control plane take to become
 * ready, and their resident memory once idle.
 */
export async function controlPlaneBench(): Promise<BenchResult> {
  const dir = stateDir('vc-bench-');
  const t0 = performance.now();
  const sc = await LocalSuperCluster.start({ stateDir: dir, nodes: 3 });
  const superReadyMs = performance.now() - t0;
  try {
    const t1 = performance.now();
    const tenant = await sc.addControlPlane('tenant-bench', { controllers: TENANT_CONTROLLERS });
    const tenantReadyMs = performance.now() - t1;
    await new Promise((r) => setTimeout(r, 10_000));
    const perComponent: Record<string, number> = { etcd: sc.etcd.process.rssBytes() / MiB };
    for (const p of sc.cluster.processes()) perComponent[p.spec.name] = p.rssBytes() / MiB;
    for (const p of tenant.processes()) perComponent[p.spec.name] = p.rssBytes() / MiB;
    const superMiB = perComponent.etcd! + sc.cluster.rssBytes() / MiB;
    const tenantMiB = tenant.rssBytes() / MiB;
    return {
      name: 'controlplane',
      figures: {
        superReadySeconds: superReadyMs / 1000,
        tenantReadySeconds: tenantReadyMs / 1000,
        superRssMiB: superMiB,
        tenantRssMiB: tenantMiB,
        tenantToSuperMemoryRatio: tenantMiB / superMiB,
      },
      detail: { rssMiBByComponent: perComponent },
    };
  } finally {
    await sc.stop();
    removeStateDir(dir);
  }
}
