import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { R } from '../../core/kube/resources.ts';
import { eventually, realNodeSkipReason } from '../harness.ts';
import { InstallFlow } from '../installflow.ts';
import type { BenchResult } from './main.ts';

const MiB = 1024 * 1024;

/** managerRss is the resident memory (MiB) of each in-cluster manager process on this host, by pid. */
function managerRss(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
      if (!cmd.includes('/app/core/programs/cli/vc.mjs') || cmd[2] !== 'manager') continue;
      const rss = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${e}/status`, 'utf8'))?.[1];
      if (rss) out[e] = (Number(rss) * 1024) / MiB;
    } catch {
      // the process ended meanwhile
    }
  }
  return out;
}

/**
 * installBench measures the in-cluster installation on the local super cluster with a real node, with the steps
 * test/realnode/install.it.test.ts asserts: the image's size, how long `vc install` takes (image pulled from the local
 * registry, both manager replicas and the vn-agent Ready), the time from `vc install` to the first native tenant
 * Running from git, and the managers' resident memory at rest and with that tenant.
 */
export async function installBench(): Promise<BenchResult> {
  const skip = await realNodeSkipReason();
  if (skip) return { name: 'install', figures: {}, detail: { skipped: skip } };
  const f = await InstallFlow.start();
  let installed = false;
  try {
    await f.buildAndPush();
    const imageMiB = statSync(join(f.dir, 'image.tar')).size / MiB;
    const t0 = performance.now();
    await f.vc(...f.installArgs());
    installed = true;
    const installS = (performance.now() - t0) / 1000;
    // at rest: both replicas Ready, one leading, no tenant; give them the time a first reconcile takes
    await new Promise((r) => setTimeout(r, 30_000));
    const rest = managerRss();
    await f.prepareTenants(['team-a']);
    await eventually(
      async () => {
        const v = await f.t.client.get<VirtualCluster>(R.virtualclusters, 'tenants', 'team-a');
        if (v.status?.phase !== 'Running') throw new Error(`team-a: ${v.status?.phase} ${v.status?.message ?? ''}`);
      },
      600_000,
      500,
    );
    const firstTenantS = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 30_000));
    const withTenant = managerRss();
    const max = (m: Record<string, number>) => Math.max(0, ...Object.values(m));
    return {
      name: 'install',
      figures: {
        image_archive_mib: imageMiB,
        vc_install_s: installS,
        install_to_first_running_tenant_s: firstTenantS,
        manager_rss_mib_at_rest: max(rest),
        manager_rss_mib_with_1_tenant: max(withTenant),
      },
      detail: { managerRssAtRest: rest, managerRssWith1Tenant: withTenant, image: f.image },
    };
  } finally {
    await f.stop(installed);
  }
}
