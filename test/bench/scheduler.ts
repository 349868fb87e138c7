import { randomBytes, randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { parseSlice, SLICE, SUPER_CLUSTER, type Resources } from '../../core/scheduler/annotations.ts';
import { buildCapacity, quotaResources, reserve, sumAllocatable, unitOf } from '../../core/scheduler/capacity.ts';
import { NamespaceScheduler } from '../../core/scheduler/controller.ts';
import { placeNamespace } from '../../core/scheduler/namespace.ts';
import { StaticSuperClusters } from '../../core/scheduler/testing.ts';
import { signedPlacements } from '../../core/syncer/placement.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { startTestSuper, tenantFor } from '../harness.ts';
import type { BenchResult } from './main.ts';
import { CpuMeter, type CpuShare, memAvailableMiB } from './procstat.ts';
import { percentile, PodWatch, pool, waitServiceAccount, waitUntil } from './podwatch.ts';
import { interleave, measured, repsOf, reportRatios, spread as spreadOf } from './repeat.ts';

const MiB = 1024 * 1024;
/** The issue's scale: 100 tenants x 10 namespaces, sliced over 3 super clusters. */
const TENANTS = 100;
const NAMESPACES_PER_TENANT = 10;
const SUPERS = ['r1', 'r2', 'r3'] as const;
// 1000 namespaces of two slices each fit one kwok node (32 CPUs): the run measures placement, not exhaustion.
const SLICE_TEXT = '{"cpu":"10m","memory":"10Mi"}';
const QUOTA = { cpu: '20m', memory: '20Mi' };
/** Most real tenant control planes started (VC_BENCH_SCHEDULER_TENANTS, default the issue's 100); fewer if they do not fit. */
const MAX_TENANTS = Number(process.env.VC_BENCH_SCHEDULER_TENANTS ?? TENANTS);
/** Tenant control planes started first to measure the memory of one before deciding how many fit. */
const PROBE_TENANTS = 5;
/** MemAvailable left to the rest of the machine (other users' tests and builds) when tenants are added. */
const KEEP_FREE_MiB = Number(process.env.VC_BENCH_SCHEDULER_KEEP_FREE_MIB ?? 4 * 1024);
/**
 * Tenant apiservers without a watch cache: a tenant here holds ten namespaces, which the scheduler lists and watches
 * once, so a cache only costs memory. GOMEMLIMIT 160MiB (VC_BENCH_SCHEDULER_GOMEMLIMIT; `off` for none) makes the Go
 * runtime collect before an idle apiserver's heap doubles: measured here, RssAnon about 140 MiB instead of 180 for
 * 0.1 % more of a core each when idle; 96MiB cost 17 % of a core each (collecting without end).
 */
const TENANT_APISERVER_ARGS = { 'watch-cache': 'false' };
const GOMEMLIMIT = process.env.VC_BENCH_SCHEDULER_GOMEMLIMIT ?? '160MiB';
const TENANT_APISERVER_ENV = GOMEMLIMIT === 'off' ? undefined : { GOMEMLIMIT };
/** Pods created for create-to-placed (scheduler) and create-to-Running (single super cluster baseline). */
const PODS = 40;
// The label of the Pods the interleaved arms create: their super copies keep it, so an arm waits until they are gone.
const ARM_LABEL_KEY = 'bench.virtualcluster.dev/arm';
const ARM_LABEL = `${ARM_LABEL_KEY}=scheduler`;

const ms = (x: number) => Math.round(x * 100) / 100;

/**
 * pureDecisions runs the decision core alone at the issue's full scale: 100 tenants x 10 sliced namespaces placed one
 * by one over 3 super clusters of 3 kwok-sized nodes, the cache updated after each. No I/O: the ceiling of the path.
 */
function pureDecisions(): { perSecond: number; p50Us: number; p99Us: number; placed: number } {
  const node = { cpu: '32', memory: '256Gi' };
  const clusters = SUPERS.map((name) => ({
    name,
    state: 'ready' as const,
    allocatable: sumAllocatable([1, 2, 3].map((i) => ({ name: `${name}-${i}`, allocatable: node }))),
  }));
  let capacity = buildCapacity(clusters, []);
  const slice: Resources = parseSlice('bench', SLICE_TEXT);
  const quota = quotaResources('bench', QUOTA);
  const took: number[] = [];
  let placed = 0;
  const t0 = performance.now();
  for (let t = 0; t < TENANTS; t++)
    for (let n = 0; n < NAMESPACES_PER_TENANT; n++) {
      const s = performance.now();
      const d = placeNamespace(capacity, { key: `t${t}/ns${n}`, slice, quota, placements: new Map() }, 'spread');
      if (d.kind === 'placed') {
        capacity = reserve(capacity, unitOf({ slice, quota }), d.added);
        placed++;
      }
      took.push((performance.now() - s) * 1000);
    }
  const wall = performance.now() - t0;
  return {
    perSecond: (TENANTS * NAMESPACES_PER_TENANT) / (wall / 1000),
    p50Us: percentile(took, 50),
    p99Us: percentile(took, 99),
    placed,
  };
}

/** tenantsThatFit is how many tenant control planes of perTenantMiB fit in availableMiB less keepFreeMiB, at most max. */
export function tenantsThatFit(
  started: number,
  perTenantMiB: number,
  availableMiB: number,
  keepFreeMiB: number,
  max: number,
): number {
  const more = Math.max(0, Math.floor((availableMiB - keepFreeMiB) / Math.max(1, perTenantMiB)));
  return Math.min(max, started + more);
}

/** busiestOf names the group that used the most CPU in a phase, the host and other users of the machine left out. */
export function busiestOf(cpu: Record<string, CpuShare>): string {
  const own = Object.entries(cpu).filter(([k]) => k !== 'host' && k !== 'otherOnHost');
  const [name, share] = own.reduce((a, b) => (b[1].cpuSeconds > a[1].cpuSeconds ? b : a));
  return `${name} ${share.percentOfOneCore}% of one core`;
}

/**
 * schedulerBench measures the namespace scheduler: the pure decision core at 100 x 10; the controller placing the
 * same 1000 sliced namespaces held by up to 100 real tenant control planes (apiserver only, no watch cache), as many
 * as fit in memory with 6 GiB left free, each holding 1000 / tenants namespaces; placement latency from namespace
 * create to the scheduler's signed write; a single-super-cluster create-to-Running baseline through one unfiltered syncer on a tenant of its own;
 * and, interleaved with it over BENCH_REPS repetitions, an end-to-end tenant whose Pods go through the scheduler
 * (create to superCluster annotation) and one filtered syncer per super cluster (create to Running), for the ratio.
 * The CPU of each group of processes is read per phase.
 */
export async function schedulerBench(): Promise<BenchResult> {
  const REPS = repsOf();
  const pure = pureDecisions();
  const memBefore = memAvailableMiB();
  const loadBefore = loadavg();
  const t = await startTestSuper({ nodes: 1 });
  const closers: KubeClient[] = [];
  const signingKey = randomBytes(32);
  try {
    // r2 and r3 are whole super clusters (controller-manager, scheduler, kwok node): the end-to-end phase runs Pods
    // there.
    const extra = await Promise.all([
      t.sc.addSuperCluster('r2', { nodes: 1 }),
      t.sc.addSuperCluster('r3', { nodes: 1 }),
    ]);
    const superClients = [t.client, ...(await Promise.all(extra.map((cp) => cp.client())))];
    closers.push(...superClients.slice(1));
    const memAfterSupers = memAvailableMiB();
    const log = (m: string) => process.stdout.write(`[scheduler] ${new Date().toISOString()} ${m}\n`);
    const addTenant = (i: number) =>
      t.sc.addControlPlane(`bench-t${i}`, {
        controllerManager: false,
        apiserverExtraArgs: TENANT_APISERVER_ARGS,
        apiserverEnv: TENANT_APISERVER_ENV,
        // Ninety apiservers starting on 2 cores next to other work: readiness may take minutes.
        readyTimeoutMs: 300_000,
      });
    const cps: LocalControlPlane[] = [];
    const tStart = performance.now();
    const probe = Math.min(PROBE_TENANTS, MAX_TENANTS);
    cps.push(...(await Promise.all(Array.from({ length: probe }, (_, i) => addTenant(i)))));
    // Idle, as the rest will be when the run starts.
    await new Promise((r) => setTimeout(r, 10_000));
    // What one more tenant costs: the apiserver's own memory (RssAnon); its binary's pages are shared by all of them.
    const probeAnon = cps.slice(1).map((cp) => cp.apiserver.anonBytes() / MiB);
    const perTenantMiB = probeAnon.reduce((a, b) => a + b, 0) / Math.max(1, probeAnon.length);
    const memAfterProbe = memAvailableMiB();
    const fit = tenantsThatFit(cps.length, perTenantMiB, memAfterProbe, KEEP_FREE_MiB, MAX_TENANTS);
    log(
      `${cps.length} tenants: apiserver RssAnon ${perTenantMiB.toFixed(0)} MiB each; MemAvailable ` +
        `${memAfterProbe.toFixed(0)} MiB; ${fit} fit keeping ${KEEP_FREE_MiB} MiB free`,
    );
    // Batches of 4 (8 at once starved etcd at load 60 on 2 cores), MemAvailable checked before each: other users of
    // the machine may take memory meanwhile.
    let stoppedBy = '';
    while (cps.length < fit) {
      const batch = Math.min(4, fit - cps.length);
      const avail = memAvailableMiB();
      if (avail - batch * perTenantMiB < KEEP_FREE_MiB) {
        stoppedBy = `MemAvailable ${avail.toFixed(0)} MiB at ${cps.length} tenants`;
        break;
      }
      const from = cps.length;
      const started = await Promise.allSettled(Array.from({ length: batch }, (_, i) => addTenant(from + i)));
      for (const r of started) if (r.status === 'fulfilled') cps.push(r.value);
      const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) {
        // A tenant that did not start is stopped by addControlPlane; the run goes on with those that did.
        stoppedBy = `a tenant apiserver did not start at ${cps.length} tenants: ${String(failed.reason).split('\n')[0]}`;
        break;
      }
    }
    const tenantsStartSeconds = (performance.now() - tStart) / 1000;
    const apiserverRss = cps.slice(1).map((cp) => cp.apiserver.rssBytes() / MiB);
    const apiserverAnon = cps.slice(1).map((cp) => cp.apiserver.anonBytes() / MiB);
    const memAfterTenants = memAvailableMiB();
    log(
      `${cps.length} tenant control planes in ${tenantsStartSeconds.toFixed(0)} s; MemAvailable ` +
        `${memAfterTenants.toFixed(0)} MiB${stoppedBy ? `; stopped by ${stoppedBy}` : ''}`,
    );
    const clients = await Promise.all(cps.map((cp) => cp.client()));
    closers.push(...clients);
    const tenants: Tenant[] = cps.map((cp, i) => tenantFor(cp, 'bench', `t${i}`, randomUUID()));
    // The end-to-end tenant: only the Pods' namespaces, served by the scheduler and the filtered syncers.
    const cpE = await t.sc.addControlPlane('bench-e2e', { controllers: TENANT_CONTROLLERS });
    const eClient = await cpE.client();
    closers.push(eClient);
    const e2eTenant = tenantFor(cpE, 'bench', 'e2e', randomUUID(), {
      pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
    });
    // The baseline's tenant: one super cluster, one unfiltered syncer, which the scheduler does not serve (its
    // namespace needs a service account: a controller manager).
    const cpB = await t.sc.addControlPlane('bench-base', { controllers: TENANT_CONTROLLERS });
    const bClient = await cpB.client();
    closers.push(bClient);
    const baseTenant = tenantFor(cpB, 'bench', 'base', randomUUID(), {
      pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
    });

    const supersCps = [t.sc.cluster, ...extra];
    const procs = {
      tenantApiservers: () => cps.map((cp) => cp.apiserver.pid),
      tenantControllerManagers: () => [cpB.controllerManager?.pid, cpE.controllerManager?.pid],
      endToEndApiserver: () => [cpE.apiserver.pid],
      baselineApiserver: () => [cpB.apiserver.pid],
      superApiservers: () => supersCps.map((cp) => cp.apiserver.pid),
      superOthers: () => supersCps.flatMap((cp) => [cp.controllerManager?.pid, cp.scheduler?.pid, cp.kwok?.pid]),
      etcd: () => [t.sc.etcd.process.pid],
    };
    const cpuByPhase: Record<string, Record<string, CpuShare>> = {};
    const limitByPhase: Record<string, string> = {};
    const endPhase = (phase: string, meter: CpuMeter) => {
      const cpu = meter.stop();
      cpuByPhase[phase] = cpu;
      limitByPhase[phase] = busiestOf(cpu);
      log(
        `${phase}: busiest ${limitByPhase[phase]} (the scheduler and syncers run in benchProcess); host ` +
          `${cpu.host!.percentOfOneCore}%, others on the host ${cpu.otherOnHost!.percentOfOneCore}%; ` +
          JSON.stringify(Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, v.percentOfOneCore]))),
      );
    };

    // The baseline's syncer serves its tenant from here on; its Pods come in the interleaved phase below.
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    const syncer = new Syncer({
      superClient: t.client,
      host,
      registry: new MutableTenantRegistry([baseTenant]),
      patrolIntervalMs: 0,
    });
    await syncer.start();
    await waitUntil(
      () => syncer.tenantReady(baseTenant.key),
      60_000,
      () => 'baseline tenant served',
    );
    await bClient.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'baseline' } });
    await waitServiceAccount(bClient, 'baseline');

    // The scheduler at full decision scale.
    const createdAt = new Map<string, number>();
    const placedAt = new Map<string, number>();
    const podPlacedAt = new Map<string, number>();
    const podCreated = new Map<string, number>();
    const scheduler = new NamespaceScheduler({
      tenants: new MutableTenantRegistry([...tenants, e2eTenant]),
      supers: new StaticSuperClusters(SUPERS.map((name, i) => ({ name, state: 'ready', client: superClients[i]! }))),
      signingKey,
      observe: (e) => {
        const at = performance.now();
        // Only the bench's namespaces: the tenants' own (default, kube-system...) are placed too.
        if (e.kind === 'namespace' && createdAt.has(e.key) && !placedAt.has(e.key)) placedAt.set(e.key, at);
        if (e.kind === 'pod' && podCreated.has(e.key)) podPlacedAt.set(e.key, at);
      },
    });
    const tServed = performance.now();
    await scheduler.start();
    await waitUntil(
      () => [...tenants, e2eTenant].every((x) => scheduler.tenantReady(x.key)),
      300_000,
      () => 'tenants served',
    );
    const total = TENANTS * NAMESPACES_PER_TENANT;
    const names = Array.from({ length: total }, (_, i) => ({ tenant: i % cps.length, name: `ns-${i}` }));
    const tenantsServedSeconds = (performance.now() - tServed) / 1000;
    log(`scheduler serving ${tenants.length + 1} tenants after ${tenantsServedSeconds.toFixed(1)} s`);
    const placeMeter = new CpuMeter(procs);
    const t0 = performance.now();
    await pool(names, 16, async ({ tenant, name }) => {
      const c = clients[tenant]!;
      createdAt.set(`${tenants[tenant]!.key}/${name}`, performance.now());
      await c.create(R.namespaces, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, annotations: { [SLICE]: SLICE_TEXT } },
      });
      await c.create(R.resourcequotas, {
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'quota', namespace: name },
        spec: { hard: QUOTA },
      } as KubeObject);
    });
    await waitUntil(
      () => placedAt.size >= total,
      600_000,
      () => `${placedAt.size}/${total} namespaces placed`,
      100,
    );
    const wall = performance.now() - t0;
    endPhase('placement', placeMeter);
    const namespacesPlaced = placedAt.size;
    const latencies = [...placedAt].map(([k, at]) => at - createdAt.get(k)!);
    log(
      `${namespacesPlaced} namespaces placed in ${(wall / 1000).toFixed(1)} s: p50 ` +
        `${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms`,
    );

    // End to end: the scheduler places PODS sliced namespaces of the e2e tenant and one Pod in each; one filtered
    // syncer per super cluster runs each Pod where it was placed. Create-to-Running, timed from a quota already
    // counted (the baseline has none), against the baseline's.
    const filtered = SUPERS.map(
      (name, i) =>
        new Syncer({
          superClient: superClients[i]!,
          host,
          registry: new MutableTenantRegistry([e2eTenant]),
          patrolIntervalMs: 0,
          name,
          placement: { cluster: name, signed: signedPlacements(signingKey) },
        }),
    );
    for (const s of filtered) await s.start();
    await waitUntil(
      () => filtered.every((s) => s.tenantReady(e2eTenant.key)),
      60_000,
      () => 'end-to-end tenant served',
    );
    const e2eNs = Array.from({ length: PODS }, (_, i) => `e2e-${i}`);
    await pool(e2eNs, 8, async (name) => {
      createdAt.set(`${e2eTenant.key}/${name}`, performance.now());
      await eClient.create(R.namespaces, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, annotations: { [SLICE]: SLICE_TEXT } },
      });
      await eClient.create(R.resourcequotas, {
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'quota', namespace: name },
        spec: { hard: QUOTA },
      } as KubeObject);
    });
    await waitUntil(
      () => e2eNs.every((n) => placedAt.has(`${e2eTenant.key}/${n}`)),
      120_000,
      () => 'end-to-end namespaces placed',
      100,
    );
    await Promise.all(e2eNs.map((n) => waitServiceAccount(eClient, n)));
    await pool(e2eNs, 8, (n) =>
      waitUntil(
        async () => {
          const q = await eClient.get<KubeObject & { status?: { hard?: object } }>(R.resourcequotas, n, 'quota');
          return !!q.status?.hard;
        },
        60_000,
        () => `quota of ${n} counted`,
      ),
    );
    // The two arms interleaved over BENCH_REPS repetitions (baseline, scheduled, baseline, ...): PODS Pods
    // create-to-Running through one unfiltered syncer on one super cluster, then one Pod in each of PODS sliced
    // namespaces through the scheduler and the filtered syncers. Each arm's Pods go, their super copies with them,
    // before the next arm: a ratio counts only when both ran under like other load (repeat.ts).
    const bWatch = new PodWatch(bClient, { namespace: 'baseline' });
    const eWatch = new PodWatch(eClient);
    await bWatch.start();
    await eWatch.start();
    const e2ePlacedOn: Record<string, number> = {};
    const toRunning = async (w: PodWatch, created: Map<string, number>) =>
      Promise.all([...created].map(async ([k, at]) => (await w.whenRunning(k)) - at));
    const runs = await interleave<number[]>(
      [
        {
          name: 'baseline',
          run: measured(async (rep) => {
            const meter = new CpuMeter(procs);
            const created = new Map<string, number>();
            await pool(
              Array.from({ length: PODS }, (_, i) => `p${rep}-${i}`),
              8,
              async (name) => {
                created.set(`baseline/${name}`, performance.now());
                await bClient.create(R.pods, podOf('baseline', name));
              },
            );
            const took = await toRunning(bWatch, created);
            endPhase(`baseline r${rep + 1}`, meter);
            return took;
          }),
        },
        {
          name: 'scheduled',
          run: measured(async (rep) => {
            const meter = new CpuMeter(procs);
            const created = new Map<string, number>();
            await pool(e2eNs, 8, async (name) => {
              const at = performance.now();
              created.set(`${name}/p${rep}`, at);
              podCreated.set(`${e2eTenant.key}/${name}/p${rep}`, at);
              await eClient.create(R.pods, podOf(name, `p${rep}`));
            });
            const took = await toRunning(eWatch, created);
            endPhase(`endToEnd r${rep + 1}`, meter);
            for (const n of e2eNs) {
              const p = await eClient.get(R.pods, n, `p${rep}`);
              const on = p.metadata?.annotations?.[SUPER_CLUSTER] ?? '-';
              e2ePlacedOn[on] = (e2ePlacedOn[on] ?? 0) + 1;
            }
            return took;
          }),
        },
      ],
      REPS,
      async (_rep, arm) => {
        const namespaces = arm === 'baseline' ? ['baseline'] : e2eNs;
        const c = arm === 'baseline' ? bClient : eClient;
        await pool(namespaces, 8, (n) =>
          c.request('DELETE', `/api/v1/namespaces/${n}/pods`, {
            body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
          }),
        );
        await waitUntil(
          async () => {
            const left = await Promise.all(
              superClients.map(async (sc) => (await sc.list(R.pods, { labelSelector: ARM_LABEL })).items.length),
            );
            return left.every((x) => x === 0);
          },
          300_000,
          () => `the ${arm} arm's super Pods gone`,
          250,
        );
      },
    );
    await bWatch.stop();
    await eWatch.stop();
    await waitUntil(
      () => podPlacedAt.size >= PODS * REPS,
      120_000,
      () => `${podPlacedAt.size}/${PODS * REPS} pods placed`,
      100,
    );
    const podLatencies = [...podPlacedAt].map(([k, at]) => at - podCreated.get(k)!);
    for (const s of filtered) await s.stop();
    await syncer.stop();

    const summary = scheduler.summary();
    const stats = { ...scheduler.stats };
    await scheduler.stop();

    const placedP50 = percentile(podLatencies, 50);
    // Each arm's p50 and p99 per repetition; their medians, and the ratios per repetition (median, min, max).
    const perArm = (arm: string, q: number) =>
      spreadOf(runs.filter((r) => r.arm === arm).map((r) => percentile(r.value, q))).median;
    const notes: string[] = [];
    const ratioFigures: Record<string, number> = {};
    const ratios = reportRatios(
      runs,
      {
        createToRunningRatioP50: { numerator: 'scheduled', denominator: 'baseline', f: (v) => percentile(v, 50) },
        createToRunningRatioP99: { numerator: 'scheduled', denominator: 'baseline', f: (v) => percentile(v, 99) },
      },
      ratioFigures,
      notes,
    );
    return {
      name: 'scheduler',
      figures: {
        pureDecisionsPerSecond: pure.perSecond,
        pureDecisionP99Us: pure.p99Us,
        namespacesPlaced,
        placementP50Ms: ms(percentile(latencies, 50)),
        placementP99Ms: ms(percentile(latencies, 99)),
        namespaceDecisionsPerSecond: total / (wall / 1000),
        podCreateToPlacedP50Ms: ms(placedP50),
        podCreateToPlacedP99Ms: ms(percentile(podLatencies, 99)),
        baselineCreateToRunningP50Ms: ms(perArm('baseline', 50)),
        baselineCreateToRunningP99Ms: ms(perArm('baseline', 99)),
        scheduledCreateToRunningP50Ms: ms(perArm('scheduled', 50)),
        scheduledCreateToRunningP99Ms: ms(perArm('scheduled', 99)),
        // Measured in this run: scheduler + filtered syncers over 3 super clusters versus one unfiltered syncer.
        ...ratioFigures,
        realTenantControlPlanes: cps.length,
        tenantApiserverAnonMiB: perTenantMiB,
        tenantApiserverRssMiBAtRun: apiserverRss.reduce((a, b) => a + b, 0) / Math.max(1, apiserverRss.length),
        tenantApiserverAnonMiBAtRun: apiserverAnon.reduce((a, b) => a + b, 0) / Math.max(1, apiserverAnon.length),
        tenantControlPlanesThatFit: fit,
        tenantsStartSeconds,
        tenantsServedSeconds,
        loadAverageBefore: loadBefore[0]!,
        loadAverageAfter: loadavg()[0]!,
      },
      notes,
      detail: {
        repetitions: REPS,
        ratios,
        real:
          `${cps.length} tenant control planes (apiserver only without watch cache${
            TENANT_APISERVER_ENV ? ` and GOMEMLIMIT=${TENANT_APISERVER_ENV.GOMEMLIMIT}` : ''
          }; the first also a controller-manager) and one end-to-end tenant (apiserver + controller-manager), 3 super ` +
          `clusters (apiserver, controller-manager, scheduler, one kwok node each) on one etcd; ${total} sliced ` +
          `namespaces, each real tenant holding ${Math.ceil(total / cps.length)} or fewer`,
        notReal:
          cps.length >= TENANTS
            ? `nothing of the placement path; Pods run on kwok nodes`
            : `${TENANTS} tenants: ${cps.length} fit in memory (${perTenantMiB.toFixed(0)} MiB each, ` +
              `${KEEP_FREE_MiB} MiB kept free${stoppedBy ? `, ${stoppedBy}` : ''}), holding the ${total} namespaces`,
        pure,
        memAvailableMiB: {
          before: memBefore,
          afterSupers: memAfterSupers,
          afterProbe: memAfterProbe,
          afterTenants: memAfterTenants,
        },
        cpuByPhase,
        limitByPhase,
        schedulerStats: stats,
        summary,
        endToEndPodsBySuperCluster: e2ePlacedOn,
        loadAverage: { before: loadBefore, after: loadavg() },
      },
    };
  } finally {
    for (const c of closers) c.close();
    await t.stop();
  }
}

function podOf(namespace: string, name: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { [ARM_LABEL_KEY]: 'scheduler' } },
    spec: { containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: '10m', memory: '10Mi' } } }] },
  } as KubeObject;
}
