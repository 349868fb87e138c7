import type { Syncer } from '../../core/syncer/syncer.ts';
import { KubeClient } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { superNamespace } from '../../core/names/names.ts';
import type { Tenant } from '../../core/tenancy/tenant.ts';
import type { TestSuper } from '../harness.ts';
import { type LoadFigures, LoadProbe, MAIN_THREAD } from './loadprobe.ts';
import { LoadGenerator, type LoadGenResult, toLocal } from './loadgen.ts';
import { percentile, PodWatch, Sampler, sleep, waitUntil } from './podwatch.ts';
import { CpuMeter, type CpuShare, fetchText } from './procstat.ts';
import { spread, spreadFigures } from './repeat.ts';

/** FairnessContext is what the fairness phase takes from the syncer scenario's run: its clusters, syncer and meters. */
export interface FairnessContext {
  /** the syncer of the run's last syncer arm, with that arm's Pods still in place */
  s: Syncer;
  quiet: number;
  quietEveryMs: number;
  flood: number;
  rounds: number;
  workers: number;
  sc: TestSuper['sc'];
  cps: readonly LocalControlPlane[];
  tenants: readonly Tenant[];
  tenantClients: readonly KubeClient[];
  superClient: KubeClient;
  /** the run's watch on each tenant (replaced for the two fairness tenants) and its super watch; `watches` all open */
  tenantWatches: PodWatch[];
  superWatch: PodWatch;
  watches: PodWatch[];
  loadGens: LoadGenerator[];
  samplers: Sampler[];
  procs: Record<string, () => Array<number | string | undefined>>;
  etcdPid: (cp: LocalControlPlane) => number | undefined;
  meter: (o?: { inflight: boolean }) => () => { cpu: Record<string, CpuShare> };
  phaseDeadline: (pods: number) => number;
  log: (msg: string) => void;
  /** the run's figures and notes, which the phase adds to */
  figures: Record<string, number>;
  notes: string[];
}

/** FairRound is one round of the fairness phase: the quiet tenant alone, then during the noisy tenant's flood. */
interface FairRound {
  alone: LoadGenResult;
  during: LoadGenResult;
  flood: LoadGenResult;
  /** latencies of the quiet Pods created once every create of the flood had returned */
  backlog: number[];
  /** the noisy tenant's queue depth at each quiet Pod's create */
  depths: number[];
  loopAlone: LoadFigures;
  loopDuring: LoadFigures;
  cpuAlone: Record<string, CpuShare>;
  cpu: Record<string, CpuShare>;
  /** the first FLOOD_START_MS of the flood, with the noisy and quiet tenants' apiservers and etcds apart */
  cpuFloodStart: Record<string, CpuShare>;
  floodNeverQueued: boolean;
  /** each quiet Pod's time split where the syncer's thread saw it (see QuietSplit), alone and during the flood */
  splitAlone: QuietSplit[];
  splitDuring: QuietSplit[];
}

/**
 * QuietSplit divides a quiet Pod's way to the super cluster at the moment the syncer's thread saw it in its tenant:
 * `toSyncerThread` from its create call to that (the tenant apiserver's create and watch, and this event loop's
 * delay), `syncerToSuper` from there until the same thread saw its super copy (the syncer's queue, plan and create,
 * and the super watch). Both are read by watches on this thread, the syncer's, so an event loop busy with the flood
 * shows in them.
 */
interface QuietSplit {
  toSyncerThread?: number;
  syncerToSuper?: number;
}

/** quietSplits reads the QuietSplit of each Pod of a quiet run from the two watches on the syncer's thread. */
function quietSplits(run: LoadGenResult, names: readonly string[], tenant: PodWatch, sup: PodWatch, superNs: string) {
  return names.map((name, k): QuietSplit => {
    const seen = tenant.seenAt.get(`default/${name}`);
    const superSeen = sup.seenAt.get(`${superNs}/${name}`);
    return {
      toSyncerThread: seen === undefined ? undefined : Math.round(seen - toLocal(run.startedAt[k]!)),
      syncerToSuper: seen === undefined || superSeen === undefined ? undefined : Math.round(superSeen - seen),
    };
  });
}

/** splitSummary is the p50 and p99 of each part of some QuietSplits (Pods a watch missed left out). */
function splitSummary(l: readonly QuietSplit[]): Record<keyof QuietSplit, { p50: number; p99: number }> {
  const of = (k: keyof QuietSplit) => {
    const v = l.map((x) => x[k]).filter((x): x is number => x !== undefined);
    return { p50: Math.round(percentile(v, 50)), p99: Math.round(percentile(v, 99)) };
  };
  return { toSyncerThread: of('toSyncerThread'), syncerToSuper: of('syncerToSuper') };
}

/** FLOOD_START_MS is the start of a flood whose CPU is measured apart: while its creates enter its tenant. */
const FLOOD_START_MS = 500;

/**
 * deleteLabelled deletes a tenant namespace's fairness Pods (bench=flood or quiet) and waits until the syncer has
 * deleted their super copies too.
 */
async function deleteLabelled(tenant: KubeClient, ns: string, superClient: KubeClient, superNs: string): Promise<void> {
  const labelSelector = 'bench in (flood,quiet)';
  await tenant.request('DELETE', KubeClient.path(R.pods, ns), {
    query: { labelSelector },
    body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
  });
  await waitUntil(
    async () => (await superClient.list(R.pods, { namespace: superNs, labelSelector, limit: 1 })).items.length === 0,
    120_000,
    () => `fairness Pods of ${superNs} deleted`,
    250,
  );
}

/**
 * runFairness is the fairness phase: in each of `rounds` rounds, the quiet tenant (1) creates its Pods alone, then
 * again while the noisy tenant (0) floods; the quiet Pods' p99 during the flood against alone, pooled and per round.
 * It returns the phase's detail and adds its figures and notes to the run's.
 */
export async function runFairness(c: FairnessContext): Promise<Record<string, unknown>> {
  const { s, sc, cps, tenants, tenantClients, superClient, superWatch, tenantWatches, watches, loadGens, samplers } = c;
  const { procs, etcdPid, meter, phaseDeadline, log, figures, notes } = c;
  const [QUIET, QUIET_EVERY, FLOOD, ROUNDS, WORKERS] = [c.quiet, c.quietEveryMs, c.flood, c.rounds, c.workers];
  const [noisy, quiet] = [0, 1];
  // Each tenant's own client, and the watches that time its Pods, run in a worker thread of their own: on this
  // thread they would share the syncer's event loop, and their stalls would be counted as the syncer's; in one
  // worker, the quiet Pods' watch events would wait behind the flood's 200 create answers and events. This
  // thread's watches on the two tenants close meanwhile (they would parse the flood's events here) and reopen after.
  for (const w of [tenantWatches[noisy]!, tenantWatches[quiet]!, superWatch]) {
    await w.stop();
    watches.splice(watches.indexOf(w), 1);
  }
  const loadGenFor = (i: number, label: string) => {
    const g = new LoadGenerator({
      tenants: [{ kubeconfig: cps[i]!.kubeconfigPath, superNamespace: superNamespace(tenants[i]!.key, 'default') }],
      superKubeconfig: sc.kubeconfigPath,
      labels: [label],
    });
    loadGens.push(g);
    return g;
  };
  const [noisyGen, quietGen] = [loadGenFor(noisy, 'flood'), loadGenFor(quiet, 'quiet')];
  await Promise.all([noisyGen.started(), quietGen.started()]);
  // The quiet tenant's Pods, one every QUIET_EVERY ms (a tenant at its own modest pace: created back to back, each
  // waiting for the one before, it would create 20-25 Pods a second, its whole create rate), or one after another.
  const quietNames = (prefix: string) => Array.from({ length: QUIET }, (_, k) => `${prefix}-${k}`);
  const quietRun = (prefix: string, deadlineMs: number) =>
    quietGen.create({
      tenant: 0,
      names: quietNames(prefix),
      label: 'quiet',
      mode: QUIET_EVERY > 0 ? 'paced' : 'sequential',
      everyMs: QUIET_EVERY,
      deadlineMs,
    });
  const quietPace = QUIET_EVERY > 0 ? `one every ${QUIET_EVERY} ms` : 'one after another';
  const noisyKey = tenants[noisy]!.key;
  const noisyDepth = () => s.depthByTenant().find(([k]) => k === noisyKey)?.[1] ?? 0;
  const floodDepth = new Sampler(noisyDepth, 100);
  samplers.push(floodDepth);
  // The adaptive limit's lowest point during the flood (a Sampler keeps a peak: sample its negative).
  const floodLimit = new Sampler(() => -(s.concurrencyLimit()?.limit ?? WORKERS), 100);
  samplers.push(floodLimit);
  // The noisy tenant's queue depth over time, to read at each quiet Pod's create.
  const depthSeries: Array<[number, number]> = [];
  const depthTimer = setInterval(() => depthSeries.push([performance.now(), noisyDepth()]), 10);
  const depthAt = (epochMs: number) => {
    const t = toLocal(epochMs);
    let d = 0;
    for (const [at, v] of depthSeries) if (at <= t) d = v;
    return d;
  };
  // Each round: the quiet tenant alone, then again while the noisy tenant floods; the quiet Pods of all rounds
  // are pooled, so the p99 is a percentile (of 20 Pods it is the slowest one, whatever happened to it).
  // The quiet tenant's Pods and their super copies as the syncer's thread sees them (QuietSplit): two small watches.
  const quietSuperNs = superNamespace(tenants[quiet]!.key, 'default');
  const quietOnSyncer = new PodWatch(tenantClients[quiet]!, { namespace: 'default', labelSelector: 'bench=quiet' });
  const quietSuperOnSyncer = new PodWatch(superClient, { namespace: quietSuperNs, labelSelector: 'bench=quiet' });
  await Promise.all([quietOnSyncer.start(), quietSuperOnSyncer.start()]);
  const splitOf = (run: LoadGenResult, prefix: string) =>
    quietSplits(run, quietNames(prefix), quietOnSyncer, quietSuperOnSyncer, quietSuperNs);
  const rounds: FairRound[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const tag = `fairness round ${r + 1}/${ROUNDS}`;
    if (r > 0) {
      // The flood's and the quiet tenant's Pods of the round before go, their super copies too, before the next.
      await Promise.all(
        [noisy, quiet].map((i) =>
          deleteLabelled(tenantClients[i]!, 'default', superClient, superNamespace(tenants[i]!.key, 'default')),
        ),
      );
      await waitUntil(
        () => s.queueLength() === 0,
        60_000,
        () => `syncer queue empty (${s.queueLength()})`,
        100,
      );
      await sleep(1000);
    }
    log(`${tag}: quiet tenant alone, ${QUIET} Pods, ${quietPace}`);
    // The same instruments alone and during the flood, and not the super apiserver's /metrics: a scrape a second
    // costs that apiserver (and this thread, parsing it) tens of milliseconds, a few quiet Pods' whole latency; its
    // size and cost are logged once, after. The syncer's event loop delay says whether that loop was a limit.
    const mA = meter({ inflight: false });
    const loadAlone = new LoadProbe();
    const alone = await quietRun(`quiet-alone-r${r}`, phaseDeadline(QUIET));
    const loopAlone = loadAlone.stop();
    const cpuAlone = mA().cpu;
    log(
      `${tag}: noisy tenant floods ${FLOOD} Pods at once; quiet tenant creates ${QUIET} Pods meanwhile, ${quietPace}`,
    );
    const mF = meter({ inflight: false });
    // Who takes the cores while the flood enters its tenant: the first FLOOD_START_MS, the two tenants apart.
    const startCpu = new CpuMeter({
      ...procs,
      noisyApiserver: () => [cps[noisy]!.apiserver.pid],
      noisyEtcd: () => [etcdPid(cps[noisy]!)],
      quietApiserver: () => [cps[quiet]!.apiserver.pid],
      quietEtcd: () => [etcdPid(cps[quiet]!)],
      // this process's threads: the syncer's (the main one), and the two tenants' clients
      syncerThread: () => [MAIN_THREAD],
      noisyClientThread: () => [noisyGen.thread],
      quietClientThread: () => [quietGen.thread],
    });
    const floodStartCpu = sleep(FLOOD_START_MS).then(() => startCpu.stop());
    const flood = noisyGen.create({
      tenant: 0,
      names: Array.from({ length: FLOOD }, (_, k) => `flood-r${r}-${k}`),
      label: 'flood',
      mode: 'together',
      deadlineMs: phaseDeadline(FLOOD),
    });
    void flood.catch(() => undefined);
    // The quiet tenant starts once the flood has reached the syncer's queue.
    let floodNeverQueued = false;
    await waitUntil(
      () => noisyDepth() >= Math.min(50, Math.ceil(FLOOD / 4)),
      30_000,
      () => `flood queued (noisy depth ${noisyDepth()})`,
      20,
    ).catch(() => (floodNeverQueued = true));
    const loadDuring = new LoadProbe();
    const during = await quietRun(`quiet-flood-r${r}`, phaseDeadline(FLOOD));
    const loopDuring = loadDuring.stop();
    const floodRes = await flood;
    const cpu = mF().cpu;
    const cpuFloodStart = await floodStartCpu;
    // The quiet Pods created once the whole flood was in its tenant's apiserver, and the syncer served its
    // backlog; those before ran while that apiserver took the flood's creates and the syncer read them.
    const floodInTenantAt = Math.max(...floodRes.createdAt);
    const backlog = during.latenciesMs.filter((_, k) => during.startedAt[k]! >= floodInTenantAt);
    const round: FairRound = {
      alone,
      during,
      flood: floodRes,
      backlog,
      depths: during.startedAt.map(depthAt),
      loopAlone,
      loopDuring,
      cpuAlone,
      cpu,
      cpuFloodStart,
      floodNeverQueued,
      splitAlone: splitOf(alone, `quiet-alone-r${r}`),
      splitDuring: splitOf(during, `quiet-flood-r${r}`),
    };
    rounds.push(round);
    const [pa, pd] = [percentile(alone.latenciesMs, 99), percentile(during.latenciesMs, 99)];
    log(
      `${tag}: quiet p99 alone ${pa.toFixed(0)} ms, during flood ${pd.toFixed(0)} ms (${(pd / pa).toFixed(2)}x), ` +
        `median ${percentile(alone.latenciesMs, 50).toFixed(0)} -> ${percentile(during.latenciesMs, 50).toFixed(0)} ms; ` +
        `the flood's first ${FLOOD_START_MS} ms, % of a core: ` +
        JSON.stringify(Object.fromEntries(Object.entries(cpuFloodStart).map(([k, v]) => [k, v.percentOfOneCore]))),
    );
  }
  clearInterval(depthTimer);
  await Promise.all([quietOnSyncer.stop(), quietSuperOnSyncer.stop()]);
  for (const g of [noisyGen, quietGen]) {
    await g.stop();
    loadGens.splice(loadGens.indexOf(g), 1);
  }
  for (const i of [noisy, quiet]) {
    const w = new PodWatch(tenantClients[i]!, { namespace: 'default' });
    await w.start();
    tenantWatches[i] = w;
    watches.push(w);
  }
  const pooled = (f: (x: FairRound) => readonly number[]) => rounds.flatMap(f);
  const aloneMs = pooled((x) => x.alone.latenciesMs);
  const duringMs = pooled((x) => x.during.latenciesMs);
  const backlogMs = pooled((x) => x.backlog);
  const floodMs = pooled((x) => x.flood.latenciesMs);
  figures.quietP99AloneMs = percentile(aloneMs, 99);
  figures.quietP99DuringFloodMs = percentile(duringMs, 99);
  figures.quietFloodRatio = figures.quietP99DuringFloodMs / figures.quietP99AloneMs;
  figures.floodP99Ms = percentile(floodMs, 99);
  figures.floodPodsPerSecond = percentile(
    rounds.map((x) => x.flood.podsPerSecond),
    50,
  );
  figures.quietP99DuringBacklogMs = percentile(backlogMs, 99);
  figures.quietBacklogRatio = figures.quietP99DuringBacklogMs / figures.quietP99AloneMs;
  // Each round's own ratio, as the arms' ratios are reported: median, min and max over the rounds.
  const roundRatios = spread(
    rounds.map((x) => percentile(x.during.latenciesMs, 99) / percentile(x.alone.latenciesMs, 99)),
  );
  Object.assign(figures, spreadFigures('quietFloodRatioPerRound', roundRatios));
  notes.push(
    `quiet tenant p99 during the flood / alone, per round: median ${roundRatios.median.toFixed(2)} ` +
      `(min ${roundRatios.min.toFixed(2)}, max ${roundRatios.max.toFixed(2)}, ${roundRatios.n} rounds)`,
  );
  // The quiet Pods must have run while the flood was still in progress for the figure to mean anything.
  const runningBeforeFloodDone = rounds.reduce(
    (n, x) => n + x.during.runningAt.filter((t) => t < Math.max(...x.flood.runningAt)).length,
    0,
  );
  const summary = (l: readonly number[]) => ({
    p50: Math.round(percentile(l, 50)),
    p99: Math.round(percentile(l, 99)),
    max: Math.round(Math.max(...l)),
  });
  const fair: Record<string, unknown> = {
    rounds: ROUNDS,
    quietPace,
    quietAloneMs: aloneMs.map(Math.round),
    quietDuringFloodMs: duringMs.map(Math.round),
    quietAlone: summary(aloneMs),
    quietDuringFlood: summary(duringMs),
    quietDuringBacklog: summary(backlogMs),
    quietPodsDuringBacklog: backlogMs.length,
    quietMedianAloneMs: Math.round(percentile(aloneMs, 50)),
    quietMedianDuringFloodMs: Math.round(percentile(duringMs, 50)),
    quietMedianDuringBacklogMs: Math.round(percentile(backlogMs, 50)),
    quietPodsRunningBeforeFloodDone: runningBeforeFloodDone,
    // The first quiet Pod of each flood: created while the flood's creates were still entering its tenant.
    firstQuietPodDuringFloodMs: rounds.map((x) => Math.round(x.during.latenciesMs[0]!)),
    firstQuietPodSplitMs: rounds.map((x) => x.splitDuring[0]),
    quietSplitMs: {
      alone: splitSummary(rounds.flatMap((x) => x.splitAlone)),
      duringFlood: splitSummary(rounds.flatMap((x) => x.splitDuring)),
    },
    noisyQueueDepthPeak: floodDepth.stop(),
    concurrencyLimitLowest: -floodLimit.stop(),
    floodNeverQueued: rounds.some((x) => x.floodNeverQueued),
    perRound: rounds.map((x) => {
      const { latenciesMs: _l, startedAt: _s, createdAt: _c, runningAt: _r, ...flood } = x.flood;
      return {
        quietAloneMs: x.alone.latenciesMs.map(Math.round),
        quietDuringFloodMs: x.during.latenciesMs.map(Math.round),
        quietP99Ratio: Number((percentile(x.during.latenciesMs, 99) / percentile(x.alone.latenciesMs, 99)).toFixed(2)),
        quietAloneStagesMs: x.alone.stagesMs,
        quietDuringFloodStagesMs: x.during.stagesMs,
        noisyQueueDepthAtEachQuietCreate: x.depths,
        syncerThreadAlone: x.loopAlone,
        syncerThreadDuringQuietFlood: x.loopDuring,
        cpuAlone: x.cpuAlone,
        cpu: x.cpu,
        cpuFloodStart: Object.fromEntries(Object.entries(x.cpuFloodStart).map(([k, v]) => [k, v.percentOfOneCore])),
        flood,
      };
    }),
  };
  log(
    `fairness, ${ROUNDS} rounds pooled: quiet p99 alone ${figures.quietP99AloneMs.toFixed(0)} ms, during flood ` +
      `${figures.quietP99DuringFloodMs.toFixed(0)} ms (${figures.quietFloodRatio.toFixed(2)}x), median ` +
      `${String(fair.quietMedianAloneMs)} -> ${String(fair.quietMedianDuringFloodMs)} ms; ` +
      `${runningBeforeFloodDone}/${QUIET * ROUNDS} quiet Pods ran before their flood was done; ` +
      `the ${backlogMs.length} created once the flood was in its tenant: p99 ` +
      `${figures.quietP99DuringBacklogMs.toFixed(0)} ms (${figures.quietBacklogRatio.toFixed(2)}x); ` +
      `first quiet Pod of each flood ${JSON.stringify(fair.firstQuietPodDuringFloodMs)} ms`,
  );
  log(
    `fairness: where the syncer's thread saw each quiet Pod (to it; from it to the super copy), p50/p99 ms: ` +
      `${JSON.stringify(fair.quietSplitMs)}; first quiet Pod of each flood ${JSON.stringify(fair.firstQuietPodSplitMs)}`,
  );
  // What one scrape of the super apiserver's /metrics costs: why the fairness phase does not sample inflight.
  const scrapeAt = performance.now();
  const text = await fetchText(sc.cluster.server, sc.cluster.adminToken, '/metrics').catch(() => '');
  const scrapeMs = Math.round(performance.now() - scrapeAt);
  fair.superMetricsScrape = { bytes: text.length, ms: scrapeMs };
  log(`fairness: one scrape of the super apiserver's /metrics: ${text.length} bytes in ${scrapeMs} ms`);
  return fair;
}
