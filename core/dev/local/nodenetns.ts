// A real node in a network namespace of its own (issue 39): its bridge, Pods' veths, kube-proxy's and kube-router's
// iptables rules and ipsets, and the CNI plugins' chains all live in the namespace, so that two nodes of two super
// clusters on one host do not rewrite each other's KUBE-* chains. One veth pair (the uplink) joins the namespace to
// the host: the host routes the node's Pod CIDR to it, and the namespace's default route points back at the host.
import { createHash } from 'node:crypto';
import { run, tryRun } from './nodehost.ts';

/** NodeNetns names a node's network namespace and the two ends of its uplink (each <= 15 characters). */
export interface NodeNetns {
  /** the namespace, bound at /run/netns/<netns> by `ip netns add` */
  netns: string;
  /** the uplink's end on the host */
  hostLink: string;
  /** the uplink's end in the namespace */
  nodeLink: string;
}

/** nodeNetnsNames derives a node's namespace and uplink names from its directory (as nodeNetworkNames does). */
export function nodeNetnsNames(dir: string): NodeNetns {
  const h = createHash('sha256').update(dir).digest('hex').slice(0, 8);
  return { netns: `vcns-${h}`, hostLink: `vcup${h}`, nodeLink: `vcdn${h}` };
}

/** Uplink are the uplink's two addresses, a /30 of 10.214.0.0/16 paired with the Pod CIDR 10.213.T.0/24. */
export interface Uplink {
  /** the host's end: where the node's components and Pods reach this host's relays (apiservers, vn-agent) */
  hostAddress: string;
  /** the namespace's end: the host's next hop to the node's Pod CIDR */
  nodeAddress: string;
}

/** uplinkOf pairs the Pod CIDR 10.213.T.0/24 with the uplink 10.214.T.0/30 (host .1, namespace .2). */
export function uplinkOf(podCidr: string): Uplink {
  const m = /^10\.213\.(\d{1,3})\.0\/24$/.exec(podCidr);
  if (!m || Number(m[1]) > 255)
    throw new Error(`a namespaced real node's Pod CIDR is a /24 of 10.213.0.0/16, not ${JSON.stringify(podCidr)}`);
  return { hostAddress: `10.214.${m[1]}.1`, nodeAddress: `10.214.${m[1]}.2` };
}

/** netnsPath is where `ip netns add` binds the namespace. */
export function netnsPath(netns: string): string {
  return `/run/netns/${netns}`;
}

/**
 * inNetns is the command line that runs command in the namespace and nowhere else: nsenter enters only the network
 * namespace (mounts stay the host's, so kubelet's volume mounts are the ones containerd's runc sees) and execs the
 * program, keeping its pid and putting the program's own name first in /proc/<pid>/cmdline (the sweep finds it so).
 */
export function inNetns(netns: string, command: string, args: readonly string[]): { command: string; args: string[] } {
  return { command: 'nsenter', args: [`--net=${netnsPath(netns)}`, '--', command, ...args] };
}

/**
 * createNodeNetns creates the namespace with its loopback up, the uplink with its addresses, the namespace's default
 * route to the host and the host's route to the Pod CIDR, and turns on forwarding in the namespace. The caller has
 * recorded the names first, so a failure half way is swept (removeNodeNetns).
 */
export async function createNodeNetns(n: NodeNetns, podCidr: string): Promise<void> {
  const u = uplinkOf(podCidr);
  await run('ip', ['netns', 'add', n.netns]);
  await run('ip', ['-n', n.netns, 'link', 'set', 'lo', 'up']);
  await run('ip', ['link', 'add', n.hostLink, 'type', 'veth', 'peer', 'name', n.nodeLink, 'netns', n.netns]);
  await run('ip', ['addr', 'add', `${u.hostAddress}/30`, 'dev', n.hostLink]);
  await run('ip', ['link', 'set', n.hostLink, 'up']);
  await run('ip', ['-n', n.netns, 'addr', 'add', `${u.nodeAddress}/30`, 'dev', n.nodeLink]);
  await run('ip', ['-n', n.netns, 'link', 'set', n.nodeLink, 'up']);
  await run('ip', ['-n', n.netns, 'route', 'add', 'default', 'via', u.hostAddress]);
  await run('ip', ['route', 'add', podCidr, 'via', u.nodeAddress, 'dev', n.hostLink]);
  const ns = inNetns(n.netns, 'sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
  await run(ns.command, ns.args);
}

/**
 * removeNodeNetns removes the namespace (once its processes are gone the kernel frees it, and with it the bridge, the
 * Pods' host-side veths, the uplink and every iptables rule, nftables table and ipset made in it) and the host's end
 * of the uplink if it outlived it. Idempotent; one line per thing removed.
 */
export async function removeNodeNetns(n: NodeNetns): Promise<string[]> {
  const done: string[] = [];
  if ((await tryRun('ip', ['netns', 'del', n.netns])) !== undefined) done.push(`deleted network namespace ${n.netns}`);
  if ((await tryRun('ip', ['link', 'del', n.hostLink])) !== undefined) done.push(`deleted link ${n.hostLink}`);
  return done;
}
