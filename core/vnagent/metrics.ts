import { Counter, Gauge } from 'prom-client';
import { registry } from '../metrics/registry.ts';
import { pluginErrorsTotal } from '../plugins/failures.ts';
import type { AgentUsage } from './usageroute.ts';

/** RESULTS are the outcomes a vn-agent request is counted under. */
export const RESULTS = [
  /** the kubelet answered 2xx, or 101 for a stream */
  'ok',
  /** the kubelet answered with an error status, relayed as is */
  'kubelet_error',
  /** no, an unknown, or an out-of-date client certificate */
  'unauthenticated',
  /** a tenant asked for a pod that is not its own, or a refused path or method */
  'forbidden',
  /** the kubelet could not be reached, dropped the connection, or the pod's node is unknown */
  'bad_gateway',
  /** the kubelet did not answer in time */
  'timeout',
  /** the tenant, or the agent in all, has as many requests and streams open as its limit (HTTP 429) */
  'throttled',
] as const;
/** Result is one of RESULTS. */
export type Result = (typeof RESULTS)[number];

/**
 * TENANT_LABEL_BOUND is the bound of the vn-agent's `tenant` label, said in each metric's help: one series per tenant
 * its directory lists (and per value of the other, fixed labels), plus the empty tenant of unauthenticated requests.
 */
const TENANT_LABEL_BOUND =
  "Bounded: one series per tenant the vn-agent serves now (empty: not authenticated); a removed tenant's series are dropped within a minute.";

/** vnAgentMetrics are the vn-agent's metrics on the shared registry. */
export const vnAgentMetrics = {
  requests: new Counter({
    name: 'vc_vnagent_requests_total',
    help: `Kubelet requests the vn-agent handled, per tenant (cluster key, empty when unknown), kind and result. ${TENANT_LABEL_BOUND}`,
    labelNames: ['tenant', 'kind', 'result'],
    registers: [registry],
  }),
  activeStreams: new Gauge({
    name: 'vc_vnagent_active_streams',
    help: `Requests and upgraded streams being relayed to a kubelet right now, per tenant and kind. ${TENANT_LABEL_BOUND}`,
    labelNames: ['tenant', 'kind'],
    registers: [registry],
  }),
  bytes: new Counter({
    name: 'vc_vnagent_relayed_bytes_total',
    help: `Bytes relayed, per tenant, kind and direction (to_kubelet, to_client). ${TENANT_LABEL_BOUND}`,
    labelNames: ['tenant', 'kind', 'direction'],
    registers: [registry],
  }),
  tenantClientCertificateExpiry: new Gauge({
    name: 'vc_vnagent_tenant_client_certificate_expiry_timestamp_seconds',
    help:
      "When the client certificate a tenant's apiserver last authenticated with runs out (Unix seconds), per tenant: " +
      `it moves once the apiserver presents a renewed kubelet client certificate. ${TENANT_LABEL_BOUND}`,
    labelNames: ['tenant'],
    registers: [registry],
  }),
};

/** UsageSource gives one agent's per-tenant usage now (VnAgent reads its kubelets' summaries). */
export type UsageSource = () => Promise<readonly AgentUsage[]>;

const usageSources = new Set<UsageSource>();

/** addUsageSource adds an agent's usage to the tenant usage gauges; the function returned removes it. */
export function addUsageSource(source: UsageSource): () => void {
  usageSources.add(source);
  // a read made before this agent came is not its answer
  usageRead = undefined;
  return () => {
    usageSources.delete(source);
    usageRead = undefined;
  };
}

/** USAGE_MEMO_MS is how long one read of the kubelets serves the usage gauges: both read it in one scrape. */
const USAGE_MEMO_MS = 1000;
let usageRead: { at: number; rows: Promise<AgentUsage[]> } | undefined;

/** usageNow reads every agent's usage once for the gauges of one scrape. */
function usageNow(): Promise<AgentUsage[]> {
  const now = Date.now();
  if (!usageRead || now - usageRead.at > USAGE_MEMO_MS)
    usageRead = {
      at: now,
      rows: Promise.all([...usageSources].map((s) => s().catch(() => []))).then((all) => all.flat()),
    };
  return usageRead.rows;
}

/**
 * usageGauge is a per-tenant usage gauge for chargeback (issue 35 §4): at scrape time the agents of this process
 * read the /stats/summary of the real nodes they serve and attribute each Pod's usage to the tenant the syncer
 * stamped it for; several agents in one process (the embedded default, one per super cluster) add up.
 */
function usageGauge(name: string, what: string, value: (u: AgentUsage) => number | undefined): Gauge {
  return new Gauge({
    name,
    help:
      `${what} by the tenant's Pods on the real nodes the vn-agent serves, from the kubelets' /stats/summary at ` +
      'scrape time. Bounded: one series per tenant the vn-agent serves now that has Pods on those nodes, ' +
      'recomputed at each scrape.',
    labelNames: ['tenant'],
    registers: [registry],
    async collect() {
      const rows = await usageNow();
      this.reset();
      for (const r of rows) {
        const v = value(r);
        if (v !== undefined) this.inc({ tenant: r.tenant }, v);
      }
    },
  });
}

/** tenantUsageMetrics are the vn-agent's per-tenant usage gauges (vc top shows the same from the super cluster). */
export const tenantUsageMetrics = {
  cpu: usageGauge('vc_vnagent_tenant_cpu_usage_cores', 'CPU in use, in cores,', (u) => u.cpuCores),
  memory: usageGauge(
    'vc_vnagent_tenant_memory_working_set_bytes',
    'Memory in use (working set), in bytes,',
    (u) => u.memoryWorkingSetBytes,
  ),
};

/**
 * servingCertificateExpiry is when the serving certificate a vn-agent presents now runs out, per listening port (one
 * series per vn-agent of the process: one in a DaemonSet Pod, one per super cluster in the embedded default).
 */
export const servingCertificateExpiry = new Gauge({
  name: 'vc_vnagent_serving_certificate_expiry_timestamp_seconds',
  help:
    'When the serving certificate the vn-agent presents runs out (Unix seconds), per listening port; it moves when ' +
    'the certificate is replaced (VnAgent.setServing). Bounded: one series per vn-agent the process runs.',
  labelNames: ['port'],
  registers: [registry],
});

/**
 * kubeletClientCertificateExpiry is when the client certificate a vn-agent shows kubelets runs out, per listening
 * port: the credential kubelets authorize logs and exec by, renewed like the serving one (VnAgent.renewKubeletClient).
 */
export const kubeletClientCertificateExpiry = new Gauge({
  name: 'vc_vnagent_kubelet_client_certificate_expiry_timestamp_seconds',
  help:
    'When the client certificate the vn-agent shows kubelets runs out (Unix seconds), per listening port; it moves ' +
    'when the certificate is replaced (VnAgent.setKubeletClient). Bounded: one series per vn-agent the process runs.',
  labelNames: ['port'],
  registers: [registry],
});

/**
 * forgetGoneTenants drops the series of every tenant not in `live` (the empty tenant stays), so that the `tenant`
 * label of the vn-agent's metrics (and of vc_plugin_errors_total, which its path translation counts in) stays bounded
 * by the tenants it serves now.
 */
export async function forgetGoneTenants(live: ReadonlySet<string>): Promise<void> {
  for (const m of [...Object.values(vnAgentMetrics), pluginErrorsTotal]) {
    const metric = m as Counter | Gauge;
    for (const v of (await metric.get()).values) {
      const t = String(v.labels.tenant ?? '');
      if (t && !live.has(t)) metric.remove(v.labels);
    }
  }
}
