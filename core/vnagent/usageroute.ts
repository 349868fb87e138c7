import https from 'node:https';
import { nodeTotals } from '../../plugins/sdk/src/pods/placement.ts';
import { provenanceOf, vNodeName } from '../names/names.ts';
import { tenantUsage as attributeUsage, type UsagePod } from '../syncer/tenantusage.ts';
import type { AgentTenant } from './auth.ts';
import { tlsOptions, type KubeletEndpoint, type KubeletTLS } from './proxy.ts';
import { isSimulatedNode } from './simulated.ts';
import { kubeletEndpointOf, type SuperPod, type SuperView } from './superview.ts';
import {
  filterResourceMetrics,
  filterSummary,
  mergeResourceMetrics,
  mergeSummary,
  type TenantPodRef,
  type TenantPods,
} from './usage.ts';

/** USAGE_PATHS are the kubelet usage endpoints the vn-agent serves, filtered to the asking tenant (usage.ts). */
export const USAGE_PATHS = {
  '/stats/summary': 'statsSummary',
  '/metrics/resource': 'metricsResource',
} as const;

/** UsageKind names a usage endpoint in the vn-agent's metrics. */
export type UsageKind = (typeof USAGE_PATHS)[keyof typeof USAGE_PATHS];

/** usageKindOf returns the usage endpoint a request path names (any query is ignored), or undefined. */
export function usageKindOf(url: string): UsageKind | undefined {
  const q = url.indexOf('?');
  const path = q >= 0 ? url.slice(0, q) : url;
  return Object.hasOwn(USAGE_PATHS, path) ? USAGE_PATHS[path as keyof typeof USAGE_PATHS] : undefined;
}

/** MAX_USAGE_BODY caps what the agent reads of one kubelet's usage answer (a node of 500 Pods is well below it). */
export const MAX_USAGE_BODY = 32 * 1024 * 1024;

/** TenantUsagePods is what the agent knows of one tenant's Pods on the nodes it serves. */
export interface TenantUsagePods {
  lookup: TenantPods;
  /** the super nodes those Pods are bound to, sorted */
  nodes: string[];
}

/**
 * tenantUsagePods indexes the cached super Pods that are provably the tenant's: its provenance names the tenant, the
 * super namespace maps back (the tenant's Naming) to the tenant namespace the provenance names, and the name is the
 * tenant Pod's. The lookup also checks the super uid when the caller has one (the summary's podRef does).
 */
export function tenantUsagePods(pods: readonly SuperPod[], t: Pick<AgentTenant, 'key' | 'names'>): TenantUsagePods {
  const byKey = new Map<string, { ref: TenantPodRef; uid: string | undefined }>();
  const nodes = new Set<string>();
  for (const p of pods) {
    const prov = provenanceOf(p);
    const ns = p.metadata?.namespace;
    const name = p.metadata?.name;
    if (!prov || prov.cluster !== t.key || !ns || !name || !prov.namespace || prov.name !== name) continue;
    if (t.names.tenantNamespace(ns) !== prov.namespace) continue;
    byKey.set(`${ns}/${name}`, { ref: { namespace: prov.namespace, name, uid: prov.uid }, uid: p.metadata?.uid });
    if (p.spec?.nodeName) nodes.add(p.spec.nodeName);
  }
  return {
    lookup: (ns, name, uid) => {
      const e = byKey.get(`${ns}/${name}`);
      if (!e) return undefined;
      if (uid !== undefined && e.uid !== uid) return undefined;
      return e.ref;
    },
    nodes: [...nodes].sort(),
  };
}

/** UsageFetch is how the agent reads a kubelet's usage endpoint. */
export interface UsageFetch {
  tls: KubeletTLS;
  agent?: https.Agent;
  timeoutMs: number;
}

/** getKubelet reads a kubelet path to the end (at most MAX_USAGE_BODY), or fails with a one-line reason. */
export function getKubelet(ep: KubeletEndpoint, path: string, f: UsageFetch): Promise<string> {
  return new Promise((resolve, reject) => {
    const where = `kubelet ${ep.host}:${ep.port} of node ${ep.node}`;
    const req = https.get(
      { ...tlsOptions(f.tls), host: ep.host, port: ep.port, path, agent: f.agent ?? false, timeout: f.timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_USAGE_BODY) return req.destroy(new Error(`answer is larger than ${MAX_USAGE_BODY} bytes`));
          chunks.push(c);
        });
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 500) >= 400)
            reject(new Error(`${where} answered ${res.statusCode} to ${path}: ${body.slice(0, 200).trim()}`));
          else resolve(body);
        });
        res.on('error', (e) => reject(new Error(`${where} failed: ${e.message}`)));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`did not answer within ${f.timeoutMs} ms`)));
    req.on('error', (e) => reject(new Error(`${where} failed: ${e.message}`)));
  });
}

/** UsageAnswer is what the agent sends back for a usage endpoint. */
export interface UsageAnswer {
  contentType: string;
  body: string;
}

/**
 * tenantUsage answers a usage endpoint for a tenant: it reads the endpoint of every real node the agent serves on
 * which the tenant has Pods (simulated nodes have no usage to read), filters each to the tenant (usage.ts) and merges
 * them. The node named in the summary is the vNode of the first of those nodes (the only one when the agent serves its
 * own node, as the DaemonSet does). The node's own usage is scaled or withheld as the tenant's policy says
 * (nodes.totals). A kubelet that cannot be read fails the whole answer with its reason.
 */
export async function tenantUsage(
  kind: UsageKind,
  t: AgentTenant,
  view: SuperView,
  f: UsageFetch,
): Promise<UsageAnswer> {
  const pods = tenantUsagePods(view.cachedPods(), t);
  const totals = nodeTotals(t.tenant);
  const endpoints: KubeletEndpoint[] = [];
  for (const name of pods.nodes) {
    const node = await view.node(name);
    if (!node || isSimulatedNode(node)) continue;
    const ep = kubeletEndpointOf(node);
    if (typeof ep === 'string') throw new Error(ep);
    endpoints.push({ ...ep, node: name });
  }
  if (kind === 'metricsResource') {
    const texts = await Promise.all(endpoints.map((ep) => getKubelet(ep, '/metrics/resource', f)));
    return {
      contentType: 'text/plain; version=0.0.4; charset=utf-8',
      body: mergeResourceMetrics(texts.map((x) => filterResourceMetrics(x, pods.lookup, totals))),
    };
  }
  const parts = await Promise.all(
    endpoints.map(async (ep) => {
      const text = await getKubelet(ep, '/stats/summary', f);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new Error(`kubelet of node ${ep.node} answered /stats/summary with something that is not JSON`);
      }
      return filterSummary(json, pods.lookup, vNodeName(ep.node));
    }),
  );
  return {
    contentType: 'application/json',
    body: JSON.stringify(mergeSummary(parts, parts[0]?.node ?? '', totals)),
  };
}

/** AgentUsage is one tenant's usage on the nodes an agent serves, for its metrics (metrics.ts). */
export interface AgentUsage {
  tenant: string;
  /** CPU in use, in cores, over the Pods a kubelet reported */
  cpuCores?: number;
  /** working set, in bytes, over the Pods a kubelet reported */
  memoryWorkingSetBytes?: number;
}

/**
 * agentTenantUsage reads the /stats/summary of every real node the agent serves on which a served tenant has Pods,
 * and attributes each Pod's usage to the tenant the syncer stamped it for (core/syncer/tenantusage.ts: namespace,
 * name and uid of the super Pod). Only the tenants in `served` are reported, so the metrics' tenant label stays
 * bounded by the directory. A kubelet that cannot be read is left out and named in `unread`: a scrape never fails
 * for one node.
 */
export async function agentTenantUsage(
  view: SuperView,
  served: ReadonlySet<string>,
  f: UsageFetch,
): Promise<{ rows: AgentUsage[]; unread: string[] }> {
  const pods = view.cachedPods().filter((p) => served.has(provenanceOf(p)?.cluster ?? ''));
  const names = [...new Set(pods.map((p) => p.spec?.nodeName).filter((n): n is string => !!n))].sort();
  const unread: string[] = [];
  const summaries = await Promise.all(
    names.map(async (name) => {
      const node = await view.node(name);
      if (!node || isSimulatedNode(node)) return undefined;
      const ep = kubeletEndpointOf(node);
      try {
        if (typeof ep === 'string') throw new Error(ep);
        return JSON.parse(await getKubelet({ ...ep, node: name }, '/stats/summary', f)) as unknown;
      } catch (e) {
        unread.push(`${name}: ${e instanceof Error ? e.message : String(e)}`);
        return undefined;
      }
    }),
  );
  const rows = attributeUsage(
    pods as UsagePod[],
    summaries.filter((s) => s !== undefined),
  ).map((u) => ({
    tenant: u.tenant,
    ...(u.cpuNanoCores === undefined ? {} : { cpuCores: u.cpuNanoCores / 1e9 }),
    ...(u.memoryWorkingSetBytes === undefined ? {} : { memoryWorkingSetBytes: u.memoryWorkingSetBytes }),
  }));
  return { rows, unread };
}
