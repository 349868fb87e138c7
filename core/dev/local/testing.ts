import { existsSync, lstatSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { allPids, cgroupMounts, cmdlineOf, HOST_PATHS_OUTSIDE, SYSCTLS, tryRun } from './nodehost.ts';
import { CONFINE_PREFIX, cgroup2Root } from './netconfine.ts';
import { platformProcessRuns } from './cpulimit.ts';

/**
 * Test fixtures of real nodes: a snapshot of what a node can leave on the host, and the difference of two. Only the
 * real-node tests import this file; the build leaves testing.ts files out.
 */

/**
 * HostSnapshot is what a real node can leave on the host, listed so that two snapshots (before start, after stop)
 * can be compared: processes running node binaries, mount points, network namespaces, links, iptables chains (v4 and
 * v6, per table), ipsets, cgroups at the top of each hierarchy, the HOST_PATHS_OUTSIDE that exist (with their entries), the
 * shim sockets in /run/containerd/s and the shim socket directories /run/vc-s-*, and the SYSCTLS values.
 */
export interface HostSnapshot {
  processes: string[];
  ipsets: string[];
  mounts: string[];
  netns: string[];
  links: string[];
  chains: string[];
  cgroups: string[];
  paths: string[];
  sysctls: string[];
}

/** hostSnapshot takes a HostSnapshot; binDir is the node toolchain's bin directory (its programs are node processes). */
/**
 * confinementOf returns the confinement a chain or cgroup name belongs to (lowercased), or undefined for any other name.
 * Confinements are the network confinements of local tenant control planes: integration files start and stop those
 * beside the real-node files, so one can be seen at any moment of a real-node test.
 */
function confinementOf(name: string): string | undefined {
  const lower = name.toLowerCase();
  return lower.startsWith(CONFINE_PREFIX) ? lower : undefined;
}

/** confinementState tells whether a confinement's cgroup holds processes, is empty, or is gone */
function confinementState(name: string): 'running' | 'empty' | 'gone' {
  const root = cgroup2Root();
  if (!root) return 'gone';
  try {
    return readFileSync(join(root, name, 'cgroup.procs'), 'utf8').trim() !== '' ? 'running' : 'empty';
  } catch {
    return 'gone';
  }
}

/** CONFINEMENT_SETTLE_MS is how long an empty confinement may stay empty before a snapshot counts it as left over. */
const CONFINEMENT_SETTLE_MS = 20_000;

/**
 * leftoverConfinements returns those of names whose cgroup stays empty for CONFINEMENT_SETTLE_MS. A confinement with
 * processes belongs to a control plane that runs; one that empties and then disappears (or fills) within that time
 * was being started or stopped by another test when the snapshot was taken; one that stays empty is a leftover.
 */
async function leftoverConfinements(names: Set<string>): Promise<Set<string>> {
  let pending = [...names].filter((n) => confinementState(n) === 'empty');
  const deadline = Date.now() + CONFINEMENT_SETTLE_MS;
  while (pending.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    pending = pending.filter((n) => confinementState(n) === 'empty');
  }
  return new Set(pending);
}

export async function hostSnapshot(binDir: string): Promise<HostSnapshot> {
  const processes: string[] = [];
  for (const pid of allPids()) {
    const cmd = cmdlineOf(pid);
    if (cmd?.[0]?.startsWith(binDir) || cmd?.[0]?.includes('containerd-shim') || cmd?.[0]?.endsWith('/kube-router'))
      processes.push(`${pid} ${cmd.join(' ')}`);
  }
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(' ')[4]!);
  const netns = existsSync('/run/netns') ? readdirSync('/run/netns') : [];
  const links = ((await tryRun('ip', ['-o', 'link', 'show'])) ?? '')
    .split('\n')
    .filter(Boolean)
    .map((l) => /^\d+: ([^:@]+)/.exec(l)?.[1] ?? l);
  const chains: string[] = [];
  for (const tool of ['iptables-save', 'ip6tables-save']) {
    let table = '';
    for (const line of ((await tryRun(tool, [])) ?? '').split('\n')) {
      if (line.startsWith('*')) table = line.slice(1);
      const m = /^:(\S+)/.exec(line);
      if (m) chains.push(`${tool} ${table} ${m[1]}`);
    }
  }
  const cgroups: string[] = [];
  for (const mnt of cgroupMounts())
    for (const e of readdirSync(mnt)) if (lstatSync(join(mnt, e)).isDirectory()) cgroups.push(join(mnt, e));
  const paths: string[] = [];
  for (const p of HOST_PATHS_OUTSIDE) {
    if (!existsSync(p)) continue;
    paths.push(p);
    try {
      for (const e of readdirSync(p)) paths.push(join(p, e));
    } catch {
      /* not a directory */
    }
  }
  // shim sockets: the global directory (gVisor's shim) and the per-node socket_dirs outside node directories
  if (existsSync('/run/containerd/s'))
    for (const e of readdirSync('/run/containerd/s')) paths.push(`/run/containerd/s/${e}`);
  for (const e of readdirSync('/run')) if (e.startsWith('vc-s-')) paths.push(`/run/${e}`);
  const sysctls = SYSCTLS.filter((f) => existsSync(f)).map((f) => `${f}=${readFileSync(f, 'utf8').trim()}`);
  const ipsets = ((await tryRun('ipset', ['list', '-n'])) ?? '').split('\n').filter(Boolean);
  // confinements of control planes other tests run, or are starting or stopping, are theirs; only lasting empty ones
  const lastName = (entry: string) => entry.split(/[ /]/).pop()!;
  const seen = new Set([...chains, ...cgroups].map((e) => confinementOf(lastName(e))).filter((n) => n !== undefined));
  const leftover = await leftoverConfinements(seen);
  const keep = (entry: string) => {
    const name = lastName(entry);
    // the platform cgroup of a `vc up` or embedded platform another test file runs beside this one, started or
    // stopped at any moment; one whose process is gone is a leftover and stays
    if (platformProcessRuns(name) === true) return false;
    const c = confinementOf(name);
    return c === undefined || leftover.has(c);
  };
  return {
    processes: processes.sort(),
    ipsets: ipsets.sort(),
    mounts: mounts.sort(),
    netns: netns.sort(),
    links: links.sort(),
    chains: chains.filter(keep).sort(),
    cgroups: cgroups.filter(keep).sort(),
    paths: paths.sort(),
    sysctls,
  };
}

/** snapshotDiff lists, per field, what after has that before had not (and sysctls that changed). */
export function snapshotDiff(before: HostSnapshot, after: HostSnapshot): Partial<Record<keyof HostSnapshot, string[]>> {
  const out: Partial<Record<keyof HostSnapshot, string[]>> = {};
  for (const k of Object.keys(after) as Array<keyof HostSnapshot>) {
    const had = new Set(before[k]);
    const added = after[k].filter((x) => !had.has(x));
    if (added.length) out[k] = added;
  }
  return out;
}
