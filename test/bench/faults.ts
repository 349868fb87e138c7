import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { isAlreadyExists, type KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { GITSOURCES } from '../../gitops/applier/gitsource.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { rootNamespace, superNamespace } from '../../core/names/names.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { type GitServer, startGitServer } from '../git/server.ts';
import { startTestSuper, type TestSuper } from '../harness.ts';
import { compareCopies, type CopyFindings, findingsTotal } from './compare.ts';
import { killManager, ManagerSpawner } from '../managerproc.ts';
import type { BenchResult } from './main.ts';
import { benchSize, envInt, envSized } from './pods.ts';
import type { BenchSeries } from './report.ts';
import { percentile, PodWatch, pool, waitServiceAccount, waitUntil } from './podwatch.ts';
import { removeStateDir, stateDir } from '../statedirs.ts';
import { interleave, measured, repsOf, reportRatios, spread as spreadOf, spreadFigures } from './repeat.ts';

/**
 * The fault suite: the real local system (etcd, super apiserver, scheduler, kwok nodes, tenant apiservers) with two
 * `vc manager` processes under leader election, tenants as VirtualClusters (import provisioner, one from a GitSource
 * on a loopback git server), and one fault per case while Pods are synced. Every case ends by comparing every
 * tenant's Pods with the super cluster's (compareCopies): lost, duplicated, orphaned and wrongly owned copies, all
 * of which must be 0, and the time from the end of the fault until the super cluster matches and every tenant Pod is
 * Running again.
 */

/** FAULT_CASES are the cases of the suite, in the order `npm run bench -- faults` runs them. */
export const FAULT_CASES = [
  'baseline',
  'kill-manager',
  'super-apiserver',
  'tenant-apiserver',
  'etcd',
  'git-server',
  'tenant-delete',
] as const;
/** FaultCase is one of FAULT_CASES. */
export type FaultCase = (typeof FAULT_CASES)[number];

/**
 * selectedCases reads `--case <name>` (repeatable, or comma-separated; also `--case=<name>`) from the arguments: the
 * cases to run, every case when none is named. The baseline always runs: the other cases' speed is reported against
 * it.
 */
export function selectedCases(argv: readonly string[]): FaultCase[] {
  const named: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--case') named.push(...(argv[++i] ?? '').split(','));
    else if (a.startsWith('--case=')) named.push(...a.slice('--case='.length).split(','));
  }
  const unknown = named.filter((n) => !(FAULT_CASES as readonly string[]).includes(n));
  if (unknown.length) throw new Error(`--case: unknown case ${unknown.join(', ')} (cases: ${FAULT_CASES.join(', ')})`);
  if (!named.length) return [...FAULT_CASES];
  return FAULT_CASES.filter((c) => c === 'baseline' || named.includes(c));
}

/** FaultSizes are the FAULTS_* sizes that decide how many Pods the suite holds at once. */
export interface FaultSizes {
  tenants: number;
  pods: number;
  killPods: number;
  deletePods: number;
  tenantDownSeconds: number;
  paceMs: number;
}

/**
 * peakPods is the most Pods the selected cases hold at once (each case's Pods are deleted before the next), which
 * sizes the kwok nodes: the tenant-apiserver case's other tenants create one Pod each per pace, at most every
 * `paceMs`, in two phases of `tenantDownSeconds`, beside the downed tenant's own share.
 */
export function peakPods(cases: readonly FaultCase[], s: FaultSizes): number {
  const paced =
    2 * Math.ceil((s.tenantDownSeconds * 1000) / s.paceMs) * (s.tenants - 1) + Math.ceil(s.pods / s.tenants);
  return Math.max(
    s.pods,
    cases.includes('kill-manager') ? s.killPods : 0,
    cases.includes('tenant-delete') ? s.deletePods + s.pods : 0,
    cases.includes('tenant-apiserver') ? paced : 0,
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PODS_PER_NODE = 110;
const CONCURRENCY = 16;
// Shorter than the defaults (15/10/2) for quicker handovers, as the restart test; 6/4/1 flapped on a loaded machine.
const LEASE = { leaseDurationSeconds: 10, renewDeadlineSeconds: 8, retryPeriodSeconds: 1 };

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string };
}

/** BenchTenant is one tenant control plane and its VirtualCluster. */
interface BenchTenant {
  index: number;
  name: string;
  cp: LocalControlPlane;
  client: KubeClient;
  key: string;
  watch?: PodWatch;
  deleted?: boolean;
}

/** CaseResult is what one case reports. */
interface CaseResult {
  pods: number;
  lost: number;
  duplicated: number;
  orphaned: number;
  wrongOwner: number;
  tenantPodsNotRunning: number;
  /** Pods the bench created that the system deleted from their tenant (counted in lost) */
  tenantPodsDeletedBySystem: number;
  convergeSeconds: number;
  /** Pods per second from the first create to convergence (the baseline's without any fault) */
  podsPerSecond: number;
  loadAverage: number[];
  findings?: CopyFindings;
  [k: string]: unknown;
}

/** faultsBench runs the fault cases named by `--case` (all when none), sized by the FAULTS_* environment. */
export async function faultsBench(): Promise<BenchResult> {
  const cases = selectedCases(process.argv.slice(2));
  // BENCH_SIZE=small: every case at a fifth to a tenth of its Pods, kills and outage, three repetitions in about the
  // time one full run takes on this 2-core host.
  const T = Math.max(2, envSized('FAULTS_TENANTS', { full: 4, small: 3 }));
  const PODS = envSized('FAULTS_PODS', { full: 1000, small: 200 });
  const KILL_PODS = envSized('FAULTS_KILL_PODS', { full: 5000, small: 600 });
  const KILLS = envSized('FAULTS_KILLS', { full: 20, small: 5 });
  const DELETE_PODS = envSized('FAULTS_DELETE_PODS', { full: 1000, small: 200 });
  const TENANT_DOWN_S = envSized('FAULTS_TENANT_DOWN_SECONDS', { full: 60, small: 20 });
  const OUTAGE_S = envInt('FAULTS_OUTAGE_SECONDS', 10);
  const PACE_MS = envInt('FAULTS_PACE_MS', 500);
  const REPS = repsOf();
  const maxPods = peakPods(cases, {
    tenants: T,
    pods: PODS,
    killPods: KILL_PODS,
    deletePods: DELETE_PODS,
    tenantDownSeconds: TENANT_DOWN_S,
    paceMs: PACE_MS,
  });
  const nodes = Math.max(2, Math.ceil((maxPods * 1.3) / PODS_PER_NODE));
  const log = (msg: string) => process.stdout.write(`[faults ${new Date().toISOString().slice(11, 23)}] ${msg}\n`);
  const dir = stateDir('vc-bench-faults-');
  const spawner = new ManagerSpawner();
  let t: TestSuper | undefined;
  let git: GitServer | undefined;
  const results: Partial<Record<FaultCase, CaseResult>> = {};
  const series: BenchSeries = { latencyMs: {}, tenantP99Ms: [] };
  try {
    log(`cases ${cases.join(', ')}; ${T} tenants, ${nodes} kwok nodes; load ${loadavg().map((x) => x.toFixed(1))}`);
    t = await startTestSuper({ nodes });
    const sc = t.sc;
    const superClient = t.client;
    await applyCRDs(sc);
    await superClient.apply(
      R.tenantpolicies,
      {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'TenantPolicy',
        metadata: { name: 'faults', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
        // The default quota (500 Pods per super namespace) would hold a tenant's Pods back at this scale: every
        // tenant's Pods are in its `default` namespace.
        spec: {
          provisioners: { allowed: ['import'] },
          grants: { importSecrets: Array.from({ length: T }, (_, i) => ({ namespace: 'default', name: `t${i}-src` })) },
          quota: {
            resourceQuota: { hard: { pods: String(maxPods) } },
            objects: { pods: { count: maxPods } },
          },
        },
      },
      'bench',
    );
    // Tenant control planes (apiserver only: a Pod benchmark needs no controllers), imported by VirtualClusters; the
    // last one comes from a GitSource.
    const tenants: BenchTenant[] = [];
    await pool(
      Array.from({ length: T }, (_, i) => i),
      4,
      async (i) => {
        const cp = await sc.addControlPlane(`tenant-${i}`, { controllerManager: false });
        const client = await cp.client();
        await client
          .create(R.serviceaccounts, {
            apiVersion: 'v1',
            kind: 'ServiceAccount',
            metadata: { name: 'default', namespace: 'default' },
          })
          .catch((e: unknown) => {
            if (!isAlreadyExists(e)) throw e;
          });
        await superClient.create(R.secrets, {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: `t${i}-src`, namespace: 'default' },
          data: { kubeconfig: Buffer.from(readFileSync(cp.kubeconfigPath, 'utf8')).toString('base64') },
        });
        tenants[i] = { index: i, name: `t${i}`, cp, client, key: '' };
      },
    );
    const vcSpec = (i: number, weight = 1) => ({
      provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: `t${i}-src` } } },
      weight,
    });
    const gitTenant = tenants[T - 1]!;
    git = await startGitServer();
    await git.initRepo('tenants');
    const gitVc = (weight: number) =>
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name: gitTenant.name, namespace: 'default' },
        spec: vcSpec(gitTenant.index, weight),
      });
    await git.commitFiles('tenants', { [`tenants/${gitTenant.name}.yaml`]: gitVc(1) }, 'git tenant');
    await superClient.create(GITSOURCES, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      metadata: { name: 'tenants', namespace: 'default' },
      spec: { url: git.url('tenants'), ref: { branch: 'main' }, path: 'tenants', interval: '2s' },
    });
    for (const x of tenants.slice(0, -1))
      await superClient.create(R.virtualclusters, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name: x.name, namespace: 'default' },
        spec: vcSpec(x.index),
      });

    // ---- managers ----------------------------------------------------------------------------------------------
    const config = join(dir, 'manager.yaml');
    writeFileSync(
      config,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [{ name: 'default', kubeconfig: sc.kubeconfigPath }],
        syncer: { workers: 8 },
        leaderElection: { enabled: true, ...LEASE },
        virtualClusters: { enabled: true },
        gitops: {
          enabled: true,
          cacheDir: join(dir, 'gitops-cache'),
          allowPrivateAddresses: ['127.0.0.0/8'],
          minIntervalSeconds: 1,
        },
      }),
    );
    // Each manager's whole log is kept beside the results, for the handovers' story.
    const startManager = () =>
      spawner.spawn({ config, logFile: `bench-results/faults-manager-${spawner.managers.length}.log` });
    const leader = () => spawner.leader();
    startManager();
    startManager();
    await waitUntil(
      () => !!leader(),
      120_000,
      () => 'a manager became leader',
    );

    const getVC = (name: string) => superClient.getOrNull<VirtualCluster>(R.virtualclusters, 'default', name);
    for (const x of tenants) {
      await waitUntil(
        async () => (await getVC(x.name))?.status?.phase === 'Running',
        180_000,
        () => `VirtualCluster ${x.name} Running`,
        500,
      );
      const vc = (await getVC(x.name))!;
      x.key = rootNamespace('default', x.name, vc.metadata!.uid!);
    }
    log(`${T} VirtualClusters Running (the last from git); waiting for their super namespaces`);
    await pool(tenants, 4, (x) => waitServiceAccount(superClient, superNamespace(x.key, 'default')));

    // ---- helpers -----------------------------------------------------------------------------------------------
    const live = () => tenants.filter((x) => !x.deleted);
    // The Pods the bench created and did not delete, per tenant: one that is gone was deleted by the system, a loss
    // the end state alone cannot show.
    const createdPods = new Map<BenchTenant, Set<string>>();
    const deletedKeys = () => tenants.filter((x) => x.deleted).map((x) => x.key);
    /** createPods creates the Pods, retrying what fails (a server down) until created, at most CONCURRENCY at once */
    const createPods = async (
      jobs: Array<{ tenant: BenchTenant; name: string }>,
      onCreated?: (n: number) => void,
      startedAt?: Map<string, number>,
    ): Promise<void> => {
      let created = 0;
      await pool(jobs, CONCURRENCY, async ({ tenant, name }) => {
        const end = Date.now() + 600_000;
        for (;;) {
          startedAt?.set(`${tenant.name}/${name}`, performance.now());
          try {
            createdPods.set(tenant, (createdPods.get(tenant) ?? new Set()).add(name));
            await tenant.client.create(R.pods, {
              apiVersion: 'v1',
              kind: 'Pod',
              metadata: { name, namespace: 'default', labels: { bench: 'faults' } },
              spec: { containers: [{ name: 'c', image: 'nginx' }] },
            });
            break;
          } catch (e) {
            if (isAlreadyExists(e)) break;
            if (Date.now() > end) throw e;
            await sleep(500);
          }
        }
        onCreated?.(++created);
      });
    };
    const spread = (n: number, prefix: string, over = live()) =>
      Array.from({ length: n }, (_, j) => ({ tenant: over[j % over.length]!, name: `${prefix}-${j}` }));
    /** check compares every live tenant's Pods with the super cluster's, and counts tenant Pods not yet Running. */
    const check = async (): Promise<{
      findings: CopyFindings;
      notRunning: number;
      pods: number;
      vanished: string[];
    }> => {
      const states = await Promise.all(
        live().map(async (x) => {
          const pods = (await x.client.listAll<Pod>(R.pods)).items.filter((p) => !p.metadata?.deletionTimestamp);
          return {
            key: x.key,
            pods,
            objects: pods.map((p) => ({
              namespace: p.metadata!.namespace!,
              name: p.metadata!.name!,
              uid: p.metadata!.uid!,
            })),
          };
        }),
      );
      const [superPods, superNs] = await Promise.all([
        superClient.listAll<Pod>(R.pods),
        superClient.listAll(R.namespaces),
      ]);
      const findings = compareCopies({
        tenants: states,
        deletedTenants: deletedKeys(),
        superObjects: superPods.items.map((p) => ({
          namespace: p.metadata!.namespace!,
          name: p.metadata!.name!,
          annotations: p.metadata!.annotations,
        })),
        superNamespaces: superNs.items.map((n) => ({ name: n.metadata!.name!, labels: n.metadata!.labels })),
      });
      const notRunning = states.reduce(
        (s, x) => s + x.pods.filter((p) => p.status?.phase !== 'Running' || !p.spec?.nodeName).length,
        0,
      );
      const vanished = live().flatMap((x, i) => {
        const have = new Set(states[i]!.pods.map((p) => p.metadata!.name!));
        return [...(createdPods.get(x) ?? [])].filter((n) => !have.has(n)).map((n) => `${x.name}/default/${n}`);
      });
      return { findings, notRunning, pods: states.reduce((s, x) => s + x.pods.length, 0), vanished };
    };
    /** converge polls check until nothing is wrong, and reports the last check and the seconds since `from`. */
    const converge = async (label: string, from: number, deadlineMs = 600_000) => {
      const end = Date.now() + deadlineMs;
      let last = await check().catch(() => undefined);
      while (!last || findingsTotal(last.findings) || last.notRunning) {
        if (Date.now() > end) break;
        await sleep(Math.max(1000, (last?.pods ?? 0) / 2));
        last = await check().catch(() => last);
      }
      const seconds = (performance.now() - from) / 1000;
      if (!last) throw new Error(`${label}: no check answered`);
      const f = last.findings;
      const bad = findingsTotal(f) + last.notRunning;
      log(
        `${label}: ${bad ? 'NOT converged' : 'converged'} after ${seconds.toFixed(1)} s: ${last.pods} tenant Pods, ` +
          `lost ${f.missing.length}, duplicated ${f.duplicates.length}, orphaned ${f.orphans.length}, wrong owner ` +
          `${f.wrongOwner.length}, not Running ${last.notRunning}, tenant Pods deleted by the system ` +
          `${last.vanished.length}` +
          (bad
            ? `; e.g. ${JSON.stringify([...f.missing, ...f.duplicates, ...f.orphans, ...f.wrongOwner].slice(0, 5))}`
            : ''),
      );
      return { ...last, seconds };
    };
    /** clean deletes every live tenant's Pods and waits for the super copies to go (itself checked for orphans). */
    const clean = async (label: string) => {
      const t0 = performance.now();
      await Promise.all(
        live().map((x) =>
          x.client
            .request('DELETE', `/api/v1/namespaces/default/pods`, {
              body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
            })
            .catch(() => undefined),
        ),
      );
      for (const x of live()) createdPods.delete(x);
      const c = await converge(`${label} clean-up`, t0);
      if (findingsTotal(c.findings)) throw new Error(`${label}: clean-up left ${JSON.stringify(c.findings)}`);
    };
    const finish = async (
      name: FaultCase,
      pods: number,
      firstCreate: number,
      faultEnd: number,
      extra: Record<string, unknown> = {},
    ): Promise<CaseResult> => {
      const c = await converge(name, faultEnd);
      const f = c.findings;
      const r: CaseResult = {
        pods,
        lost: f.missing.length + c.vanished.length,
        tenantPodsDeletedBySystem: c.vanished.length,
        duplicated: f.duplicates.length,
        orphaned: f.orphans.length,
        wrongOwner: f.wrongOwner.length,
        tenantPodsNotRunning: c.notRunning,
        convergeSeconds: Number(c.seconds.toFixed(1)),
        podsPerSecond: Number((pods / ((performance.now() - firstCreate) / 1000)).toFixed(2)),
        loadAverage: loadavg().map((x) => Number(x.toFixed(2))),
        ...extra,
      };
      if (findingsTotal(f)) r.findings = { ...f, missing: f.missing.slice(0, 20), orphans: f.orphans.slice(0, 20) };
      if (c.vanished.length) r.vanished = c.vanished.slice(0, 20);
      results[name] = r;
      await clean(name);
      return r;
    };

    // ---- cases -------------------------------------------------------------------------------------------------
    // runCase runs one case of one repetition; Pod names carry the repetition, so no name of an earlier one returns.
    const runCase = async (name: FaultCase, rep: number): Promise<CaseResult> => {
      log(`== ${name}, repetition ${rep + 1}/${REPS}; load ${loadavg().map((x) => x.toFixed(1))}`);
      const t0 = performance.now();
      const tag = rep ? `r${rep + 1}-` : '';
      switch (name) {
        case 'baseline': {
          await createPods(spread(PODS, `${tag}base`));
          return finish(name, PODS, t0, t0);
        }
        case 'kill-manager': {
          let creating = true;
          const load = createPods(spread(KILL_PODS, `${tag}kill`)).finally(() => (creating = false));
          const handovers: number[] = [];
          for (let k = 0; k < KILLS; k++) {
            await waitUntil(
              () => !!leader(),
              120_000,
              () => `a leader after kill ${k}`,
              100,
            );
            // A random moment of the new leader's term: 0.5 to 4 s after it took over.
            await sleep(500 + Math.random() * 3500);
            const l = leader()!;
            const killedAt = performance.now();
            await killManager(l);
            startManager();
            await waitUntil(
              () => !!leader(),
              120_000,
              () => `a leader after kill ${k + 1}`,
              100,
            );
            handovers.push((leader()!.leaderAt! - killedAt) / 1000);
            log(
              `kill ${k + 1}/${KILLS} of manager ${l.id}: manager ${leader()!.id} leads after ` +
                `${handovers.at(-1)!.toFixed(1)} s${creating ? '' : ' (all Pods created)'}`,
            );
          }
          await load;
          return finish(name, KILL_PODS, t0, performance.now(), {
            kills: KILLS,
            handoverSecondsP50: percentile(handovers, 50),
            handoverSecondsMax: Math.max(...handovers),
          });
        }
        case 'super-apiserver':
        case 'etcd': {
          let faultEnd = 0;
          let fault: Promise<void> | undefined;
          const inject = async () => {
            log(`${name}: kill -9 after a third of the Pods was created, back after ${OUTAGE_S} s`);
            const p = name === 'etcd' ? sc.etcd.process : sc.cluster.apiserver;
            const gone = p.exited();
            p.kill();
            await gone;
            await sleep(OUTAGE_S * 1000);
            if (name === 'etcd') await sc.etcd.resume();
            else await sc.cluster.startApiserver();
            faultEnd = performance.now();
            log(`${name}: back`);
          };
          await createPods(spread(PODS, `${tag}${name === 'etcd' ? 'etcd' : 'sapi'}`), (n) => {
            if (n === Math.ceil(PODS / 3)) fault = inject();
          });
          await fault;
          return finish(name, PODS, t0, faultEnd);
        }
        case 'tenant-apiserver': {
          // The other tenants create one Pod each per pace, for the outage's length, first with every tenant up
          // (the baseline), then while the first tenant's apiserver is down; their create-to-Running is timed.
          const down = tenants[0]!;
          const others = live().filter((x) => x !== down);
          await Promise.all(
            others.map(async (x) => {
              x.watch = new PodWatch(x.client, { namespace: 'default' });
              await x.watch.start();
            }),
          );
          // Paced at no more than half the baseline's throughput: the figure is what the outage does to the others,
          // not what a backlog does (at FAULTS_PACE_MS alone the first run queued for 20 s in the all-up phase).
          // this repetition's baseline: it runs first in each
          const basePps = results.baseline?.podsPerSecond ?? 0;
          const paceMs = Math.max(PACE_MS, basePps > 0 ? Math.ceil((2000 * others.length) / basePps) : 0);
          log(`tenant-apiserver: ${others.length} other tenants create one Pod each every ${paceMs} ms`);
          // A paced Pod not Running within RUNNING_DEADLINE_MS of the phase's end counts as Infinity (and in
          // othersNotRunning) instead of holding the case forever: under leadership churn on an overloaded host a
          // run waited on such Pods with no end.
          const RUNNING_DEADLINE_MS = 600_000;
          const paced = async (prefix: string, seconds: number): Promise<number[]> => {
            const started = new Map<string, number>();
            const jobs: Array<Promise<number>> = [];
            const end = performance.now() + seconds * 1000;
            let timer: NodeJS.Timeout | undefined;
            const giveUp = new Promise<number>((res) => {
              timer = setTimeout(() => res(Infinity), seconds * 1000 + RUNNING_DEADLINE_MS);
            });
            for (let j = 0; performance.now() < end; j++) {
              for (const x of others) {
                const podName = `${prefix}-${j}`;
                jobs.push(
                  Promise.race([
                    createPods([{ tenant: x, name: podName }], undefined, started).then(async () => {
                      const at = await x.watch!.whenRunning(`default/${podName}`);
                      return at - started.get(`${x.name}/${podName}`)!;
                    }),
                    giveUp,
                  ]),
                );
              }
              await sleep(paceMs);
            }
            return Promise.all(jobs).finally(() => clearTimeout(timer));
          };
          const alone = await paced(`${tag}alone`, TENANT_DOWN_S);
          // The tenant going down has Pods of its own in flight.
          const own = createPods(spread(Math.ceil(PODS / T), `${tag}down`, [down]));
          await sleep(1000);
          log(`tenant-apiserver: ${down.name}'s apiserver down for ${TENANT_DOWN_S} s`);
          await down.cp.stopApiserver();
          const during = paced(`${tag}during`, TENANT_DOWN_S);
          await sleep(TENANT_DOWN_S * 1000);
          await down.cp.startApiserver();
          const faultEnd = performance.now();
          log(`tenant-apiserver: ${down.name}'s apiserver back`);
          const duringMs = await during;
          await own;
          for (const x of others) await x.watch?.stop();
          const p99Alone = percentile(alone, 99);
          const p99During = percentile(duringMs, 99);
          const inRep = REPS > 1 ? `, repetition ${rep + 1}` : '';
          series.latencyMs![`other tenants, all up${inRep}`] = alone.map(Math.round);
          series.latencyMs![`other tenants, ${down.name} down${inRep}`] = duringMs.map(Math.round);
          series.tenantP99Ms!.push(
            { tenant: 'others', phase: `all up${inRep}`, p99Ms: Math.round(p99Alone) },
            { tenant: 'others', phase: `${down.name} down${inRep}`, p99Ms: Math.round(p99During) },
          );
          return finish(name, alone.length + duringMs.length + Math.ceil(PODS / T), t0, faultEnd, {
            othersP99AllUpMs: Math.round(p99Alone),
            othersP99DuringOutageMs: Math.round(p99During),
            othersP99Ratio: Number((p99During / p99Alone).toFixed(2)),
            othersPodsPerPhase: alone.length,
            othersPaceMs: paceMs,
            othersNotRunning: [...alone, ...duringMs].filter((x) => x === Infinity).length,
            othersP50AllUpMs: Math.round(percentile(alone, 50)),
            othersP50DuringOutageMs: Math.round(percentile(duringMs, 50)),
          });
        }
        case 'git-server': {
          // The git server goes away while Pods of the git-defined tenant are synced; its tenant must stay served.
          // A change committed meanwhile (the tenant's weight, another in each repetition) is applied once the server
          // is back.
          const weight = rep + 2;
          let faultEnd = 0;
          let fault: Promise<void> | undefined;
          const inject = async () => {
            log(`git-server: down for ${OUTAGE_S} s; a commit lands meanwhile`);
            await git!.stop();
            await git!.commitFiles(
              'tenants',
              { [`tenants/${gitTenant.name}.yaml`]: gitVc(weight) },
              `weight ${weight}`,
            );
            await sleep(OUTAGE_S * 1000);
            await git!.start();
            faultEnd = performance.now();
          };
          await createPods(spread(PODS, `${tag}git`, [gitTenant]), (n) => {
            if (n === Math.ceil(PODS / 3)) fault = inject();
          });
          await fault;
          let appliedSeconds = NaN;
          await waitUntil(
            async () => (await getVC(gitTenant.name))?.spec?.weight === weight,
            120_000,
            () => `the commit made while git was down applied`,
            250,
          ).then(() => (appliedSeconds = (performance.now() - faultEnd) / 1000));
          const stillThere = (await getVC(gitTenant.name))?.status?.phase;
          return finish(name, PODS, t0, faultEnd, {
            commitAppliedSecondsAfterBack: Number(appliedSeconds.toFixed(1)),
            gitTenantPhase: stillThere,
          });
        }
        case 'tenant-delete': {
          // The victim (the first tenant not from git) gets DELETE_PODS Pods; its VirtualCluster is deleted once a
          // third of them was created, while the others get PODS Pods. It is back before a next repetition
          // (restoreVictim).
          const victim = tenants[0]!;
          const others = live().filter((x) => x !== victim);
          let deletedAt = 0;
          let del: Promise<void> | undefined;
          const deleteVC = async () => {
            log(`tenant-delete: deleting VirtualCluster ${victim.name} with its Pods being synced`);
            victim.deleted = true;
            deletedAt = performance.now();
            await superClient.delete(R.virtualclusters, 'default', victim.name);
            await waitUntil(
              async () => !(await getVC(victim.name)),
              300_000,
              () => `VirtualCluster ${victim.name} gone`,
              500,
            );
            log(
              `tenant-delete: VirtualCluster ${victim.name} gone after ${((performance.now() - deletedAt) / 1000).toFixed(1)} s`,
            );
          };
          await Promise.all([
            createPods(spread(DELETE_PODS, `${tag}victim`, [victim]), (n) => {
              if (n === Math.ceil(DELETE_PODS / 3)) del = deleteVC();
            }),
            createPods(spread(PODS, `${tag}others`, others)),
          ]);
          await del;
          return finish(name, DELETE_PODS + PODS, t0, deletedAt, {
            vcGoneSeconds: Number(((performance.now() - deletedAt) / 1000).toFixed(1)),
          });
        }
      }
    };
    /**
     * restoreVictim brings the tenant the tenant-delete case removed back for the next repetition: its own Pods go
     * from its control plane (nothing serves it meanwhile), then its VirtualCluster is created again and served.
     */
    const restoreVictim = async () => {
      const victim = tenants[0]!;
      await victim.client
        .request('DELETE', `/api/v1/namespaces/default/pods`, {
          body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
        })
        .catch(() => undefined);
      createdPods.delete(victim);
      await superClient.create(R.virtualclusters, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name: victim.name, namespace: 'default' },
        spec: vcSpec(victim.index),
      });
      await waitUntil(
        async () => (await getVC(victim.name))?.status?.phase === 'Running',
        180_000,
        () => `VirtualCluster ${victim.name} Running again`,
        500,
      );
      victim.key = rootNamespace('default', victim.name, (await getVC(victim.name))!.metadata!.uid!);
      victim.deleted = false;
      await waitServiceAccount(superClient, superNamespace(victim.key, 'default'));
      log(`tenant-delete: ${victim.name} back for the next repetition`);
    };
    // The cases interleaved over REPS repetitions (baseline, kill-manager, ..., baseline, ...): each case's Pods/s
    // is taken against the baseline of its own repetition, and counts only when both ran under like other load.
    const runs = await interleave<CaseResult>(
      cases.map((name) => ({ name, run: measured((rep) => runCase(name, rep)) })),
      REPS,
      async (rep, arm) => {
        if (arm === 'tenant-delete' && rep < REPS - 1) await restoreVictim();
      },
    );
    // ---- figures -----------------------------------------------------------------------------------------------
    // The counts that must be 0 are the worst repetition's; times and ratios the median (min and max beside).
    const figures: Record<string, number> = {};
    const notes: string[] = [];
    for (const name of cases) {
      const mine = runs.filter((r) => r.arm === name).map((r) => r.value);
      for (const k of ['lost', 'duplicated', 'orphaned', 'wrongOwner', 'tenantPodsNotRunning'] as const)
        figures[`${name}.${k}`] = Math.max(...mine.map((r) => r[k]));
      Object.assign(figures, spreadFigures(`${name}.convergeSeconds`, spreadOf(mine.map((r) => r.convergeSeconds))));
      const others = mine.map((r) => r.othersP99Ratio).filter((x): x is number => typeof x === 'number');
      if (others.length) Object.assign(figures, spreadFigures(`${name}.othersP99Ratio`, spreadOf(others)));
    }
    const ratios = reportRatios(
      runs,
      Object.fromEntries(
        cases
          .filter((c) => c !== 'baseline')
          .map((c) => [
            `${c}.podsPerSecondRatio`,
            { numerator: c, denominator: 'baseline', f: (r: CaseResult) => r.podsPerSecond },
          ]),
      ),
      figures,
      notes,
    );
    figures.baselinePodsPerSecond = spreadOf(
      runs.filter((r) => r.arm === 'baseline').map((r) => r.value.podsPerSecond),
    ).median;
    figures.loadAverage1m = loadavg()[0]!;
    return {
      name: 'faults',
      figures,
      notes,
      detail: {
        tenants: T,
        nodes,
        repetitions: REPS,
        size: benchSize(),
        scale: { PODS, KILL_PODS, KILLS, DELETE_PODS, TENANT_DOWN_S, OUTAGE_S, PACE_MS },
        leaderElection: LEASE,
        cases: runs,
        ratios,
        managerErrors: spawner.managers.map((m) => ({ id: m.id, log: m.log.slice(-10) })),
      },
      series,
    };
  } finally {
    await spawner.stopAll();
    await git?.close();
    await t?.stop();
    removeStateDir(dir);
  }
}
