/**
 * The CPU limit of one local tenant control plane: its etcd, kube-apiserver and kube-controller-manager run in a
 * cgroup of the cpu controller of their own, whose CFS quota is the most CPU they get and whose weight is their share
 * when the host's cores are contended (a TenantPolicy's quota.controlPlaneCPU). A tenant that writes as fast as its
 * own apiserver takes then cannot take the cores the syncer and the other tenants' control planes need.
 *
 * cgroup v1 (the cpu controller mounted at /sys/fs/cgroup/cpu, as on a hybrid host) gets cpu.cfs_quota_us and
 * cpu.shares; cgroup v2 with the cpu controller available gets cpu.max and cpu.weight, in the same directory as the
 * control plane's network confinement (netconfine.ts), whose name this shares.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlPlaneCpu } from '../../api/tenantpolicy.ts';
import { cgroup2Root, CONFINE_PREFIX, confinementNames } from './netconfine.ts';

/** CFS_PERIOD_US is the CFS period the quota is spent over: the kernel's default, 100 ms. */
export const CFS_PERIOD_US = 100_000;

/** CpuHierarchy is where this host's cpu controller is: a cgroup v1 mount of its own, or the v2 hierarchy. */
export interface CpuHierarchy {
  version: 1 | 2;
  root: string;
}

/** V1_CPU_ROOT is where a hybrid or v1 host mounts the cpu controller. */
const V1_CPU_ROOT = '/sys/fs/cgroup/cpu';

/**
 * cpuHierarchy finds the cpu controller on this host: the v2 hierarchy when the controller is bound to it, else the
 * v1 mount; undefined when there is neither (or they cannot be written: not root), and control planes run unlimited.
 */
export function cpuHierarchy(): CpuHierarchy | undefined {
  const v2 = cgroup2Root();
  if (v2) {
    const controllers = readFileSync(join(v2, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
    if (controllers.includes('cpu')) return { version: 2, root: v2 };
  }
  if (existsSync(join(V1_CPU_ROOT, 'cpu.shares')) && existsSync(join(V1_CPU_ROOT, 'cpu.cfs_quota_us')))
    return { version: 1, root: V1_CPU_ROOT };
  return undefined;
}

/**
 * sharesToWeight converts cgroup v1 cpu.shares (2..262144) to cgroup v2 cpu.weight (1..10000) linearly, as the kubelet
 * and runc convert them.
 */
export function sharesToWeight(shares: number): number {
  return Math.floor(1 + ((shares - 2) * 9999) / 262142);
}

/** cpuFiles are the controller files, and what is written to each, that give a cgroup the limit `cpu`. */
export function cpuFiles(version: 1 | 2, cpu: ControlPlaneCpu): Array<[file: string, value: string]> {
  const quota = Math.round((cpu.millicores * CFS_PERIOD_US) / 1000);
  if (version === 1)
    return [
      ['cpu.cfs_period_us', String(CFS_PERIOD_US)],
      ['cpu.cfs_quota_us', String(quota)],
      ['cpu.shares', String(cpu.shares)],
    ];
  return [
    ['cpu.max', `${quota} ${CFS_PERIOD_US}`],
    ['cpu.weight', String(sharesToWeight(cpu.shares))],
  ];
}

/**
 * CpuCgroup is the cpu cgroup of the control plane `name` (a tenant's root namespace): `vc-cp-<hash>` under the cpu
 * hierarchy. apply makes it and writes the limit (again: a changed policy reaches running processes at once); the
 * processes enter it by its procsFile before they start; remove deletes it once they are gone.
 */
export class CpuCgroup {
  readonly dir: string;

  constructor(
    name: string,
    readonly hierarchy: CpuHierarchy,
  ) {
    this.dir = join(hierarchy.root, confinementNames(name).cgroup);
  }

  /** procsFile is the file a process writes its pid into to enter the cgroup (with every thread it has). */
  get procsFile(): string {
    return join(this.dir, 'cgroup.procs');
  }

  /** apply creates the cgroup if it is missing and sets its limit. */
  apply(cpu: ControlPlaneCpu): void {
    if (this.hierarchy.version === 2) enableCpuController(this.hierarchy.root);
    mkdirSync(this.dir, { recursive: true });
    for (const [file, value] of cpuFiles(this.hierarchy.version, cpu)) {
      try {
        writeFileSync(join(this.dir, file), value);
      } catch (e) {
        throw new Error(`setting ${join(this.dir, file)} to ${value}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }

  /** limit reads back what the cgroup's limit files say now. */
  limit(): Record<string, string> {
    const files = this.hierarchy.version === 1 ? ['cpu.cfs_quota_us', 'cpu.shares'] : ['cpu.max', 'cpu.weight'];
    return Object.fromEntries(files.map((f) => [f, readFileSync(join(this.dir, f), 'utf8').trim()]));
  }

  /** pids are the processes in the cgroup now. */
  pids(): number[] {
    if (!existsSync(this.procsFile)) return [];
    return readFileSync(this.procsFile, 'utf8').split('\n').filter(Boolean).map(Number);
  }

  /**
   * remove deletes the cgroup once its processes are gone (the kernel frees an exited process a moment later); a
   * cgroup that still holds one (an etcd kept through a sleep) stays, and a missing one is not an error.
   */
  async remove(): Promise<void> {
    for (let i = 0; i < 50 && existsSync(this.dir); i++) {
      if (this.pids().length > 0 && i > 0) return;
      try {
        rmdirSync(this.dir);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}

/** enableCpuController lets the children of a cgroup v2 root use the cpu controller (idempotent). */
function enableCpuController(root: string): void {
  const file = join(root, 'cgroup.subtree_control');
  if (readFileSync(file, 'utf8').split(/\s+/).includes('cpu')) return;
  writeFileSync(file, '+cpu');
}

/**
 * controlPlaneCgroup is the cpu cgroup of the tenant `root`'s control plane with the limit `cpu` (made or updated), or
 * undefined when this host has no cpu controller that can be written (then the control plane runs unlimited and the
 * reason is returned, for the log).
 */
export function controlPlaneCgroup(
  root: string,
  cpu: ControlPlaneCpu,
  hierarchy: CpuHierarchy | undefined = cpuHierarchy(),
): { cgroup: CpuCgroup } | { unavailable: string } {
  if (!hierarchy) return { unavailable: 'no cpu cgroup controller on this host (cgroup v1 cpu or v2 with cpu)' };
  const cgroup = new CpuCgroup(root, hierarchy);
  try {
    cgroup.apply(cpu);
  } catch (e) {
    return { unavailable: e instanceof Error ? e.message : String(e) };
  }
  return { cgroup };
}

/**
 * PLATFORM_CPU_SHARES is the cpu weight of the platform's own process on a host that runs local tenant control planes
 * (the manager of `vc up`, whose syncer serves every tenant): cgroup v1's largest cpu.shares, cgroup v2 cpu.weight
 * 10000. A tenant may be granted 16384 (MAX_CONTROL_PLANE_CPU) and gets 4096 by default, so the platform outweighs
 * the sum of the `vc-cp-*` cgroups of up to 16 tenants at the most and 64 at the default: a tenant whose control
 * plane takes the cores cannot make the syncer wait for one, and the syncer's fair queue, not the host's scheduler,
 * decides whose work it does next. It has no quota: it takes only the CPU the tenants' work asks of it.
 */
export const PLATFORM_CPU_SHARES = 262_144;

/** PLATFORM_CGROUP_PREFIX names the platform cgroup of one process: `vc-platform-<pid>`. */
export const PLATFORM_CGROUP_PREFIX = 'vc-platform-';

/**
 * PlatformCgroup is the cpu cgroup of weight PLATFORM_CPU_SHARES that one platform process (this one, by default)
 * runs in. enter makes it and moves the process with all its threads into it; children started afterwards inherit
 * it, so a child that is not the platform's (a tenant's process without a cgroup of its own) is handed back with
 * release. leave moves the process back where it came from and deletes the cgroup; a process killed outright leaves
 * it empty, and sweepCpuCgroups removes it.
 */
export class PlatformCgroup {
  readonly dir: string;
  /** the cgroup of the cpu hierarchy the process was in before enter (its procs file) */
  readonly originProcs: string;

  constructor(
    readonly hierarchy: CpuHierarchy,
    readonly pid: number = process.pid,
  ) {
    this.dir = join(hierarchy.root, `${PLATFORM_CGROUP_PREFIX}${pid}`);
    this.originProcs = join(hierarchy.root, cgroupOf(pid, hierarchy.version), 'cgroup.procs');
  }

  /** enter creates the cgroup with the platform's weight and moves the process into it. */
  enter(): void {
    if (this.hierarchy.version === 2) enableCpuController(this.hierarchy.root);
    mkdirSync(this.dir, { recursive: true });
    const [file, value] =
      this.hierarchy.version === 1
        ? ['cpu.shares', String(PLATFORM_CPU_SHARES)]
        : ['cpu.weight', String(sharesToWeight(PLATFORM_CPU_SHARES))];
    writeFileSync(join(this.dir, file), value);
    writeFileSync(this.procsFile, String(this.pid));
  }

  /** procsFile is the file a process writes its pid into to enter the cgroup. */
  get procsFile(): string {
    return join(this.dir, 'cgroup.procs');
  }

  /** release moves the process `pid` (a child started while this one was in the cgroup) back to the origin. */
  release(pid: number): void {
    writeFileSync(this.originProcs, String(pid));
  }

  /** shares reads back the cgroup's weight (cpu.shares on v1, cpu.weight on v2). */
  shares(): number {
    return Number(readFileSync(join(this.dir, this.hierarchy.version === 1 ? 'cpu.shares' : 'cpu.weight'), 'utf8'));
  }

  /**
   * leave moves the process back to its origin and deletes the cgroup once the processes it holds are gone (the kernel
   * frees an exited one a moment later: it waits up to 5 s); one that still holds a child stays, and the sweep of
   * `vc down` removes it once it is empty.
   */
  async leave(): Promise<void> {
    try {
      this.release(this.pid);
    } catch {
      // the origin is gone: the process stays in the cgroup until it exits
      return;
    }
    for (let i = 0; i < 50 && existsSync(this.dir); i++) {
      try {
        rmdirSync(this.dir);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}

/** cgroupOf is the cgroup of `pid` in the cpu hierarchy, relative to its root (cgroupInFile of /proc/<pid>/cgroup). */
export function cgroupOf(pid: number, version: 1 | 2): string {
  return cgroupInFile(readFileSync(`/proc/${pid}/cgroup`, 'utf8'), version);
}

/**
 * cgroupInFile reads a process's cgroup in the cpu hierarchy from its /proc/<pid>/cgroup text: on v1 the line whose
 * controllers include cpu (`4:cpu,cpuacct:/a`), on v2 the line `0::/a`; `/` (the root) when there is none.
 */
export function cgroupInFile(text: string, version: 1 | 2): string {
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    const [, id, controllers, path] = m;
    if (version === 2 ? id === '0' && controllers === '' : controllers!.split(',').includes('cpu')) return path || '/';
  }
  return '/';
}

/**
 * platformCgroup moves this process into a PlatformCgroup, or says why it cannot (no cpu controller that can be
 * written: the process then keeps the weight of an ordinary one).
 */
export function platformCgroup(
  hierarchy: CpuHierarchy | undefined = cpuHierarchy(),
): { cgroup: PlatformCgroup } | { unavailable: string } {
  if (!hierarchy) return { unavailable: 'no cpu cgroup controller on this host (cgroup v1 cpu or v2 with cpu)' };
  const cgroup = new PlatformCgroup(hierarchy);
  try {
    cgroup.enter();
  } catch (e) {
    void cgroup.leave();
    return { unavailable: e instanceof Error ? e.message : String(e) };
  }
  return { cgroup };
}

/**
 * sweepCpuCgroups removes the cpu cgroups of control planes that are gone (a `vc up` killed outright cannot remove
 * its own): every `vc-cp-*` cgroup of the cpu hierarchy that holds no process, and every `vc-platform-<pid>` whose
 * process is gone and which holds none. One that still holds a process belongs to a running control plane and stays.
 * On cgroup v2 a control plane's cgroup is the confinement's, which sweepConfinements removes; the platform's is
 * removed here on either version.
 */
export function sweepCpuCgroups(hierarchy: CpuHierarchy | undefined = cpuHierarchy()): string[] {
  if (!hierarchy) return [];
  const prefix = CONFINE_PREFIX;
  return sweepWhere(
    hierarchy,
    (name) => (hierarchy.version === 1 && name.startsWith(prefix)) || platformOfDeadProcess(name),
  );
}

/**
 * sweepPlatformCgroups removes the empty `vc-platform-<pid>` cgroups whose process is gone (part of sweepCpuCgroups;
 * it leaves every tenant's cgroup alone).
 */
export function sweepPlatformCgroups(hierarchy: CpuHierarchy | undefined = cpuHierarchy()): string[] {
  if (!hierarchy) return [];
  return sweepWhere(hierarchy, platformOfDeadProcess);
}

/** sweepWhere removes the cgroups of the cpu hierarchy that `which` names and that hold no process. */
function sweepWhere(hierarchy: CpuHierarchy, which: (name: string) => boolean): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(hierarchy.root)) {
    if (!which(name)) continue;
    const cg = join(hierarchy.root, name);
    try {
      if (readFileSync(join(cg, 'cgroup.procs'), 'utf8').trim() !== '') continue;
      rmdirSync(cg);
      removed.push(`cpu cgroup ${name}`);
    } catch {
      // gone meanwhile, or the kernel has not yet freed its last process: the next sweep takes it
    }
  }
  return removed;
}

/** platformProcessRuns is whether `name` is a PlatformCgroup (undefined: it is not one) whose process still runs. */
export function platformProcessRuns(name: string): boolean | undefined {
  if (!name.startsWith(PLATFORM_CGROUP_PREFIX)) return undefined;
  const pid = Number(name.slice(PLATFORM_CGROUP_PREFIX.length));
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return existsSync(`/proc/${pid}`);
}

/** platformOfDeadProcess: `name` is a PlatformCgroup whose process no longer runs. */
function platformOfDeadProcess(name: string): boolean {
  return platformProcessRuns(name) === false;
}
