import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { LocalEtcd } from '../../core/dev/local/etcd.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import type { ClusterVersionSpec } from '../../core/api/generated.ts';
import type { WakePhases } from '../../core/provisioners/provisioner.ts';
import type { BenchResult } from './main.ts';
import { removeStateDir, stateDir } from '../statedirs.ts';
import { interleave, measured, repsOf, reportRatios } from './repeat.ts';
import { backupAtSizes, objectCounts } from './densitybackup.ts';
import { asleepFootprint } from './densityasleep.ts';
import { rootNamespace } from '../../core/names/names.ts';
import { cpuSeconds } from '../../core/dev/local/procstats.ts';

const MiB = 1024 * 1024;
const exec = promisify(execFile);

/** quantile is the q-quantile (0..1) of xs by the nearest-rank rule. */
function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

/** apiserverHeap reads the Go heap figures of a control plane's apiserver from its /metrics, in bytes. */
async function apiserverHeap(cp: LocalControlPlane): Promise<{ alloc: number; nextGc: number }> {
  const { status, text } = await (await cp.client()).getText('/metrics');
  if (status !== 200) throw new Error(`${cp.name}: GET /metrics answered ${status}`);
  const metric = (name: string) => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    if (!m) throw new Error(`${cp.name}: /metrics has no ${name}`);
    return Number(m[1]);
  };
  return { alloc: metric('go_memstats_heap_alloc_bytes'), nextGc: metric('go_memstats_next_gc_bytes') };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * densityBench measures what sleep saves (issue 34 §4): N idle local tenants (each its own etcd, kube-apiserver and
 * kube-controller-manager, started by the local provisioner with spec.sleep, as the manager starts them) are measured
 * awake after DENSITY_SETTLE_MS, then put to sleep and measured again; then, DENSITY_ROUNDS times (default
 * BENCH_REPS, 3), each is woken by a list of namespaces through its front door (the server of its kubeconfig Secret),
 * timed from the request to the answer, and listed again awake, the two arms' ratio reported as the other
 * scenarios' (repeat.ts).
 * Memory is the resident set of each tenant's processes, also apart per process (apiserver, controller manager,
 * etcd); asleep a tenant has none (its front door is a listening socket in the manager process, counted apart as the
 * manager's own growth). Last, the first tenant is grown to each DENSITY_BACKUP_OBJECTS count of objects (1000 and
 * 10000 by default) and backed up and restored at each (densitybackup.ts).
 */
export async function densityBench(): Promise<BenchResult> {
  const n = Number(process.env.DENSITY_TENANTS ?? 3);
  const rounds = process.env.DENSITY_ROUNDS ? Number(process.env.DENSITY_ROUNDS) : repsOf();
  const settleMs = Number(process.env.DENSITY_SETTLE_MS ?? 15_000);
  // A ClusterVersion's spec (JSON) the tenants start with: the platform's flags for every tenant of that version.
  const clusterVersion = process.env.DENSITY_CLUSTER_VERSION
    ? { spec: JSON.parse(process.env.DENSITY_CLUSTER_VERSION) as ClusterVersionSpec }
    : undefined;
  // What a sleep does with each tenant's etcd (the policy's sleep.etcd): Stop, as by default, or Keep.
  const sleepEtcd = process.env.DENSITY_SLEEP_ETCD === 'Keep' ? 'Keep' : 'Stop';
  const dir = stateDir('vc-bench-density-');
  const shared = await LocalEtcd.start({ dir: join(dir, 'shared-etcd'), name: 'density/etcd' });
  const local = new LocalProvisioner(join(dir, 'tenants'), shared);
  try {
    const tenants: Array<{ vc: VirtualCluster; root: string; kubeconfig: string }> = [];
    /**
     * kubectl lists namespaces through the front door: how long until it succeeded, from its start to its exit, in
     * ms. kubectl gives up on a TLS handshake after 10 s, and the handshake waits for the wake (TLS passes through):
     * a failed try is counted and run again, as its user would.
     */
    let failedTries = 0;
    const kubectl = async (kubeconfig: string) => {
      const t0 = performance.now();
      for (let attempt = 0; ; attempt++) {
        try {
          await exec(binaryPath('kubectl'), ['--kubeconfig', kubeconfig, 'get', 'namespaces', '-o', 'name']);
          return performance.now() - t0;
        } catch (e) {
          failedTries++;
          if (attempt >= 2) throw e;
        }
      }
    };
    for (let i = 0; i < n; i++) {
      const name = `t${i}`;
      const vc = {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name, namespace: 'default', uid: `density-${i}` },
        spec: { sleep: { afterIdle: '1h' } },
      } as VirtualCluster;
      // The root namespace the manager gives it, so that a restore of its own snapshot is one in place.
      const root = rootNamespace('default', name, vc.metadata!.uid!);
      const state = await local.ensure(vc, root, clusterVersion ? { clusterVersion } : {});
      if (!state.ready || !state.result.externalAccess?.kubeconfig) throw new Error(`${root}: no front door`);
      const kubeconfig = join(dir, `${root}.kubeconfig`);
      writeFileSync(kubeconfig, state.result.externalAccess.kubeconfig, { mode: 0o600 });
      tenants.push({ vc, root, kubeconfig });
    }
    // CPU seconds all tenants' processes have used so far (a process not running counts nothing).
    const tenantsCpu = () =>
      tenants.reduce((sum, t) => {
        const procs = [...(local.controlPlane(t.root)?.processes() ?? []), local.tenantEtcd(t.root)?.process];
        return sum + procs.reduce((a, p) => a + ((p?.pid && cpuSeconds(p.pid)) || 0), 0);
      }, 0);
    /** idleCpu is the CPU the tenants' processes and this process (the manager, with the front doors) use over ms. */
    const idleCpu = async (ms: number) => {
      const [tenants0, self0] = [tenantsCpu(), cpuSeconds('self') ?? 0];
      await settle(ms);
      return {
        tenants: (tenantsCpu() - tenants0) / (ms / 1000),
        manager: ((cpuSeconds('self') ?? 0) - self0) / (ms / 1000),
      };
    };
    const awakeCpu = await idleCpu(settleMs);
    const rss = (root: string) =>
      ((local.controlPlane(root)?.rssBytes() ?? 0) + (local.tenantEtcd(root)?.process.rssBytes() ?? 0)) / MiB;
    const awake = tenants.map((t) => rss(t.root));
    const awakeAnon =
      tenants.reduce((sum, t) => {
        const cp = local.controlPlane(t.root);
        return (
          sum +
          (cp?.processes().reduce((a, p) => a + p.anonBytes(), 0) ?? 0) +
          (local.tenantEtcd(t.root)?.process.anonBytes() ?? 0)
        );
      }, 0) /
      n /
      MiB;
    // Each process apart: where an awake idle tenant's memory is.
    const perProcess = (pick: (root: string) => number | undefined) =>
      tenants.reduce((sum, t) => sum + (pick(t.root) ?? 0), 0) / n / MiB;
    const awakeByProcess = {
      apiserverRssMiB: perProcess((r) => local.controlPlane(r)?.apiserver.rssBytes()),
      controllerManagerRssMiB: perProcess((r) => local.controlPlane(r)?.controllerManager?.rssBytes()),
      etcdRssMiB: perProcess((r) => local.tenantEtcd(r)?.process.rssBytes()),
      // Anonymous resident memory (heap, stacks): RSS less the pages of the binaries, which every tenant's process of
      // the same binary shares, so what one more tenant costs.
      apiserverAnonMiB: perProcess((r) => local.controlPlane(r)?.apiserver.anonBytes()),
      controllerManagerAnonMiB: perProcess((r) => local.controlPlane(r)?.controllerManager?.anonBytes()),
      etcdAnonMiB: perProcess((r) => local.tenantEtcd(r)?.process.anonBytes()),
    };
    // What the apiserver's Go heap holds (its /metrics): the allocated heap, and the heap size at which it collects
    // next, which with GOGC at its default is twice the heap that was live at the last collection.
    const heaps = await Promise.all(tenants.map((t) => apiserverHeap(local.controlPlane(t.root)!)));
    const heapFigures = {
      apiserverHeapAllocMiB: heaps.reduce((a, h) => a + h.alloc, 0) / n / MiB,
      apiserverNextGcMiB: heaps.reduce((a, h) => a + h.nextGc, 0) / n / MiB,
    };
    // Each wake's phases as the provisioner times them (core/provisioners/provisioner.ts WakePhases).
    const wakePhases: WakePhases[] = [];
    const offWake = local.onWake((_root, _ms, phases) => wakePhases.push(phases));
    const managerBefore = process.memoryUsage().rss / MiB;
    const sleepAll = async () => {
      for (const t of tenants) {
        const answer = await local.sleep(t.vc, t.root, Date.now(), { sleepEtcd });
        if (!answer.asleep) throw new Error(`${t.root} did not sleep: ${answer.message}`);
      }
    };
    await sleepAll();
    await settle(2000);
    // asleep nothing of the tenants runs: a shorter window (at most 15 s) says as much
    const asleepCpu = await idleCpu(Math.min(settleMs, 15_000));
    const asleep = tenants.map((t) => rss(t.root));
    const managerGrowth = process.memoryUsage().rss / MiB - managerBefore;
    // What a sleeping tenant still holds (its state directory on disk, a front door in the manager), and how many
    // sleeping tenants this host has room for by each.
    const doors = Number(process.env.DENSITY_DOORS ?? 1000);
    const footprint = await asleepFootprint(
      tenants.map((t) => join(dir, 'tenants', t.root)),
      doors,
    );
    const fits = Object.entries(footprint.fit).sort((a, b) => a[1] - b[1]);
    // kubectl, as a user runs it, once per tenant: its connections end with it (a kept-alive one is use: the tenant
    // stays awake).
    const listAll = async () => {
      const ms: number[] = [];
      for (const t of tenants) ms.push(await kubectl(t.kubeconfig));
      return ms;
    };
    // Two arms in turn, `rounds` times: a request that wakes each sleeping tenant, then the same request to the tenants
    // just woken; then all are put to sleep again, outside both arms.
    const runs = await interleave<number[]>(
      [
        { name: 'wake', run: measured(listAll) },
        { name: 'awake', run: measured(listAll) },
      ],
      rounds,
      async (rep, arm) => {
        if (arm !== 'awake' || rep === rounds - 1) return;
        await settle(500);
        await sleepAll();
      },
    );
    // The last round's wakes relayed as soon as their apiservers served; ensure waits for the rest of each, as the
    // manager's reconcile does, so that every wake's phases are counted and the tenants are whole for the backups.
    for (const t of tenants) await local.ensure(t.vc, t.root, clusterVersion ? { clusterVersion } : {});
    offWake();
    const wakeMs = runs.filter((r) => r.arm === 'wake').flatMap((r) => r.value);
    // The p50 of each phase, in seconds from the wake's first request: where a wake's time goes.
    const phaseP50 = (pick: (p: WakePhases) => number | undefined) => {
      const xs = wakePhases.map(pick).filter((x): x is number => x !== undefined);
      return xs.length ? quantile(xs, 0.5) / 1000 : undefined;
    };
    const phaseFigures = Object.fromEntries(
      (
        [
          ['wakeEtcdHealthyP50Seconds', (p) => p.etcd],
          ['wakeApiserverServingP50Seconds', (p) => p.servingMs],
          ['wakeControllerManagerHealthyP50Seconds', (p) => p['kube-controller-manager']],
        ] as Array<[string, (p: WakePhases) => number | undefined]>
      ).flatMap(([name, pick]) => {
        const v = phaseP50(pick);
        return v === undefined ? [] : [[name, v]];
      }),
    );
    const awakeMs = runs.filter((r) => r.arm === 'awake').flatMap((r) => r.value);
    const ratioFigures: Record<string, number> = {};
    const ratioNotes: string[] = [];
    const ratios = reportRatios(
      runs,
      { wakeToAwakeRequestRatio: { numerator: 'wake', denominator: 'awake', f: (ms) => quantile(ms, 0.5) } },
      ratioFigures,
      ratioNotes,
    );
    // Backup and restore of the first tenant (awake after the last round) at each size, one after the other.
    const counts = objectCounts();
    const backups = counts.length
      ? await backupAtSizes(local, tenants[0]!.vc, tenants[0]!.root, join(dir, 'backups'), counts)
      : [];
    const backupFigures = Object.fromEntries(
      backups.flatMap((b) => [
        [`backupSeconds_${b.objects}`, b.backupSeconds],
        [`snapshotMiB_${b.objects}`, b.snapshotBytes / MiB],
        [`restoreSeconds_${b.objects}`, b.restoreSeconds],
      ]),
    );
    const awakeMean = awake.reduce((a, b) => a + b, 0) / n;
    const asleepMean = asleep.reduce((a, b) => a + b, 0) / n;
    return {
      name: 'density',
      figures: {
        tenants: n,
        sleepKeepsEtcd: sleepEtcd === 'Keep' ? 1 : 0,
        awakeRssMiBPerTenant: awakeMean,
        awakeAnonMiBPerTenant: awakeAnon,
        ...awakeByProcess,
        ...heapFigures,
        asleepRssMiBPerTenant: asleepMean,
        asleepToAwakeMemoryRatio: asleepMean / awakeMean,
        asleepDiskMiBPerTenant: footprint.diskMiB,
        asleepManagerKiBPerTenant: footprint.managerKiB,
        sleepingTenantsFit: fits[0]![1],
        // CPU of idle tenants in millicores (thousandths of a core) per tenant, over DENSITY_SETTLE_MS each
        awakeIdleMilliCoresPerTenant: (awakeCpu.tenants / n) * 1000,
        asleepMilliCoresPerTenant: (asleepCpu.tenants / n) * 1000,
        managerMilliCoresAwake: awakeCpu.manager * 1000,
        managerMilliCoresAsleep: asleepCpu.manager * 1000,
        wakeP50Seconds: quantile(wakeMs, 0.5) / 1000,
        wakeP99Seconds: quantile(wakeMs, 0.99) / 1000,
        awakeRequestP50Seconds: quantile(awakeMs, 0.5) / 1000,
        ...phaseFigures,
        ...ratioFigures,
        failedKubectlTries: failedTries,
        ...backupFigures,
      },
      detail: {
        awakeRequestMs: awakeMs,
        awakeRssMiB: awake,
        asleepRssMiB: asleep,
        managerRssGrowthMiBWhileAsleep: managerGrowth,
        asleepFootprint: footprint,
        wakeMs,
        wakePhases,
        backups,
        runs,
        ratios,
      },
      notes: [
        ...ratioNotes,
        `${wakeMs.length} wakes (${n} tenants x ${rounds} rounds): each \`kubectl get namespaces\` through the front ` +
          'door of a sleeping tenant, start to exit; in each round after it the same against the tenants just woken ' +
          '(awakeRequestP50Seconds); wakeToAwakeRequestRatio is p50 wake over p50 awake within a round',
        'wake phases, p50 in seconds from the first request (the provisioner times them): etcd healthy ' +
          '(wakeEtcdHealthyP50Seconds), apiserver ready and the front door relaying (wakeApiserverServingP50Seconds), ' +
          'controller manager healthy behind it (wakeControllerManagerHealthyP50Seconds); the rest of a wake is ' +
          "kubectl's own start, TLS handshake and request",
        'apiserverHeapAllocMiB and apiserverNextGcMiB are go_memstats_heap_alloc_bytes and go_memstats_next_gc_bytes ' +
          "of each awake apiserver's /metrics: with GOGC at 100 the next collection comes at twice the live heap",
        'awakeAnonMiBPerTenant (and *AnonMiB per process) is RssAnon, resident memory less the pages of the ' +
          "binaries, which every tenant's processes of one binary share: what one more tenant costs the host",
        "memory is read once awake and once asleep: what a tenant holds does not depend on the host's other load",
        `CPU is the user and system time of the tenants' processes over ${settleMs / 1000} s awake and idle, then ` +
          `again asleep (at most 15 s), in millicores per tenant; manager*: this process's own (front doors, the provisioner), ` +
          'which also runs the bench',
        ...(backups.length
          ? [
              `backup and restore: one tenant grown to ${counts.join(', then ')} ConfigMaps of ~200 bytes; at each, ` +
                'a snapshot through core/backup into a directory store (backupSeconds, snapshotMiB) and a restore of it ' +
                'in place until its apiserver answers again (restoreSeconds), every object listed back after it',
            ]
          : []),
        `asleep, a tenant runs no process; the manager's RSS changed by ${managerGrowth.toFixed(1)} MiB while all slept (front doors live in it)`,
        'what a sleeping tenant still holds: its state directory (PKI, kubeconfigs, its etcd data and write-ahead ' +
          `log) on disk, du's blocks (asleepDiskMiBPerTenant); a front door in the manager, one listening socket, ` +
          `whose resident memory is measured over ${doors} doors opened at once in this process ` +
          `(asleepManagerKiBPerTenant, DENSITY_DOORS); and its VirtualCluster and kubeconfig Secret in the meta ` +
          `cluster. sleepingTenantsFit is the least of what this host has room for: ` +
          fits.map(([k, v]) => `${k} ${v}`).join(', ') +
          ' (free disk of the state directory, available memory, open-files limit, ephemeral ports)',
      ],
    };
  } finally {
    await local.stop();
    await shared.stop();
    removeStateDir(dir);
  }
}
