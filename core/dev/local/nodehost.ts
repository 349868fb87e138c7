// The host side of a real node: its record, this host's processes and cgroups, and the preflight that says whether
// real nodes can run here. Cleaning up after a node is nodesweep.ts.
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { NodeNetns } from './nodenetns.ts';

const execFileP = promisify(execFile);

/**
 * HOST_PATHS_OUTSIDE are the host directories a kubelet, containerd or the CNI plugins write to even when every
 * configurable path points into the node's own directory (kubelet hard-codes device-plugins and the
 * /var/log/containers symlinks, libcni caches results in /var/lib/cni, the containerd shim puts its socket in
 * /run/containerd/s, util-linux keeps /run/mount/utab). The ones that did not exist before a node started are removed
 * when it stops.
 */
export const HOST_PATHS_OUTSIDE = [
  '/var/lib/kubelet',
  '/var/log/pods',
  '/var/log/containers',
  '/var/lib/cni',
  '/run/containerd',
  '/run/nri',
  '/run/mount',
  '/etc/cni',
  '/opt/cni',
  '/var/lib/containerd',
  '/run/netns',
] as const;

/**
 * SYSCTLS are the kernel settings a real node changes (ip_forward; the inotify instance limit, which kubelet and
 * containerd need a few of each and a busy host exhausts at its default of 128) or kube-proxy may change; restored
 * on stop.
 */
export const SYSCTLS = [
  '/proc/sys/net/ipv4/ip_forward',
  '/proc/sys/fs/inotify/max_user_instances',
  '/proc/sys/net/ipv4/conf/all/route_localnet',
  '/proc/sys/net/bridge/bridge-nf-call-iptables',
] as const;

/**
 * NodeRecord is what a real node writes to `<dir>/realnode.json` before it starts anything, so that its cleanup can
 * run later from another process (vc down, or the next vc up after a `kill -9`).
 */
export interface NodeRecord {
  name: string;
  dir: string;
  /** the CNI network name; it is in the comment of every iptables rule the CNI plugins add for this node */
  network: string;
  bridge: string;
  podCidr: string;
  /** kubelet's cgroupRoot, e.g. `/vc-<name>`, under every cgroup hierarchy */
  cgroupRoot: string;
  /** containerd's gRPC socket; every shim of this node carries it on its command line */
  containerdSock: string;
  /** the runc shims' socket directory (containerd's socket_dir), removed whole; absent in records of older nodes */
  shimSocketDir?: string;
  /** the original value of each SYSCTLS entry that existed */
  sysctls: Record<string, string>;
  /** HOST_PATHS_OUTSIDE entries that did not exist before the node started */
  createdPaths: string[];
  /** pids of the node's own processes, by component */
  pids: Record<string, number>;
  /** a namespaced node's network namespace and uplink (nodenetns.ts); absent for a node on the host's network */
  netns?: NodeNetns;
}

/** RECORD_FILE is the file name of a node's NodeRecord in its directory. */
export const RECORD_FILE = 'realnode.json';

/** readNodeRecord reads `<dir>/realnode.json`, or undefined when there is none. */
export function readNodeRecord(dir: string): NodeRecord | undefined {
  const f = join(dir, RECORD_FILE);
  if (!existsSync(f)) return undefined;
  return JSON.parse(readFileSync(f, 'utf8')) as NodeRecord;
}

/** writeNodeRecord writes the record; called before each host change it covers. */
export function writeNodeRecord(r: NodeRecord): void {
  writeFileSync(join(r.dir, RECORD_FILE), JSON.stringify(r, null, 2) + '\n');
}

/** run executes a host command and returns its stdout; it throws with stderr on failure. */
export async function run(
  cmd: string,
  args: string[],
  o: { input?: string; timeoutMs?: number } = {},
): Promise<string> {
  if (o.input === undefined) {
    const { stdout } = await execFileP(cmd, args, { timeout: o.timeoutMs ?? 30_000, maxBuffer: 64 << 20 });
    return stdout;
  }
  return new Promise((res, rej) => {
    const child = execFile(cmd, args, { timeout: o.timeoutMs ?? 30_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      err ? rej(new Error(`${cmd} ${args.join(' ')}: ${stderr || err.message}`)) : res(stdout),
    );
    child.stdin!.end(o.input);
  });
}

/** tryRun runs a host command and returns its output, or undefined when it fails (a tool the host lacks). */
export async function tryRun(cmd: string, args: string[], o: { input?: string } = {}): Promise<string | undefined> {
  try {
    return await run(cmd, args, o);
  } catch {
    return undefined;
  }
}

/** cmdlineOf reads a process's command line (NUL-separated arguments), or undefined when it is gone. */
export function cmdlineOf(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return undefined;
  }
}

/** allPids lists the pids in /proc. */
export function allPids(): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
}

/** cgroupMounts lists the cgroup hierarchies: v1 (one per controller set) or the single v2 mount. */
export function cgroupMounts(): string[] {
  const out: string[] = [];
  for (const line of readFileSync('/proc/self/mounts', 'utf8').split('\n')) {
    const [, mnt, type] = line.split(' ');
    if (type === 'cgroup' || type === 'cgroup2') out.push(mnt!);
  }
  return out;
}

/** cgroupVersion is `v2` when /sys/fs/cgroup is a unified hierarchy, `v1` when v1 hierarchies are mounted. */
export function cgroupVersion(): 'v1' | 'v2' | undefined {
  if (existsSync('/sys/fs/cgroup/cgroup.controllers')) return 'v2';
  const mounts = readFileSync('/proc/self/mounts', 'utf8');
  return / cgroup cgroup /.test(mounts) || /\scgroup\s/.test(mounts) ? 'v1' : undefined;
}

/** hasCapability reports whether this process has a capability in its effective set (bit number). */
export function hasCapability(bit: number): boolean {
  const m = /CapEff:\s+([0-9a-f]+)/.exec(readFileSync('/proc/self/status', 'utf8'));
  return !!m && (BigInt(`0x${m[1]}`) & (1n << BigInt(bit))) !== 0n;
}

/** CAP_SYS_RESOURCE is the capability bit needed to lower a process's oom_score_adj. */
export const CAP_SYS_RESOURCE = 24;

function onPath(cmd: string): boolean {
  for (const d of (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':').concat('/usr/sbin', '/sbin')) {
    try {
      accessSync(join(d, cmd), constants.X_OK);
      return true;
    } catch {
      /* next */
    }
  }
  return false;
}

/** RealNodePreflight is the outcome of realNodePreflight. */
export interface RealNodePreflight {
  /** every required piece is there */
  ok: boolean;
  /** one line per missing piece */
  problems: string[];
  cgroup?: 'v1' | 'v2';
  /** false: containerd gets restrict_oom_score_adj (nothing may lower oom_score_adj here) */
  capSysResource: boolean;
}

/**
 * realNodePreflight checks what a real node needs from this host: root, a cgroup hierarchy, overlayfs, iptables,
 * ip6tables, conntrack and iproute2, a working network namespace, writable sysctls, and a complete node toolchain
 * (toolchainComplete, checked by the caller with core/toolchain). It changes nothing on the host.
 */
export async function realNodePreflight(toolchainComplete: boolean, toolchainDir: string): Promise<RealNodePreflight> {
  const problems: string[] = [];
  const root = process.getuid?.() === 0;
  if (!root) problems.push('not running as root (real nodes need root for mounts, cgroups and network namespaces)');
  const cgroup = cgroupVersion();
  if (!cgroup) problems.push('no cgroup hierarchy is mounted under /sys/fs/cgroup');
  if (!/\toverlay$/m.test(readFileSync('/proc/filesystems', 'utf8')))
    problems.push('the kernel has no overlay filesystem (overlay is not in /proc/filesystems)');
  for (const [cmd, pkg] of [
    ['iptables', 'iptables'],
    ['ip6tables', 'iptables'],
    ['iptables-save', 'iptables'],
    ['conntrack', 'conntrack'],
    ['ip', 'iproute2'],
    ['unshare', 'util-linux'],
  ] as const)
    if (!onPath(cmd)) problems.push(`${cmd} is not installed (Debian package ${pkg})`);
  if (root && onPath('unshare') && (await tryRun('unshare', ['--net', '--mount', 'true'])) === undefined)
    problems.push('a network namespace cannot be created here (unshare --net failed)');
  if (root)
    try {
      accessSync('/proc/sys/net/ipv4/ip_forward', constants.W_OK);
    } catch {
      problems.push('net.ipv4.ip_forward is not writable (read-only /proc/sys)');
    }
  if (!toolchainComplete)
    problems.push(`the node toolchain is not built in ${toolchainDir} (npx vc toolchain build --node)`);
  return { ok: problems.length === 0, problems, cgroup, capSysResource: hasCapability(CAP_SYS_RESOURCE) };
}

/** otherNodeProcessesRunning reports whether a kubelet, kube-proxy or containerd not belonging to dir runs here. */
export function otherNodeProcessesRunning(dir: string): boolean {
  for (const pid of allPids()) {
    const cmd = cmdlineOf(pid);
    if (!cmd?.length) continue;
    const base = cmd[0]!.split('/').pop()!;
    if (!['kubelet', 'kube-proxy', 'containerd'].includes(base)) continue;
    if (!cmd.some((a) => a.includes(dir))) return true;
  }
  return false;
}
