/**
 * IP anti-spoofing on a real node's bridge. The bridge plugin's `macspoofchk` pins each Pod's veth to the Pod's MAC,
 * but not to its IP: a container holding NET_RAW (or NET_ADMIN, to add another address) could still send packets,
 * and ARP answers, with another Pod's source address. The node's CNI chain therefore ends in a plugin of ours,
 * `vc-antispoof` (core/dev/local/antispoofcni.ts), which gives each Pod interface a chain in an nftables table of the
 * node: from that veth only IPv4 with the Pod's own source address and ARP with the Pod's own sender MAC and address
 * pass; every other frame (another source, IPv6, VLAN tags, other ether types) is dropped. These are the pure parts:
 * names, the nft scripts, and reading the plugin's input.
 */
import { createHash } from 'node:crypto';

/** ANTISPOOF_PLUGIN is the CNI `type` of the plugin, the name of its executable in the node's plugin directory. */
export const ANTISPOOF_PLUGIN = 'vc-antispoof';

/** ANTISPOOF_MAP is the name of the verdict map from a Pod's veth to its chain. */
export const ANTISPOOF_MAP = 'pods';

/** antispoofTable is the bridge-family nftables table of the node whose CNI network is `network`. */
export function antispoofTable(network: string): string {
  return `${network}-antispoof`;
}

/** clusterIPTable is the ip-family nftables table of the tenant cluster IP translation of the node whose CNI network
 * is `network` (written by `vc cluster-ips`, core/vnagent/clusterips.ts). */
export function clusterIPTable(network: string): string {
  return `${network}-cluster-ips`;
}

/** podChain is the name of the chain of one Pod sandbox (by its container ID). */
export function podChain(containerId: string): string {
  return `pod-${createHash('sha256').update(containerId).digest('hex').slice(0, 16)}`;
}

/**
 * antispoofTableScript creates the node's table anew (an earlier one of the same name is deleted in the same
 * transaction): the veth-to-chain map and a base chain on the bridge's prerouting hook, ahead of the bridge plugin's
 * MAC check, that sends each frame entering from a Pod's veth into that Pod's chain. A port not in the map is not
 * dropped: matching the bridge a port belongs to (`meta ibrname`) is not supported by every kernel (this host's 6.18
 * build refuses it), and each node's hook sees the frames of every bridge on the host, so dropping unknown ports would
 * drop the other nodes' Pods. The gap is only a veth between the bridge plugin's ADD and this plugin's, before any
 * container of the Pod runs.
 */
export function antispoofTableScript(table: string): string {
  return [
    `table bridge ${table}`,
    `delete table bridge ${table}`,
    `table bridge ${table} {`,
    `  map ${ANTISPOOF_MAP} { type ifname : verdict; }`,
    '  chain prerouting {',
    '    type filter hook prerouting priority -350; policy accept;',
    `    iifname vmap @${ANTISPOOF_MAP}`,
    '  }',
    '}',
    '',
  ].join('\n');
}

/** PodInterface is what the plugin pins one Pod's veth to. */
export interface PodInterface {
  /** the host side of the Pod's veth (a port of the bridge) */
  veth: string;
  /** the MAC of the Pod's own interface */
  mac: string;
  /** the Pod's IPv4 addresses on that interface */
  ips: string[];
}

const IFNAME = /^[A-Za-z0-9_.-]{1,15}$/;
const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * podChainScript (re)creates a Pod's chain and points its veth at it, in one transaction: frames from another MAC
 * are dropped; ARP passes only with the Pod's MAC and address as sender; IPv4 only from the Pod's addresses;
 * everything else is dropped. A veth that already had a chain is pointed at this one.
 */
export function podChainScript(table: string, chain: string, p: PodInterface, replaceElement: boolean): string {
  if (!IFNAME.test(p.veth)) throw new Error(`vc-antispoof: not an interface name: ${JSON.stringify(p.veth)}`);
  const mac = p.mac.toLowerCase();
  if (!MAC.test(mac)) throw new Error(`vc-antispoof: not a MAC address: ${JSON.stringify(p.mac)}`);
  if (!p.ips.length) throw new Error(`vc-antispoof: no IPv4 address for ${p.veth}`);
  for (const ip of p.ips)
    if (!IPV4.test(ip)) throw new Error(`vc-antispoof: not an IPv4 address: ${JSON.stringify(ip)}`);
  const ips = `{ ${p.ips.join(', ')} }`;
  const at = `bridge ${table} ${chain}`;
  return [
    `add chain ${at}`,
    `flush chain ${at}`,
    `add rule ${at} ether saddr != ${mac} drop`,
    `add rule ${at} ether type arp arp saddr ether ${mac} arp saddr ip ${ips} accept`,
    `add rule ${at} ether type ip ip saddr ${ips} accept`,
    `add rule ${at} drop`,
    ...(replaceElement ? [`delete element bridge ${table} ${ANTISPOOF_MAP} { "${p.veth}" }`] : []),
    `add element bridge ${table} ${ANTISPOOF_MAP} { "${p.veth}" : jump ${chain} }`,
    '',
  ].join('\n');
}

/** mapElements reads `nft -j list map …` output as veth → chain pairs. */
export function mapElements(json: string): Array<{ veth: string; chain: string }> {
  const doc = JSON.parse(json) as { nftables?: Array<{ map?: { elem?: unknown[] } }> };
  const out: Array<{ veth: string; chain: string }> = [];
  for (const item of doc.nftables ?? [])
    for (const e of item.map?.elem ?? []) {
      if (!Array.isArray(e) || typeof e[0] !== 'string') continue;
      const chain = (e[1] as { jump?: { target?: unknown } } | undefined)?.jump?.target;
      if (typeof chain === 'string') out.push({ veth: e[0], chain });
    }
  return out;
}

/** podRemoveScript removes a Pod's chain and every map element that jumps to it (nothing when both are gone). */
export function podRemoveScript(
  table: string,
  chain: string,
  elements: Array<{ veth: string; chain: string }>,
): string {
  const lines = elements
    .filter((e) => e.chain === chain)
    .map((e) => `delete element bridge ${table} ${ANTISPOOF_MAP} { "${e.veth}" }`);
  return [...lines, `delete chain bridge ${table} ${chain}`, ''].join('\n');
}

/** CniResult is the part of a CNI 1.0 result the plugin reads. */
interface CniResult {
  interfaces?: Array<{ name?: string; mac?: string; sandbox?: string }>;
  ips?: Array<{ address?: string; interface?: number }>;
}

/**
 * podInterfaceOf finds, in the bridge plugin's result, the Pod's interface (`ifName` in the sandbox `netns`) with its
 * MAC and IPv4 addresses, and the host veth: the interface outside any sandbox that is not the bridge.
 */
export function podInterfaceOf(prev: CniResult, bridge: string, ifName: string, netns: string): PodInterface {
  const ifs = prev.interfaces ?? [];
  const podIdx = ifs.findIndex((i) => i.name === ifName && !!i.sandbox && i.sandbox === netns);
  const pod = ifs[podIdx];
  if (!pod?.mac) throw new Error(`vc-antispoof: the previous result has no interface ${ifName} in ${netns}`);
  const hostSide = ifs.filter((i) => !i.sandbox && i.name && i.name !== bridge);
  if (hostSide.length !== 1)
    throw new Error(`vc-antispoof: expected one host veth in the previous result, found ${hostSide.length}`);
  const ips = (prev.ips ?? [])
    .filter((a) => a.interface === podIdx && a.address && !a.address.includes(':'))
    .map((a) => a.address!.split('/')[0]!);
  return { veth: hostSide[0]!.name!, mac: pod.mac, ips };
}

/** antispoofPluginDir is where a node keeps its own CNI plugins (beside the toolchain's). */
export const antispoofPluginDir = (nodeDir: string): string => `${nodeDir}/cni/bin`;

const shQuote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * antispoofWrapper renders the executable containerd runs as `vc-antispoof`: this Node.js running the plugin's entry
 * (compiled JavaScript; from the sources, TypeScript through tsx's loader).
 */
export function antispoofWrapper(node: string, entry: string, loader?: string): string {
  const args = [node, ...(loader ? ['--import', loader] : []), entry].map(shQuote).join(' ');
  return `#!/bin/sh\nexec ${args} "$@"\n`;
}
