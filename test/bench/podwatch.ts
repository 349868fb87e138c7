import { isAlreadyExists, isGone, type KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';

const POD_SPEC = { containers: [{ name: 'c', image: 'nginx' }] };

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string };
}

/** sleep resolves after ms. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  const pod = await createPod(j, {
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
 * createPod creates a job's Pod, and sends the create once more when its connection was reset before an answer (a
 * kept-alive connection the apiserver closed while an arm's clients were idle: the first create of an arm failed so
 * and ended the run). The first create may have landed: the second is then AlreadyExists, and the Pod is read back.
 */
async function createPod(j: PodJob, pod: KubeObject): Promise<Pod> {
  try {
    return await j.client.create<Pod>(R.pods, pod);
  } catch (e) {
    if ((e as { code?: unknown }).code !== 'ECONNRESET') throw e;
  }
  try {
    return await j.client.create<Pod>(R.pods, pod);
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
    return j.client.get<Pod>(R.pods, j.namespace, j.name);
  }
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
