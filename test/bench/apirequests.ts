import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { fetchText } from './procstat.ts';

/** RequestCounts are an apiserver's apiserver_request_total summed over code, group, version and scope, by requestKey. */
export type RequestCounts = Record<string, number>;

/** requestKey names a request kind as `VERB resource[/subresource]`, e.g. `PATCH pods/status`. */
export const requestKey = (verb: string, resource: string, subresource = ''): string =>
  `${verb} ${resource}${subresource ? `/${subresource}` : ''}`;

/** labelsOf parses a Prometheus label set `a="x",b="y"` (values with escaped quotes included). */
function labelsOf(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) out[m[1]!] = m[2]!.replace(/\\(.)/g, '$1');
  return out;
}

/**
 * parseRequestTotals reads apiserver_request_total out of an apiserver's /metrics text, summed by requestKey. A request
 * is counted when it ends, so a watch still open is not in it; requests without a resource (discovery, /healthz) are
 * under their verb and an empty resource.
 */
export function parseRequestTotals(text: string): RequestCounts {
  const out: RequestCounts = {};
  for (const m of text.matchAll(/^apiserver_request_total\{([^}]*)\} (\S+)$/gm)) {
    const l = labelsOf(m[1]!);
    const k = requestKey(l.verb ?? '', l.resource ?? '', l.subresource);
    out[k] = (out[k] ?? 0) + Number(m[2]);
  }
  return out;
}

/** sumCounts adds several apiservers' counts. */
export function sumCounts(all: readonly RequestCounts[]): RequestCounts {
  const out: RequestCounts = {};
  for (const c of all) for (const [k, v] of Object.entries(c)) out[k] = (out[k] ?? 0) + v;
  return out;
}

/** RequestRow is one kind of request an apiserver served per Pod over a phase, and who made it. */
export interface RequestRow {
  request: string;
  perPod: number;
  by: 'bench' | 'syncer' | 'apiserver';
}

/**
 * APISERVER_OWN are the request kinds a kube-apiserver makes to itself over loopback, never the syncer (which reads no
 * tenant Lease, OpenAPI document, LimitRange or ResourceQuota): its identity Lease, its OpenAPI aggregation, and the
 * LimitRanger and ResourceQuota admission plugins' lookups.
 */
export const APISERVER_OWN: readonly RegExp[] = [
  /^\w+ leases$/,
  /^\w+ \/openapi/,
  /^(LIST|WATCH|GET) (limitranges|resourcequotas)$/,
];

/** byWhom attributes a request kind the bench did not make: the apiserver's own (APISERVER_OWN) or the syncer's. */
export const byWhom = (request: string): 'syncer' | 'apiserver' =>
  APISERVER_OWN.some((r) => r.test(request)) ? 'apiserver' : 'syncer';

/**
 * requestsPerPod is what the tenant apiservers served per Pod between two readings, one row per request kind, the
 * most frequent first. `bench` holds the requests the bench itself made in the phase (the user's Pod creates); they
 * are rows of their own, by `bench`; the apiserver's requests to itself are by `apiserver` (APISERVER_OWN), and the
 * rest is the syncer's (nothing else talks to a bench tenant apiserver).
 */
export function requestsPerPod(
  before: RequestCounts,
  after: RequestCounts,
  pods: number,
  bench: RequestCounts = {},
): RequestRow[] {
  const rows: RequestRow[] = [];
  const per = (n: number) => Number((n / pods).toFixed(3));
  for (const [request, v] of Object.entries(after)) {
    const d = v - (before[request] ?? 0);
    if (d <= 0) continue;
    const own = Math.min(d, bench[request] ?? 0);
    if (own > 0) rows.push({ request, perPod: per(own), by: 'bench' });
    if (d - own > 0) rows.push({ request, perPod: per(d - own), by: byWhom(request) });
  }
  return rows.sort((a, b) => b.perPod - a.perPod || a.request.localeCompare(b.request));
}

/** formatRequests prints the rows as an aligned table with the syncer's total per Pod. */
export function formatRequests(rows: readonly RequestRow[]): string {
  const syncer = rows.filter((r) => r.by === 'syncer').reduce((s, r) => s + r.perPod, 0);
  return [
    ...rows.map((r) => `  ${r.perPod.toFixed(3).padStart(7)}  ${r.by.padEnd(9)} ${r.request}`),
    `  ${syncer.toFixed(3).padStart(7)}  tenant apiserver requests per Pod made by the syncer`,
  ].join('\n');
}

/** readTenantRequests scrapes every tenant apiserver's /metrics and sums their request counts. */
export async function readTenantRequests(cps: readonly LocalControlPlane[]): Promise<RequestCounts> {
  const texts = await Promise.all(cps.map((cp) => fetchText(cp.server, cp.adminToken, '/metrics')));
  return sumCounts(texts.map(parseRequestTotals));
}
