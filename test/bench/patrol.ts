import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { KubeClient, type KubeObject, type Resource } from '../../core/kube/client.ts';
import { objectKey, slim } from '../../core/kube/informer.ts';
import { R } from '../../core/kube/resources.ts';
import { LABEL, MANAGER, namespaceOwnerIn, tenantNaming } from '../../core/names/names.ts';
import type { CacheReader, PluginContext, ResourcePlugin } from '../../core/plugins/contract.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { patrol, PATROL_FULL_EVERY, PatrolMemo, signatureOf, type PatrolSession } from '../../core/syncer/patrol.ts';
import { planKey } from '../../core/syncer/plan.ts';
import { makeKey, parseKey, Router, superResources, tenantResources } from '../../core/syncer/routing.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, tenantView, type Tenant } from '../../core/tenancy/tenant.ts';
import { ensureToolchain } from '../../core/toolchain/toolchain.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import type { BenchResult } from './main.ts';
import { type ArmFigures, repeatFigures, repsOf } from './repeat.ts';
import { createPodsAndWaitRunning } from './pods.ts';
import { waitServiceAccount } from './podwatch.ts';

/**
 * The patrol benchmark: the CPU of one patrol pass over 1,000 and 10,000 synced Pods. Syncing 10,000 Pods through
 * kwok takes the better part of an hour on this machine, so the bench syncs a few Pods per tenant for real (a local
 * super cluster, tenant control planes, the real syncer), takes both sides' objects as the syncer's caches hold them,
 * and copies every Pod's objects (tenant Pod, super Pod, token Secret, events) under new names and uids up to the
 * scale. The copies are checked to be in sync: the first pass over them must find no drift. Each pass runs the real
 * patrol, router, planner and plugins over in-memory caches that behave as informer caches do (a list copies).
 *
 * Figures per scale: the baseline (a plain loop that reads the same lists and builds the same keys, measured in the
 * same run), a pass planning every key (no memo: what patrol cost before), the first pass with the memo (the same
 * work), the median of the next passes (nothing changed), their ratio to the baseline, and the drift a pass finds
 * after a super Pod is deleted, another edited and an orphan added (must be 3). The scales run in turn over BENCH_REPS
 * repetitions (default 3), each on caches filled afresh; every figure is the median with its min and max.
 */

const POD_PREFIX = 'pb-';
const podName = (j: number) => `${POD_PREFIX}${String(j).padStart(4, '0')}`;
const POD_NAME = /pb-(\d{4})/g;
const NAMES_POD = /^pb-\d{4}/;

/** IndexedCache is a CacheReader over maps, whose list copies as an informer's does. */
class IndexedCache implements CacheReader {
  readonly byResource = new Map<string, Map<string, KubeObject>>();

  put(r: string, o: KubeObject): void {
    let m = this.byResource.get(r);
    if (!m) this.byResource.set(r, (m = new Map()));
    m.set(objectKey(o), o);
  }

  get<T extends KubeObject = KubeObject>(r: Resource, namespace: string | undefined, name: string): T | undefined {
    return this.byResource.get(r.resource)?.get(namespace ? `${namespace}/${name}` : name) as T | undefined;
  }

  list<T extends KubeObject = KubeObject>(r: Resource, namespace?: string): T[] {
    const all = [...(this.byResource.get(r.resource)?.values() ?? [])] as T[];
    return namespace === undefined ? all : all.filter((o) => o.metadata?.namespace === namespace);
  }

  count(): number {
    let n = 0;
    for (const m of this.byResource.values()) n += m.size;
    return n;
  }
}

type Snapshot = Array<[string, KubeObject[]]>;

/** snapshot lists what the syncer's informers would hold: every resource it watches, slimmed as they slim it. */
async function snapshot(c: KubeClient, resources: Array<[string, Resource, string | undefined]>): Promise<Snapshot> {
  const out: Snapshot = [];
  for (const [name, r, labelSelector] of resources)
    out.push([name, (await c.listAll(r, { labelSelector })).items.map((o) => slim(o))]);
  return out;
}

/** podUids matches the uids of the bench Pods' objects on both sides (a super Pod's provenance names its tenant Pod's). */
function podUids(snaps: Snapshot[]): RegExp | undefined {
  const uids = new Set<string>();
  for (const snap of snaps)
    for (const [, objs] of snap)
      for (const o of objs) if (NAMES_POD.test(o.metadata?.name ?? '') && o.metadata?.uid) uids.add(o.metadata.uid);
  return uids.size ? new RegExp([...uids].join('|'), 'g') : undefined;
}

/**
 * replicate fills a cache with a snapshot and `copies - 1` more copies of every object that names one of the bench
 * Pods, each under new Pod names and new uids for the objects so renamed.
 */
function replicate(snap: Snapshot, copies: number, uidRe: RegExp | undefined): IndexedCache {
  const cache = new IndexedCache();
  for (const [r, objs] of snap) {
    for (const o of objs) {
      cache.put(r, o);
      const text = JSON.stringify(o);
      if (!text.includes(POD_PREFIX)) continue;
      for (let i = 1; i < copies; i++) {
        let t = text.replace(POD_NAME, (_m, d: string) => `${POD_PREFIX}${d}-${i}`);
        // The same uid gets the same copy everywhere it appears (a super Pod's provenance names its tenant Pod's).
        if (uidRe) t = t.replace(uidRe, (u) => `${u.slice(0, 24)}${i.toString(16).padStart(12, '0')}`);
        cache.put(r, JSON.parse(t) as KubeObject);
      }
    }
  }
  return cache;
}

const cpuMs = (fn: () => void): { cpu: number; wall: number } => {
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  fn();
  const c = process.cpuUsage(c0);
  return { cpu: (c.user + c.system) / 1000, wall: performance.now() - w0 };
};
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
const round = (n: number) => Number(n.toFixed(1));

interface World {
  sessions: PatrolSession[];
  superCache: IndexedCache;
  pods: number;
  objects: number;
}

/** measure runs the passes of one scale and returns its figures. */
function measure(host: PluginHost, w: World, log: (m: string) => void): Record<string, number> {
  const sessionOf = new Map(w.sessions.map((s) => [s.tenant.key, s]));
  const router = new Router({
    host,
    queue: { add: () => undefined },
    sessions: { get: (k) => sessionOf.get(k) as never, all: () => w.sessions as never },
    superCache: w.superCache,
  });
  const contexts = new Map<string, PluginContext>();
  const context = (t: string): PluginContext => {
    let c = contexts.get(t);
    if (!c) {
      const s = sessionOf.get(t)!;
      const names = tenantNaming(
        t,
        namespaceOwnerIn((n) => w.superCache.get(R.namespaces, undefined, n)),
      );
      contexts.set(t, (c = { tenant: s.view, names, tenantCache: s.cache, superCache: w.superCache, now: new Date() }));
    }
    return c;
  };
  const pluginOf = (k: { plugin: string }) => host.get(k.plugin) as ResourcePlugin;
  const plan = (key: string) => {
    const k = parseKey(key);
    return planKey(host, pluginOf(k), { ...context(k.tenant), now: new Date() }, k);
  };
  const signature = (key: string) => {
    const k = parseKey(key);
    return signatureOf(pluginOf(k), context(k.tenant), k);
  };
  const enqueued: string[] = [];
  const pass = (memo?: PatrolMemo) =>
    patrol({
      sessions: w.sessions,
      host,
      superCache: w.superCache,
      router,
      plan,
      enqueue: (k) => enqueued.push(k),
      ...(memo && { signature, memo }),
    });
  let keys = 0;
  const baseline = () => {
    keys = 0;
    for (const p of host.resourcePlugins()) {
      const r = p.manifest.resource!;
      for (const s of w.sessions) {
        const seen = new Set<string>();
        for (const o of s.cache.list(r))
          seen.add(makeKey(s.tenant.key, p.manifest.name, o.metadata?.namespace ?? '', o.metadata?.name ?? ''));
        for (const o of w.superCache.list(r))
          seen.add(makeKey(s.tenant.key, p.manifest.name, o.metadata?.namespace ?? '', o.metadata?.name ?? ''));
        keys += seen.size;
      }
    }
  };
  const base = [0, 1, 2].map(() => cpuMs(baseline).cpu);
  let fixes = 0;
  const full = cpuMs(() => (fixes = pass()));
  // Copies out of sync would make the figures meaningless: show what the first one would write.
  if (fixes) log(`drift in the copies: ${enqueued[0]} plans ${JSON.stringify(plan(enqueued[0]!)).slice(0, 1500)}`);
  const memo = new PatrolMemo();
  const first = cpuMs(() => pass(memo));
  const warm: Array<{ cpu: number; wall: number }> = [];
  let warmFixes = 0;
  for (let i = 0; i < 5; i++) warm.push(cpuMs(() => (warmFixes += pass(memo))));
  // Drift: a super Pod deleted, another edited (a new resourceVersion), an orphan whose tenant Pod is gone.
  const superPods = w.superCache.byResource.get(R.pods.resource)!;
  const [deleted, edited, model] = [...superPods.values()];
  superPods.delete(objectKey(deleted!));
  const e = structuredClone(edited!);
  e.metadata!.resourceVersion = `${e.metadata!.resourceVersion}9`;
  e.metadata!.labels = { ...e.metadata!.labels, drift: 'yes' };
  superPods.set(objectKey(e), e);
  const orphan = JSON.parse(JSON.stringify(model).replace(POD_NAME, 'pb-orphan')) as KubeObject;
  orphan.metadata!.uid = randomUUID();
  superPods.set(objectKey(orphan), orphan);
  enqueued.length = 0;
  const drift = pass(memo);
  const warmCpu = median(warm.map((x) => x.cpu));
  const warmWall = median(warm.map((x) => x.wall));
  const f = {
    pods: w.pods,
    cachedObjects: w.objects,
    keys,
    baselineCpuMs: round(median(base)),
    fullPassCpuMs: round(full.cpu),
    fullPassFixes: fixes,
    firstMemoPassCpuMs: round(first.cpu),
    unchangedPassCpuMs: round(warmCpu),
    unchangedPassWallMs: round(warmWall),
    unchangedPassFixes: warmFixes,
    unchangedOverBaseline: round(warmCpu / Math.max(0.1, median(base))),
    // Each key is planned in full again once every PATROL_FULL_EVERY passes, spread evenly: the mean pass adds that share.
    steadyPassCpuMs: round(warmCpu + full.cpu / PATROL_FULL_EVERY),
    fullOverUnchanged: round(full.cpu / Math.max(0.1, warmCpu)),
    driftFound: drift,
  };
  log(`${w.pods} Pods: ${JSON.stringify(f)} (load ${loadavg()[0]!.toFixed(1)})`);
  return f;
}

/** patrolBench measures patrol passes at 1,000 and 10,000 Pods (BENCH_PATROL_SCALES), from a real sync of a few Pods. */
export async function patrolBench(): Promise<BenchResult> {
  const T = 2;
  const P = Number(process.env.BENCH_PATROL_SEED_PODS ?? 20);
  const scales = (process.env.BENCH_PATROL_SCALES ?? '1000,10000').split(',').map(Number);
  const log = (msg: string) =>
    process.stdout.write(`[patrol-bench ${new Date().toISOString().slice(11, 23)}] ${msg}\n`);
  const load0 = loadavg()[0]!;
  let t: TestSuper | undefined;
  let syncer: Syncer | undefined;
  const clients: KubeClient[] = [];
  let tenantSnaps: Array<{ tenant: Tenant; snap: Snapshot }> = [];
  let superSnap: Snapshot = [];
  const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
  try {
    t = await startTestSuper({ nodes: 2 });
    const cps = await Promise.all(
      Array.from({ length: T }, (_, i) => t!.sc.addControlPlane(`tenant-${i}`, { controllers: TENANT_CONTROLLERS })),
    );
    const tcs = await Promise.all(cps.map((cp) => cp.client()));
    clients.push(...tcs);
    const tenants = cps.map((cp, i) => tenantFor(cp, 'bench', `p${i}`, randomUUID()));
    await Promise.all(tcs.map((c) => waitServiceAccount(c, 'default')));
    const superClient = await KubeClient.fromFile(t.sc.kubeconfigPath);
    clients.push(superClient);
    syncer = new Syncer({ superClient, host, registry: new MutableTenantRegistry(tenants), patrolIntervalMs: 0 });
    await syncer.start();
    log(`syncing ${T} x ${P} Pods for real`);
    const s0 = syncer;
    await createPodsAndWaitRunning(tcs, P, {
      name: podName,
      concurrency: 8,
      deadlineMs: 300_000,
      everyMs: 1000,
      settled: () => s0.patrol() === 0 && s0.queueLength() === 0,
    });
    await syncer.stop();
    syncer = undefined;
    const superList = [...superResources(host)].map(
      ([name, { resource, all }]) =>
        [name, resource, all ? undefined : `${LABEL.managedBy}=${MANAGER}`] as [string, Resource, string | undefined],
    );
    superSnap = await snapshot(superClient, superList);
    tenantSnaps = await Promise.all(
      tenants.map(async (tenant, i) => ({
        tenant,
        snap: await snapshot(
          tcs[i]!,
          [...tenantResources(host, tenantView(tenant))].map(
            ([n, r]) => [n, r, undefined] as [string, Resource, undefined],
          ),
        ),
      })),
    );
  } finally {
    await syncer?.stop();
    for (const c of clients) c.close();
    await t?.stop();
  }
  // The clusters are stopped: the passes below compete only with the rest of the machine.
  const uidRe = podUids([superSnap, ...tenantSnaps.map((x) => x.snap)]);
  /** scaleArm fills fresh caches up to `scale` Pods (a pass's drift check edits them) and measures the passes. */
  const scaleArm = (scale: number) => (): Promise<ArmFigures> => {
    const copies = Math.max(1, Math.round(scale / (T * P)));
    const sessions: PatrolSession[] = tenantSnaps.map(({ tenant, snap }) => ({
      tenant,
      view: tenantView(tenant),
      cache: replicate(snap, copies, uidRe),
      ready: true,
    }));
    const superCache = replicate(superSnap, copies, uidRe);
    const objects = superCache.count() + sessions.reduce((n, s) => n + (s.cache as IndexedCache).count(), 0);
    const pods = sessions.reduce((n, s) => n + s.cache.list(R.pods).length, 0);
    const f = measure(host, { sessions, superCache, pods, objects }, log);
    const figures: Record<string, number> = {};
    for (const k of [
      'pods',
      'baselineCpuMs',
      'fullPassCpuMs',
      'unchangedPassCpuMs',
      'unchangedOverBaseline',
      'driftFound',
    ] as const)
      figures[`${k}At${scale}`] = f[k];
    figures[`unchangedPassFixesAt${scale}`] = f.unchangedPassFixes + f.fullPassFixes;
    return Promise.resolve({ figures, detail: f });
  };
  // The scales in turn, over BENCH_REPS repetitions: each figure is the median with its min and max.
  const { figures, notes, runs } = await repeatFigures(
    scales.map((scale) => ({ name: `pods${scale}`, run: scaleArm(scale) })),
    repsOf(),
  );
  // The passes run on one thread with nothing to wait for: their limit is this process's CPU (wall over CPU above 1
  // means the machine's other work kept it from a core).
  return {
    name: 'patrol',
    notes,
    figures: { loadAverageAtStart: round(load0), ...figures, loadAverageAtEnd: round(loadavg()[0]!) },
    detail: {
      tenants: T,
      seedPodsPerTenant: P,
      runs,
      limit: 'CPU of the patrolling process (one thread, no I/O); wall/CPU > 1 is time waiting for a core',
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await ensureToolchain();
  const r = await patrolBench();
  process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
}
