import { pluginErrorsTotal } from '../plugins/failures.ts';
import { Counter, Gauge, Histogram } from 'prom-client';
import { type KubeClient, type KubeObject, WriteFencedError } from '../kube/client.ts';
import { registry } from '../metrics/registry.ts';
import { tenantUsage, type TenantUsage, type UsagePod } from './tenantusage.ts';

/** QueueDepthSource is anything that reports the keys waiting and the keys being processed per tenant (a syncer). */
export interface QueueDepthSource {
  depthByTenant(): Array<[string, number]>;
  inFlightByTenant(): Array<[string, number]>;
  /** the adaptive concurrency limit and the super cluster it is measured against, when the syncer adapts */
  concurrencyLimit?(): { superCluster: string; limit: number } | undefined;
  /** the tenants whose create rate is lowered now for another tenant creating Pods (CreatePacer.yielding) */
  yieldingTenants?(): string[];
  /** the tenants held back by their byte rate now, with their keys waiting for bytes (BytePacer.held) */
  byteHeldByTenant?(): Array<[string, number]>;
}

const depthSources = new Set<QueueDepthSource>();

/** watchDepth adds a running syncer to the queue-depth gauge; the returned function removes it. */
export function watchDepth(s: QueueDepthSource): () => void {
  depthSources.add(s);
  return () => depthSources.delete(s);
}

/** CacheSource is anything that reports whether its informer caches have synced (a syncer). */
export interface CacheSource {
  /** the super cluster it serves, for the super_cluster label */
  readonly superCluster: string;
  cachesSynced(): { super: boolean; tenants: Array<[string, boolean]> };
  /** the super Pods the syncer has cached (its own, stamped ones), for the per-tenant usage gauges */
  superPods?(): readonly KubeObject[];
}

const cacheSources = new Set<CacheSource>();

/** watchCaches adds a syncer to the cache-synced gauge; the returned function removes it. */
export function watchCaches(s: CacheSource): () => void {
  cacheSources.add(s);
  return () => cacheSources.delete(s);
}

/**
 * WRITE_OPS are the `op` labels of vc_syncer_writes_total: the steps of a plan, then the effects that write (a bind,
 * a minted token, a recorded event, the deletion of a tenant Pod no kubelet finalizes, the super ServiceAccount
 * tenant Pods run under, the tenant isolation NetworkPolicy, the tenant's ResourceQuota and LimitRange in a super
 * namespace).
 */
export const WRITE_OPS = [
  'createSuper',
  'patchSuper',
  'deleteSuper',
  'createTenant',
  'patchTenant',
  'patchTenantStatus',
  'deleteTenant',
  'bind',
  'token',
  'event',
  'superServiceAccount',
  'superNetworkPolicy',
  'superQuota',
] as const;
/** WriteOp is one of WRITE_OPS. */
export type WriteOp = (typeof WRITE_OPS)[number];

/** WRITE_VERBS are the `verb` labels of vc_syncer_writes_total: the apiserver's audit verbs (an apply is a patch). */
export const WRITE_VERBS = ['create', 'update', 'patch', 'delete'] as const;
/** WriteVerb is one of WRITE_VERBS. */
export type WriteVerb = (typeof WRITE_VERBS)[number];

/** WriteSide is the apiserver a write went to: the tenant's or the super cluster's. */
export type WriteSide = 'tenant' | 'super';

/**
 * Write is one API write the syncer made: the tenant it was for, the plugin whose key caused it, the syncer's
 * operation, the apiserver it went to, the verb, and the resource: its plural, with a subresource if any (a Pod's
 * status and binding, a ServiceAccount's token).
 */
export interface Write {
  tenant: string;
  plugin: string;
  op: WriteOp;
  side: WriteSide;
  verb: WriteVerb;
  resource: string;
}

/**
 * TENANT_BOUND is the bound of the `tenant` label, said in the help of each metric that has one: the number of series is
 * at most the tenants this process syncs times the other labels' values, which are fixed sets (plugins, operations,
 * verbs, resources, reasons).
 */
export const TENANT_BOUND =
  "Bounded: one series per tenant this process syncs (and per value of the other labels); a removed tenant's series are dropped.";

/**
 * usageGauge is a per-tenant usage gauge for chargeback (issue 35 §4), read from each syncer's cached super Pods at
 * scrape time (core/syncer/tenantusage.ts tenantUsage: only Pods the syncer stamped for the tenant count).
 */
function usageGauge(name: string, what: string, value: (u: TenantUsage) => number): Gauge {
  return new Gauge({
    name,
    help: `${what}, per super cluster and tenant (only tenants with such Pods). ${TENANT_BOUND}`,
    labelNames: ['super_cluster', 'tenant'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of cacheSources) {
        const pods = s.superPods?.();
        if (!pods) continue;
        for (const u of tenantUsage(pods as UsagePod[], []))
          this.set({ super_cluster: s.superCluster, tenant: u.tenant }, value(u));
      }
    },
  });
}

/** syncerMetrics are the syncer's Prometheus series, registered once on the process registry. */
export const syncerMetrics = {
  depth: new Gauge({
    name: 'vc_syncer_queue_depth',
    help: `Keys waiting in the fair queue, per tenant. ${TENANT_BOUND}`,
    labelNames: ['tenant'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of depthSources) for (const [t, n] of s.depthByTenant()) this.set({ tenant: t }, n);
    },
  }),
  inFlight: new Gauge({
    name: 'vc_syncer_in_flight',
    help: `Keys being reconciled now (workers held), per tenant; at most syncer.maxInFlightPerTenant. ${TENANT_BOUND}`,
    labelNames: ['tenant'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of depthSources) for (const [t, n] of s.inFlightByTenant()) this.set({ tenant: t }, n);
    },
  }),
  createYielding: new Gauge({
    name: 'vc_syncer_create_yielding',
    help:
      'Whether a tenant with Pod creates parked by its create rate refills at syncer.podCreateYield of that rate now ' +
      `(1), because another tenant is creating Pods at its own pace. ${TENANT_BOUND}`,
    labelNames: ['tenant'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of depthSources) for (const t of s.yieldingTenants?.() ?? []) this.set({ tenant: t }, 1);
    },
  }),
  byteRateHeld: new Gauge({
    name: 'vc_syncer_byte_rate_held',
    help:
      "Keys of a tenant waiting in the syncer because its writes to the super cluster reached its byte rate (its TenantPolicy's " +
      `quota.byteRate, else syncer.superByteRate); only tenants held back now. ${TENANT_BOUND}`,
    labelNames: ['tenant'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of depthSources) for (const [t, n] of s.byteHeldByTenant?.() ?? []) this.set({ tenant: t }, n);
    },
  }),
  concurrencyLimit: new Gauge({
    name: 'vc_syncer_concurrency_limit',
    help:
      'Keys of all tenants reconciled at once before a tenant that already has one waits, ' +
      "from the super cluster's write latency (syncer.adaptiveConcurrency).",
    labelNames: ['super_cluster'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of depthSources) {
        const l = s.concurrencyLimit?.();
        if (l) this.set({ super_cluster: l.superCluster }, l.limit);
      }
    },
  }),
  cacheSynced: new Gauge({
    name: 'vc_syncer_cache_synced',
    help:
      'Whether the syncer\'s informer caches have synced (1) or not yet (0): the super cluster\'s (side="super") and ' +
      `each tenant's (side="tenant"). A standby replica keeps them synced while another one leads. ${TENANT_BOUND}`,
    labelNames: ['super_cluster', 'side', 'tenant'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of cacheSources) {
        const c = s.cachesSynced();
        this.set({ super_cluster: s.superCluster, side: 'super', tenant: '' }, c.super ? 1 : 0);
        for (const [t, ok] of c.tenants)
          this.set({ super_cluster: s.superCluster, side: 'tenant', tenant: t }, ok ? 1 : 0);
      }
    },
  }),
  tenantPods: usageGauge('vc_tenant_pods', 'Live super Pods (neither Succeeded nor Failed)', (u) => u.pods),
  tenantCpuRequests: usageGauge(
    'vc_tenant_cpu_requests_cores',
    "CPU the live super Pods' containers request, in cores",
    (u) => Number(u.cpuRequests) / 1000,
  ),
  tenantMemoryRequests: usageGauge(
    'vc_tenant_memory_requests_bytes',
    "Memory the live super Pods' containers request, in bytes",
    (u) => Number(u.memoryRequests / 1000n),
  ),
  timeouts: new Counter({
    name: 'vc_syncer_tenant_request_timeouts_total',
    help: `Requests to a tenant apiserver that got no answer within syncer.tenantRequestTimeoutSeconds, per tenant and plugin. ${TENANT_BOUND}`,
    labelNames: ['tenant', 'plugin'],
    registers: [registry],
  }),
  latency: new Histogram({
    name: 'vc_syncer_sync_duration_seconds',
    help: `Time to reconcile one key (plan and writes), per tenant and plugin. ${TENANT_BOUND}`,
    labelNames: ['tenant', 'plugin'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  }),
  errors: new Counter({
    name: 'vc_syncer_sync_errors_total',
    help: `Failed reconciles, per tenant and plugin. ${TENANT_BOUND}`,
    labelNames: ['tenant', 'plugin'],
    registers: [registry],
  }),
  writes: new Counter({
    name: 'vc_syncer_writes_total',
    help:
      'API writes the syncer made (every create, update, patch, delete, binding, status, token, event and effect), ' +
      `per tenant, plugin, operation, side (tenant or super apiserver), verb and resource. ${TENANT_BOUND}`,
    labelNames: ['tenant', 'plugin', 'op', 'side', 'verb', 'resource'],
    registers: [registry],
  }),
  superBytes: new Counter({
    name: 'vc_syncer_super_bytes_total',
    help:
      'Bytes of the objects the syncer created or updated in the super cluster, as counted against the byte rate ' +
      `(BytePacer), per tenant and plugin. ${TENANT_BOUND}`,
    labelNames: ['tenant', 'plugin'],
    registers: [registry],
  }),
  skips: new Counter({
    name: 'vc_syncer_skips_total',
    help: `Objects deliberately not synced, per reason. ${TENANT_BOUND}`,
    labelNames: ['tenant', 'plugin', 'reason'],
    registers: [registry],
  }),
  eventsDropped: new Counter({
    name: 'vc_syncer_events_dropped_total',
    help: `Events not recorded because the tenant's backlog on the event lane was full (events are best effort). ${TENANT_BOUND}`,
    labelNames: ['tenant'],
    registers: [registry],
  }),
  tenantCacheExceeded: new Counter({
    name: 'vc_syncer_tenant_cache_exceeded_total',
    help: `Times a tenant was dropped because its objects would take the manager over its cache limit (objects or bytes cached per tenant). ${TENANT_BOUND}`,
    labelNames: ['tenant'],
    registers: [registry],
  }),
  tenantFailures: new Counter({
    name: 'vc_syncer_tenant_failures_total',
    help: `Tenants the syncer could not add, update or remove (op upsert or remove); each is skipped until reported again. ${TENANT_BOUND}`,
    labelNames: ['tenant', 'op'],
    registers: [registry],
  }),
  patrol: new Counter({
    name: 'vc_syncer_patrol_fixes_total',
    help: `Drift found and requeued by patrol. ${TENANT_BOUND}`,
    labelNames: ['tenant', 'plugin'],
    registers: [registry],
  }),
};

/** countWrite counts one write in vc_syncer_writes_total. */
export function countWrite(w: Write): void {
  syncerMetrics.writes.inc({ ...w });
}

/**
 * countSend counts one write `client` is about to send, or throws WriteFencedError (counting nothing) when the
 * client's fence (KubeClient.fenced) would refuse it: vc_syncer_writes_total counts what reached an apiserver's door.
 */
export function countSend(client: Pick<KubeClient, 'mayWrite'>, w: Write): void {
  const verdict = client.mayWrite();
  if (verdict !== true) throw new WriteFencedError(w.verb, `${w.side} ${w.resource}`, verdict);
  countWrite(w);
}

/**
 * writeTotals sums vc_syncer_writes_total of this process by `side verb resource` (over tenants, plugins and
 * operations), e.g. `super create <plural>`: what a benchmark subtracts before and after a run to get the writes per Pod,
 * and what a scripted client replays to make the same writes without the syncer.
 */
export async function writeTotals(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await syncerMetrics.writes.get()).values) {
    const k = `${v.labels.side} ${v.labels.verb} ${v.labels.resource}`;
    out[k] = (out[k] ?? 0) + v.value;
  }
  return out;
}

/**
 * forgetTenant drops the series of a tenant that is no longer synced from the syncer's counters and histograms (and
 * vc_plugin_errors_total's), so that
 * the `tenant` label stays bounded by the tenants synced now (the gauges are set afresh at each scrape).
 */
export async function forgetTenant(tenant: string): Promise<void> {
  for (const m of [...Object.values(syncerMetrics), pluginErrorsTotal]) {
    if (m instanceof Gauge) continue;
    const metric = m as Counter | Histogram;
    for (const v of (await metric.get()).values) {
      if (v.labels.tenant !== tenant) continue;
      // A histogram's values include its buckets, labelled `le` besides the series' own labels.
      const { le: _bucket, ...labels } = v.labels;
      metric.remove(labels);
    }
  }
}

/**
 * tenantSyncerLag is what the syncers of this process know of one tenant (by cluster key): its keys waiting and in
 * flight, summed over the syncers that serve it, and whether every one of them has synced its caches. Undefined when
 * no syncer here serves it (the syncer runs in another process). The tenant health monitor reads it.
 */
export function tenantSyncerLag(tenant: string): { waiting: number; inFlight: number; synced: boolean } | undefined {
  let served = false;
  let synced = true;
  for (const s of cacheSources) {
    const entry = s.cachesSynced().tenants.find(([t]) => t === tenant);
    if (!entry) continue;
    served = true;
    synced &&= entry[1];
  }
  if (!served) return undefined;
  let waiting = 0;
  let inFlight = 0;
  for (const s of depthSources) {
    waiting += s.depthByTenant().find(([t]) => t === tenant)?.[1] ?? 0;
    inFlight += s.inFlightByTenant().find(([t]) => t === tenant)?.[1] ?? 0;
  }
  return { waiting, inFlight, synced };
}
