import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  constants,
  existsSync,
  lstatSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

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
function otherNodeProcessesRunning(dir: string): boolean {
  for (const pid of allPids()) {
    const cmd = cmdlineOf(pid);
    if (!cmd?.length) continue;
    const base = cmd[0]!.split('/').pop()!;
    if (!['kubelet', 'kube-proxy', 'containerd'].includes(base)) continue;
    if (!cmd.some((a) => a.includes(dir))) return true;
  }
  return false;
}

/** nodeProcesses finds the pids that belong to a node: its components, its shims, and everything in its cgroups. */
export function nodeProcesses(r: NodeRecord): number[] {
  const found = new Set<number>();
  for (const pid of allPids()) {
    const cmd = cmdlineOf(pid);
    if (!cmd?.length) continue;
    // components carry the node directory in a flag; shims carry containerd's socket (also in the directory)
    const base = cmd[0]!.split('/').pop()!;
    if (NODE_PROGRAMS.some((p) => base.startsWith(p)) && cmd.some((a) => a.includes(r.dir))) found.add(pid);
  }
  for (const mnt of cgroupMounts()) {
    const base = join(mnt, r.cgroupRoot);
    if (!existsSync(base)) continue;
    for (const d of walkDirs(base)) {
      try {
        for (const p of readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) found.add(Number(p));
      } catch {
        /* gone */
      }
    }
  }
  for (const p of ancestors()) found.delete(p);
  return [...found];
}

/** NODE_PROGRAMS are the name prefixes of the programs a node runs on the host itself (not in containers). */
const NODE_PROGRAMS = ['kubelet', 'kube-proxy', 'kube-router', 'containerd', 'runc', 'runsc'] as const;

function ancestors(): number[] {
  const out: number[] = [];
  for (let pid = process.pid; pid > 1;) {
    out.push(pid);
    try {
      pid = Number(/PPid:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      break;
    }
  }
  return out;
}

function walkDirs(base: string): string[] {
  const out: string[] = [base];
  let entries: string[] = [];
  try {
    entries = readdirSync(base);
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(base, e);
    try {
      if (lstatSync(p).isDirectory()) out.push(...walkDirs(p));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** killNodeProcesses SIGKILLs every process of the node (see nodeProcesses) and waits until they are gone. */
export async function killNodeProcesses(r: NodeRecord, timeoutMs = 10_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  const killed = new Set<number>();
  for (;;) {
    const pids = nodeProcesses(r).filter((p) => cmdlineOf(p) !== undefined);
    if (!pids.length || Date.now() > deadline) return [...killed];
    for (const p of pids) {
      try {
        process.kill(p, 'SIGKILL');
        killed.add(p);
      } catch {
        /* gone */
      }
    }
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** mountsUnder lists the mount points below dir (dir included), deepest first. */
export function mountsUnder(dir: string): string[] {
  const d = resolve(dir);
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(' ')[4]!.replace(/\\040/g, ' '))
    .filter((p) => p === d || p.startsWith(d + '/'));
  return [...new Set(points)].sort((a, b) => b.split('/').length - a.split('/').length || b.length - a.length);
}

/**
 * shimSocketName is containerd's shim socket for a task in /run/containerd/s: sha256 of
 * `<containerd address>/<namespace>/<id>[/debug]`.
 */
export function shimSocketName(containerdSock: string, namespace: string, id: string, debug = false): string {
  return createHash('sha256')
    .update(join(containerdSock, namespace, id, debug ? 'debug' : ''))
    .digest('hex');
}

/** isKubeRouterSet says whether an ipset is one kube-router's firewall creates (KUBE-SRC-*, kube-router-local-ips...). */
export function isKubeRouterSet(name: string): boolean {
  return /^(inet6:)?(KUBE-|kube-router-)/.test(name);
}

/** IPTABLES_TABLES are the tables a node's components add chains to. */
const IPTABLES_TABLES = ['filter', 'nat', 'mangle'] as const;

/**
 * chainsToRemove works out, from one table's iptables-save text, the iptables-restore --noflush script that deletes
 * the chains `owns` selects and every rule that jumps to them from other chains, or '' when there is nothing.
 */
export function iptablesCleanupScript(
  table: string,
  save: string,
  owns: (chain: string, rules: string[]) => boolean,
): string {
  const chains = new Map<string, string[]>();
  const builtin = new Set<string>();
  let inTable = false;
  for (const line of save.split('\n')) {
    if (line.startsWith('*')) inTable = line.slice(1) === table;
    if (!inTable) continue;
    const decl = /^:(\S+) (\S+)/.exec(line);
    if (decl) {
      chains.set(decl[1]!, []);
      if (decl[2] !== '-') builtin.add(decl[1]!);
    }
    const rule = /^-A (\S+) /.exec(line);
    if (rule) chains.get(rule[1]!)?.push(line);
  }
  const ours = new Set([...chains.entries()].filter(([c, rules]) => !builtin.has(c) && owns(c, rules)).map(([c]) => c));
  if (!ours.size) return '';
  const out = [`*${table}`];
  for (const [c, rules] of chains) {
    if (ours.has(c)) continue;
    for (const r of rules) {
      const target = /(?:-j|-g) (\S+)/.exec(r)?.[1];
      if (target && ours.has(target)) out.push(r.replace(/^-A /, '-D '));
    }
  }
  for (const c of ours) out.push(`-F ${c}`);
  for (const c of ours) out.push(`-X ${c}`);
  out.push('COMMIT', '');
  return out.join('\n');
}

/**
 * sweepNode removes what a real node left on this host, from its record: its processes (components, re-parented
 * shims, container processes in its cgroups), mounts under its directory (deepest first), its bridge and any veth
 * still attached, its CNI iptables chains (v4 and v6, found by the network name in their comments), the KUBE-* chains
 * of kubelet and kube-proxy when no other kubelet or kube-proxy runs here, its cgroups, what it wrote outside its
 * directory, and the sysctls it changed. It is idempotent and returns one line per thing it removed.
 */
export async function sweepNode(dir: string): Promise<string[]> {
  const r = readNodeRecord(dir);
  if (!r) return [];
  const done: string[] = [];
  const killed = await killNodeProcesses(r);
  if (killed.length) done.push(`killed ${killed.length} leftover processes`);

  for (const m of mountsUnder(r.dir)) {
    if ((await tryRun('umount', [m])) === undefined) await tryRun('umount', ['-l', m]);
    done.push(`unmounted ${m}`);
  }

  // veths whose bridge is ours go with the bridge; their netns went with the unmounts above
  const links = await tryRun('ip', ['-o', 'link', 'show', 'master', r.bridge]);
  for (const l of links?.split('\n').filter(Boolean) ?? []) {
    const name = /^\d+: ([^:@]+)/.exec(l)?.[1];
    if (name && (await tryRun('ip', ['link', 'del', name])) !== undefined) done.push(`deleted link ${name}`);
  }
  if ((await tryRun('ip', ['link', 'show', r.bridge])) !== undefined) {
    await tryRun('ip', ['link', 'del', r.bridge]);
    done.push(`deleted bridge ${r.bridge}`);
  }

  const removeKube = !otherNodeProcessesRunning(r.dir);
  for (const tool of ['iptables', 'ip6tables'] as const) {
    const save = await tryRun(`${tool}-save`, []);
    if (!save) continue;
    for (const table of IPTABLES_TABLES) {
      const script = iptablesCleanupScript(table, save, (chain, rules) => {
        if (chain.startsWith('CNI-') && rules.some((x) => x.includes(`name: \\"${r.network}\\"`))) return true;
        return removeKube && chain.startsWith('KUBE-');
      });
      if (!script) continue;
      const ok = (await tryRun(`${tool}-restore`, ['--noflush'], { input: script })) !== undefined;
      const n = script.split('\n').filter((l) => l.startsWith('-X ')).length;
      done.push(`${ok ? 'removed' : 'FAILED to remove'} ${n} ${tool} ${table} chains`);
    }
  }
  // bridge ipMasq rules jump from POSTROUTING into per-Pod CNI- chains; a chain already gone leaves nothing else
  // kube-router's ipsets, once no rule refers to them any more (its KUBE-* chains went above)
  if (removeKube)
    for (const set of ((await tryRun('ipset', ['list', '-n'])) ?? '').split('\n').filter(isKubeRouterSet))
      if ((await tryRun('ipset', ['destroy', set])) !== undefined) done.push(`destroyed ipset ${set}`);

  for (const mnt of cgroupMounts()) {
    const base = join(mnt, r.cgroupRoot);
    if (!existsSync(base)) continue;
    for (const d of walkDirs(base).reverse()) {
      try {
        rmdirSync(d);
      } catch {
        /* busy or gone: reported by the caller's check */
      }
    }
    done.push(`removed cgroup ${base}`);
  }

  const others = otherNodeProcessesRunning(r.dir);
  if (r.shimSocketDir && existsSync(r.shimSocketDir)) {
    rmSync(r.shimSocketDir, { recursive: true, force: true });
    done.push(`removed ${r.shimSocketDir}`);
  }
  // gVisor's shim sockets (and runc's, from nodes without socket_dir) go to /run/containerd/s, one per task
  const tasks = join(r.dir, 'containerd/state/io.containerd.runtime.v2.task');
  if (existsSync(tasks))
    for (const ns of readdirSync(tasks))
      for (const id of readdirSync(join(tasks, ns))) {
        for (const s of [shimSocketName(r.containerdSock, ns, id), shimSocketName(r.containerdSock, ns, id, true)]) {
          const f = join('/run/containerd/s', s);
          if (existsSync(f)) rmSync(f, { force: true });
        }
      }
  for (const f of ['/var/log/containers', '/var/log/pods']) {
    if (!existsSync(f)) continue;
    for (const e of readdirSync(f)) {
      const p = join(f, e);
      try {
        if (lstatSync(p).isSymbolicLink() && resolve(f, readlinkSync(p)).startsWith(r.dir + '/')) rmSync(p);
      } catch {
        /* gone */
      }
    }
  }
  const results = '/var/lib/cni/results';
  if (existsSync(results))
    for (const e of readdirSync(results)) if (e.startsWith(`${r.network}-`)) rmSync(join(results, e), { force: true });
  for (const p of r.createdPaths) {
    if (!existsSync(p)) continue;
    if (!others) {
      rmSync(p, { recursive: true, force: true });
      done.push(`removed ${p}`);
    } else removeEmptyDirs(p);
  }
  // Another node on this host still needs ip_forward and the inotify limit: the last one out restores them.
  for (const [f, v] of others ? [] : Object.entries(r.sysctls)) {
    try {
      if (readFileSync(f, 'utf8').trim() !== v) {
        writeFileSync(f, v);
        done.push(`restored ${f} to ${v}`);
      }
    } catch {
      /* not settable */
    }
  }
  rmSync(join(r.dir, RECORD_FILE), { force: true });
  return done;
}

function removeEmptyDirs(p: string): void {
  try {
    if (!statSync(p).isDirectory()) return;
    for (const e of readdirSync(p)) removeEmptyDirs(join(p, e));
    rmdirSync(p);
  } catch {
    /* not empty */
  }
}
