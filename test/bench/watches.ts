import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { rootNamespace } from '../../core/names/names.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { startManager, type Manager } from '../../core/programs/manager/manager.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { apiserverWatchCounts, eventually, startTestSuper } from '../harness.ts';
import type { BenchResult } from './main.ts';
import { type ArmFigures, repeatFigures, repsOf } from './repeat.ts';

/**
 * The watches benchmark: how many watches a manager serving one tenant holds open on each cluster, per resource, as
 * the apiservers count them (`apiserver_longrunning_requests{verb="WATCH"}`), in four arms: plain, with leader
 * election, with the namespace scheduler, with both. One local super cluster (also the meta cluster) and one tenant
 * control plane; each arm starts the manager, waits until it serves the tenant and the counts hold still, and subtracts
 * what the clusters' own components watch (counted before the manager starts and again after it stops, when the
 * apiservers noticed its watches closed). Figures per arm: the manager's watches on the meta/super cluster and on the
 * tenant's, and how many resources it watches more than once on one cluster (must be 0: one watch per resource per
 * cluster). The four arms run interleaved over BENCH_REPS repetitions (default 3) on the same clusters; each figure is
 * the median over them with its min and max (counts, which do not move with the host's load: a spread says a watch
 * came or went between repetitions).
 */

const ARMS: Array<{ name: string; config: Record<string, unknown> }> = [
  { name: 'plain', config: {} },
  { name: 'leader-election', config: { leaderElection: { enabled: true, namespace: 'default' } } },
  { name: 'scheduler', config: { scheduler: { enabled: true, namespace: 'default' } } },
  {
    name: 'both',
    config: { leaderElection: { enabled: true, namespace: 'default' }, scheduler: { enabled: true } },
  },
];

type Counts = Map<string, number>;

/** settled polls the counts until two readings two seconds apart are equal, and returns them. */
async function settled(cp: LocalControlPlane): Promise<Counts> {
  let last = '';
  return eventually(
    async () => {
      const now = await apiserverWatchCounts(cp);
      const text = JSON.stringify([...now].sort());
      const same = text === last;
      last = text;
      if (!same) throw new Error(`${cp.name}: watch counts still moving`);
      return now;
    },
    90_000,
    2000,
  );
}

/** minus is a − b per resource, the resources where it is not 0. */
function minus(a: Counts, b: Counts): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of new Set([...a.keys(), ...b.keys()]).values()) {
    const d = (a.get(r) ?? 0) - (b.get(r) ?? 0);
    if (d !== 0) out[r] = d;
  }
  return Object.fromEntries(Object.entries(out).sort(([x], [y]) => x.localeCompare(y)));
}

const sum = (o: Record<string, number>) => Object.values(o).reduce((s, n) => s + n, 0);

export async function watchesBench(): Promise<BenchResult> {
  const t = await startTestSuper({ nodes: 1 });
  const dir = mkdtempSync(join(tmpdir(), 'vc-watches-'));
  let manager: Manager | undefined;
  try {
    const tenant = await t.sc.addControlPlane('tenant-w', { controllers: TENANT_CONTROLLERS });
    const key = rootNamespace('team-w', 'w', 'uid-w');
    const clusters = { meta: t.sc.cluster, tenant };
    const arm =
      (a: (typeof ARMS)[number]) =>
      async (rep: number): Promise<ArmFigures> => {
        const base = { meta: await settled(clusters.meta), tenant: await settled(clusters.tenant) };
        const file = join(dir, `${a.name}-${rep}.yaml`);
        writeFileSync(
          file,
          stringify({
            apiVersion: 'tenancy.x-k8s.io/v1alpha1',
            kind: 'ManagerConfiguration',
            superClusters: [{ name: 'one', kubeconfig: t.sc.kubeconfigPath }],
            syncer: { patrolIntervalSeconds: 0 },
            tenants: [
              { name: 'w', namespace: 'team-w', uid: 'uid-w', kubeconfig: tenant.kubeconfigPath, superCluster: 'one' },
            ],
            ...a.config,
          }),
        );
        manager = await startManager(loadManagerConfig(file), file);
        const m = manager;
        await eventually(() => {
          if (!m.isLeader()) throw new Error('not leading yet');
          if (!m.syncers.every((s) => s.tenantReady(key))) throw new Error('syncer not serving the tenant yet');
          if (m.scheduler && !m.scheduler.tenantReady(key)) throw new Error('scheduler not serving the tenant yet');
        }, 90_000);
        const serving = { meta: await settled(clusters.meta), tenant: await settled(clusters.tenant) };
        await manager.stop();
        manager = undefined;
        const after = { meta: await settled(clusters.meta), tenant: await settled(clusters.tenant) };
        const own = { meta: minus(serving.meta, base.meta), tenant: minus(serving.tenant, base.tenant) };
        const twice = Object.entries({ ...prefixed('meta', own.meta), ...prefixed('tenant', own.tenant) })
          .filter(([, n]) => n > 1)
          .map(([r]) => r);
        return {
          figures: {
            [`${a.name}.meta`]: sum(own.meta),
            [`${a.name}.tenant`]: sum(own.tenant),
            [`${a.name}.watchedTwice`]: twice.length,
          },
          detail: {
            manager: own,
            watchedTwice: twice,
            leftAfterStop: { meta: minus(after.meta, base.meta), tenant: minus(after.tenant, base.tenant) },
          },
        };
      };
    const { figures, notes, runs } = await repeatFigures(
      ARMS.map((a) => ({ name: a.name, run: arm(a) })),
      repsOf(),
    );
    // what each arm watched, from its first repetition (the figures' spreads say whether that moved)
    for (const r of runs.filter((x) => x.rep === 0)) {
      const d = r.value.detail as { manager: { meta: object; tenant: object }; watchedTwice: string[] };
      notes.push(
        `${r.arm}: meta ${JSON.stringify(d.manager.meta)}; tenant ${JSON.stringify(d.manager.tenant)}` +
          (d.watchedTwice.length ? `; watched more than once: ${d.watchedTwice.join(', ')}` : ''),
      );
    }
    return { name: 'watches', figures, notes, detail: { runs } };
  } finally {
    await manager?.stop();
    await t.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function prefixed(cluster: string, o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).map(([r, n]) => [`${cluster}/${r}`, n]));
}
