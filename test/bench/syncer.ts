import { availableParallelism } from 'node:os';
import { KubeClient } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { LocalEtcd } from '../../core/dev/local/etcd.ts';
import { superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { Syncer, SYNCER_DEFAULTS } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { startTestSuper, type TestSuper } from '../harness.ts';
import type { BenchResult } from './main.ts';
import { envInt, envSized } from './pods.ts';
import { CpuMeter, InflightSampler, memAvailableMiB } from './procstat.ts';
import { apiCallsOf, SameWrites, type SameWritesTenant } from './samewrites.ts';
import type { LoadGenerator } from './loadgen.ts';
import {
  accountWrites,
  collectGarbage,
  diffCounters,
  formatAccount,
  syncerCounters,
  writeCounts,
  writesByOp,
} from './accounting.ts';
import { type ArmLoad, interleave, loadBetween, readLoad, repsOf } from './repeat.ts';
import {
  createAndTime,
  type PodJob,
  PodWatch,
  pool,
  Sampler,
  sleep,
  waitServiceAccount,
  waitUntil,
} from './podwatch.ts';
import { runFairness } from './fairness.ts';
import { quietGateOf, waitForQuiet } from './quiet.ts';
import { formatRequests, readTenantRequests, requestKey, requestsPerPod } from './apirequests.ts';
import { type ArmResult, type ArmRun, busiest, syncerFigures } from './syncerfigures.ts';
import { benchTokens, deleteAllPods, envSyncerSettings, startTenants, type SyncerBenchOptions } from './syncersetup.ts';

/** Pods a kwok node takes (its `pods` capacity, see kwokNode). */
const PODS_PER_NODE = 110;
/** Creates in flight at once, in both runs. */
const CONCURRENCY = 32;

/**
 * syncerBench is the syncer scenario at 20 tenants x 100 Pods with the fairness phase: BENCH_TENANTS (default 20),
 * BENCH_PODS (per tenant, default 100), BENCH_QUIET (the quiet tenant's Pods, default 20), BENCH_QUIET_EVERY (ms
 * between its creates, default 250; 0: each waits for the one before to run), BENCH_FAIR_ROUNDS (alone then during a
 * flood, pooled; default 5), BENCH_FLOOD (default 10x BENCH_QUIET)
 * and BENCH_WORKERS (the syncer's workers, default 8) size it; BENCH_ADAPTIVE=1 (or 0) turns the syncer's
 * adaptive concurrency limit on (or off; default: the syncer's default), BENCH_WINDOW=n sets its scheduling window,
 * BENCH_CREATE_RATE=perSecond/burst its pace of one tenant's Pod creates (0 turns it off), BENCH_TENANT_ETCD=own
 * (or shared) whether each tenant has an etcd of its own, BENCH_FLOOD_RATE=perSecond/burst the flooding tenant's own
 * create rate, BENCH_CREATE_YIELD the share of its rate a tenant with a backlog keeps while another creates,
 * BENCH_TENANT_CPUS the GOMAXPROCS of each tenant apiserver (default 0: unset). BENCH_SIZE=small: 10 tenants x 50 Pods,
 * a quiet tenant of 10 and 2 fairness rounds.
 */
export function syncerBench(): Promise<BenchResult> {
  const quiet = envSized('BENCH_QUIET', { full: 20, small: 10 });
  return runSyncerBench({
    name: 'syncer',
    tenants: envSized('BENCH_TENANTS', { full: 20, small: 10 }),
    podsPerTenant: envSized('BENCH_PODS', { full: 100, small: 50 }),
    workers: envInt('BENCH_WORKERS', 8),
    quiet,
    quietEveryMs: envInt('BENCH_QUIET_EVERY', 250),
    fairRounds: envSized('BENCH_FAIR_ROUNDS', { full: 5, small: 2 }),
    flood: envInt('BENCH_FLOOD', 10 * quiet),
    repetitions: repsOf(),
    ...envSyncerSettings(),
  });
}

/**
 * syncerScaleBench is the syncer scenario toward 10,000 Pods, without the fairness phase: BENCH_SCALE_PODS (all
 * tenants together, default 10000) over BENCH_SCALE_TENANTS tenant control planes (default 40).
 */
export function syncerScaleBench(): Promise<BenchResult> {
  const pods = envInt('BENCH_SCALE_PODS', 10_000);
  const tenants = envInt('BENCH_SCALE_TENANTS', 40);
  return runSyncerBench({
    name: 'syncer-scale',
    tenants,
    podsPerTenant: Math.ceil(pods / Math.max(1, tenants)),
    workers: envInt('BENCH_WORKERS', 8),
    quiet: 0,
    quietEveryMs: 0,
    fairRounds: 0,
    flood: 0,
    repetitions: repsOf(),
    ...envSyncerSettings(),
  });
}

/**
 * runSyncerBench measures, in one run on a real local super cluster (etcd, apiserver, controller-manager, scheduler,
 * kwok nodes) with T tenant control planes (apiserver only: a Pod benchmark needs no tenant controller-manager; the
 * `default` ServiceAccount is created by the bench), three arms creating the same number of Pods:
 * 1. direct: the Pods created straight in the super cluster;
 * 2. syncer: the Pods created in the tenants and synced by the real syncer, running in this process;
 * 3. same writes: the Pods created in the tenants and a scripted client (SameWrites) making, per Pod, the writes the
 *    syncer made per Pod in arm 2 (vc_syncer_writes_total by op, divided by the Pods), as fast as it can.
 * Each arm reports throughput, p50/p99 create-to-Running, API writes per Pod, and the CPU each process used (from
 * /proc) and the super apiserver's inflight requests (its /metrics) meanwhile; the syncer arm also its CPU ms per Pod
 * (this process's process.cpuUsage: the syncer plus the bench's own creates and watches, which the direct arm
 * measures alone) and memory per Pod (heap after a full GC, and RSS). Then, with quiet > 0, the quiet tenant's p99
 * alone and during another tenant's flood.
 */
async function runSyncerBench(o: SyncerBenchOptions): Promise<BenchResult> {
  const { tenants: T, podsPerTenant: P, workers: WORKERS, quiet: QUIET, quietEveryMs: QUIET_EVERY, flood: FLOOD } = o;
  const ROUNDS = Math.max(1, o.fairRounds);
  const REPS = Math.max(1, o.repetitions);
  if (T < 1 || P < 1 || WORKERS < 1) throw new Error(`${o.name}: tenants, Pods per tenant and workers must be >= 1`);
  const fairness = T >= 2 && QUIET > 0 && FLOOD > 0;
  const N = T * P;
  // The syncer arm's Pods stay while the flood and the quiet tenant's Pods are added; the others are deleted first.
  const peakPods = N + (fairness ? FLOOD + 2 * QUIET : 0);
  const nodes = Math.max(4, Math.ceil(peakPods / PODS_PER_NODE));
  const phaseDeadline = (pods: number) => Math.max(180_000, pods * 500);
  const log = (msg: string) =>
    process.stdout.write(`[${o.name}-bench ${new Date().toISOString().slice(11, 23)}] ${msg}\n`);
  const detail: Record<string, unknown> = {
    tenants: T,
    podsPerTenant: P,
    pods: N,
    quiet: QUIET,
    quietEveryMs: QUIET_EVERY,
    fairRounds: ROUNDS,
    flood: FLOOD,
    repetitions: REPS,
    workers: WORKERS,
    adaptiveConcurrency: o.adaptive ?? SYNCER_DEFAULTS.adaptiveConcurrency,
    schedulingWindow: o.window ?? SYNCER_DEFAULTS.schedulingWindow,
    podCreateRate: o.createRate ?? SYNCER_DEFAULTS.podCreateRate,
    podCreateYield: o.createYield ?? SYNCER_DEFAULTS.podCreateYield,
    tenantEtcd: o.tenantEtcd,
    tenantCpus: o.tenantCpus,
    nodes,
    concurrency: CONCURRENCY,
    cpus: availableParallelism(),
    serviceAccountTokens: benchTokens(),
  };
  const timings: Record<string, number> = {};
  const stamp = (k: string, since: number) => (timings[k] = Number(((performance.now() - since) / 1000).toFixed(2)));
  const figures: Record<string, number> = {};
  /** notes are the lines the run prints under its figures: each ratio's spread, or why it is not reported */
  const notes: string[] = [];

  let t: TestSuper | undefined;
  let syncer: Syncer | undefined;
  const watches: PodWatch[] = [];
  const loadGens: LoadGenerator[] = [];
  const samplers: Sampler[] = [];
  const clients: KubeClient[] = [];
  // A request whose connection an overloaded apiserver closed before answering, and that nobody listens to, would end
  // a run of many minutes: such resets are counted and reported instead; anything else still ends the run.
  const resets: string[] = [];
  const onUncaught = (e: Error & { code?: string }) => {
    if (e.code !== 'ECONNRESET') throw e;
    resets.push(`${new Date().toISOString()} ${e.message}`);
    log(`stray connection reset (${resets.length}): ${e.message}`);
  };
  process.on('uncaughtException', onUncaught);
  detail.strayConnectionResets = resets;
  try {
    // ---- clusters ------------------------------------------------------------------------------------------------
    // BENCH_QUIET_WAIT_S: start only once the host is quiet (nothing of the run is up yet, so all of it is other work).
    const gate = quietGateOf();
    if (gate) detail.hostBusyBeforeStartPercent = await waitForQuiet(gate, log);
    const t0 = performance.now();
    const memFree0 = memAvailableMiB();
    log(`starting super cluster with ${nodes} kwok nodes; MemAvailable ${memFree0.toFixed(0)} MiB`);
    t = await startTestSuper({ nodes });
    const sc = t.sc;
    stamp('superStartSeconds', t0);
    const { cps, tenantClients, tenants } = await startTenants(sc, o, fairness, memFree0, detail, stamp, log);
    const superClient = t.client;
    const etcdPid = (cp: LocalControlPlane) =>
      cp.opts.etcd instanceof LocalEtcd ? cp.opts.etcd.process.pid : undefined;
    const procs = {
      superApiserver: () => [sc.cluster.apiserver.pid],
      etcd: () => [sc.etcd.process.pid],
      tenantApiservers: () => cps.map((cp) => cp.apiserver.pid),
      // a tenant's own etcd (none when they share the super cluster's: then `etcd` counts their writes)
      tenantEtcds: () => cps.map(etcdPid),
      superScheduler: () => [sc.cluster.scheduler?.pid],
      superControllerManager: () => [sc.cluster.controllerManager?.pid],
      kwok: () => [sc.cluster.kwok?.pid],
    };
    const meter = (o: { inflight: boolean } = { inflight: true }) => {
      const cpu = new CpuMeter(procs);
      const inflight = o.inflight ? new InflightSampler(sc.cluster.server, sc.cluster.adminToken) : undefined;
      return () => ({ cpu: cpu.stop(), inflight: inflight?.stop() ?? {} });
    };
    const arm = async (label: string, jobs: PodJob[]): Promise<ArmResult> => {
      const m = meter();
      const l0 = readLoad();
      const r = await createAndTime(jobs, CONCURRENCY, phaseDeadline(jobs.length), label);
      const load = loadBetween(l0, readLoad());
      const { cpu, inflight } = m();
      log(
        `${label}: ${r.podsPerSecond.toFixed(1)} pods/s, p50 ${r.p50Ms.toFixed(0)} ms, p99 ${r.p99Ms.toFixed(0)} ms; ` +
          `busiest ${JSON.stringify(busiest(cpu))}, host ${load.hostPercent}% (others used ${load.otherCpuPercent}% and waited ${load.otherWaitPercent}%), ` +
          `cpu ${JSON.stringify(Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, v.percentOfOneCore])))}, ` +
          `inflight ${JSON.stringify(inflight)}`,
      );
      return { ...r, cpu, inflight, load };
    };

    // ---- fairness: in the last repetition, after its syncer arm, with that syncer and its Pods (fairness.ts) ----
    let fair: Record<string, unknown> | undefined;
    const fairnessPhase = async (s: Syncer): Promise<void> => {
      if (!fairness) return;
      fair = await runFairness({
        s,
        quiet: QUIET,
        quietEveryMs: QUIET_EVERY,
        flood: FLOOD,
        rounds: ROUNDS,
        workers: WORKERS,
        sc,
        cps,
        tenants,
        tenantClients,
        superClient,
        tenantWatches,
        superWatch,
        watches,
        loadGens,
        samplers,
        procs,
        etcdPid,
        meter,
        phaseDeadline,
        log,
        figures,
        notes,
      });
    };

    // ---- the arms, interleaved: direct, syncer, same writes, direct, ... -------------------------------------------
    const directNs = Array.from({ length: T }, (_, i) => `bench-direct-${i}`);
    const swNs = Array.from({ length: T }, (_, i) => `bench-sw-${i}`);
    await pool([...directNs, ...swNs], 8, (ns) =>
      superClient
        .create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
        .then(() => undefined),
    );
    await pool([...directNs, ...swNs], 8, (ns) => waitServiceAccount(superClient, ns));
    const directWatch = new PodWatch(superClient, { labelSelector: 'bench=direct' });
    await directWatch.start();
    watches.push(directWatch);
    const tenantWatches = await Promise.all(
      tenantClients.map(async (c) => {
        const w = new PodWatch(c, { namespace: 'default' });
        await w.start();
        return w;
      }),
    );
    const superWatch = new PodWatch(superClient, { labelSelector: 'bench in (syncer,flood,quiet)' });
    await superWatch.start();
    watches.push(...tenantWatches, superWatch);
    const tenantJob = (i: number, name: string, bench: string): PodJob => ({
      client: tenantClients[i]!,
      watch: tenantWatches[i]!,
      namespace: 'default',
      name,
      labels: { bench },
      superWatch,
      superKey: `${superNamespace(tenants[i]!.key, 'default')}/${name}`,
    });
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    if (host.failures.length) throw new Error(`plugins failed to load: ${JSON.stringify(host.failures)}`);
    const syncerSuper = await KubeClient.fromFile(sc.kubeconfigPath);
    clients.push(syncerSuper);
    const registry = new MutableTenantRegistry(tenants);
    let sw: SameWrites | undefined;
    const swTenants: SameWritesTenant[] = tenantClients.map((client, i) => ({ client, superNamespace: swNs[i]! }));
    const swWatch = new PodWatch(superClient, { labelSelector: 'bench=samewrites' }, (p) => sw?.superPod(p));
    await swWatch.start();
    watches.push(swWatch);
    const loadOf = (r: ArmResult): ArmLoad => r.load;
    const memory: Record<string, number> = {};
    const repDetail: Array<Record<string, unknown>> = [];
    // The syncer's writes per Pod by op in the syncer arm of each repetition: the same-writes arm after it replays them.
    let perPod: Record<string, number> = {};
    const runs = await interleave<ArmRun>(
      [
        {
          name: 'direct',
          run: async (rep) => {
            const directJobs: PodJob[] = [];
            for (let j = 0; j < P; j++)
              for (let i = 0; i < T; i++)
                directJobs.push({
                  client: superClient,
                  watch: directWatch,
                  namespace: directNs[i]!,
                  name: `d${rep}-${j}`,
                  labels: { bench: 'direct' },
                  superWatch: directWatch,
                  superKey: `${directNs[i]}/d${rep}-${j}`,
                });
            log(`repetition ${rep + 1}/${REPS}, arm direct: creating ${N} Pods in the super cluster`);
            const direct = await arm(`direct r${rep + 1}`, directJobs);
            const t0 = performance.now();
            await pool(directNs, 4, (ns) => deleteAllPods(superClient, ns, phaseDeadline(P)));
            stamp(`directDeleteSecondsR${rep + 1}`, t0);
            return { value: { r: direct }, load: loadOf(direct) };
          },
        },
        {
          name: 'syncer',
          run: async (rep) => {
            let t0 = performance.now();
            syncer = new Syncer({
              superClient: syncerSuper,
              host,
              registry,
              patrolIntervalMs: 0,
              workers: WORKERS,
              adaptiveConcurrency: o.adaptive,
              ...(o.window !== undefined && { schedulingWindow: o.window }),
              ...(o.createRate && { podCreateRate: o.createRate }),
              ...(o.createYield !== undefined && { podCreateYield: o.createYield }),
            });
            await syncer.start();
            const s = syncer;
            await waitUntil(
              () => tenants.every((x) => s.tenantReady(x.key)),
              120_000,
              () => 'tenant caches synced',
            );
            stamp(`syncerReadySecondsR${rep + 1}`, t0);
            await pool(tenants, 8, (x) => waitServiceAccount(superClient, superNamespace(x.key, 'default')));
            await waitUntil(
              () => s.queueLength() === 0,
              60_000,
              () => `syncer queue empty (${s.queueLength()})`,
            );
            stamp(`syncerWarmSecondsR${rep + 1}`, t0);
            // Startup (informer lists of T+1 clusters, namespaces, ServiceAccounts) is a fixed cost; what follows is per Pod.
            collectGarbage();
            const heapWarm = process.memoryUsage().heapUsed;
            const rssWarm = process.memoryUsage.rss();
            const rss = new Sampler(() => process.memoryUsage.rss(), 100);
            samplers.push(rss);
            const countersWarm = await syncerCounters();
            const accountWarm = await writeCounts();
            const tenantRequestsWarm = await readTenantRequests(cps);
            const queuePeak = new Sampler(() => s.queueLength(), 100);
            samplers.push(queuePeak);
            const syncJobs: PodJob[] = [];
            for (let j = 0; j < P; j++)
              for (let i = 0; i < T; i++) syncJobs.push(tenantJob(i, `s${rep}-${j}`, 'syncer'));
            log(`repetition ${rep + 1}/${REPS}, arm syncer: creating ${N} Pods in ${T} tenant apiservers`);
            const viaSyncer = await arm(`syncer r${rep + 1}`, syncJobs);
            const rssPeak = rss.stop();
            const queuePeakArm = queuePeak.stop();
            // Events go on a side lane after the Pod runs: let them land before counting.
            await waitUntil(
              () => s.queueLength() === 0,
              60_000,
              () => `syncer queue empty after the syncer arm (${s.queueLength()})`,
            );
            await sleep(2000);
            const counters1 = await syncerCounters();
            const account = accountWrites(accountWarm, await writeCounts(), N);
            log(`repetition ${rep + 1}/${REPS}: syncer writes per Pod, by kind:\n${formatAccount(account)}`);
            // What the tenant apiservers served meanwhile: the bench's creates, and everything else is the syncer's.
            const tenantRequests = requestsPerPod(tenantRequestsWarm, await readTenantRequests(cps), N, {
              [requestKey('POST', 'pods')]: N,
            });
            log(
              `repetition ${rep + 1}/${REPS}: tenant apiserver requests per Pod, by kind:\n${formatRequests(tenantRequests)}`,
            );
            collectGarbage();
            const heapAfter = process.memoryUsage().heapUsed;
            const rssAfter = process.memoryUsage.rss();
            const syncerWrites = writesByOp(diffCounters(countersWarm, counters1));
            perPod = Object.fromEntries(Object.entries(syncerWrites).map(([k, v]) => [k, v / N]));
            memory[`heapKBPerPodR${rep + 1}`] = (heapAfter - heapWarm) / N / 1024;
            memory[`rssKBPerPodR${rep + 1}`] = (rssPeak - rssWarm) / N / 1024;
            repDetail[rep] = {
              syncerCounters: diffCounters(countersWarm, counters1),
              writesPerPodByOp: perPod,
              writesAccount: account,
              tenantRequests,
              queuePeak: queuePeakArm,
              heapAfterWarmMiB: Number((heapWarm / 2 ** 20).toFixed(1)),
              heapAfterPodsMiB: Number((heapAfter / 2 ** 20).toFixed(1)),
              rssAfterWarmMiB: Number((rssWarm / 2 ** 20).toFixed(1)),
              rssPeakMiB: Number((rssPeak / 2 ** 20).toFixed(1)),
              rssAfterPodsMiB: Number((rssAfter / 2 ** 20).toFixed(1)),
            };
            // The fairness phase runs once, in the last repetition, with this arm's Pods still in place.
            if (rep === REPS - 1) await fairnessPhase(s);
            await s.stop();
            syncer = undefined;
            t0 = performance.now();
            await pool(tenants, 4, async (x) => {
              const i = tenants.indexOf(x);
              await deleteAllPods(tenantClients[i]!, 'default', phaseDeadline(P));
              await deleteAllPods(superClient, superNamespace(x.key, 'default'), phaseDeadline(P));
            });
            stamp(`syncerDeleteSecondsR${rep + 1}`, t0);
            return {
              value: { r: viaSyncer, writesPerPod: 1 + apiCallsOf(syncerWrites) / N, account },
              load: loadOf(viaSyncer),
            };
          },
        },
        {
          name: 'same-writes',
          run: async (rep) => {
            const cur = new SameWrites(superClient, perPod);
            sw = cur;
            const swJobs: PodJob[] = [];
            for (let j = 0; j < P; j++)
              for (let i = 0; i < T; i++) {
                const index = swJobs.length;
                swJobs.push({
                  client: tenantClients[i]!,
                  watch: tenantWatches[i]!,
                  namespace: 'default',
                  name: `w${rep}-${j}`,
                  labels: { bench: 'samewrites' },
                  superWatch: swWatch,
                  superKey: `${swNs[i]}/w${rep}-${j}`,
                  afterCreate: (pod) => cur.created(index, swTenants[i]!, pod),
                });
              }
            log(`repetition ${rep + 1}/${REPS}, arm same-writes: creating ${N} Pods, scripted writes per Pod`);
            const same = await arm(`same-writes r${rep + 1}`, swJobs);
            await cur.settle();
            if (cur.failures)
              log(`same-writes: ${cur.failures} writes failed, e.g. ${JSON.stringify(cur.errors.slice(0, 3))}`);
            (repDetail[rep] ??= {}).sameWritesArm = {
              writesByOp: cur.writes,
              failures: cur.failures,
              errors: cur.errors,
            };
            const t0 = performance.now();
            await pool(tenants, 4, async (x) => {
              const i = tenants.indexOf(x);
              await deleteAllPods(tenantClients[i]!, 'default', phaseDeadline(P));
              await deleteAllPods(superClient, swNs[i]!, phaseDeadline(P));
            });
            stamp(`sameWritesDeleteSecondsR${rep + 1}`, t0);
            const writes = 1 + Object.values(cur.writes).reduce((a, b) => a + b, 0) / N;
            return { value: { r: same, writesPerPod: writes }, load: loadOf(same) };
          },
        },
      ],
      REPS,
    );

    const series = syncerFigures({
      runs,
      pods: N,
      reps: REPS,
      memory,
      repDetail,
      fair,
      timings,
      watchStats: watches.map((w) => w.stats),
      figures,
      notes,
      detail,
      log,
    });
    return { name: o.name, figures, detail, series, notes };
  } finally {
    for (const smp of samplers) smp.stop();
    await syncer?.stop();
    await Promise.all(watches.map((w) => w.stop()));
    await Promise.all(loadGens.map((g) => g.stop()));
    for (const c of clients) c.close();
    await t?.stop();
    process.off('uncaughtException', onUncaught);
  }
}
