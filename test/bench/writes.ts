import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { KubeClient } from '../../core/kube/client.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { writeTotals } from '../../core/syncer/metrics.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { ensureToolchain } from '../../core/toolchain/toolchain.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import type { BenchResult } from './main.ts';
import { createPodsAndWaitRunning } from './pods.ts';
import { waitServiceAccount, waitUntil } from './podwatch.ts';
import { spread } from './repeat.ts';
import { accountWrites, beyondPerPod, formatAccount, writeCounts, writesPerPodTotal } from './accounting.ts';

/** perPod divides the growth of writeTotals between two readings by the number of Pods. */
export function writesPerPod(
  before: Record<string, number>,
  after: Record<string, number>,
  pods: number,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d) out[k] = Number((d / pods).toFixed(3));
  }
  return out;
}

/**
 * writesBench counts the API writes the syncer makes per synced Pod, per side, verb and resource (from
 * vc_syncer_writes_total), on a real local super cluster with T tenant control planes, in two waves of P Pods per
 * tenant: the first into tenants with no Pod yet, the second once the first wave's vNodes, namespaces and
 * ServiceAccounts exist (the steady state); then the CPU time of one patrol pass over them, and the writes a second
 * syncer makes when it starts on the synced state (a restart: all should be zero). BENCH_TENANTS and BENCH_PODS size
 * it (default 4 x 50 per wave).
 */
export async function writesBench(): Promise<BenchResult> {
  const T = Number(process.env.BENCH_TENANTS ?? 4);
  const P = Number(process.env.BENCH_PODS ?? 50);
  const N = T * P;
  const log = (msg: string) =>
    process.stdout.write(`[writes-bench ${new Date().toISOString().slice(11, 23)}] ${msg}\n`);
  let t: TestSuper | undefined;
  let syncer: Syncer | undefined;
  const clients: KubeClient[] = [];
  try {
    t = await startTestSuper({ nodes: Math.max(2, Math.ceil((2 * N + 20) / 100)) });
    const cps = await Promise.all(
      Array.from({ length: T }, (_, i) => t!.sc.addControlPlane(`tenant-${i}`, { controllers: TENANT_CONTROLLERS })),
    );
    const tcs = await Promise.all(cps.map((cp) => cp.client()));
    clients.push(...tcs);
    const tenants = cps.map((cp, i) => tenantFor(cp, 'bench', `w${i}`, randomUUID()));
    await Promise.all(tcs.map((c) => waitServiceAccount(c, 'default')));
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    const superClient = await KubeClient.fromFile(t.sc.kubeconfigPath);
    clients.push(superClient);
    const registry = new MutableTenantRegistry(tenants);
    const newSyncer = () => new Syncer({ superClient, host, registry, patrolIntervalMs: 0, workers: 8 });
    syncer = newSyncer();
    await syncer.start();
    const s0 = syncer;
    const idle = async (s: Syncer) => {
      await waitUntil(
        () => tenants.every((x) => s.tenantReady(x.key)),
        60_000,
        () => 'tenants ready',
      );
      // Empty for a second in a row: keys requeued after a delay come back.
      let quietSince = 0;
      await waitUntil(
        () => {
          if (s.queueLength() || s.inFlightByTenant().some(([, n]) => n)) quietSince = 0;
          else quietSince ||= Date.now();
          return quietSince > 0 && Date.now() - quietSince > 1500;
        },
        120_000,
        () => `syncer idle (${s.queueLength()} queued)`,
        100,
      );
    };
    await idle(s0);
    // Two waves of P Pods per tenant. The first comes to tenants that have no Pod yet: its writes include the vNodes,
    // super namespaces, ServiceAccounts and tokens. The second comes once those exist (the first wave's Pods stay):
    // what it costs is what every further Pod costs, the steady state the issue's target speaks of.
    const wave = async (k: number) => {
      const w0 = await writeTotals();
      const a0 = await writeCounts();
      log(`wave ${k}: creating ${N} Pods in ${T} tenants`);
      await createPodsAndWaitRunning(tcs, P, {
        name: (j) => `w${k}-${j}`,
        running: k * P,
        concurrency: 16,
        deadlineMs: 300_000,
        everyMs: 500,
      });
      await idle(s0);
      const perPod = writesPerPod(w0, await writeTotals(), N);
      const account = accountWrites(a0, await writeCounts(), N);
      const beyond = beyondPerPod(account);
      log(`wave ${k}: syncer writes per Pod, by kind:\n${formatAccount(account)}`);
      log(
        `wave ${k}: ${beyond.perPod.toFixed(3)} writes per Pod beyond 1 super create, 1 Binding and 1 status` +
          (beyond.rows.length
            ? `: ${beyond.rows.map((r) => `${r.op}/${r.plugin} ${r.resource} ${r.perPod}`).join(', ')}`
            : ''),
      );
      return { perPod, account, beyond };
    };
    const first = await wave(1);
    const steady = await wave(2);
    const patrolCpuMs: number[] = [];
    for (let k = 0; k < 5; k++) {
      const c0 = process.cpuUsage();
      s0.patrol();
      const c = process.cpuUsage(c0);
      patrolCpuMs.push(Number(((c.user + c.system) / 1000).toFixed(1)));
    }
    log(`patrol over ${2 * N} Pods: CPU ms per pass ${JSON.stringify(patrolCpuMs)}`);

    await s0.stop();
    const w2 = await writeTotals();
    const r0 = performance.now();
    syncer = newSyncer();
    await syncer.start();
    await idle(syncer);
    const warmMs = performance.now() - r0 - 1500;
    const restartWrites = writesPerPod(w2, await writeTotals(), 1);
    log(`restart: ${Math.round(warmMs)} ms to idle; writes ${JSON.stringify(restartWrites)}`);
    const sum = (o: Record<string, number>, side: string) =>
      Object.entries(o)
        .filter(([k]) => k.startsWith(`${side} `))
        .reduce((a, [, v]) => a + v, 0);
    return {
      name: 'writes',
      figures: {
        pods: N,
        tenantWritesPerPod: sum(first.perPod, 'tenant'),
        superWritesPerPod: sum(first.perPod, 'super'),
        syncerWritesPerPod: writesPerPodTotal(first.account),
        beyondPerPodWrites: first.beyond.perPod,
        steadyTenantWritesPerPod: sum(steady.perPod, 'tenant'),
        steadySuperWritesPerPod: sum(steady.perPod, 'super'),
        steadySyncerWritesPerPod: writesPerPodTotal(steady.account),
        steadyBeyondPerPodWrites: steady.beyond.perPod,
        patrolCpuMsMedian: spread(patrolCpuMs).median,
        patrolCpuMsMin: spread(patrolCpuMs).min,
        patrolCpuMsMax: spread(patrolCpuMs).max,
        restartWrites: Object.values(restartWrites).reduce((a, b) => a + b, 0),
        restartIdleMs: warmMs,
      },
      detail: {
        tenants: T,
        podsPerTenant: P,
        firstWave: { writesPerPod: first.perPod, account: first.account, beyondPerPod: first.beyond.rows },
        steadyWave: { writesPerPod: steady.perPod, account: steady.account, beyondPerPod: steady.beyond.rows },
        patrolCpuMs,
        restartWrites,
      },
    };
  } finally {
    await syncer?.stop();
    for (const c of clients) c.close();
    await t?.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await ensureToolchain();
  const r = await writesBench();
  process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
}
