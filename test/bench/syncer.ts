import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { constants as perfConstants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { isAlreadyExists, isGone, KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { LocalEtcd } from '../../core/dev/local/etcd.ts';
import { registry as metricsRegistry } from '../../core/metrics/registry.ts';
import { superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { Syncer, SYNCER_DEFAULTS } from '../../core/syncer/syncer.ts';
import type { CreateRate } from '../../core/api/tenantpolicy.ts';
import { checkCreateRate } from '../../core/syncer/pacer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { startTestSuper, type TestSuper, tenantFor } from '../harness.ts';
import type { BenchResult } from './main.ts';
import { envInt } from './pods.ts';
import { SERVICE_ACCOUNT_TOKEN_MODES, type ServiceAccountTokenMode } from '../../core/plugins/contract.ts';
import { DEFAULT_POLICY } from '../../core/tenancy/policy.ts';
import {
  CpuMeter,
  type CpuShare,
  fetchText,
  type InflightStats,
  InflightSampler,
  memAvailableMiB,
  schedMs,
} from './procstat.ts';
import type { BenchSeries } from './report.ts';
import { apiCallsOf, SameWrites, type SameWritesTenant } from './samewrites.ts';
import { LoadGenerator, type LoadGenResult, toLocal } from './loadgen.ts';
import { accountWrites, formatAccount, type WriteRow, writeCounts } from './accounting.ts';
import {
  type ArmLoad,
  formatSpread,
  interleave,
  OTHER_LOAD_BOUND,
  ratioSpread,
  spread,
  spreadFigures,
} from './repeat.ts';

/** Pods a kwok node takes (its `pods` capacity, see kwokNode). */
const PODS_PER_NODE = 110;
/** Creates in flight at once, in both runs. */
const CONCURRENCY = 32;
const POD_SPEC = { containers: [{ name: 'c', image: 'nginx' }] };

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string };
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
    private readonly onPod?: (p: Pod) => void,
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
    this.onPod?.(p);
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

/** LoadFigures are what a LoadProbe measured over a phase. */
export interface LoadFigures {
  cpuPercentOfOneCore: number;
  loopDelayP50Ms: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  /** garbage collection on this thread: pauses, the longest, and full (mark-compact) collections */
  gcPauses: number;
  gcMaxPauseMs: number;
  gcTotalMs: number;
  gcMajor: number;
  /**
   * this thread's time on a CPU and time runnable but waiting for one (the kernel's schedstat): a wait near the run
   * time means the host's cores, not the syncer's code, held the loop
   */
  threadRunMs: number;
  threadRunQueueWaitMs: number;
}

/** MAIN_THREAD is this process's main thread, the syncer's, as procstat names threads. */
const MAIN_THREAD = `${process.pid}/task/${process.pid}`;

/**
 * LoadProbe measures this process's CPU use (user + system, in % of one core) and event-loop delay over a phase: the
 * syncer runs here, so a saturated loop means the syncer itself is the bottleneck.
 */
export class LoadProbe {
  private readonly cpu0 = process.cpuUsage();
  private readonly t0 = performance.now();
  private readonly delay = monitorEventLoopDelay({ resolution: 10 });
  private readonly gc = { pauses: 0, maxMs: 0, totalMs: 0, major: 0 };
  private readonly sched0 = schedMs(MAIN_THREAD);
  private readonly gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      this.gc.pauses++;
      this.gc.maxMs = Math.max(this.gc.maxMs, e.duration);
      this.gc.totalMs += e.duration;
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) this.gc.major++;
    }
  });

  constructor() {
    this.delay.enable();
    this.gcObserver.observe({ entryTypes: ['gc'] });
  }

  stop(): LoadFigures {
    this.delay.disable();
    this.gcObserver.disconnect();
    const c = process.cpuUsage(this.cpu0);
    const [run, wait] = schedMs(MAIN_THREAD);
    const ms = (n: number) => Math.round(n / 1e6);
    return {
      cpuPercentOfOneCore: Math.round(((c.user + c.system) / 1000 / (performance.now() - this.t0)) * 100),
      loopDelayP50Ms: ms(this.delay.percentile(50)),
      loopDelayP99Ms: ms(this.delay.percentile(99)),
      loopDelayMaxMs: ms(this.delay.max),
      gcPauses: this.gc.pauses,
      gcMaxPauseMs: Math.round(this.gc.maxMs),
      gcTotalMs: Math.round(this.gc.totalMs),
      gcMajor: this.gc.major,
      threadRunMs: Math.round(run - this.sched0[0]),
      threadRunQueueWaitMs: Math.round(wait - this.sched0[1]),
    };
  }
}

/** RunFigures are the outcome of creating a batch of Pods and waiting for all of them to run. */
export interface RunFigures {
  pods: number;
  podsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  wallSeconds: number;
}

/** PodJob is one Pod to create: where, and which watch reports it Running (the super watch for its super copy). */
export interface PodJob {
  client: KubeClient;
  watch: PodWatch;
  namespace: string;
  name: string;
  labels: Record<string, string>;
  /** the watch on the super cluster and the Pod's `namespace/name` there (the same watch and key for direct Pods) */
  superWatch?: PodWatch;
  superKey?: string;
  /** afterCreate sees the Pod the create call returned */
  afterCreate?: (created: Pod) => void;
}

/** Sample is the timeline of one Pod: create call start and end, and Running as seen by its watch. */
export interface Sample {
  job: PodJob;
  t0: number;
  created: number;
  running: number;
}

const keyOf = (j: PodJob) => `${j.namespace}/${j.name}`;

/** createOne creates one Pod and resolves once its watch shows it Running. */
async function createOne(j: PodJob, onCreated?: (t0: number) => void): Promise<Sample> {
  const t0 = performance.now();
  const pod = await j.client.create<Pod>(R.pods, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: j.name, namespace: j.namespace, labels: j.labels },
    spec: POD_SPEC,
  });
  const created = performance.now();
  j.afterCreate?.(pod);
  onCreated?.(t0);
  return { job: j, t0, created, running: await j.watch.whenRunning(keyOf(j)) };
}

/**
 * createAndTime creates every Pod (at most `concurrency` create calls in flight) and measures, per Pod, the time from
 * the start of its create call until its watch shows it Running.
 */
export async function createAndTime(
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

/** sequential creates the Pods one after another, each waiting for its Running. */
export async function sequential(
  jobs: readonly PodJob[],
  deadlineMs: number,
  label: string,
): Promise<{ samples: Sample[] }> {
  const samples: Sample[] = [];
  const go = async () => {
    for (const j of jobs) samples.push(await createOne(j));
  };
  await withDeadline(go(), deadlineMs, () => `${label}: ${samples.length}/${jobs.length} Pods Running`);
  return { samples };
}

/**
 * paced starts one Pod's create every `everyMs`, whether or not the ones before run yet (a tenant creating at its own
 * pace: a slow Pod does not delay the next create, so it cannot hide the slowness of the Pods after it).
 */
export async function paced(
  jobs: readonly PodJob[],
  everyMs: number,
  deadlineMs: number,
  label: string,
): Promise<{ samples: Sample[] }> {
  const samples: Sample[] = [];
  const start = performance.now();
  const go = Promise.all(
    jobs.map(async (j, k) => {
      const wait = start + k * everyMs - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      samples.push(await createOne(j));
    }),
  );
  await withDeadline(go, deadlineMs, () => `${label}: ${samples.length}/${jobs.length} Pods Running`);
  return { samples };
}

export const latenciesOf = (samples: readonly Sample[]) => samples.map((x) => x.running - x.t0);

/**
 * stages splits the create-to-Running time of each Pod into its steps and reports p50 and p99 of each, in ms:
 * the create call; until the super Pod appears (for synced Pods: queue wait and the syncer's create); scheduling;
 * kwok marking it Running; and for synced Pods the binding and the status carried back up to the tenant.
 */
export function stages(samples: readonly Sample[]): Record<string, { p50: number; p99: number }> {
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

/**
 * benchTokens is the tenants' pods.serviceAccountTokens: BENCH_TOKENS (`shared` or `perPod`), default the policy's,
 * so one build measures both.
 */
export function benchTokens(): ServiceAccountTokenMode {
  const v = process.env.BENCH_TOKENS ?? DEFAULT_POLICY.podServiceAccountTokens;
  if (!(SERVICE_ACCOUNT_TOKEN_MODES as readonly string[]).includes(v))
    throw new Error(`BENCH_TOKENS=${v}: must be one of ${SERVICE_ACCOUNT_TOKEN_MODES.join(', ')}`);
  return v as ServiceAccountTokenMode;
}

/** tenantOf describes a local control plane as a syncer tenant with a fresh uid. */
function tenantOf(cp: LocalControlPlane, vcNamespace: string, vcName: string): Tenant {
  return tenantFor(cp, vcNamespace, vcName, randomUUID(), {
    pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
    pods: { serviceAccountTokens: benchTokens() },
  });
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

/** SyncerBenchOptions size one run of the syncer scenario. */
interface SyncerBenchOptions {
  name: string;
  tenants: number;
  podsPerTenant: number;
  workers: number;
  /** the quiet tenant's Pods, alone and during the flood (0: no fairness phase) */
  quiet: number;
  /**
   * the quiet tenant's pace: one create every quietEveryMs, not waiting for the Pod before to run (0: one after
   * another, each waiting for its Running, as until session 14)
   */
  quietEveryMs: number;
  /** how many times the quiet tenant runs alone and then during a flood; its Pods of all rounds are pooled */
  fairRounds: number;
  /** the noisy tenant's Pods, all created at once */
  flood: number;
  /** how many times the three arms run, interleaved (direct, syncer, same writes, direct, ...) */
  repetitions: number;
  /** the syncer's adaptive concurrency (BENCH_ADAPTIVE=1 or 0, to compare); undefined: the syncer's default */
  adaptive: boolean | undefined;
  /** the syncer's scheduling window (BENCH_WINDOW; 0 turns it off; default the syncer's) */
  window?: number;
  /** the syncer's pace of one tenant's super Pod creates (BENCH_CREATE_RATE=perSecond/burst; 0 turns it off) */
  createRate?: CreateRate;
  /** the share of its rate a tenant with a backlog keeps while another creates (BENCH_CREATE_YIELD; 1 turns it off) */
  createYield?: number;
  /**
   * whether each tenant control plane has an etcd of its own, as the local provisioner gives every tenant
   * (BENCH_TENANT_ETCD=own), or a prefix of the super cluster's (shared)
   */
  tenantEtcd: 'own' | 'shared';
  /**
   * the cores each tenant apiserver runs on at once (GOMAXPROCS; BENCH_TENANT_CPUS, default 0: every core): 1 bounds a
   * flooding tenant's apiserver to one core of the two
   */
  tenantCpus: number;
}

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
 * BENCH_TENANT_CPUS the GOMAXPROCS of each tenant apiserver (default 0: unset).
 */
export function syncerBench(): Promise<BenchResult> {
  const quiet = envInt('BENCH_QUIET', 20);
  return runSyncerBench({
    name: 'syncer',
    tenants: envInt('BENCH_TENANTS', 20),
    podsPerTenant: envInt('BENCH_PODS', 100),
    workers: envInt('BENCH_WORKERS', 8),
    quiet,
    quietEveryMs: envInt('BENCH_QUIET_EVERY', 250),
    fairRounds: envInt('BENCH_FAIR_ROUNDS', 5),
    flood: envInt('BENCH_FLOOD', 10 * quiet),
    repetitions: envInt('BENCH_REPS', 3),
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
    repetitions: envInt('BENCH_REPS', 3),
    ...envSyncerSettings(),
  });
}

/** envSyncerSettings reads the syncer settings and tenant layout both syncer scenarios take from the environment. */
function envSyncerSettings(): Pick<
  SyncerBenchOptions,
  'adaptive' | 'window' | 'createRate' | 'createYield' | 'tenantEtcd' | 'tenantCpus'
> {
  return {
    adaptive: process.env.BENCH_ADAPTIVE ? envInt('BENCH_ADAPTIVE', 0) !== 0 : undefined,
    window: process.env.BENCH_WINDOW ? envInt('BENCH_WINDOW', 0) : undefined,
    createRate: envCreateRate(),
    createYield: process.env.BENCH_CREATE_YIELD ? Number(process.env.BENCH_CREATE_YIELD) : undefined,
    tenantEtcd: envTenantEtcd(),
    tenantCpus: envInt('BENCH_TENANT_CPUS', 0),
  };
}

/** envTenantEtcd reads BENCH_TENANT_ETCD: `own` (the default, as the local provisioner runs tenants) or `shared`. */
export function envTenantEtcd(v = process.env.BENCH_TENANT_ETCD): 'own' | 'shared' {
  if (v === undefined || v === '' || v === 'own') return 'own';
  if (v === 'shared') return 'shared';
  throw new Error(`BENCH_TENANT_ETCD: ${v} is neither own nor shared`);
}

/** envCreateRate reads BENCH_CREATE_RATE: `perSecond/burst`, or 0 for no pacing; absent, the syncer's default. */
export function envCreateRate(v = process.env.BENCH_CREATE_RATE): CreateRate | undefined {
  if (v === undefined || v === '') return undefined;
  const [perSecond, burst = '1'] = v.split('/');
  return checkCreateRate({ perSecond: Number(perSecond), burst: Number(burst) }, 'BENCH_CREATE_RATE');
}

/** ArmResult is one arm's figures, its samples and what each process used meanwhile. */
interface ArmResult extends RunFigures {
  samples: Sample[];
  cpu: Record<string, CpuShare>;
  inflight: InflightStats;
}

/** ArmRun is what one arm of one repetition leaves for the figures: its result and, for the synced arms, writes. */
interface ArmRun {
  r: ArmResult;
  /** API writes per Pod, the tenant's own create included */
  writesPerPod?: number;
  account?: WriteRow[];
}

/** writesByOp sums vc_syncer_writes_total by op out of syncerCounters' keys. */
function writesByOp(counters: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(counters)) {
    const m = /^writes_total\{(?:.*,)?op=([^,}]+)/.exec(k);
    if (m) out[m[1]!] = (out[m[1]!] ?? 0) + v;
  }
  return out;
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

/** deleteAllPods removes every Pod of a namespace at once (grace 0: no kubelet has to confirm) and waits. */
async function deleteAllPods(c: KubeClient, ns: string, deadlineMs: number): Promise<void> {
  // An overloaded apiserver answers a large deletecollection with 504 while it goes on deleting: ask again until none
  // is left.
  const deleteAll = () =>
    c
      .request('DELETE', KubeClient.path(R.pods, ns), {
        body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
      })
      .catch(() => undefined);
  await deleteAll();
  await waitUntil(
    async () => {
      if ((await c.list(R.pods, { namespace: ns, limit: 1 })).items.length === 0) return true;
      await deleteAll();
      return false;
    },
    deadlineMs,
    () => `Pods of ${ns} deleted`,
    500,
  );
}

/** busiest names the process group that used the most CPU in an arm (host and this process aside from groups). */
function busiest(cpu: Record<string, CpuShare>): { process: string; percentOfOneCore: number } {
  const [k, v] = Object.entries(cpu)
    .filter(([n]) => n !== 'host' && n !== 'otherOnHost')
    .sort((a, b) => b[1].cpuSeconds - a[1].cpuSeconds)[0]!;
  return { process: k, percentOfOneCore: v.percentOfOneCore };
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
    let t0 = performance.now();
    const memFree0 = memAvailableMiB();
    log(`starting super cluster with ${nodes} kwok nodes; MemAvailable ${memFree0.toFixed(0)} MiB`);
    t = await startTestSuper({ nodes });
    const sc = t.sc;
    stamp('superStartSeconds', t0);
    const memFreeSuper = memAvailableMiB();
    t0 = performance.now();
    log(`starting ${T} tenant control planes (apiserver only, ${o.tenantEtcd} etcd)`);
    const cps: LocalControlPlane[] = new Array<LocalControlPlane>(T);
    await pool(
      Array.from({ length: T }, (_, i) => i),
      4,
      async (i) =>
        void (cps[i] = await sc.addControlPlane(`tenant-${i}`, {
          controllerManager: false,
          ownEtcd: o.tenantEtcd === 'own',
          ...(o.tenantCpus > 0 && { apiserverEnv: { GOMAXPROCS: String(o.tenantCpus) } }),
        })),
    );
    stamp('tenantsStartSeconds', t0);
    const tenantRss = cps.map((cp) => cp.apiserver.rssBytes() / 2 ** 20);
    const memFreeTenants = memAvailableMiB();
    const perTenantMiB = (memFreeSuper - memFreeTenants) / T;
    detail.memory = {
      memAvailableBeforeMiB: Math.round(memFree0),
      memAvailableAfterSuperMiB: Math.round(memFreeSuper),
      memAvailableAfterTenantsMiB: Math.round(memFreeTenants),
      tenantApiserverRssMiB: {
        mean: Math.round(tenantRss.reduce((a, b) => a + b, 0) / T),
        max: Math.round(Math.max(...tenantRss)),
      },
      memAvailablePerTenantMiB: Math.round(perTenantMiB),
      // With the Pods' objects the tenants grow further; this counts only what they take when idle.
      moreTenantsThatWouldFitIdle: Math.floor(memFreeTenants / Math.max(1, perTenantMiB)),
    };
    log(`tenants up in ${timings.tenantsStartSeconds} s: ${JSON.stringify(detail.memory)}`);
    const tenantClients = await Promise.all(cps.map((cp) => cp.client()));
    const tenants = cps.map((cp, i) => tenantOf(cp, 'bench', `t${i}`));
    // BENCH_FLOOD_RATE: the flooding tenant's own create rate (as its TenantPolicy would set it), the others' unchanged
    const floodRate = envCreateRate(process.env.BENCH_FLOOD_RATE);
    if (floodRate && fairness) tenants[0]!.podCreateRate = floodRate;
    detail.floodTenantCreateRate = floodRate ?? detail.podCreateRate;
    await pool(tenantClients, 8, async (c) => {
      try {
        await c.create(R.serviceaccounts, {
          apiVersion: 'v1',
          kind: 'ServiceAccount',
          metadata: { name: 'default', namespace: 'default' },
        });
      } catch (e) {
        if (!isAlreadyExists(e)) throw e;
      }
    });
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
      const r = await createAndTime(jobs, CONCURRENCY, phaseDeadline(jobs.length), label);
      const { cpu, inflight } = m();
      log(
        `${label}: ${r.podsPerSecond.toFixed(1)} pods/s, p50 ${r.p50Ms.toFixed(0)} ms, p99 ${r.p99Ms.toFixed(0)} ms; ` +
          `busiest ${JSON.stringify(busiest(cpu))}, host ${cpu.host!.percentOfOneCore}% (others ${cpu.otherOnHost!.percentOfOneCore}%), ` +
          `cpu ${JSON.stringify(Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, v.percentOfOneCore])))}, ` +
          `inflight ${JSON.stringify(inflight)}`,
      );
      return { ...r, cpu, inflight };
    };

    // ---- fairness ------------------------------------------------------------------------------------------------
    let fair: Record<string, unknown> | undefined;
    // The fairness phase: runs in the last repetition, after its syncer arm, with that syncer (s) and its Pods.
    const runFairness = async (s: Syncer): Promise<void> => {
      if (!fairness) return;
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
      fair = {
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
            quietP99Ratio: Number(
              (percentile(x.during.latenciesMs, 99) / percentile(x.alone.latenciesMs, 99)).toFixed(2),
            ),
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
    const loadOf = (r: ArmResult): ArmLoad => ({
      hostPercent: r.cpu.host!.percentOfOneCore,
      otherPercent: r.cpu.otherOnHost!.percentOfOneCore,
    });
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
              queuePeak: queuePeakArm,
              heapAfterWarmMiB: Number((heapWarm / 2 ** 20).toFixed(1)),
              heapAfterPodsMiB: Number((heapAfter / 2 ** 20).toFixed(1)),
              rssAfterWarmMiB: Number((rssWarm / 2 ** 20).toFixed(1)),
              rssPeakMiB: Number((rssPeak / 2 ** 20).toFixed(1)),
              rssAfterPodsMiB: Number((rssAfter / 2 ** 20).toFixed(1)),
            };
            // The fairness phase runs once, in the last repetition, with this arm's Pods still in place.
            if (rep === REPS - 1) await runFairness(s);
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

    // ---- figures: medians over the repetitions, ratios within each ------------------------------------------------
    const valuesOf = (arm: string) => runs.filter((x) => x.arm === arm).map((x) => x.value);
    const med = (arm: string, f: (v: ArmRun) => number) => spread(valuesOf(arm).map(f)).median;
    const ratios = {
      throughputRatio: ratioSpread(runs, 'syncer', 'direct', (v) => v.r.podsPerSecond),
      throughputRatioSameWrites: ratioSpread(runs, 'syncer', 'same-writes', (v) => v.r.podsPerSecond),
      p50Ratio: ratioSpread(runs, 'syncer', 'direct', (v) => v.r.p50Ms),
      p99Ratio: ratioSpread(runs, 'syncer', 'direct', (v) => v.r.p99Ms),
      p99RatioSameWrites: ratioSpread(runs, 'syncer', 'same-writes', (v) => v.r.p99Ms),
    };
    for (const [k, v] of Object.entries(ratios)) {
      Object.assign(figures, spreadFigures(k, v));
      notes.push(formatSpread(k, v));
    }
    notes.push(
      `other load (% of a core outside this run) per arm and repetition, bound ${OTHER_LOAD_BOUND}% between the arms ` +
        `of a ratio: ` +
        runs.map((x) => `${x.arm} r${x.rep + 1} ${x.load.otherPercent}% (host ${x.load.hostPercent}%)`).join(', '),
    );
    for (const n of notes) log(n);
    const directBench = valuesOf('direct').map((v) => v.r.cpu.benchProcess!.cpuSeconds);
    Object.assign(figures, {
      repetitions: REPS,
      directPodsPerSecond: med('direct', (v) => v.r.podsPerSecond),
      sameWritesPodsPerSecond: med('same-writes', (v) => v.r.podsPerSecond),
      syncerPodsPerSecond: med('syncer', (v) => v.r.podsPerSecond),
      directP50Ms: med('direct', (v) => v.r.p50Ms),
      directP99Ms: med('direct', (v) => v.r.p99Ms),
      sameWritesP50Ms: med('same-writes', (v) => v.r.p50Ms),
      sameWritesP99Ms: med('same-writes', (v) => v.r.p99Ms),
      syncerP50Ms: med('syncer', (v) => v.r.p50Ms),
      syncerP99Ms: med('syncer', (v) => v.r.p99Ms),
      directApiWritesPerPod: 1,
      sameWritesApiWritesPerPod: med('same-writes', (v) => v.writesPerPod!),
      syncerApiWritesPerPod: med('syncer', (v) => v.writesPerPod!),
      // This process's CPU in the syncer arm (the syncer, plus the bench's creates and watches), and the same minus
      // this process's CPU per Pod in the direct arm of the same repetition (the bench's creates and watches alone).
      syncerCpuMsPerPod: med('syncer', (v) => (v.r.cpu.benchProcess!.cpuSeconds * 1000) / N),
      syncerCpuMsPerPodNet: spread(
        valuesOf('syncer').map((v, k) => ((v.r.cpu.benchProcess!.cpuSeconds - directBench[k]!) * 1000) / N),
      ).median,
      syncerHeapKBPerPod: spread(
        Object.entries(memory)
          .filter(([k]) => k.startsWith('heap'))
          .map(([, v]) => v),
      ).median,
      syncerRssKBPerPod: spread(
        Object.entries(memory)
          .filter(([k]) => k.startsWith('rss'))
          .map(([, v]) => v),
      ).median,
    });
    // Which resource was the limit, per arm: CPU of each process group (% of one core, median over the repetitions; the
    // host has 2 cores, and otherOnHost is everything outside this run) and the super apiserver's peak inflight requests.
    for (const [label, arm] of [
      ['direct', 'direct'],
      ['sameWrites', 'same-writes'],
      ['syncer', 'syncer'],
    ] as const) {
      const rs = valuesOf(arm).map((v) => v.r);
      for (const proc of Object.keys(rs[0]!.cpu))
        figures[`${label}.cpu.${proc}`] = spread(rs.map((r) => r.cpu[proc]?.percentOfOneCore ?? NaN)).median;
      for (const kind of Object.keys(rs[0]!.inflight))
        figures[`${label}.superInflightPeak.${kind}`] = Math.max(...rs.map((r) => r.inflight[kind]?.peak ?? 0));
    }
    const armDetail = (r: ArmResult) => ({
      pods: r.pods,
      podsPerSecond: r.podsPerSecond,
      p50Ms: r.p50Ms,
      p99Ms: r.p99Ms,
      maxMs: r.maxMs,
      wallSeconds: r.wallSeconds,
      stagesMs: stages(r.samples),
      busiest: busiest(r.cpu),
      cpu: r.cpu,
      apiserverInflight: r.inflight,
    });
    detail.otherLoadBoundPercentOfOneCore = OTHER_LOAD_BOUND;
    detail.ratios = ratios;
    detail.runs = runs.map((x) => ({ rep: x.rep + 1, arm: x.arm, load: x.load, ...armDetail(x.value.r) }));
    detail.syncerArm = repDetail;
    detail.memory = { ...(detail.memory as object), perRepetition: memory };
    if (fair) detail.fairness = fair;
    detail.timings = timings;
    detail.watchStats = watches.map((w) => w.stats);
    const pooledSamples = (arm: string) => valuesOf(arm).flatMap((v) => v.r.samples);
    const startOf = (s: readonly Sample[]) => Math.min(...s.map((x) => x.t0));
    const arms = [
      ['direct', 'direct'],
      ['same writes', 'same-writes'],
      ['syncer', 'syncer'],
    ] as const;
    const series: BenchSeries = {
      latencyMs: Object.fromEntries(arms.map(([k, a]) => [k, latenciesOf(pooledSamples(a)).map(Math.round)])),
      // the last repetition's timeline of each arm
      runningAtS: Object.fromEntries(
        arms.map(([k, a]) => {
          const s = valuesOf(a).at(-1)!.r.samples;
          return [k, s.map((x) => Number(((x.running - startOf(s)) / 1000).toFixed(3)))];
        }),
      ),
    };
    if (fair) {
      const q = fair as { quietAloneMs: number[]; quietDuringFloodMs: number[] };
      series.tenantP99Ms = [
        { tenant: 'quiet', phase: 'alone', p99Ms: percentile(q.quietAloneMs, 99) },
        { tenant: 'quiet', phase: 'during flood', p99Ms: percentile(q.quietDuringFloodMs, 99) },
        { tenant: 'noisy (flood)', phase: 'during flood', p99Ms: Math.round(figures.floodP99Ms!) },
      ];
      series.latencyMs!['quiet alone'] = q.quietAloneMs;
      series.latencyMs!['quiet during flood'] = q.quietDuringFloodMs;
    }
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
