import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { childLogger } from '../log.ts';
import { registry } from './registry.ts';

/** CheckResult is the answer of a check: `true` when it passes, otherwise the reason it fails. */
export type CheckResult = true | string;

/** CheckFn probes one condition of the process. A throw or a rejection counts as a failure with its message. */
export type CheckFn = () => CheckResult | Promise<CheckResult>;

/** CHECK_TIMEOUT_MS is how long a check may take before it counts as failed. */
export const CHECK_TIMEOUT_MS = 2000;

/** CheckKind tells liveness checks (`/healthz`) from readiness checks (`/readyz`). */
export type CheckKind = 'health' | 'ready';

/** CheckOutcome is the result of running one check. */
export interface CheckOutcome {
  name: string;
  ok: boolean;
  /** why the check failed; absent when it passed */
  reason?: string;
}

const checks: Record<CheckKind, Map<string, CheckFn>> = { health: new Map(), ready: new Map() };

function addCheck(kind: CheckKind, name: string, fn: CheckFn): () => void {
  if (!/^\S+$/.test(name))
    throw new Error(`${kind} check name ${JSON.stringify(name)} must be non-empty and free of whitespace`);
  const set = checks[kind];
  if (set.has(name)) throw new Error(`${kind} check ${name} is already registered`);
  set.set(name, fn);
  return () => {
    if (set.get(name) === fn) set.delete(name);
  };
}

/**
 * addReadyCheck registers a readiness check: `/readyz` answers 200 only while every readiness check passes.
 * Names are unique per kind; the returned function unregisters the check.
 */
export function addReadyCheck(name: string, fn: CheckFn): () => void {
  return addCheck('ready', name, fn);
}

/**
 * addHealthCheck registers a liveness check: `/healthz` fails once one fails, which makes the kubelet restart the
 * process, so it should only fail on conditions a restart cures. The returned function unregisters the check.
 */
export function addHealthCheck(name: string, fn: CheckFn): () => void {
  return addCheck('health', name, fn);
}

async function runCheck(name: string, fn: CheckFn): Promise<CheckOutcome> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`timed out after ${CHECK_TIMEOUT_MS} ms`), CHECK_TIMEOUT_MS);
  });
  try {
    const result = await Promise.race([Promise.resolve().then(fn), timeout]);
    if (result === true) return { name, ok: true };
    return { name, ok: false, reason: typeof result === 'string' ? result : `returned ${String(result)}` };
  } catch (e) {
    return { name, ok: false, reason: e instanceof Error ? e.message : String(e) };
  } finally {
    clearTimeout(timer);
  }
}

/** runChecks runs every registered check of a kind concurrently and returns the outcomes sorted by name. */
export async function runChecks(kind: CheckKind): Promise<CheckOutcome[]> {
  const outcomes = await Promise.all([...checks[kind]].map(([name, fn]) => runCheck(name, fn)));
  return outcomes.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * renderChecks formats outcomes like the Kubernetes health endpoints: `ok` when all pass (unless verbose), otherwise
 * one `[+]name ok` / `[-]name failed: reason` line per check (only failing ones unless verbose) and a verdict line.
 */
export function renderChecks(endpoint: string, outcomes: CheckOutcome[], verbose: boolean): string {
  const passed = outcomes.every((o) => o.ok);
  if (passed && !verbose) return 'ok\n';
  const lines = outcomes
    .filter((o) => verbose || !o.ok)
    .map((o) => (o.ok ? `[+]${o.name} ok` : `[-]${o.name} failed: ${(o.reason ?? '').replace(/\s*\n\s*/g, ' ')}`));
  lines.push(`${endpoint} check ${passed ? 'passed' : 'failed'}`);
  return lines.join('\n') + '\n';
}

/** OpsServerOptions configure startOpsServer. */
export interface OpsServerOptions {
  /** 0 picks a free port */
  port: number;
  host?: string;
}

/** OpsServer is a listening ops server. */
export interface OpsServer {
  /** the port actually bound */
  readonly port: number;
  /** close stops listening and drops open connections. */
  close(): Promise<void>;
}

const checkEndpoints: Record<string, { kind: CheckKind; name: string }> = {
  '/healthz': { kind: 'health', name: 'healthz' },
  '/readyz': { kind: 'ready', name: 'readyz' },
};

/**
 * startOpsServer serves the operational endpoints of the process: `/metrics` (the registry in Prometheus text format),
 * `/healthz` (liveness checks) and `/readyz` (readiness checks). Failing checks answer 500, as Kubernetes components
 * do; `?verbose` lists passing checks too.
 */
export async function startOpsServer({ port, host = '127.0.0.1' }: OpsServerOptions): Promise<OpsServer> {
  const log = childLogger({ controller: 'ops-server' });

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((e: unknown) => {
      log.error({ err: e, url: req.url }, 'ops request failed');
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'internal error\n');
      else res.destroy();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://ops');
    const endpoint = checkEndpoints[url.pathname];
    if (url.pathname !== '/metrics' && !endpoint)
      return send(res, 404, 'text/plain; charset=utf-8', '404 page not found\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
    }
    if (!endpoint) return send(res, 200, registry.contentType, await registry.metrics());
    const outcomes = await runChecks(endpoint.kind);
    const failed = outcomes.filter((o) => !o.ok);
    if (failed.length > 0) log.debug({ endpoint: endpoint.name, failed }, 'checks failing');
    send(
      res,
      failed.length === 0 ? 200 : 500,
      'text/plain; charset=utf-8',
      renderChecks(endpoint.name, outcomes, url.searchParams.has('verbose')),
    );
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  log.info({ host, port: bound }, 'ops server listening');

  let closing: Promise<void> | undefined;
  return {
    port: bound,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function send(res: http.ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(body);
}
