// Cleaning up after a real node: finding and killing its processes, unmounting what it mounted, removing its
// iptables rules and the host paths it created (sweepNode), whether it stopped cleanly or was killed.
import { createHash } from 'node:crypto';
import {
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
import { onlySpoofCheckChains, SPOOFCHECK_TABLE } from './bridgenft.ts';
import { antispoofTable, clusterIPTable } from './antispoof.ts';
import { removeNodeNetns } from './nodenetns.ts';

import {
  allPids,
  cgroupMounts,
  cmdlineOf,
  otherNodeProcessesRunning,
  readNodeRecord,
  RECORD_FILE,
  tryRun,
  type NodeRecord,
} from './nodehost.ts';

/** nodeProcesses finds the pids that belong to a node: its components, its shims, and everything in its cgroups. */
export function nodeProcesses(r: NodeRecord): number[] {
  const found = new Set<number>();
  for (const pid of allPids()) {
    const cmd = cmdlineOf(pid);
    if (!cmd?.length) continue;
    // components carry the node directory in a flag; shims carry containerd's socket (also in the directory)
    const base = cmd[0]!.split('/').pop()!;
    const program = NODE_PROGRAMS.some((p) => base.startsWith(p)) || cmd.includes(CLUSTER_IPS_COMMAND);
    if (program && cmd.some((a) => a.includes(r.dir))) found.add(pid);
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

/** CLUSTER_IPS_COMMAND is the `vc` command of the node's cluster IP translation, a Node.js process (realnode.ts). */
const CLUSTER_IPS_COMMAND = 'cluster-ips';

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
 * directory, and the sysctls it changed; of a namespaced node, instead of the bridge, chains, tables and ipsets, its
 * network namespace (all of those are in it) and the host's end of its uplink. It is idempotent and returns one line
 * per thing it removed.
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

  // A namespaced node's bridge, veths, iptables rules, nftables tables and ipsets go with its namespace; the host's
  // own chains, tables and sets are not its to touch.
  if (r.netns) done.push(...(await removeNodeNetns(r.netns)));
  else done.push(...(await sweepHostNetwork(r)));
  sweepHostPaths(r, done);
  rmSync(join(r.dir, RECORD_FILE), { force: true });
  return done;
}

/** sweepHostNetwork removes what a node on the host's network left there: bridge, veths, chains, tables, ipsets. */
async function sweepHostNetwork(r: NodeRecord): Promise<string[]> {
  const done: string[] = [];
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
  // this node's cluster IP translation (its process deletes it when it stops, unless it was killed)
  if ((await tryRun('nft', ['delete', 'table', 'ip', clusterIPTable(r.network)])) !== undefined)
    done.push(`deleted nftables table ip ${clusterIPTable(r.network)}`);
  // this node's vc-antispoof table (its Pods' chains went with their veths' DELs, or go now)
  if ((await tryRun('nft', ['delete', 'table', 'bridge', antispoofTable(r.network)])) !== undefined)
    done.push(`deleted nftables table bridge ${antispoofTable(r.network)}`);
  // the bridge plugin's MAC spoof-check table, when nothing but its chains is left and no other node runs
  const spoof = removeKube ? await tryRun('nft', ['list', 'table', ...SPOOFCHECK_TABLE]) : undefined;
  if (
    spoof !== undefined &&
    onlySpoofCheckChains(spoof) &&
    (await tryRun('nft', ['delete', 'table', ...SPOOFCHECK_TABLE])) !== undefined
  )
    done.push(`deleted nftables table ${SPOOFCHECK_TABLE.join(' ')}`);
  // kube-router's ipsets, once no rule refers to them any more (its KUBE-* chains went above)
  if (removeKube)
    for (const set of ((await tryRun('ipset', ['list', '-n'])) ?? '').split('\n').filter(isKubeRouterSet))
      if ((await tryRun('ipset', ['destroy', set])) !== undefined) done.push(`destroyed ipset ${set}`);
  return done;
}

/** sweepHostPaths removes a node's cgroups, shim sockets and files outside its directory, and restores sysctls. */
function sweepHostPaths(r: NodeRecord, done: string[]): void {
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
