import v8 from 'node:v8';
import vm from 'node:vm';
import { registry as metricsRegistry } from '../../core/metrics/registry.ts';
import { syncerMetrics } from '../../core/syncer/metrics.ts';

/**
 * WriteRow is one line of the account of the syncer's writes per Pod: which apiserver (side), which operation of the
 * syncer, for which plugin's key, with which verb on which resource, how many per Pod, and why the syncer makes it.
 */
export interface WriteRow {
  side: string;
  op: string;
  plugin: string;
  verb: string;
  resource: string;
  perPod: number;
  why: string;
}

/**
 * WHY explains each write the syncer makes while Pods are synced, by `op plugin resource`. A write missing here is
 * reported as unexplained: the account must not hide a new kind of write.
 */
const WHY: Record<string, string> = {
  'createSuper pods pods': 'the super copy of the tenant Pod (needed: it is what runs)',
  'bind pods pods/binding': "the tenant Pod's Binding to its vNode (needed: the API sets nodeName only this way)",
  'patchTenantStatus pods pods/status':
    'status carried up: one write when the super Pod starts; more only for changes the user can see',
  'createTenant events events':
    "a super event copied up (a kubelet's, a FailedScheduling); not the scheduler's Scheduled, which the Binding says",
  'event pods events': 'an event the syncer records about a tenant Pod (refusals, waits)',
  'createTenant nodes nodes': 'a vNode, once per real node a tenant first runs a Pod on',
  'patchTenantStatus nodes nodes/status': "a new vNode's status, right after its create",
  'patchTenant nodes nodes':
    "a vNode following its real node's labels, taints or addresses (the tenant apiserver's TaintNodesByCondition " +
    'admission taints every new Node not-ready), or marked empty after 15 s without Pods and in use again (per node)',
  'token pods serviceaccounts/token': 'a ServiceAccount token minted in the tenant (shared per ServiceAccount)',
  'token pods secrets': 'the super Secret holding the minted token',
  'superServiceAccount pods serviceaccounts': 'the token-less super ServiceAccount Pods run under, per namespace',
  'createSuper serviceaccounts serviceaccounts': 'a tenant ServiceAccount copied down, per namespace',
  'patchSuper serviceaccounts serviceaccounts': 'the adopted `default` ServiceAccount of a new super namespace',
  'createSuper namespaces namespaces': 'a tenant namespace copied down',
  'createSuper configmaps configmaps': 'a tenant ConfigMap (kube-root-ca.crt) copied down, per namespace',
  'superNetworkPolicy namespaces networkpolicies': 'the tenant isolation NetworkPolicy, per namespace',
  'superQuota namespaces resourcequotas': "the tenant's ResourceQuota, per namespace",
  'superQuota namespaces limitranges': "the tenant's LimitRange, per namespace",
};

/**
 * PER_POD_KINDS are the writes every synced Pod needs, by `op plugin resource`: its super copy, its tenant Binding (the
 * API sets nodeName only through pods/binding) and one status write (status changes only through pods/status). Every
 * other kind is per node, namespace or ServiceAccount, and at steady state should not appear.
 */
export const PER_POD_KINDS: readonly string[] = [
  'createSuper pods pods',
  'bind pods pods/binding',
  'patchTenantStatus pods pods/status',
];

/** beyondPerPod are the rows that are not one of the PER_POD_KINDS, and the same rows' writes above 1 per Pod. */
export function beyondPerPod(rows: readonly WriteRow[]): { rows: WriteRow[]; perPod: number } {
  const out: WriteRow[] = [];
  let perPod = 0;
  for (const r of rows) {
    if (!PER_POD_KINDS.includes(`${r.op} ${r.plugin} ${r.resource}`)) {
      out.push(r);
      perPod += r.perPod;
    } else if (r.perPod > 1) {
      out.push({ ...r, perPod: Number((r.perPod - 1).toFixed(3)) });
      perPod += r.perPod - 1;
    }
  }
  return { rows: out, perPod: Number(perPod.toFixed(3)) };
}

/** counterKey names one series of vc_syncer_writes_total, tenants summed: `side|op|plugin|verb|resource`. */
const counterKey = (l: Record<string, string | number>) =>
  [l.side, l.op, l.plugin, l.verb, l.resource].map(String).join('|');

/** writeCounts reads vc_syncer_writes_total of this process, summed over tenants, by counterKey. */
export async function writeCounts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await syncerMetrics.writes.get()).values) {
    const k = counterKey(v.labels);
    out[k] = (out[k] ?? 0) + v.value;
  }
  return out;
}

/**
 * accountWrites turns two readings of writeCounts into the writes per Pod between them, one row per kind of write,
 * the most frequent first, each with why the syncer makes it (WHY; `unexplained` when the table has no entry).
 */
export function accountWrites(before: Record<string, number>, after: Record<string, number>, pods: number): WriteRow[] {
  const rows: WriteRow[] = [];
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d <= 0) continue;
    const [side = '', op = '', plugin = '', verb = '', resource = ''] = k.split('|');
    rows.push({
      side,
      op,
      plugin,
      verb,
      resource,
      perPod: Number((d / pods).toFixed(3)),
      why: WHY[`${op} ${plugin} ${resource}`] ?? 'unexplained',
    });
  }
  return rows.sort((a, b) => b.perPod - a.perPod || a.op.localeCompare(b.op));
}

/** writesPerPodTotal is the sum of the rows' writes per Pod (the syncer's; the tenant's own create is not one). */
export const writesPerPodTotal = (rows: readonly WriteRow[]): number =>
  Number(rows.reduce((s, r) => s + r.perPod, 0).toFixed(3));

/** formatAccount prints the rows as an aligned table, one write kind a line, with the total. */
export function formatAccount(rows: readonly WriteRow[]): string {
  const lines = rows.map(
    (r) =>
      `  ${r.perPod.toFixed(3).padStart(6)}  ${r.side.padEnd(6)} ${`${r.verb} ${r.resource}`.padEnd(34)} ` +
      `${`${r.op}/${r.plugin}`.padEnd(34)} ${r.why}`,
  );
  return [...lines, `  ${writesPerPodTotal(rows).toFixed(3).padStart(6)}  syncer writes per Pod in all`].join('\n');
}

/** syncerCounters reads the syncer's counters (errors, writes, skips) and reconcile-time histogram from the registry. */
export async function syncerCounters(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const m of await metricsRegistry.getMetricsAsJSON()) {
    if (!m.name.startsWith('vc_syncer_') || m.name === 'vc_syncer_queue_depth' || m.name === 'vc_syncer_in_flight')
      continue;
    for (const v of m.values as Array<{
      labels: Record<string, string | number>;
      value: number;
      metricName?: string;
    }>) {
      const name = v.metricName ?? m.name;
      if (name.endsWith('_bucket')) continue;
      const { tenant: _t, ...rest } = v.labels;
      const k = `${name.replace('vc_syncer_', '')}{${Object.entries(rest)
        .map(([a, b]) => `${a}=${b}`)
        .join(',')}}`;
      out[k] = (out[k] ?? 0) + v.value;
    }
  }
  return out;
}

/** diffCounters is what each counter of syncerCounters gained from a to b (counters that did not move are left out). */
export const diffCounters = (a: Record<string, number>, b: Record<string, number>): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b)) {
    const d = v - (a[k] ?? 0);
    if (d) out[k] = Number(d.toFixed(3));
  }
  return out;
};

/** collectGarbage runs a full GC when the flag can be switched on at runtime (it only makes RSS readings steadier). */
export function collectGarbage(): void {
  try {
    v8.setFlagsFromString('--expose-gc');
    (vm.runInNewContext('gc') as () => void)();
  } catch {
    /* not available: readings are just noisier */
  }
}

/** writesByOp sums vc_syncer_writes_total by op out of syncerCounters' keys. */
export function writesByOp(counters: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(counters)) {
    const m = /^writes_total\{(?:.*,)?op=([^,}]+)/.exec(k);
    if (m) out[m[1]!] = (out[m[1]!] ?? 0) + v;
  }
  return out;
}
