/**
 * Tenant cluster IPs on a node: the pure part (what to translate, and the nftables script that does it).
 *
 * A tenant Service's `spec.clusterIP` is allocated by the tenant's own, unmodified apiserver, is immutable, and no
 * node routes it: its super copy gets another address from the super cluster, which the syncer records on the copy
 * (ANN.tenantClusterIP holds the tenant's). So that a tenant Pod reaches its Services at the addresses its own
 * apiserver shows, every node translates, for the Pods of one tenant only, that tenant's cluster IPs into its copies'
 * before kube-proxy sees the packet, and the copies' addresses back in the answers:
 *
 * - `prerouting`, priority raw (before connection tracking): a packet from a Pod of tenant T to one of T's cluster
 *   IPs gets its destination rewritten, statelessly, to the super copy's, and a packet mark. Tenant cluster ranges
 *   overlap (every tenant allocates from its own range, often the same one), so the lookup is per tenant: the Pod's
 *   source address picks the tenant's chain, and only that tenant's map is read. A destination that is not one of
 *   T's cluster IPs is left alone.
 * - `remember`, priority mangle (after connection tracking, which saw the copy's address and so lets kube-proxy's DNAT
 *   and its reverse work as for any Pod): the packet mark becomes a bit of the connection's mark and is cleared.
 * - `restore`, postrouting after source NAT (where the connection's reverse DNAT gave the answer the copy's address
 *   as its source): an answer of a marked connection gets the tenant's cluster IP back as its source. Only marked
 *   connections: a Pod that connected to the copy's own address (the tenant DNS answers with it) keeps getting answers
 *   from that address.
 *
 * Ports are not translated: a copy has its tenant Service's ports. What the translation does not cover: an ICMP error
 * about a translated packet (kube-proxy's reject of a Service without endpoints) names the copy's address, which the
 * Pod's socket does not match, so such a connection times out instead of being refused.
 *
 * Only the syncer's super objects count (managed-by the manager, with the tenant's cluster label, which the syncer
 * alone writes), only this node's running Pods' addresses (a Pod on the host's network has the node's address and is
 * never a source), and an address claimed by Pods of two tenants (a stale view while one Pod ends and another starts)
 * is left out of both.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../kube/client.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';

/** CLUSTER_IP_MARK is the bit of the packet and connection mark that says "translated"; kube-proxy and kube-router
 * use bits below it (0x4000, 0x8000, 0x10000, 0x20000). */
export const CLUSTER_IP_MARK = 0x01000000;

/** DEFAULT_CLUSTER_IP_TABLE is the nftables table (family ip) of a node's translation. */
export const DEFAULT_CLUSTER_IP_TABLE = 'vc-cluster-ips';

/** SuperPodAddresses is the part of a super Pod the translation reads. */
export interface SuperPodAddresses extends KubeObject {
  spec?: { hostNetwork?: boolean; nodeName?: string };
  status?: { phase?: string; podIP?: string; podIPs?: Array<{ ip?: string }> };
}

/** SuperServiceAddresses is the part of a super Service the translation reads. */
export interface SuperServiceAddresses extends KubeObject {
  spec?: { clusterIP?: string; type?: string };
}

/** TenantTranslation is one tenant's part of a node's translation. */
export interface TenantTranslation {
  /** the tenant's cluster key (the syncer's cluster label) */
  key: string;
  /** the IPv4 addresses of the tenant's running Pods on the node, sorted */
  podIPs: string[];
  /** tenant cluster IP → its super copy's, sorted by the tenant's */
  services: Array<[tenantIP: string, superIP: string]>;
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const TERMINAL = new Set(['Succeeded', 'Failed']);

/** tenantOf is the tenant key of a super object the syncer made, or undefined for any other object. */
function tenantOf(o: KubeObject): string | undefined {
  const labels = o.metadata?.labels ?? {};
  if (labels[LABEL.managedBy] !== MANAGER) return undefined;
  return labels[LABEL.cluster] || undefined;
}

/** podAddresses are a running, non-host-network Pod's IPv4 addresses. */
function podAddresses(p: SuperPodAddresses): string[] {
  if (p.spec?.hostNetwork || TERMINAL.has(p.status?.phase ?? '')) return [];
  const ips = new Set<string>();
  if (p.status?.podIP) ips.add(p.status.podIP);
  for (const a of p.status?.podIPs ?? []) if (a.ip) ips.add(a.ip);
  return [...ips].filter((ip) => IPV4.test(ip));
}

const byIP = (a: string, b: string): number => {
  const n = (ip: string) => ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  return n(a) - n(b);
};

/**
 * planClusterIPs is the translation of a node: per tenant with a Pod on the node and a Service with a copy, the
 * Pods' addresses and the cluster IP pairs. Tenants are sorted by key, so equal inputs give equal plans.
 */
export function planClusterIPs(pods: SuperPodAddresses[], services: SuperServiceAddresses[]): TenantTranslation[] {
  const podsOf = new Map<string, Set<string>>();
  const owners = new Map<string, Set<string>>();
  for (const p of pods) {
    const key = tenantOf(p);
    if (!key) continue;
    for (const ip of podAddresses(p)) {
      if (!podsOf.has(key)) podsOf.set(key, new Set());
      podsOf.get(key)!.add(ip);
      if (!owners.has(ip)) owners.set(ip, new Set());
      owners.get(ip)!.add(key);
    }
  }
  const servicesOf = new Map<string, Map<string, string>>();
  for (const s of services) {
    const key = tenantOf(s);
    const tenantIP = s.metadata?.annotations?.[ANN.tenantClusterIP];
    const superIP = s.spec?.clusterIP;
    if (!key || !tenantIP || !superIP || !IPV4.test(tenantIP) || !IPV4.test(superIP) || tenantIP === superIP) continue;
    if (!servicesOf.has(key)) servicesOf.set(key, new Map());
    const m = servicesOf.get(key)!;
    // two copies claiming one tenant IP (a stale copy): the lower super address, so the plan does not flip
    const had = m.get(tenantIP);
    if (!had || byIP(superIP, had) < 0) m.set(tenantIP, superIP);
  }
  const out: TenantTranslation[] = [];
  for (const key of [...podsOf.keys()].sort()) {
    const svc = servicesOf.get(key);
    const podIPs = [...podsOf.get(key)!].filter((ip) => owners.get(ip)!.size === 1).sort(byIP);
    if (!svc?.size || !podIPs.length) continue;
    out.push({ key, podIPs, services: [...svc.entries()].sort((a, b) => byIP(a[0], b[0])) });
  }
  return out;
}

/** tenantChain is the chain of one tenant (by its key) in the node's table. */
export function tenantChain(key: string): string {
  return `tenant-${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
}

const TABLE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const hex = (n: number): string => `0x${n.toString(16).padStart(8, '0')}`;

/**
 * clusterIPsScript creates the node's table anew in one transaction (an earlier one of the same name is deleted in
 * it, so a connection never sees half a plan): the Pod-to-tenant verdict map, a chain per tenant with its cluster IP
 * map, the reverse map of every copy's address, and the three base chains described at the top of this file.
 */
export function clusterIPsScript(table: string, plan: readonly TenantTranslation[]): string {
  if (!TABLE_NAME.test(table)) throw new Error(`cluster IPs: not a table name: ${JSON.stringify(table)}`);
  for (const t of plan)
    for (const ip of [...t.podIPs, ...t.services.flat()])
      if (!IPV4.test(ip)) throw new Error(`cluster IPs: not an IPv4 address: ${JSON.stringify(ip)}`);
  const elements = (items: string[]) => (items.length ? [`    elements = { ${items.join(', ')} }`] : []);
  const pods = plan.flatMap((t) => t.podIPs.map((ip) => `${ip} : jump ${tenantChain(t.key)}`));
  const back = plan.flatMap((t) => t.services.map(([tenantIP, superIP]) => `${superIP} : ${tenantIP}`));
  const mark = hex(CLUSTER_IP_MARK);
  const unmark = hex(~CLUSTER_IP_MARK >>> 0);
  return [
    `table ip ${table}`,
    `delete table ip ${table}`,
    `table ip ${table} {`,
    '  map pods {',
    '    type ipv4_addr : verdict',
    ...elements(pods),
    '  }',
    '  map answers {',
    '    type ipv4_addr : ipv4_addr',
    ...elements([...new Set(back)]),
    '  }',
    ...plan.flatMap((t) => [
      `  chain ${tenantChain(t.key)} {`,
      `    ip daddr set ip daddr map { ${t.services.map(([a, b]) => `${a} : ${b}`).join(', ')} } meta mark set meta mark or ${mark}`,
      '  }',
    ]),
    '  chain prerouting {',
    '    type filter hook prerouting priority raw; policy accept;',
    '    ip saddr vmap @pods',
    '  }',
    '  chain remember {',
    '    type filter hook prerouting priority mangle; policy accept;',
    `    meta mark and ${mark} == ${mark} ct mark set ct mark or ${mark} meta mark set meta mark and ${unmark}`,
    '  }',
    '  chain restore {',
    '    type filter hook postrouting priority srcnat + 10; policy accept;',
    `    ct direction reply ct mark and ${mark} == ${mark} ip saddr set ip saddr map @answers`,
    '  }',
    '}',
    '',
  ].join('\n');
}
