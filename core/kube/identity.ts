import { readFileSync } from 'node:fs';
import { Counter, Gauge } from 'prom-client';
import { registry } from '../metrics/registry.ts';
import { fromPackageRoot } from '../paths.ts';

/**
 * How this process presents itself to apiservers: the User-Agent of every request (the audit log's `userAgent` then
 * tells the manager from the vn-agent), and the count of answers by status code (so a run can count its 403s).
 */

/** PRODUCT is the first word of every User-Agent this project sends. */
export const PRODUCT = 'virtualcluster-ts';

/** COMPONENTS are the programs that name themselves in the User-Agent; `vc` is the CLI and the embedded default. */
export const COMPONENTS = ['manager', 'vn-agent', 'cluster-ips', 'syncer', 'vc'] as const;
/** Component is one of COMPONENTS. */
export type Component = (typeof COMPONENTS)[number];

/**
 * userAgent renders a User-Agent in client-go's shape, `<product>-<component>/<version> (<os>/<arch>)`, e.g.
 * `virtualcluster-ts-manager/0.1.0 (linux/x64)`.
 */
export function userAgent(component: string, version: string, platform: string, arch: string): string {
  return `${PRODUCT}-${component}/${version} (${platform}/${arch})`;
}

let cachedVersion: string | undefined;
/** packageVersion is this package's version from its package.json, read once. */
export function packageVersion(): string {
  if (cachedVersion === undefined) {
    try {
      const v = (JSON.parse(readFileSync(fromPackageRoot('package.json'), 'utf8')) as { version?: unknown }).version;
      cachedVersion = typeof v === 'string' && v ? v : 'unknown';
    } catch {
      cachedVersion = 'unknown';
    }
  }
  return cachedVersion;
}

let current: string | undefined;

/**
 * setUserAgentComponent names the program this process runs: every KubeClient's requests from then on carry its
 * User-Agent. A program calls it first thing; until then requests name the CLI, `vc`.
 */
export function setUserAgentComponent(component: Component): void {
  current = userAgent(component, packageVersion(), process.platform, process.arch);
}

/** currentUserAgent is the User-Agent requests carry now (see setUserAgentComponent). */
export function currentUserAgent(): string {
  current ??= userAgent('vc', packageVersion(), process.platform, process.arch);
  return current;
}

/** METHODS are the verbs counted by name; others count as `other` (the label stays bounded). */
const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'WATCH']);

/**
 * requestsTotal is `vc_kube_client_requests_total{method, code, class}`: the apiserver answers this process got, by
 * verb (WATCH for a watch's opening), HTTP status code and its class (`2xx` ... `5xx`). A request that got no answer
 * (refused connection, reset, timeout) counts as code `error`, class `error`.
 */
const requestsTotal = new Counter({
  name: 'vc_kube_client_requests_total',
  help: 'Answers of apiservers to this process, by method, HTTP status code and status class (error: no answer).',
  labelNames: ['method', 'code', 'class'] as const,
  registers: [registry],
});

/** codeLabels are the bounded labels of one answer's status: a code outside 100-599 counts as `other`. */
export function codeLabels(status: number | undefined): { code: string; class: string } {
  if (status === undefined) return { code: 'error', class: 'error' };
  if (!Number.isInteger(status) || status < 100 || status > 599) return { code: 'other', class: 'other' };
  return { code: String(status), class: `${Math.floor(status / 100)}xx` };
}

/** countAnswer counts one answer (or, with no status, a request that got none) in vc_kube_client_requests_total. */
export function countAnswer(method: string, status: number | undefined): void {
  requestsTotal.inc({ method: METHODS.has(method) ? method : 'other', ...codeLabels(status) });
}

/**
 * openWatches is `vc_kube_client_open_watches{resource}`: the watch streams this process holds open, by resource
 * (plural name; bounded by the kinds the process syncs or controls), over every apiserver it talks to. A process
 * whose controllers share their informers holds one per resource and cluster.
 */
const openWatches = new Gauge({
  name: 'vc_kube_client_open_watches',
  help: 'Watch streams this process holds open to apiservers, by resource (one per resource and cluster when shared).',
  labelNames: ['resource'] as const,
  registers: [registry],
});

/** watchOpened counts one open watch of a resource in vc_kube_client_open_watches; the function returned ends it. */
export function watchOpened(resource: string): () => void {
  openWatches.inc({ resource });
  let open = true;
  return () => {
    if (open) openWatches.dec({ resource });
    open = false;
  };
}
