import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import type { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import type { LocalSuperCluster } from '../../core/dev/local/supercluster.ts';
import type { KubeClient } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { probeReadyz } from '../../core/provisioners/native/readyz.ts';
import { CpuMeter, type CpuShare, memAvailableMiB } from './procstat.ts';
import { type ArmFigures, type ArmLoad, loadBetween, meanLoad, type RatioSpec, readLoad } from './repeat.ts';

/**
 * This module holds the day-two part of the lifecycle bench (test/bench/lifecycle.ts): on tenants the manager already
 * serves, how long it takes to notice a dead component and to have it back, how long an upgrade from the older
 * Kubernetes minor takes and how long the tenant's API does not answer meanwhile, and how long a ClusterVersion
 * change takes to roll through every tenant that uses it. Each is set against the same restarts done directly on the
 * processes in the same run, one after another, as a script or a person with kubectl would.
 */

const NS = 'default';
/** PROBE_EVERY_MS is the period of the availability prober (the issue asks for 100-200 ms). */
export const PROBE_EVERY_MS = 150;
/** PROBE_TIMEOUT_MS bounds one probe: a probe that takes longer counts as unavailable. */
const PROBE_TIMEOUT_MS = 1000;
const POLL_MS = 100;
const STEP_DEADLINE_MS = 300_000;
/** COMPONENTS are the tenant processes killed in turn, each on a tenant of its own (no back-off carried over). */
export const COMPONENTS = ['kube-apiserver', 'etcd', 'kube-controller-manager'] as const;
/** Component is one of COMPONENTS. */
export type Component = (typeof COMPONENTS)[number];
/** ROLLOUT_FLAG is the apiserver flag the ClusterVersion change sets (any allowed flag restarts the apiserver). */
export const ROLLOUT_FLAG = 'max-requests-inflight';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const since = (t0: number) => (performance.now() - t0) / 1000;

/** ProbeSample is one answer of the prober: when it was sent (ms since its start) and whether /readyz said 200. */
export interface ProbeSample {
  atMs: number;
  ok: boolean;
}

/**
 * unavailability reads a prober's samples: the time from each failed probe that follows a good one (or the start) to
 * the next good one, summed (`seconds`), the longest such stretch, and how many probes failed. A run that ends on
 * failures counts up to its last sample.
 */
export function unavailability(samples: readonly ProbeSample[]): {
  seconds: number;
  longestSeconds: number;
  failed: number;
  probes: number;
} {
  let total = 0;
  let longest = 0;
  let downSince: number | undefined;
  const close = (at: number) => {
    const d = at - downSince!;
    total += d;
    longest = Math.max(longest, d);
    downSince = undefined;
  };
  for (const s of samples) {
    if (!s.ok && downSince === undefined) downSince = s.atMs;
    else if (s.ok && downSince !== undefined) close(s.atMs);
  }
  if (downSince !== undefined) close(samples.at(-1)!.atMs);
  return {
    seconds: total / 1000,
    longestSeconds: longest / 1000,
    failed: samples.filter((s) => !s.ok).length,
    probes: samples.length,
  };
}

/**
 * limitingResource names what bounded a phase from what it measured: `CPU` when the host's cores were at least 90%
 * busy over it, `memory` when MemAvailable fell under the reserve, else `neither` (the phase waited: probe intervals,
 * restart back-off, a roll waiting for health), with the figures that decided.
 */
export function limitingResource(
  hostPercentOfOneCore: number,
  cores: number,
  minMemAvailableMiB: number,
  reserveMiB: number,
): string {
  const busy = hostPercentOfOneCore / cores;
  const figures = `host CPU ${busy.toFixed(0)}% of ${cores} cores, MemAvailable at least ${minMemAvailableMiB.toFixed(0)} MiB`;
  if (minMemAvailableMiB < reserveMiB) return `memory (${figures})`;
  if (busy >= 90) return `CPU (${figures})`;
  return `neither (${figures})`;
}

/** Prober sends GET /readyz through a tenant's kubeconfig every PROBE_EVERY_MS until stopped. */
class Prober {
  private readonly t0 = performance.now();
  readonly samples: ProbeSample[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  constructor(kubeconfig: string) {
    this.loop = (async () => {
      while (this.running) {
        const at = performance.now();
        const ok = (await probeReadyz(kubeconfig, PROBE_TIMEOUT_MS)) === true;
        this.samples.push({ atMs: at - this.t0, ok });
        await sleep(Math.max(0, PROBE_EVERY_MS - (performance.now() - at)));
      }
    })();
  }

  async stop(): Promise<ProbeSample[]> {
    this.running = false;
    await this.loop;
    return this.samples;
  }
}

/** PhaseMeter measures a phase's CPU by process group and the lowest MemAvailable seen, sampled twice a second. */
class PhaseMeter {
  private readonly cpu: CpuMeter;
  private minMem = memAvailableMiB();
  private readonly timer: NodeJS.Timeout;

  constructor(groups: Record<string, () => Array<number | undefined>>) {
    this.cpu = new CpuMeter(groups);
    this.timer = setInterval(() => (this.minMem = Math.min(this.minMem, memAvailableMiB())), 500);
  }

  stop(reserveMiB: number): { cpu: Record<string, CpuShare>; minMemAvailableMiB: number; limitedBy: string } {
    clearInterval(this.timer);
    const cpu = this.cpu.stop();
    const minMem = Math.min(this.minMem, memAvailableMiB());
    return {
      cpu,
      minMemAvailableMiB: Math.round(minMem),
      limitedBy: limitingResource(cpu.host!.percentOfOneCore, cpus().length, minMem, reserveMiB),
    };
  }
}

/** DayTwoSetup is what the lifecycle bench hands over: its clusters, the tenants it made, and how to make one more. */
export interface DayTwoSetup {
  sc: LocalSuperCluster;
  client: KubeClient;
  local: LocalProvisioner;
  /** names of the tenants (namespace default) on ClusterVersion `clusterVersion`, all Running */
  tenants: readonly string[];
  clusterVersion: string;
  /**
   * one ClusterVersion on the older minor for each repetition, when its binaries are here (the upgrade is measured
   * only then): a repetition's upgraded tenant names its own alone, and the upgrade is an edit of its kubernetesVersion
   */
  olderClusterVersions?: readonly string[];
  newerVersion: string;
  /** creates a tenant on a ClusterVersion and resolves once its kubeconfig answers */
  create: (name: string, clusterVersion: string) => Promise<void>;
  /** deletes a tenant made by `create` and resolves once its VirtualCluster is gone */
  remove: (name: string) => Promise<void>;
  reserveMiB: number;
}

/** DayTwoValue is what one arm of one repetition measured: flat figures (seconds, counts) and its detail. */
export type DayTwoValue = ArmFigures;

/** DayTwoArm is one arm of the day-two bench, run once per repetition by interleave. */
export interface DayTwoArm {
  name: string;
  run: (rep: number) => Promise<{ value: DayTwoValue; load: ArmLoad }>;
}

/**
 * DAY_TWO_RATIOS are the day-two ratios of a manager's arm to the same restarts by hand in the same repetition, each
 * with the figure it takes from either arm.
 */
export const DAY_TWO_RATIOS: Record<string, RatioSpec<DayTwoValue>> = {
  ...Object.fromEntries(
    COMPONENTS.map((c) => [
      `${c}.restoreRatio`,
      {
        numerator: 'kill',
        denominator: 'killByHand',
        f: (v: DayTwoValue) => v.figures[`${c}.restoreSeconds`]!,
        fDenominator: (v: DayTwoValue) => v.figures[`${c}.byHandRestartSeconds`]!,
      },
    ]),
  ),
  'upgrade.secondsRatio': {
    numerator: 'upgrade',
    denominator: 'upgradeByHand',
    f: (v) => v.figures['upgrade.seconds']!,
    fDenominator: (v) => v.figures['upgrade.byHandRestartSeconds']!,
  },
  'upgrade.unavailableRatio': {
    numerator: 'upgrade',
    denominator: 'upgradeByHand',
    f: (v) => v.figures['upgrade.unavailableSeconds']!,
    fDenominator: (v) => v.figures['upgrade.byHandUnavailableSeconds']!,
  },
  'rollout.secondsRatio': {
    numerator: 'rollout',
    denominator: 'rolloutByHand',
    f: (v) => v.figures['rollout.seconds']!,
    fDenominator: (v) => v.figures['rollout.byHandSeconds']!,
  },
};

/**
 * dayTwoArms returns the day-two measurements on the tenants of `s` as arms for interleave, in the order they run in
 * each repetition: each manager's arm followed by the same restarts by hand (`kill`, `killByHand`, `upgrade`,
 * `upgradeByHand` when the older minor is built, `rollout`, `rolloutByHand`). Each arm's load is taken over what it
 * times, not over its preparation (the upgrade's fresh tenant, the wait for health before a kill).
 */
export function dayTwoArms(s: DayTwoSetup): DayTwoArm[] {
  const { client, local } = s;
  const get = (name: string) => client.get<VirtualCluster>(R.virtualclusters, NS, name);
  const rootOf = async (name: string) => (await get(name)).status!.clusterNamespace!;
  const kubeconfigOf = async (name: string) => {
    const vc = await get(name);
    const secret = await client.get<{ data?: { kubeconfig?: string } }>(
      R.secrets,
      NS,
      vc.status!.kubeconfigSecretName!,
    );
    return Buffer.from(secret.data!.kubeconfig!, 'base64').toString('utf8');
  };
  const roots = new Map<string, string>();
  const tenantPids = () =>
    [...roots.values()].flatMap((root) => {
      const cp = local.controlPlane(root);
      return [...(cp?.processes() ?? []), ...(local.tenantEtcd(root) ? [local.tenantEtcd(root)!.process] : [])].map(
        (p) => p.pid,
      );
    });
  const meter = () =>
    new PhaseMeter({
      tenants: tenantPids,
      superCluster: () => [s.sc.etcd.process.pid, ...s.sc.cluster.processes().map((p) => p.pid)],
    });
  const rootsOf = async () => {
    for (const n of s.tenants) if (!roots.has(n)) roots.set(n, await rootOf(n));
  };

  /** until polls `check` every POLL_MS and resolves with the seconds since t0 at which it first held. */
  const until = async (
    what: string,
    t0: number,
    check: () => Promise<boolean>,
    deadlineMs = STEP_DEADLINE_MS,
  ): Promise<number> => {
    for (;;) {
      if (await check().catch(() => false)) return since(t0);
      if (performance.now() - t0 > deadlineMs)
        throw new Error(`lifecycle day two: ${what} not within ${deadlineMs / 1000} s`);
      await sleep(POLL_MS);
    }
  };
  const component = (vc: VirtualCluster, name: string) => vc.status?.components?.find((c) => c.name === name);
  const ready = (vc: VirtualCluster) => vc.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  const servingHealthy = (vc: VirtualCluster) =>
    vc.status?.phase === 'Running' && ready(vc) && COMPONENTS.every((c) => component(vc, c)?.healthy);
  /** killed is the tenant whose component is killed in a repetition: another one each time where there are enough */
  const killed = (rep: number, i: number) => s.tenants[(rep * COMPONENTS.length + i) % s.tenants.length]!;

  // 1. A component killed (SIGKILL): the manager's detection and restore.
  const kill = async (rep: number) => {
    await rootsOf();
    const kills: Record<string, unknown> = {};
    const figures: Record<string, number> = {};
    const loads: ArmLoad[] = [];
    const m = meter();
    for (const [i, name] of COMPONENTS.entries()) {
      const tenant = killed(rep, i);
      const root = roots.get(tenant)!;
      const kubeconfig = await kubeconfigOf(tenant);
      await until(`${tenant} healthy before the kill`, performance.now(), async () =>
        servingHealthy(await get(tenant)),
      );
      const before = component(await get(tenant), name)?.restarts ?? 0;
      const proc = () =>
        name === 'etcd'
          ? local.tenantEtcd(root)!.process
          : name === 'kube-apiserver'
            ? local.controlPlane(root)!.apiserver
            : local.controlPlane(root)!.controllerManager!;
      const oldPid = proc().pid;
      const l0 = readLoad();
      const t0 = performance.now();
      proc().kill();
      const [detect, processBack, restore] = await Promise.all([
        until(`${tenant}: the manager reporting ${name} down`, t0, async () => {
          const vc = await get(tenant);
          const c = component(vc, name);
          return vc.status?.phase === 'Degraded' || !ready(vc) || c?.healthy === false || (c?.restarts ?? 0) > before;
        }),
        until(`${tenant}: ${name} running again`, t0, async () => proc().pid !== undefined && proc().pid !== oldPid),
        until(`${tenant}: Running and healthy after ${name} was killed`, t0, async () => {
          const vc = await get(tenant);
          return (
            servingHealthy(vc) &&
            (component(vc, name)?.restarts ?? 0) > before &&
            (await probeReadyz(kubeconfig, PROBE_TIMEOUT_MS)) === true
          );
        }),
      ]);
      loads.push(loadBetween(l0, readLoad()));
      kills[name] = { tenant, detectSeconds: detect, processBackSeconds: processBack, restoreSeconds: restore };
      figures[`${name}.detectSeconds`] = detect;
      figures[`${name}.processBackSeconds`] = processBack;
      figures[`${name}.restoreSeconds`] = restore;
      process.stderr.write(
        `lifecycle: repetition ${rep + 1}: killed ${name} of ${tenant}: reported down after ${detect.toFixed(1)} s, ` +
          `process back ${processBack.toFixed(1)} s, Running and answering ${restore.toFixed(1)} s\n`,
      );
    }
    return { value: { figures, detail: { kills, resources: m.stop(s.reserveMiB) } }, load: meanLoad(loads) };
  };

  // The same processes stopped and started again by hand, each timed from the start to its own health check.
  const killByHand = async (rep: number) => {
    const figures: Record<string, number> = {};
    const loads: ArmLoad[] = [];
    for (const [i, name] of COMPONENTS.entries()) {
      const root = roots.get(killed(rep, i))!;
      const l0 = readLoad();
      let t1: number;
      if (name === 'etcd') {
        const etcd = local.tenantEtcd(root)!;
        await etcd.process.stop(0);
        t1 = performance.now();
        await etcd.resume();
      } else if (name === 'kube-apiserver') {
        const cp = local.controlPlane(root)!;
        await cp.apiserver.stop(0);
        t1 = performance.now();
        await cp.startApiserver();
      } else {
        const cp = local.controlPlane(root)!;
        await cp.controllerManager!.stop(0);
        t1 = performance.now();
        await cp.startControllerManager();
      }
      figures[`${name}.byHandRestartSeconds`] = since(t1);
      loads.push(loadBetween(l0, readLoad()));
    }
    process.stderr.write(
      `lifecycle: repetition ${rep + 1}: the same restarts by hand ` +
        COMPONENTS.map((c) => `${c} ${figures[`${c}.byHandRestartSeconds`]!.toFixed(1)} s`).join(', ') +
        '\n',
    );
    return { value: { figures, detail: {} }, load: meanLoad(loads) };
  };

  // 2. An upgrade from the older minor, with the API probed throughout, on a tenant made for it; then the same
  // components restarted by hand on it.
  const upgrades = new Map<number, { name: string; root: string; kubeconfig: string; plan: string[] }>();
  const upgrade = async (rep: number) => {
    const older = s.olderClusterVersions![rep]!;
    const name = `bench-upgrade-r${rep + 1}`;
    await s.create(name, older);
    const root = await rootOf(name);
    const kubeconfig = await kubeconfigOf(name);
    const m = meter();
    const messages = new Set<string>();
    const prober = new Prober(kubeconfig);
    const l0 = readLoad();
    const t0 = performance.now();
    // The ClusterVersion edit a platform commits: its tenants move to the newer minor.
    await client.patch(R.clusterversions, undefined, older, { spec: { kubernetesVersion: s.newerVersion } }, 'merge');
    const seconds = await until(`${name} upgraded to ${s.newerVersion}`, t0, async () => {
      const vc = await get(name);
      if (vc.status?.phase === 'Updating' && vc.status.message) messages.add(vc.status.message);
      const applied = vc.status?.conditions?.find((c) => c.type === 'SpecApplied');
      if (vc.status?.phase !== 'Running' || applied?.status !== 'True') return false;
      const v = await (await local.controlPlane(root)!.client()).request<{ gitVersion: string }>('GET', '/version');
      return v.gitVersion === s.newerVersion;
    });
    const load = loadBetween(l0, readLoad());
    const during = unavailability(await prober.stop());
    // The components the roll restarted, from its Updating message ("rolling a, then b to the new spec").
    const plan = [...messages]
      .map((x) => /^rolling (.*) to the new spec/.exec(x)?.[1])
      .find((x) => x)
      ?.split(', then ') ?? ['kube-apiserver', 'kube-controller-manager'];
    upgrades.set(rep, { name, root, kubeconfig, plan });
    process.stderr.write(
      `lifecycle: repetition ${rep + 1}: upgrade took ${seconds.toFixed(1)} s (${plan.join(', ')}), API unavailable ` +
        `${during.seconds.toFixed(1)} s (${during.failed}/${during.probes} probes failed)\n`,
    );
    return {
      value: {
        figures: { 'upgrade.seconds': seconds, 'upgrade.unavailableSeconds': during.seconds },
        detail: { from: older, plan, unavailable: during, resources: m.stop(s.reserveMiB) },
      },
      load,
    };
  };
  const upgradeByHand = async (rep: number) => {
    const u = upgrades.get(rep)!;
    const prober = new Prober(u.kubeconfig);
    await sleep(1000);
    const l0 = readLoad();
    const t1 = performance.now();
    const cp = local.controlPlane(u.root)!;
    for (const c of u.plan) {
      if (c === 'etcd') {
        const etcd = local.tenantEtcd(u.root)!;
        await etcd.process.stop();
        await etcd.resume();
      } else if (c === 'kube-apiserver') {
        await cp.apiserver.stop();
        await cp.startApiserver();
      } else {
        await cp.restartControllerManager();
      }
    }
    const seconds = since(t1);
    const load = loadBetween(l0, readLoad());
    await sleep(1000);
    const byHand = unavailability(await prober.stop());
    process.stderr.write(
      `lifecycle: repetition ${rep + 1}: the same restarts by hand ${seconds.toFixed(1)} s, unavailable ` +
        `${byHand.seconds.toFixed(1)} s\n`,
    );
    // The upgraded tenant goes: the next repetition upgrades a tenant of its own.
    await s.remove(u.name);
    return {
      value: {
        figures: { 'upgrade.byHandRestartSeconds': seconds, 'upgrade.byHandUnavailableSeconds': byHand.seconds },
        detail: { unavailable: byHand },
      },
      load,
    };
  };

  // 3. A ClusterVersion change rolled through every tenant on it, then the same restarts by hand one after another.
  const rollout = async (rep: number) => {
    await rootsOf();
    const cv = await client.get<{ spec?: { rollout?: { maxUnavailable?: number } } }>(
      R.clusterversions,
      undefined,
      s.clusterVersion,
    );
    const maxUnavailable = cv.spec?.rollout?.maxUnavailable ?? 1;
    // Another value in each repetition, so that each one changes the flag.
    const value = String(400 + rep);
    const m = meter();
    let mostUpdating = 0;
    const l0 = readLoad();
    const t0 = performance.now();
    await client.patch(
      R.clusterversions,
      undefined,
      s.clusterVersion,
      { spec: { apiServer: { extraArgs: { [ROLLOUT_FLAG]: value } } } },
      'merge',
    );
    const done = new Map<string, number>();
    // A roll waits for each tenant's health after each step, about 20 s a tenant here (5 tenants: 93 s), so its
    // deadline grows with the tenants it goes through, maxUnavailable at a time.
    const rollDeadlineMs = Math.max(STEP_DEADLINE_MS, (60_000 * s.tenants.length) / maxUnavailable);
    await until(
      `the ClusterVersion change through ${s.tenants.length} tenants`,
      t0,
      async () => {
        const all = (await client.list<VirtualCluster>(R.virtualclusters, { namespace: NS })).items.filter((v) =>
          s.tenants.includes(v.metadata!.name!),
        );
        mostUpdating = Math.max(mostUpdating, all.filter((v) => v.status?.phase === 'Updating').length);
        for (const v of all) {
          const n = v.metadata!.name!;
          if (done.has(n)) continue;
          const applied = v.status?.conditions?.find((c) => c.type === 'SpecApplied');
          if (v.status?.phase !== 'Running' || applied?.status !== 'True') continue;
          if (cmdline(local.controlPlane(roots.get(n)!)?.apiserver.pid).includes(`--${ROLLOUT_FLAG}=${value}`))
            done.set(n, since(t0));
        }
        return done.size === s.tenants.length;
      },
      rollDeadlineMs,
    );
    const seconds = since(t0);
    const load = loadBetween(l0, readLoad());
    process.stderr.write(
      `lifecycle: repetition ${rep + 1}: ClusterVersion change rolled through ${s.tenants.length} tenants ` +
        `(maxUnavailable ${maxUnavailable}, at most ${mostUpdating} Updating at once) in ${seconds.toFixed(1)} s\n`,
    );
    return {
      value: {
        figures: {
          'rollout.tenants': s.tenants.length,
          'rollout.maxUnavailable': maxUnavailable,
          'rollout.seconds': seconds,
          'rollout.mostUpdatingAtOnce': mostUpdating,
        },
        detail: {
          flag: `--${ROLLOUT_FLAG}=${value}`,
          doneAtSeconds: Object.fromEntries(done),
          resources: m.stop(s.reserveMiB),
        },
      },
      load,
    };
  };
  const rolloutByHand = async (rep: number) => {
    const m = meter();
    const l0 = readLoad();
    const t1 = performance.now();
    for (const n of s.tenants) {
      const cp = local.controlPlane(roots.get(n)!)!;
      await cp.apiserver.stop();
      await cp.startApiserver();
    }
    const seconds = since(t1);
    const load = loadBetween(l0, readLoad());
    process.stderr.write(
      `lifecycle: repetition ${rep + 1}: the same apiserver restarts by hand one after another ${seconds.toFixed(1)} s\n`,
    );
    return {
      value: { figures: { 'rollout.byHandSeconds': seconds }, detail: { resources: m.stop(s.reserveMiB) } },
      load,
    };
  };

  return [
    { name: 'kill', run: kill },
    { name: 'killByHand', run: killByHand },
    ...(s.olderClusterVersions?.length
      ? [
          { name: 'upgrade', run: upgrade },
          { name: 'upgradeByHand', run: upgradeByHand },
        ]
      : []),
    { name: 'rollout', run: rollout },
    { name: 'rolloutByHand', run: rolloutByHand },
  ];
}

/** cmdline is the command line of a process, arguments joined by spaces; empty when it is gone. */
function cmdline(pid: number | undefined): string {
  if (!pid) return '';
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}
