import { provenanceOf } from '../names/names.ts';
import type { KubeObject } from '../kube/client.ts';
import { parseQuantity, type Milli } from '../scheduler/quantity.ts';

/**
 * Per-tenant usage for chargeback (`vc top`): what each tenant's super Pods ask for (requests) and use (the kubelets'
 * /stats/summary), attributed by the Pods' provenance. A Pod counts for a tenant only when the syncer stamped it for
 * that tenant; usage counts only for a Pod whose namespace, name and uid are those of such a Pod.
 */

/** UsagePod is the part of a super Pod usage reads. */
export interface UsagePod extends KubeObject {
  spec?: {
    nodeName?: string;
    containers?: Array<{ resources?: { requests?: Record<string, string> } }>;
  };
  status?: { phase?: string };
}

/** TenantUsage is one tenant's line of `vc top`. */
export interface TenantUsage {
  /** cluster key (root namespace) */
  tenant: string;
  /** the VirtualCluster's namespace/name when known */
  name?: string;
  /** Pods neither Succeeded nor Failed */
  pods: number;
  cpuRequests: Milli;
  memoryRequests: Milli;
  /** CPU used now, in nanocores, over the Pods a kubelet reported; undefined when none did */
  cpuNanoCores?: number;
  /** working set now, in bytes, over the Pods a kubelet reported */
  memoryWorkingSetBytes?: number;
  /** API writes the syncer made for the tenant since its manager started (vc_syncer_writes_total), when read */
  apiWrites?: number;
}

const TERMINAL = new Set(['Succeeded', 'Failed']);

/** requestOf sums one resource's requests over a Pod's containers (malformed quantities count as 0). */
function requestOf(p: UsagePod, resource: string): Milli {
  let total = 0n;
  for (const c of p.spec?.containers ?? []) {
    const q = c.resources?.requests?.[resource];
    if (!q) continue;
    try {
      total += parseQuantity(q);
    } catch {
      // a quantity the apiserver accepted always parses; nothing to add otherwise
    }
  }
  return total;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined;

/**
 * tenantUsage adds up, per tenant, the live super Pods stamped for it (count and requests) and the usage the
 * kubelets' summaries report for exactly those Pods (namespace, name and uid). `names` maps cluster keys to the
 * VirtualClusters' names. Rows are sorted by tenant key.
 */
export function tenantUsage(
  pods: readonly UsagePod[],
  summaries: readonly unknown[],
  names: ReadonlyMap<string, string> = new Map(),
): TenantUsage[] {
  const rows = new Map<string, TenantUsage>();
  const owner = new Map<string, TenantUsage>();
  for (const p of pods) {
    const prov = provenanceOf(p);
    if (!prov || TERMINAL.has(p.status?.phase ?? '')) continue;
    let row = rows.get(prov.cluster);
    if (!row) {
      const name = names.get(prov.cluster);
      row = { tenant: prov.cluster, ...(name ? { name } : {}), pods: 0, cpuRequests: 0n, memoryRequests: 0n };
      rows.set(prov.cluster, row);
    }
    row.pods++;
    row.cpuRequests += requestOf(p, 'cpu');
    row.memoryRequests += requestOf(p, 'memory');
    const m = p.metadata;
    if (m?.namespace && m.name && m.uid) owner.set(`${m.namespace}/${m.name}/${m.uid}`, row);
  }
  for (const s of summaries) {
    const list = obj(s)?.pods;
    for (const item of Array.isArray(list) ? list : []) {
      const ps = obj(item);
      const ref = obj(ps?.podRef);
      const row = owner.get(`${String(ref?.namespace)}/${String(ref?.name)}/${String(ref?.uid)}`);
      if (!row) continue;
      const cpu = obj(ps?.cpu)?.usageNanoCores;
      const mem = obj(ps?.memory)?.workingSetBytes;
      if (typeof cpu === 'number') row.cpuNanoCores = (row.cpuNanoCores ?? 0) + cpu;
      if (typeof mem === 'number') row.memoryWorkingSetBytes = (row.memoryWorkingSetBytes ?? 0) + mem;
    }
  }
  return [...rows.values()].sort((a, b) => a.tenant.localeCompare(b.tenant));
}

/** cores writes nanocores as kubectl top does: millicores, `12m`. */
export const cores = (nano: number | undefined): string => (nano === undefined ? '-' : `${Math.round(nano / 1e6)}m`);

/** mebibytes writes bytes as kubectl top does: `34Mi`. */
export const mebibytes = (bytes: number | undefined): string =>
  bytes === undefined ? '-' : `${Math.round(bytes / 1024 / 1024)}Mi`;

/** TOP_HEAD are the columns of `vc top`. */
export const TOP_HEAD = [
  'TENANT',
  'VIRTUALCLUSTER',
  'PODS',
  'CPU(cores)',
  'MEMORY(bytes)',
  'CPU-REQUESTS',
  'MEMORY-REQUESTS',
];

/** TOP_WRITES_HEAD is the column `vc top --metrics` adds: the syncer's API writes per tenant. */
export const TOP_WRITES_HEAD = 'API-WRITES';

/** topRow is one tenant's row of `vc top`, in TOP_HEAD's order, then its API writes when `writes` is set. */
export function topRow(r: TenantUsage, writes = false): string[] {
  return [
    r.tenant,
    r.name ?? '-',
    String(r.pods),
    cores(r.cpuNanoCores),
    mebibytes(r.memoryWorkingSetBytes),
    `${r.cpuRequests}m`,
    mebibytes(Number(r.memoryRequests / 1000n)),
    ...(writes ? [r.apiWrites === undefined ? '-' : String(r.apiWrites)] : []),
  ];
}

/**
 * withWrites adds each tenant's API writes (writesByTenant of the manager's metrics) to the rows of tenantUsage; a
 * tenant the syncer wrote for that has no live Pod gets a row of its own (its writes are chargeable too).
 */
export function withWrites(rows: readonly TenantUsage[], writes: ReadonlyMap<string, number>): TenantUsage[] {
  const out = rows.map((r) => ({ ...r, apiWrites: writes.get(r.tenant) ?? 0 }));
  for (const [tenant, n] of writes)
    if (!rows.some((r) => r.tenant === tenant))
      out.push({ tenant, pods: 0, cpuRequests: 0n, memoryRequests: 0n, apiWrites: n });
  return out.sort((a, b) => a.tenant.localeCompare(b.tenant));
}
