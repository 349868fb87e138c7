import { existsSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import type { KubeClient } from '../../core/kube/client.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { ensureToolchain } from '../../core/toolchain/toolchain.ts';
import { startTestSuper, type TestSuper } from '../harness.ts';
import { killManager, managerMetric, type ManagerProc, ManagerSpawner } from '../managerproc.ts';
import type { BenchResult } from './main.ts';
import { type ArmFigures, repeatFigures, repsOf } from './repeat.ts';
import { createPodsAndWaitRunning, envInt } from './pods.ts';
import { waitServiceAccount, waitUntil } from './podwatch.ts';
import { removeStateDir, stateDir } from '../statedirs.ts';

/**
 * The restart benchmark: `vc manager` processes running the compiled program (dist/, as `vc` runs it),
 * BENCH_RESTART_TENANTS tenants (default 2) x BENCH_RESTART_PODS Pods (default 50) synced, then two takeovers after
 * `kill -9` of the leader: by a standby replica already running, and by a manager spawned only after the kill. For
 * each: the time to the new leader, to serving (its queue drained and every Pod key reconciled once), and the writes
 * it made (0 expected, nothing changed). Spawn figures are split into loading the program (until /metrics is served)
 * and the rest. The leader is killed once the standby's caches are warm (vc_syncer_cache_synced), as one that has been
 * running for a while: the time it took to warm them is reported as its warm-up. The two takeovers run interleaved over
 * BENCH_REPS repetitions (default 3), each killing the leader the one before left; every figure is their median with
 * its min and max.
 */

const DIST = join(import.meta.dirname, '../../dist/core/programs/cli/main.js');
const round = (n: number) => Math.round(n);

/** serving waits until a manager leads, its queue is drained and it has reconciled `pods` Pod keys. */
async function serving(m: ManagerProc, pods: number, tenants: number): Promise<number> {
  await waitUntil(
    async () => {
      if (!m.leaderAt) return false;
      const done = await managerMetric(m, 'vc_syncer_sync_duration_seconds_count', 'plugin="pods"');
      const depthLines = (await (await fetch(`http://127.0.0.1:${m.port}/metrics`)).text())
        .split('\n')
        .filter((l) => l.startsWith('vc_syncer_queue_depth{'));
      const depth = depthLines.reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
      const inFlight = await managerMetric(m, 'vc_syncer_in_flight');
      return done >= pods && depthLines.length === tenants && depth === 0 && inFlight === 0;
    },
    300_000,
    () => 'new leader serving',
    100,
  );
  return performance.now();
}

/**
 * warm waits until a standby reports its super cache and every tenant's synced, and returns when; undefined for a
 * program that keeps no caches while standing by (built before vc_syncer_cache_synced, for a comparison).
 */
async function warm(m: ManagerProc, tenants: number): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${m.port}/metrics`)).text();
  if (!text.includes('# TYPE vc_syncer_cache_synced ')) return undefined;
  await waitUntil(
    async () =>
      (await managerMetric(m, 'vc_syncer_cache_synced', 'side="super"')) === 1 &&
      (await managerMetric(m, 'vc_syncer_cache_synced', 'side="tenant"')) === tenants,
    300_000,
    () => 'standby caches synced',
    100,
  );
  return performance.now();
}

/** restartBench measures the takeovers after kill -9 of the leading manager. */
export async function restartBench(): Promise<BenchResult> {
  const T = envInt('BENCH_RESTART_TENANTS', 2);
  const P = envInt('BENCH_RESTART_PODS', 50);
  const log = (msg: string) =>
    process.stdout.write(`[restart-bench ${new Date().toISOString().slice(11, 23)}] ${msg}\n`);
  if (!existsSync(DIST)) throw new Error('restart bench: run `npm run build` first (it measures the compiled program)');
  const load0 = loadavg()[0]!;
  let t: TestSuper | undefined;
  const spawner = new ManagerSpawner();
  const startManager = async (config: string) => {
    const m = spawner.spawn({ config, compiled: true, keep: /lead|"level":"(error|fatal)"/ });
    await m.ready;
    return m;
  };
  const clients: KubeClient[] = [];
  const dir = stateDir('vc-restart-bench-');
  try {
    t = await startTestSuper({ nodes: Math.ceil((T * P + 10) / 100) + 1 });
    const cps = await Promise.all(
      Array.from({ length: T }, (_, i) => t!.sc.addControlPlane(`tenant-${i}`, { controllers: TENANT_CONTROLLERS })),
    );
    clients.push(...(await Promise.all(cps.map((cp) => cp.client()))));
    const lease = { leaseDurationSeconds: 10, renewDeadlineSeconds: 8, retryPeriodSeconds: 1 };
    const config = join(dir, 'manager.yaml');
    writeFileSync(
      config,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [{ name: 'one', kubeconfig: t.sc.kubeconfigPath }],
        syncer: { workers: 8, patrolIntervalSeconds: 0 },
        leaderElection: { enabled: true, ...lease },
        tenants: cps.map((cp, i) => ({
          name: `t${i}`,
          namespace: 'team',
          uid: `uid-${i}`,
          kubeconfig: cp.kubeconfigPath,
          superCluster: 'one',
        })),
      }),
    );
    let leader = await startManager(config);
    const coldLoadMs = leader.readyAt! - leader.startedAt;
    await Promise.all(clients.map((c) => waitServiceAccount(c, 'default')));
    log(`creating ${T} x ${P} Pods`);
    await createPodsAndWaitRunning(clients, P, {
      name: (j) => `r-${j}`,
      concurrency: 8,
      deadlineMs: 600_000,
      everyMs: 1000,
    });
    await serving(leader, T * P, T);
    log('synced');

    // Two takeovers, interleaved over the repetitions; each arm's new leader is the next one's to kill.
    const standbyArm = async (rep: number): Promise<ArmFigures> => {
      // 1. A standby replica is already running when the leader is killed.
      const standby = await startManager(config);
      const warmAt = await warm(standby, T);
      const warmUpMs = warmAt === undefined ? undefined : round(warmAt - standby.startedAt);
      log(
        `r${rep + 1}: ` +
          (warmUpMs === undefined ? 'standby keeps no caches' : `standby caches synced ${warmUpMs} ms after its spawn`),
      );
      const k1 = performance.now();
      await killManager(leader);
      const s1 = await serving(standby, T * P, T);
      leader = standby;
      const writes = await managerMetric(standby, 'vc_syncer_writes_total');
      // What serving took after the Lease: one reconcile per cached key, by the reconciles' own clock.
      const reconciles = await managerMetric(standby, 'vc_syncer_sync_duration_seconds_count');
      const reconcileSeconds = await managerMetric(standby, 'vc_syncer_sync_duration_seconds_sum');
      const fig = {
        warmUpMs,
        reconciles,
        reconcileMsEach: Number(((reconcileSeconds * 1000) / Math.max(1, reconciles)).toFixed(3)),
        killToLeaderMs: round(standby.leaderAt! - k1),
        killToServingMs: round(s1 - k1),
        writes,
      };
      log(`r${rep + 1}: standby takeover: ${JSON.stringify(fig)}`);
      return {
        figures: {
          ...(warmUpMs !== undefined && { standbyWarmUpMs: warmUpMs }),
          standbyKillToLeaderMs: fig.killToLeaderMs,
          standbyKillToServingMs: fig.killToServingMs,
          standbyWrites: writes,
        },
        detail: fig,
      };
    };
    const spawnArm = async (rep: number): Promise<ArmFigures> => {
      // 2. No standby: a manager is spawned after the kill.
      const k2 = performance.now();
      await killManager(leader);
      const fresh = await startManager(config);
      const s2 = await serving(fresh, T * P, T);
      leader = fresh;
      const writes = await managerMetric(fresh, 'vc_syncer_writes_total');
      const fig = {
        killToMetricsMs: round(fresh.readyAt! - k2),
        killToLeaderMs: round(fresh.leaderAt! - k2),
        killToServingMs: round(s2 - k2),
        writes,
      };
      log(`r${rep + 1}: spawned after the kill: ${JSON.stringify(fig)} (load ${loadavg()[0]!.toFixed(1)})`);
      return {
        figures: {
          spawnKillToMetricsMs: fig.killToMetricsMs,
          spawnKillToLeaderMs: fig.killToLeaderMs,
          spawnKillToServingMs: fig.killToServingMs,
          spawnWrites: writes,
        },
        detail: fig,
      };
    };
    const { figures, notes, runs } = await repeatFigures(
      [
        { name: 'standby', run: standbyArm },
        { name: 'spawn', run: spawnArm },
      ],
      repsOf(),
    );
    return {
      name: 'restart',
      notes,
      figures: {
        pods: T * P,
        loadAverageAtStart: Number(load0.toFixed(1)),
        coldProgramLoadMs: round(coldLoadMs),
        ...figures,
        loadAverageAtEnd: Number(loadavg()[0]!.toFixed(1)),
      },
      detail: { tenants: T, podsPerTenant: P, lease, runs },
    };
  } finally {
    await spawner.stopAll();
    for (const c of clients) c.close();
    await t?.stop();
    removeStateDir(dir);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await ensureToolchain();
  const r = await restartBench();
  process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
}
