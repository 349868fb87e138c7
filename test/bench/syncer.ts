import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { isGone, KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/local/controlplane.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { registry as metricsRegistry } from '../../core/metrics/registry.ts';
import { LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { startTestSuper, type TestSuper, tenantFor } from '../harness.ts';
import type { BenchResult } from './main.ts';

/** Pods a kwok node takes (its `pods` capacity, see kwokNode). */
const PODS_PER_NODE = 110;
/** Creates in flight at once, in both runs. */
const CONCURRENCY = 32;
/** Sequential Pods the quiet tenant creates, alone and during the flood. */
const QUIET_PODS = 10;
const POD_SPEC = { containers: [{ name: 'c', image: 'nginx' }] };

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string };
}

/** envInt reads a non-negative integer from the environment, or returns the default. */
function envInt(name: string, def: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${v}"`);
  return n;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** percentile returns the nearest-rank percentile (0 < p <= 100) of the values, NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** pool runs fn over items with at most `limit` calls in flight, and rejects on the first failure. */
export async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** withDeadline rejects with a message naming what when p has not settled within ms. */
async function withDeadline<T>(p: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>(
    (_, rej) => (timer = setTimeout(() => rej(new Error(`timed out after ${ms} ms: ${what()}`)), ms)),
  );
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * PodWatch records, per `namespace/name`, when a watch on one apiserver first showed a Pod at all, with a node
 * (spec.nodeName) and with status.phase Running. It lists first and watches from the list's resourceVersion (with
 * bookmarks), reopens a watch that ends from the last resourceVersion seen, and relists on 410 Gone. Times are
 * performance.now() in this process when the event was handled.
 */
export class PodWatch {
  /** seenAt, scheduledAt and runningAt map `namespace/name` to the first time each state was seen. */
  readonly seenAt = new Map<string, number>();
  readonly scheduledAt = new Map<string, number>();
  readonly runningAt = new Map<string, number>();
  /** stats counts watch restarts (server closed the stream), errors and relists. */
  readonly stats = { restarts: 0, errors: 0, relists: 0 };
  private readonly waiters = new Map<string, Array<(at: number) => void>>();
  private readonly abort = new AbortController();
  private rv = '';
  private loop?: Promise<void>;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: { namespace?: string; labelSelector?: string } = {},
  ) {}

  /** start lists, then keeps a watch open in the background. */
  async start(): Promise<void> {
    await this.relist();
    this.loop = this.run();
  }

  /** stop ends the watch. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  /** whenRunning resolves with the time Running was first seen for `namespace/name`. */
  whenRunning(key: string): Promise<number> {
    const at = this.runningAt.get(key);
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((res) => {
      const w = this.waiters.get(key) ?? [];
      w.push(res);
      this.waiters.set(key, w);
    });
  }

  private see(p: Pod, at: number): void {
    const key = `${p.metadata?.namespace}/${p.metadata?.name}`;
    if (!this.seenAt.has(key)) this.seenAt.set(key, at);
    if (p.spec?.nodeName && !this.scheduledAt.has(key)) this.scheduledAt.set(key, at);
    if (p.status?.phase !== 'Running' || this.runningAt.has(key)) return;
    this.runningAt.set(key, at);
    const w = this.waiters.get(key);
    this.waiters.delete(key);
    w?.forEach((f) => f(at));
  }

  private async relist(): Promise<void> {
    const list = await this.client.listAll<Pod>(R.pods, this.opts);
    const at = performance.now();
    for (const p of list.items) this.see(p, at);
    this.rv = list.metadata.resourceVersion ?? '';
    this.stats.relists++;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      try {
        await this.client.watch<Pod>(
          R.pods,
          { ...this.opts, resourceVersion: this.rv, allowWatchBookmarks: true, timeoutSeconds: 600 },
          (ev) => {
            const rv = ev.object.metadata?.resourceVersion;
            if (rv) this.rv = rv;
            if (ev.type === 'ADDED' || ev.type === 'MODIFIED') this.see(ev.object, performance.now());
          },
          signal,
        );
        if (!signal.aborted) this.stats.restarts++;
      } catch (e) {
        if (signal.aborted) break;
        this.stats.errors++;
        try {
          if (isGone(e)) await this.relist();
          else await sleep(500);
        } catch {
          await sleep(500);
        }
      }
    }
  }
}

/** Sampler polls a value every interval and keeps its peak. */
export class Sampler {
  peak: number;
  private readonly timer: NodeJS.Timeout;

  constructor(read: () => number, everyMs: number) {
    this.peak = read();
    this.timer = setInterval(() => (this.peak = Math.max(this.peak, read())), everyMs);
  }

  stop(): number {
    clearInterval(this.timer);
    return this.peak;
  }
}

/**
 * LoadProbe measures this process's CPU use (user + system, in % of one core) and event-loop delay over a phase: the
 * syncer runs here, so a saturated loop means the syncer itself is the bottleneck.
 */
export class LoadProbe {
  private readonly cpu0 = process.cpuUsage();
  private readonly t0 = performance.now();
  private readonly delay = monitorEventLoopDelay({ resolution: 10 });

  constructor() {
    this.delay.enable();
  }

  stop(): { cpuPercentOfOneCore: number; loopDelayP50Ms: number; loopDelayP99Ms: number; loopDelayMaxMs: number } {
    this.delay.disable();
    const c = process.cpuUsage(this.cpu0);
    const ms = (n: number) => Math.round(n / 1e6);
    return {
      cpuPercentOfOneCore: Math.round(((c.user + c.system) / 1000 / (performance.now() - this.t0)) * 100),
      loopDelayP50Ms: ms(this.delay.percentile(50)),
      loopDelayP99Ms: ms(this.delay.percentile(99)),
      loopDelayMaxMs: ms(this.delay.max),
    };
  }
}

/** RunFigures are the outcome of creating a batch of Pods and waiting for all of them to run. */
interface RunFigures {
  pods: number;
  podsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  wallSeconds: number;
}

/** PodJob is one Pod to create: where, and which watch reports it Running (the super watch for its super copy). */
interface PodJob {
  client: KubeClient;
  watch: PodWatch;
  namespace: string;
  name: string;
  labels: Record<string, string>;
  /** the watch on the super cluster and the Pod's `namespace/name` there (the same watch and key for direct Pods) */
  superWatch?: PodWatch;
  superKey?: string;
}

/** Sample is the timeline of one Pod: create call start and end, and Running as seen by its watch. */
interface Sample {
  job: PodJob;
  t0: number;
  created: number;
  running: number;
}

const keyOf = (j: PodJob) => `${j.namespace}/${j.name}`;

/** createOne creates one Pod and resolves once its watch shows it Running. */
async function createOne(j: PodJob, onCreated?: (t0: number) => void): Promise<Sample> {
  const t0 = performance.now();
  await j.client.create(R.pods, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: j.name, namespace: j.namespace, labels: j.labels },
    spec: POD_SPEC,
  });
  const created = performance.now();
  onCreated?.(t0);
  return { job: j, t0, created, running: await j.watch.whenRunning(keyOf(j)) };
}

/**
 * createAndTime creates every Pod (at most `concurrency` create calls in flight) and measures, per Pod, the time from
 * the start of its create call until its watch shows it Running.
 */
async function createAndTime(
  jobs: readonly PodJob[],
  concurrency: number,
  deadlineMs: number,
  label: string,
): Promise<RunFigures & { samples: Sample[] }> {
  const samples: Sample[] = [];
  const waits: Array<Promise<void>> = [];
  const run = pool(jobs, concurrency, async (j) => {
    // The pool slot is freed when the create call returns; waiting for Running goes on outside it.
    await new Promise<void>((created, failed) => {
      waits.push(
        createOne(j, () => created()).then(
          (smp) => void samples.push(smp),
          (e: unknown) => failed(e),
        ),
      );
    });
  });
  await withDeadline(
    run.then(() => Promise.all(waits)),
    deadlineMs,
    () => `${label}: ${samples.length}/${jobs.length} Pods Running (${waits.length} create calls started)`,
  );
  const latencies = samples.map((x) => x.running - x.t0);
  const wall = (Math.max(...samples.map((x) => x.running)) - Math.min(...samples.map((x) => x.t0))) / 1000;
  return {
    pods: jobs.length,
    podsPerSecond: jobs.length / wall,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: Math.max(...latencies),
    wallSeconds: wall,
    samples,
  };
}

/** sequential creates the Pods one after another, each waiting for its Running; probe runs before each create. */
async function sequential<P = never>(
  jobs: readonly PodJob[],
  deadlineMs: number,
  label: string,
  probe?: () => P,
): Promise<{ samples: Sample[]; probes: P[] }> {
  const samples: Sample[] = [];
  const probes: P[] = [];
  const go = async () => {
    for (const j of jobs) {
      if (probe) probes.push(probe());
      samples.push(await createOne(j));
    }
  };
  await withDeadline(go(), deadlineMs, () => `${label}: ${samples.length}/${jobs.length} Pods Running`);
  return { samples, probes };
}

const latenciesOf = (samples: readonly Sample[]) => samples.map((x) => x.running - x.t0);

/**
 * stages splits the create-to-Running time of each Pod into its steps and reports p50 and p99 of each, in ms:
 * the create call; until the super Pod appears (for synced Pods: queue wait and the syncer's create); scheduling;
 * kwok marking it Running; and for synced Pods the binding and the status carried back up to the tenant.
 */
function stages(samples: readonly Sample[]): Record<string, { p50: number; p99: number }> {
  const acc: Record<string, number[]> = {};
  const add = (k: string, a: number | undefined, b: number | undefined) => {
    if (a !== undefined && b !== undefined) (acc[k] ??= []).push(b - a);
  };
  for (const x of samples) {
    const j = x.job;
    add('createCall', x.t0, x.created);
    const sw = j.superWatch;
    if (!sw || !j.superKey) continue;
    const seen = sw.seenAt.get(j.superKey);
    const scheduled = sw.scheduledAt.get(j.superKey);
    const running = sw.runningAt.get(j.superKey);
    if (sw !== j.watch) add('createToSuperPod', x.t0, seen);
    add('superSchedule', seen, scheduled);
    add('superKwokRunning', scheduled, running);
    if (sw === j.watch) continue;
    add('superScheduledToTenantBound', scheduled, j.watch.scheduledAt.get(keyOf(j)));
    add('superRunningToTenantRunning', running, x.running);
  }
  const out: Record<string, { p50: number; p99: number }> = {};
  for (const [k, v] of Object.entries(acc))
    out[k] = { p50: Math.round(percentile(v, 50)), p99: Math.round(percentile(v, 99)) };
  return out;
}

/** waitUntil polls check until it holds or the deadline passes (throwing with what()). */
export async function waitUntil(
  check: () => Promise<boolean> | boolean,
  deadlineMs: number,
  what: () => string,
  everyMs = 250,
): Promise<void> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > end) throw new Error(`timed out after ${deadlineMs} ms: ${what()}`);
    await sleep(everyMs);
  }
}

/** waitServiceAccount waits until the `default` ServiceAccount of a namespace exists (Pods are refused before). */
export function waitServiceAccount(c: KubeClient, ns: string): Promise<void> {
  return waitUntil(
    async () => !!(await c.getOrNull(R.serviceaccounts, ns, 'default')),
    60_000,
    () => `ServiceAccount ${ns}/default`,
  );
}

/** tenantOf describes a local control plane as a syncer tenant with a fresh uid. */
function tenantOf(cp: LocalControlPlane, vcNamespace: string, vcName: string): Tenant {
  return tenantFor(cp, vcNamespace, vcName, randomUUID(), { pluginConfig: { nodes: { vnAgent: { port: 10550 } } } });
}

/** syncerCounters reads the syncer's counters (errors, writes, skips) and reconcile-time histogram from the registry. */
export async function syncerCounters(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const m of await metricsRegistry.getMetricsAsJSON()) {
    if (!m.name.startsWith('vc_syncer_') || m.name === 'vc_syncer_queue_depth' || m.name === 'vc_syncer_in_flight')
      continue;
    for (const v of m.values as Array<{
      labels: Record<string, string | number>;
      value: number;
      metricName?: string;
    }>) {
      const name = v.metricName ?? m.name;
      if (name.endsWith('_bucket')) continue;
      const { tenant: _t, ...rest } = v.labels;
      const k = `${name.replace('vc_syncer_', '')}{${Object.entries(rest)
        .map(([a, b]) => `${a}=${b}`)
        .join(',')}}`;
      out[k] = (out[k] ?? 0) + v.value;
    }
  }
  return out;
}

/** diffCounters is what each counter of syncerCounters gained from a to b (counters that did not move are left out). */
export const diffCounters = (a: Record<string, number>, b: Record<string, number>): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b)) {
    const d = v - (a[k] ?? 0);
    if (d) out[k] = Number(d.toFixed(3));
  }
  return out;
};

/** collectGarbage runs a full GC when the flag can be switched on at runtime (it only makes RSS readings steadier). */
function collectGarbage(): void {
  try {
    v8.setFlagsFromString('--expose-gc');
    (vm.runInNewContext('gc') as () => void)();
  } catch {
    /* not available: readings are just noisier */
  }
}

/**
 * syncerBench compares Pod start-up through the syncer with Pods created directly in the super cluster, on a real
 * local super cluster (etcd, apiserver, controller-manager, scheduler, kwok nodes) with T tenant control planes:
 * throughput and p50/p99 create-to-Running latency of both, the syncer's memory per synced Pod, and how a quiet
 * tenant's latency holds up while a noisy tenant floods the syncer. BENCH_TENANTS, BENCH_PODS (per tenant) and
 * BENCH_FLOOD size it; BENCH_WORKERS sets the syncer's workers (default 8).
 */
export async function syncerBench(): Promise<BenchResult> {
  const T = envInt('BENCH_TENANTS', 4);
  const P = envInt('BENCH_PODS', 100);
  const FLOOD = envInt('BENCH_FLOOD', 400);
  const WORKERS = envInt('BENCH_WORKERS', 8);
  if (T < 1 || P < 1 || WORKERS < 1) throw new Error('BENCH_TENANTS, BENCH_PODS and BENCH_WORKERS must be at least 1');
  const fairness = T >= 2;
  const N = T * P;
  // Run 2's Pods stay while the flood and the quiet tenant's Pods are added; run 1's are deleted first.
  const peakPods = N + (fairness ? FLOOD + 2 * QUIET_PODS : 0);
  const nodes = Math.max(4, Math.ceil(peakPods / PODS_PER_NODE));
  const phaseDeadline = (pods: number) => Math.max(120_000, pods * 500);
  const log = (msg: string) =>
    process.stdout.write(`[syncer-bench ${new Date().toISOString().slice(11, 23)}] ${msg}\n`);
  const detail: Record<string, unknown> = {
    tenants: T,
    podsPerTenant: P,
    flood: FLOOD,
    workers: WORKERS,
    nodes,
    concurrency: CONCURRENCY,
    cpus: availableParallelism(),
  };
  const timings: Record<string, number> = {};
  const stamp = (k: string, since: number) => (timings[k] = Number(((performance.now() - since) / 1000).toFixed(2)));

  let t: TestSuper | undefined;
  let syncer: Syncer | undefined;
  const watches: PodWatch[] = [];
  const samplers: Sampler[] = [];
  const clients: KubeClient[] = [];
  try {
    // ---- clusters ------------------------------------------------------------------------------------------------
    let t0 = performance.now();
    log(`starting super cluster with ${nodes} kwok nodes and ${T} tenant control planes`);
    t = await startTestSuper({ nodes });
    stamp('superStartSeconds', t0);
    log(`super cluster up; state in ${t.stateDir}`);
    t0 = performance.now();
    const cps = await Promise.all(
      Array.from({ length: T }, (_, i) => t!.sc.addControlPlane(`tenant-${i}`, { controllers: TENANT_CONTROLLERS })),
    );
    stamp('tenantsStartSeconds', t0);
    const tenantClients = await Promise.all(cps.map((cp) => cp.client()));
    const tenants = cps.map((cp, i) => tenantOf(cp, 'bench', `t${i}`));
    await Promise.all(tenantClients.map((c) => waitServiceAccount(c, 'default')));
    const superClient = t.client;

    // ---- run 1: direct -------------------------------------------------------------------------------------------
    const directNs = Array.from({ length: T }, (_, i) => `bench-direct-${i}`);
    for (const ns of directNs)
      await superClient.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await Promise.all(directNs.map((ns) => waitServiceAccount(superClient, ns)));
    const directWatch = new PodWatch(superClient, { labelSelector: 'bench=direct' });
    await directWatch.start();
    watches.push(directWatch);
    const directJobs: PodJob[] = [];
    for (let j = 0; j < P; j++) {
      for (let i = 0; i < T; i++) {
        const name = `d-${j}`;
        directJobs.push({
          client: superClient,
          watch: directWatch,
          namespace: directNs[i]!,
          name,
          labels: { bench: 'direct' },
          superWatch: directWatch,
          superKey: `${directNs[i]}/${name}`,
        });
      }
    }
    log(`run 1 (direct): creating ${N} Pods in the super cluster`);
    const load1 = new LoadProbe();
    const direct = await createAndTime(directJobs, CONCURRENCY, phaseDeadline(N), 'direct run');
    detail.run1 = { benchProcess: load1.stop() };
    log(
      `run 1: ${direct.podsPerSecond.toFixed(1)} pods/s, p50 ${direct.p50Ms.toFixed(0)} ms, p99 ${direct.p99Ms.toFixed(0)} ms`,
    );
    await directWatch.stop();
    watches.splice(watches.indexOf(directWatch), 1);
    t0 = performance.now();
    await pool(directJobs, CONCURRENCY, async (j) => void (await superClient.delete(R.pods, j.namespace, j.name)));
    await waitUntil(
      async () => (await superClient.list(R.pods, { labelSelector: 'bench=direct', limit: 1 })).items.length === 0,
      phaseDeadline(N),
      () => 'direct Pods deleted',
      500,
    );
    stamp('directDeleteSeconds', t0);
    log(`run 1: ${N} Pods deleted in ${timings.directDeleteSeconds} s`);

    // ---- run 2: through the syncer -------------------------------------------------------------------------------
    const tenantWatches = await Promise.all(
      tenantClients.map(async (c) => {
        const w = new PodWatch(c, { namespace: 'default' });
        await w.start();
        return w;
      }),
    );
    // The super copies of the tenant Pods, for the breakdown of where the time goes.
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
    // The syncer runs in this process, so its memory is this process's RSS growth from here on (the bench's own
    // watches and bookkeeping are small next to it).
    const syncerSuper = await KubeClient.fromFile(t.sc.kubeconfigPath);
    clients.push(syncerSuper);
    collectGarbage();
    const rssBefore = process.memoryUsage.rss();
    const heapBefore = process.memoryUsage().heapUsed;
    const rss = new Sampler(() => process.memoryUsage.rss(), 100);
    samplers.push(rss);
    const counters0 = await syncerCounters();
    t0 = performance.now();
    syncer = new Syncer({
      superClient: syncerSuper,
      host,
      registry: new MutableTenantRegistry(tenants),
      patrolIntervalMs: 0,
      workers: WORKERS,
    });
    await syncer.start();
    const s = syncer;
    await waitUntil(
      () => tenants.every((x) => s.tenantReady(x.key)),
      60_000,
      () => 'tenant caches synced',
    );
    stamp('syncerReadySeconds', t0);
    // Steady state before measuring: each tenant's `default` namespace is in the super with its ServiceAccount.
    await Promise.all(tenants.map((x) => waitServiceAccount(superClient, superNamespace(x.key, 'default'))));
    await waitUntil(
      () => s.queueLength() === 0,
      30_000,
      () => `syncer queue empty (${s.queueLength()})`,
    );
    stamp('syncerWarmSeconds', t0);
    // Startup (informer lists of T+1 clusters, the tenants' own ServiceAccounts, namespaces) is a fixed cost; what
    // follows is per Pod.
    const rssWarm = process.memoryUsage.rss();
    const countersWarm = await syncerCounters();
    const queuePeak = new Sampler(() => s.queueLength(), 100);
    samplers.push(queuePeak);
    const syncJobs: PodJob[] = [];
    for (let j = 0; j < P; j++) {
      for (let i = 0; i < T; i++) syncJobs.push(tenantJob(i, `s-${j}`, 'syncer'));
    }
    log(`run 2 (syncer): creating ${N} Pods in ${T} tenant apiservers`);
    const load2 = new LoadProbe();
    const viaSyncer = await createAndTime(syncJobs, CONCURRENCY, phaseDeadline(N), 'syncer run');
    const load2Figures = load2.stop();
    const rssPeak = rss.stop();
    const heapAfter = process.memoryUsage().heapUsed;
    const queuePeakRun2 = queuePeak.stop();
    const counters1 = await syncerCounters();
    log(
      `run 2: ${viaSyncer.podsPerSecond.toFixed(1)} pods/s, p50 ${viaSyncer.p50Ms.toFixed(0)} ms, p99 ${viaSyncer.p99Ms.toFixed(0)} ms`,
    );
    detail.run2 = {
      syncerStartupCounters: diffCounters(counters0, countersWarm),
      syncerCounters: diffCounters(countersWarm, counters1),
      queuePeak: queuePeakRun2,
      benchProcess: load2Figures,
      // Minted tokens count as op=token in vc_syncer_writes_total; the Secrets holding them are counted here.
      tokenSecretsInSuper: (
        await superClient.listAll(R.secrets, { labelSelector: `${LABEL.managedBy}=${MANAGER}-token` })
      ).items.length,
      rssAfterWarmMiB: rssWarm / 2 ** 20,
      rssPerPodKBAfterWarm: (rssPeak - rssWarm) / N / 1024,
      heapGrowthMiB: (heapAfter - heapBefore) / 2 ** 20,
    };

    const figures: Record<string, number> = {
      throughputRatio: viaSyncer.podsPerSecond / direct.podsPerSecond,
      p50Ratio: viaSyncer.p50Ms / direct.p50Ms,
      p99Ratio: viaSyncer.p99Ms / direct.p99Ms,
      directPodsPerSecond: direct.podsPerSecond,
      syncerPodsPerSecond: viaSyncer.podsPerSecond,
      directP50Ms: direct.p50Ms,
      directP99Ms: direct.p99Ms,
      syncerP50Ms: viaSyncer.p50Ms,
      syncerP99Ms: viaSyncer.p99Ms,
      syncerRssBeforeMiB: rssBefore / 2 ** 20,
      syncerRssPeakMiB: rssPeak / 2 ** 20,
      syncerRssPerPodKB: (rssPeak - rssBefore) / N / 1024,
      syncerRssPerPodKBAfterWarm: (rssPeak - rssWarm) / N / 1024,
    };
    const strip = ({ samples, ...rest }: RunFigures & { samples: Sample[] }) => ({
      ...rest,
      stagesMs: stages(samples),
    });
    detail.direct = strip(direct);
    detail.syncer = strip(viaSyncer);

    // ---- fairness ------------------------------------------------------------------------------------------------
    if (fairness) {
      await waitUntil(
        () => s.queueLength() === 0,
        60_000,
        () => `syncer queue empty after run 2 (${s.queueLength()})`,
      );
      const [noisy, quiet] = [0, 1];
      const quietJob = (name: string) => tenantJob(quiet, name, 'quiet');
      log(`fairness: quiet tenant alone, ${QUIET_PODS} sequential Pods`);
      const alone = await sequential(
        Array.from({ length: QUIET_PODS }, (_, k) => quietJob(`quiet-alone-${k}`)),
        120_000,
        'quiet alone',
      );

      const countersF0 = await syncerCounters();
      const noisyKey = tenants[noisy]!.key;
      const noisyDepth = () => s.depthByTenant().find(([k]) => k === noisyKey)?.[1] ?? 0;
      const floodDepth = new Sampler(noisyDepth, 100);
      samplers.push(floodDepth);
      log(`fairness: noisy tenant floods ${FLOOD} Pods; quiet tenant creates ${QUIET_PODS} sequential Pods meanwhile`);
      const floodJobs = Array.from({ length: FLOOD }, (_, k) => tenantJob(noisy, `flood-${k}`, 'flood'));
      let floodNeverQueued = false;
      // "At once": every create is issued together; the client's socket pool (64) is the only bound.
      const loadF = new LoadProbe();
      const flood = createAndTime(floodJobs, FLOOD, phaseDeadline(FLOOD), 'flood');
      void flood.catch(() => undefined);
      // Start the quiet tenant once the flood has reached the syncer's queue.
      const tq = performance.now();
      await waitUntil(
        () => noisyDepth() >= Math.min(50, Math.ceil(FLOOD / 4)),
        30_000,
        () => `flood queued (noisy depth ${noisyDepth()})`,
        20,
      ).catch(() => {
        floodNeverQueued = true;
      });
      const waitedForQueueMs = performance.now() - tq;
      const during = await sequential(
        Array.from({ length: QUIET_PODS }, (_, k) => quietJob(`quiet-flood-${k}`)),
        phaseDeadline(FLOOD),
        'quiet during flood',
        noisyDepth,
      );
      const floodRes = await flood;
      const floodEndAt = Math.max(...floodRes.samples.map((x) => x.running));
      const floodDepthPeak = floodDepth.stop();
      const loadFFigures = loadF.stop();
      const countersF1 = await syncerCounters();
      figures.quietP99AloneMs = percentile(latenciesOf(alone.samples), 99);
      figures.quietP99DuringFloodMs = percentile(latenciesOf(during.samples), 99);
      figures.quietFloodRatio = figures.quietP99DuringFloodMs / figures.quietP99AloneMs;
      figures.floodPodsPerSecond = floodRes.podsPerSecond;
      detail.fairness = {
        quietAloneMs: latenciesOf(alone.samples).map(Math.round),
        quietDuringFloodMs: latenciesOf(during.samples).map(Math.round),
        quietAloneStagesMs: stages(alone.samples),
        quietDuringFloodStagesMs: stages(during.samples),
        noisyQueueDepthAtEachQuietCreate: during.probes,
        // The quiet Pods must have run while the flood was still in progress for the figure to mean anything.
        quietPodsRunningBeforeFloodDone: during.samples.filter((x) => x.running < floodEndAt).length,
        noisyQueueDepthPeak: floodDepthPeak,
        waitedForFloodToQueueMs: Math.round(waitedForQueueMs),
        floodNeverQueued,
        benchProcess: loadFFigures,
        flood: strip(floodRes),
        syncerCounters: diffCounters(countersF0, countersF1),
      };
    }
    detail.timings = timings;
    detail.watchStats = watches.map((w) => w.stats);
    return { name: 'syncer', figures, detail };
  } finally {
    for (const smp of samplers) smp.stop();
    await syncer?.stop();
    await Promise.all(watches.map((w) => w.stop()));
    for (const c of clients) c.close();
    await t?.stop();
  }
}
