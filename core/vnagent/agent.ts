// Over 500 lines, on purpose: VnAgent is one server's path for a request (authenticate the tenant, translate the
// path, check the Pod's owner, forward or relay the stream) with the limits and certificate renewal around it; the
// forwarding is proxy.ts, the routes routes.ts, the usage filter usage.ts and usageroute.ts.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { X509Certificate } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { childLogger } from '../log.ts';
import type { CertKeyPair } from '../pki/pki.ts';
import { DEFAULT_RENEW_FRACTION, renewAt } from '../pki/renewal.ts';
import { addHealthCheck, addReadyCheck, startOpsServer, type OpsServer } from '../metrics/ops.ts';
import { provenanceOf } from '../names/names.ts';
import type { PluginHost } from '../plugins/host.ts';
import { authenticate, type AgentTenant } from './auth.ts';
import { filterNodeCall, lineFilter, nodeCallOf, outputFilter, withQuery } from './hooks.ts';
import type { TenantDirectory } from './directory.ts';
import {
  addUsageSource,
  forgetGoneTenants,
  kubeletClientCertificateExpiry,
  servingCertificateExpiry,
  vnAgentMetrics,
  type Result,
} from './metrics.ts';
import {
  forwardRequest,
  forwardUpgrade,
  rawResponse,
  sendText,
  tlsOptions,
  type KubeletEndpoint,
  type KubeletTLS,
  type RelayOptions,
} from './proxy.ts';
import { VN_AGENT_PORT } from '../../plugins/sdk/src/wellknown.ts';
import { StreamLimits, TOO_MANY_STREAMS, type StreamLimitOptions } from './limits.ts';
import { kindOf, METHODS, targetOf, translatePath, KUBELET_KINDS } from './routes.ts';
import { simulatedNodeRefusal } from './simulated.ts';
import { kubeletEndpointOf, type SuperView } from './superview.ts';
import { parseNodeCredential, type RenewedNodeCredential } from './nodecredential.ts';
import { agentTenantUsage, tenantUsage, USAGE_PATHS, usageKindOf, type UsageKind } from './usageroute.ts';

const log = childLogger({ controller: 'vn-agent' });
/** RENEW_RETRY_MS is how soon a failed renewal of a certificate is tried again. */
const RENEW_RETRY_MS = 60_000;
/** MAX_TIMER_MS is the longest delay a Node.js timer keeps (longer ones fire after 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Credential is one certificate of the agent's own that it renews while it runs. */
type Credential = 'serving' | 'kubelet client' | `node ${string}`;

/** DEFAULT_PORT is the port the vn-agent listens on, and the vNodes' kubelet port (plugins/nodes). */
export const DEFAULT_PORT = VN_AGENT_PORT;

/** FORGET_INTERVAL_MS is how often the agent drops the metric series of tenants it no longer serves. */
const FORGET_INTERVAL_MS = 60_000;

/** DEFAULT_HANDSHAKE_TIMEOUT_MS bounds how long a kubelet may take to answer a request or an upgrade. */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 30_000;
/** USAGE_SCRAPE_TIMEOUT_MS bounds one kubelet read for the tenant usage metrics: a scrape must not hang on a node. */
const USAGE_SCRAPE_TIMEOUT_MS = 5000;
/** DEFAULT_STREAM_IDLE_TIMEOUT_MS is the kubelet's own default streaming-connection idle timeout (4 h). */
export const DEFAULT_STREAM_IDLE_TIMEOUT_MS = 4 * 3600_000;

/**
 * SIMULATED_NODE_STATUS answers exec, attach, port-forward and run for a Pod on a simulated node: the tenant apiserver
 * relays it, and kubectl prints the reason.
 */
export const SIMULATED_NODE_STATUS = 403;

/** VnAgentOptions configure a vn-agent. */
export interface VnAgentOptions {
  /** listen address (default 0.0.0.0) */
  host?: string;
  /** listen port (default DEFAULT_PORT; 0 picks a free one) */
  port?: number;
  /** the agent's serving certificate and key (PEM) */
  serving: { certPem: string; keyPem: string };
  /** the tenants that may connect; started and stopped with the agent */
  directory: TenantDirectory;
  /** super Pods and Nodes; started and stopped with the agent */
  superView: SuperView;
  /** a plugin host loaded with process 'vn-agent' */
  plugins: PluginHost;
  /** how the agent talks to kubelets (kubeletInsecureSkipVerify defaults to false) */
  kubelet?: KubeletTLS;
  /** serve /healthz, /readyz and /metrics on a plain HTTP port */
  ops?: { host?: string; port: number };
  handshakeTimeoutMs?: number;
  streamIdleTimeoutMs?: number;
  /** requests and streams relayed at once, per tenant and in all (see StreamLimits) */
  limits?: StreamLimitOptions;
}

/** Refusal is a request the agent answers itself. */
interface Refusal {
  ok: false;
  status: number;
  reason: string;
  result: Result;
  tenant: string;
  kind: string;
}

/** STREAM_KINDS are the kubelet calls that are streams (an HTTP upgrade); any other is refused an upgrade. */
const STREAM_KINDS: ReadonlySet<string> = new Set(['exec', 'attach', 'portForward']);

/** Admission is a request the agent forwards. */
interface Admission {
  ok: true;
  tenant: AgentTenant;
  kind: string;
  path: string;
  endpoint: KubeletEndpoint;
  /** the plugins' output filter over the kubelet's answer (container logs), if any (hooks.ts) */
  output?: (text: string) => string;
}

/**
 * presented records the client certificate a tenant's apiserver authenticated with (its expiry, per tenant): a renewed
 * kubelet client certificate shows there once the apiserver presents it.
 */
function presented(t: AgentTenant, peer: X509Certificate): void {
  vnAgentMetrics.tenantClientCertificateExpiry.set({ tenant: t.key }, Date.parse(peer.validTo) / 1000);
}

/**
 * VnAgent is the kubelet endpoint of every vNode. A tenant apiserver connects with its kubelet client certificate;
 * the agent finds the tenant (authenticate), lets the plugins translate the kubelet path to super names, checks that
 * the super Pod exists and belongs to that tenant, and forwards the request, or relays the upgraded stream, to the
 * kubelet of the node the Pod runs on with the agent's own credentials. It answers only containerLogs, exec, attach,
 * portForward and run, and the usage endpoints /stats/summary and /metrics/resource filtered to the tenant's own Pods
 * (onUsage); the agent's own health and metrics are on the separate ops port. A simulated (kwok) node has no container
 * runtime, so only logs reach it: exec, attach, port-forward and run are refused (simulatedNodeRefusal).
 */
export class VnAgent {
  private readonly server: https.Server;
  private kubeletAgent: https.Agent;
  /** connection pools of replaced kubelet client certificates, kept until the streams they carry end */
  private readonly retiredAgents = new Set<https.Agent>();
  private kubelet: KubeletTLS;
  private readonly sockets = new Set<Duplex>();
  private readonly checks: Array<() => void> = [];
  private readonly limits: StreamLimits;
  private servingPem: string;
  private ops?: OpsServer;
  private stopping?: Promise<void>;
  private forgetTimer?: ReturnType<typeof setInterval>;
  private readonly renewTimers = new Map<Credential, ReturnType<typeof setTimeout>>();

  private constructor(private readonly o: VnAgentOptions) {
    this.limits = new StreamLimits(o.limits);
    this.kubelet = o.kubelet ?? {};
    this.servingPem = o.serving.certPem;
    this.server = https.createServer({
      cert: o.serving.certPem,
      key: o.serving.keyPem,
      requestCert: true,
      // Certificates are checked per request against the tenant directory (and a clear reason given), not by OpenSSL.
      rejectUnauthorized: false,
      minVersion: 'TLSv1.2',
    });
    // The pool never queues a request the limits granted: a queue per kubelet would be shared by every tenant.
    this.kubeletAgent = this.kubeletPool();
    this.server.on(
      'request',
      (req, res) =>
        void this.onRequest(req, res).catch((e: unknown) => {
          log.error({ err: e instanceof Error ? e.message : String(e), url: req.url }, 'request failed');
          if (!res.headersSent) sendText(res, 500, 'internal error in the vn-agent');
          else res.destroy();
        }),
    );
    this.server.on(
      'upgrade',
      (req: IncomingMessage, socket: Duplex, head: Buffer) =>
        void this.onUpgrade(req, socket, head).catch((e: unknown) => {
          log.error({ err: e instanceof Error ? e.message : String(e), url: req.url }, 'upgrade failed');
          socket.destroy();
        }),
    );
    this.server.on('tlsClientError', (err) => log.debug({ err: err.message }, 'TLS handshake failed'));
  }

  /** VnAgent.start starts the directory and super caches, then listens; with `ops`, the ops server too. */
  static async start(o: VnAgentOptions): Promise<VnAgent> {
    const a = new VnAgent(o);
    await Promise.all([o.directory.start(), o.superView.start()]);
    await new Promise<void>((resolve, reject) => {
      a.server.once('error', reject);
      a.server.listen(o.port ?? DEFAULT_PORT, o.host ?? '0.0.0.0', () => {
        a.server.off('error', reject);
        resolve();
      });
    });
    a.servingExpires(o.serving.certPem);
    a.kubeletClientExpires();
    if (o.ops) {
      a.ops = await startOpsServer({ host: o.ops.host ?? '127.0.0.1', port: o.ops.port });
      const name = `vn-agent-${a.port}`;
      a.checks.push(
        addHealthCheck(name, () => (a.server.listening ? true : 'not listening')),
        addReadyCheck(name, () => {
          const d = o.directory.ready();
          if (d !== true) return d;
          const expired = a.expiredCertificates();
          if (expired) return expired;
          return o.superView.ready();
        }),
      );
    }
    // Per-tenant usage on the nodes this agent serves, read from their kubelets when the metrics are scraped.
    a.checks.push(
      addUsageSource(async () => {
        const served = new Set([...o.directory.tenants()].map((t) => t.key));
        const u = await agentTenantUsage(o.superView, served, {
          tls: o.kubelet ?? {},
          agent: a.kubeletAgent,
          timeoutMs: Math.min(o.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS, USAGE_SCRAPE_TIMEOUT_MS),
        });
        if (u.unread.length) log.warn({ unread: u.unread }, 'kubelet summaries not read for the tenant usage metrics');
        return u.rows;
      }),
    );
    // A removed tenant's metric series go within a minute: the tenant label stays bounded by the tenants served.
    a.forgetTimer = setInterval(() => {
      const live = new Set([...o.directory.tenants()].map((t) => t.key));
      void forgetGoneTenants(live).catch((e: unknown) => log.debug({ err: String(e) }, 'pruning metric series failed'));
    }, FORGET_INTERVAL_MS);
    a.forgetTimer.unref();
    log.info({ port: a.port, opsPort: a.ops?.port, plugins: o.plugins.names() }, 'vn-agent listening');
    return a;
  }

  /** superView is what the agent reads super Pods and Nodes through. */
  get superView(): SuperView {
    return this.o.superView;
  }

  /** port is the bound port. */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /**
   * setServing replaces the serving certificate and key: connections opened from now on are served with it, those
   * already open keep theirs, so a renewal drops no request. The expiry metric follows.
   */
  setServing(serving: { certPem: string; keyPem: string }): void {
    this.servingPem = serving.certPem;
    this.server.setSecureContext({ cert: serving.certPem, key: serving.keyPem, minVersion: 'TLSv1.2' });
    this.servingExpires(serving.certPem);
  }

  /**
   * renewServing keeps the serving certificate renewed for as long as the agent runs: at `fraction` of the life of
   * the one it serves, `issue` makes the next, which setServing takes up. A failed issue is tried again a minute later.
   */
  renewServing(current: string, issue: () => Promise<CertKeyPair>, fraction = DEFAULT_RENEW_FRACTION): void {
    this.renew('serving', current, issue, (pair) => this.setServing(pair), fraction);
  }

  /**
   * setKubeletClient replaces the client certificate and key the agent shows kubelets. Requests and streams from now
   * on use a new connection pool with it; those already relayed keep their connections (and the old pool) until they
   * end, so a renewal cuts no log stream or exec session. The expiry metric follows.
   */
  setKubeletClient(client: CertKeyPair): void {
    this.kubelet = { ...this.kubelet, certPem: client.certPem, keyPem: client.keyPem };
    const old = this.kubeletAgent;
    this.kubeletAgent = this.kubeletPool();
    this.retire(old);
    this.kubeletClientExpires();
  }

  /**
   * renewKubeletClient keeps the client certificate towards kubelets renewed for as long as the agent runs, as
   * renewServing does for the serving one: at `fraction` of its life `issue` makes the next, which setKubeletClient
   * takes up.
   */
  renewKubeletClient(current: string, issue: () => Promise<CertKeyPair>, fraction = DEFAULT_RENEW_FRACTION): void {
    this.renew('kubelet client', current, issue, (pair) => this.setKubeletClient(pair), fraction);
  }

  /**
   * renewNodeCredential keeps a node credential the agent reads super Pods with renewed for as long as it runs, as
   * renewServing does: at `fraction` of its life `issue` makes the next, which the clients built on `held` send from
   * then on (RenewedNodeCredential).
   */
  renewNodeCredential(
    held: RenewedNodeCredential,
    issue: () => Promise<CertKeyPair>,
    fraction = DEFAULT_RENEW_FRACTION,
  ): void {
    const node = held.current.nodeName;
    this.renew(
      `node ${node}`,
      held.current.certPem,
      issue,
      (pair) => held.replace(parseNodeCredential(pair.certPem, pair.keyPem, `renewed for ${node}`, node)),
      fraction,
    );
  }

  /** renew schedules the renewal of one credential at `fraction` of the life of `current`, and the next after it. */
  private renew(
    what: Credential,
    current: string,
    issue: () => Promise<CertKeyPair>,
    apply: (pair: CertKeyPair) => void,
    fraction: number,
  ): void {
    const x = new X509Certificate(current);
    const due = renewAt({ notBefore: new Date(x.validFrom), notAfter: new Date(x.validTo) }, fraction).getTime();
    const next = async () => {
      try {
        const pair = await issue();
        if (this.stopping) return;
        apply(pair);
        log.info(
          { port: this.port, notAfter: new X509Certificate(pair.certPem).validTo },
          `${what} certificate renewed`,
        );
        this.renew(what, pair.certPem, issue, apply, fraction);
      } catch (e) {
        log.warn({ err: e instanceof Error ? e.message : String(e) }, `renewing the ${what} certificate failed`);
        this.renewTimers.set(what, setTimeout(() => void next(), RENEW_RETRY_MS).unref());
      }
    };
    // A timer fires at most 2^31-1 ms ahead: a far renewal is waited for in steps.
    const wait = () => {
      const left = due - Date.now();
      if (left <= 0) return void next();
      this.renewTimers.set(what, setTimeout(wait, Math.min(left, MAX_TIMER_MS)).unref());
    };
    clearTimeout(this.renewTimers.get(what));
    wait();
  }

  /** kubeletPool is a keep-alive connection pool to kubelets with the current client credentials. */
  private kubeletPool(): https.Agent {
    // The pool never queues a request the limits granted: a queue per kubelet would be shared by every tenant.
    return new https.Agent({ keepAlive: true, maxSockets: this.limits.total, ...tlsOptions(this.kubelet) });
  }

  /**
   * retire closes the idle connections of a replaced pool at once and the pool itself once its last relayed request
   * has ended (pools still busy at the next look, or at stop, are checked again or destroyed then).
   */
  private retire(old: https.Agent): void {
    this.retiredAgents.add(old);
    for (const a of this.retiredAgents) {
      for (const list of Object.values(a.freeSockets)) for (const s of list ?? []) s.destroy();
      if (!Object.values(a.sockets).some((l) => l?.length)) {
        a.destroy();
        this.retiredAgents.delete(a);
      }
    }
  }

  /** servingExpires sets the serving certificate's expiry metric of this agent's port. */
  private servingExpires(certPem: string): void {
    const notAfter = Date.parse(new X509Certificate(certPem).validTo);
    servingCertificateExpiry.set({ port: String(this.port) }, notAfter / 1000);
  }

  /** kubeletClientExpires sets the expiry metric of the client certificate towards kubelets, when the agent has one. */
  private kubeletClientExpires(): void {
    if (!this.kubelet.certPem || !this.server.listening) return;
    const notAfter = Date.parse(new X509Certificate(this.kubelet.certPem).validTo);
    kubeletClientCertificateExpiry.set({ port: String(this.port) }, notAfter / 1000);
  }

  /**
   * expiredCertificates names the agent's own certificates that have run out (its readiness then fails with it, so
   * the Pod's Ready condition shows why every call is refused), or undefined while both are valid.
   */
  private expiredCertificates(): string | undefined {
    const now = Date.now();
    const out: string[] = [];
    for (const [what, pem] of [
      ['serving', this.servingPem],
      ['kubelet client', this.kubelet.certPem],
    ] as const) {
      if (!pem) continue;
      const notAfter = new X509Certificate(pem).validTo;
      if (Date.parse(notAfter) <= now) out.push(`the ${what} certificate expired at ${notAfter}`);
    }
    return out.length ? out.join('; ') : undefined;
  }

  /** opsPort is the bound ops port, when the ops server runs. */
  get opsPort(): number | undefined {
    return this.ops?.port;
  }

  /** stop stops listening, cuts every open request and stream, stops the caches and ends the plugins' sandboxes. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      clearInterval(this.forgetTimer);
      for (const t of this.renewTimers.values()) clearTimeout(t);
      for (const undo of this.checks.splice(0)) undo();
      if (this.server.listening) {
        servingCertificateExpiry.remove({ port: String(this.port) });
        kubeletClientCertificateExpiry.remove({ port: String(this.port) });
      }
      const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      this.server.closeAllConnections();
      for (const s of this.sockets) s.destroy();
      this.kubeletAgent.destroy();
      for (const a of this.retiredAgents) a.destroy();
      await closed;
      await this.ops?.close();
      await Promise.all([this.o.directory.stop(), this.o.superView.stop(), this.o.plugins.close()]);
    })();
    return this.stopping;
  }

  private track(s: Duplex): void {
    this.sockets.add(s);
    s.once('close', () => this.sockets.delete(s));
  }

  private relay(a: Admission): RelayOptions {
    const labels = { tenant: a.tenant.key, kind: a.kind };
    return {
      endpoint: a.endpoint,
      path: a.path,
      tls: this.kubelet,
      handshakeTimeoutMs: this.o.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
      idleTimeoutMs: this.o.streamIdleTimeoutMs ?? DEFAULT_STREAM_IDLE_TIMEOUT_MS,
      agent: this.kubeletAgent,
      onBytes: (direction, n) => vnAgentMetrics.bytes.inc({ ...labels, direction }, n),
      track: (s) => this.track(s),
    };
  }

  /** admit decides a request: who is asking, for what, and whether the Pod is theirs. */
  private async admit(req: IncomingMessage): Promise<Admission | Refusal> {
    const url = req.url ?? '/';
    const kindGuess = kindOf(url) ?? 'other';
    const refuse = (
      status: number,
      reason: string,
      result: Result,
      tenant = '',
      kind: string = kindGuess,
    ): Refusal => ({ ok: false, status, reason, result, tenant, kind });
    const peer = (req.socket as TLSSocket).getPeerX509Certificate?.();
    const auth = authenticate(peer, this.o.directory.tenants());
    if (!auth.ok) return refuse(auth.status, auth.reason, auth.status === 401 ? 'unauthenticated' : 'forbidden');
    const t = auth.tenant;
    presented(t, peer!);
    const kind = kindOf(url);
    if (!kind) {
      return refuse(
        403,
        `path ${url.split('?')[0]} is not served by the vn-agent (only ${[...KUBELET_KINDS.map((k) => `/${k}/`), ...Object.keys(USAGE_PATHS)].join(', ')})`,
        'forbidden',
        t.key,
        'other',
      );
    }
    if (!METHODS[kind].includes(req.method ?? ''))
      return refuse(405, `method ${req.method} is not allowed on /${kind}/`, 'forbidden', t.key);
    const path = translatePath(this.o.plugins, t, url);
    const target = path === null ? undefined : targetOf(path);
    const asked = targetOf(url);
    const podName = asked ? `${asked.namespace}/${asked.pod}` : url.split('?')[0];
    if (!path || !target)
      return refuse(
        403,
        `path ${url.split('?')[0]} is refused: not a kubelet path of a tenant pod`,
        'forbidden',
        t.key,
      );
    const pod = await this.o.superView.pod(target.namespace, target.pod);
    if (!pod || provenanceOf(pod)?.cluster !== t.key)
      return refuse(403, `pod ${podName} not found for this tenant`, 'forbidden', t.key);
    const call = nodeCallOf(kind, req.method ?? 'GET', url, pod.metadata);
    const filtered = filterNodeCall(this.o.plugins, t, call);
    if (!filtered.ok)
      return refuse(403, `refused by plugin ${filtered.plugin}: ${filtered.reason}`, 'forbidden', t.key);
    const sent = filtered.changed ? withQuery(path, filtered.query) : path;
    const output =
      kind === 'containerLogs' ? outputFilter(this.o.plugins, t, { ...call, query: filtered.query }) : undefined;
    const nodeName = pod.spec?.nodeName;
    if (!nodeName) return refuse(502, `pod ${podName} is not running on a node yet`, 'bad_gateway', t.key);
    const node = await this.o.superView.node(nodeName);
    const simulated = node && simulatedNodeRefusal(kind, podName, node);
    if (simulated) return refuse(SIMULATED_NODE_STATUS, simulated, 'forbidden', t.key);
    const ep = node ? kubeletEndpointOf(node) : `node ${nodeName} of pod ${podName} is not known`;
    if (typeof ep === 'string') return refuse(502, ep, 'bad_gateway', t.key);
    return { ok: true, tenant: t, kind, path: sent, endpoint: { ...ep, node: nodeName }, ...(output && { output }) };
  }

  private async admitSafely(req: IncomingMessage): Promise<Admission | Refusal> {
    try {
      return await this.admit(req);
    } catch (e) {
      log.error({ err: e instanceof Error ? e.message : String(e), url: req.url }, 'request could not be decided');
      return {
        ok: false,
        status: 503,
        reason: 'the vn-agent cannot check the pod right now; retry',
        result: 'bad_gateway',
        tenant: '',
        kind: kindOf(req.url ?? '/') ?? 'other',
      };
    }
  }

  /**
   * admitLimited admits a request and takes a slot of its tenant's stream limit, held until the request or stream
   * ends (release); a tenant at its limit is refused with 429 and the reason, and holds no slot.
   */
  private async admitLimited(req: IncomingMessage): Promise<(Admission & { release: () => void }) | Refusal> {
    const a = await this.admitSafely(req);
    if (!a.ok) return a;
    const slot = this.limits.acquire(a.tenant.key);
    if (!slot.ok)
      return {
        ok: false,
        status: TOO_MANY_STREAMS,
        reason: slot.reason,
        result: 'throttled',
        tenant: a.tenant.key,
        kind: a.kind,
      };
    return { ...a, release: slot.release };
  }

  private refused(r: Refusal, req: IncomingMessage): void {
    vnAgentMetrics.requests.inc({ tenant: r.tenant, kind: r.kind, result: r.result });
    const peer = (req.socket as TLSSocket).getPeerX509Certificate?.();
    log.info(
      {
        tenant: r.tenant || undefined,
        status: r.status,
        url: req.url?.split('?')[0],
        subject: peer?.subject.replace(/\n/g, ','),
        reason: r.reason,
      },
      'request refused',
    );
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const usage = usageKindOf(req.url ?? '/');
    if (usage) return this.onUsage(req, res, usage);
    const a = await this.admitLimited(req);
    if (!a.ok) {
      this.refused(a, req);
      req.resume();
      return sendText(res, a.status, a.reason);
    }
    const labels = { tenant: a.tenant.key, kind: a.kind };
    vnAgentMetrics.activeStreams.inc(labels);
    try {
      const output = a.output;
      const result = await forwardRequest(req, res, {
        ...this.relay(a),
        ...(output && { output: () => lineFilter(output) }),
      });
      vnAgentMetrics.requests.inc({ ...labels, result });
      log.debug({ ...labels, node: a.endpoint.node, result }, 'request relayed');
    } finally {
      vnAgentMetrics.activeStreams.dec(labels);
      a.release();
    }
  }

  /**
   * onUsage answers /stats/summary and /metrics/resource for the authenticated tenant: only its own Pods, node totals
   * scaled to them (usageroute.ts, usage.ts). It takes one slot of the tenant's stream limit while the kubelets answer.
   */
  private async onUsage(req: IncomingMessage, res: ServerResponse, kind: UsageKind): Promise<void> {
    req.resume();
    const peer = (req.socket as TLSSocket).getPeerX509Certificate?.();
    const auth = authenticate(peer, this.o.directory.tenants());
    const refuse = (r: Omit<Refusal, 'ok' | 'kind'>): void => {
      this.refused({ ok: false, kind, ...r }, req);
      sendText(res, r.status, r.reason);
    };
    if (!auth.ok)
      return refuse({
        status: auth.status,
        reason: auth.reason,
        result: auth.status === 401 ? 'unauthenticated' : 'forbidden',
        tenant: '',
      });
    const t = auth.tenant;
    presented(t, peer!);
    if (req.method !== 'GET')
      return refuse({
        status: 405,
        reason: `method ${req.method} is not allowed on ${req.url?.split('?')[0]}`,
        result: 'forbidden',
        tenant: t.key,
      });
    const call = nodeCallOf(kind, req.method, req.url ?? '/');
    const filtered = filterNodeCall(this.o.plugins, t, call);
    if (!filtered.ok)
      return refuse({
        status: 403,
        reason: `refused by plugin ${filtered.plugin}: ${filtered.reason}`,
        result: 'forbidden',
        tenant: t.key,
      });
    const output = outputFilter(this.o.plugins, t, { ...call, query: filtered.query });
    const slot = this.limits.acquire(t.key);
    if (!slot.ok) return refuse({ status: TOO_MANY_STREAMS, reason: slot.reason, result: 'throttled', tenant: t.key });
    const labels = { tenant: t.key, kind };
    vnAgentMetrics.activeStreams.inc(labels);
    try {
      const answer = await tenantUsage(kind, t, this.o.superView, {
        tls: this.kubelet,
        agent: this.kubeletAgent,
        timeoutMs: this.o.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
      });
      if (output) answer.body = output(answer.body);
      res.writeHead(200, {
        'Content-Type': answer.contentType,
        'Content-Length': Buffer.byteLength(answer.body),
        'X-Content-Type-Options': 'nosniff',
      });
      res.end(answer.body);
      vnAgentMetrics.bytes.inc({ ...labels, direction: 'to_client' }, Buffer.byteLength(answer.body));
      vnAgentMetrics.requests.inc({ ...labels, result: 'ok' });
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      refuse({ status: 502, reason, result: 'bad_gateway', tenant: t.key });
    } finally {
      vnAgentMetrics.activeStreams.dec(labels);
      slot.release();
    }
  }

  private async onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    this.track(socket);
    socket.on('error', (err) => {
      log.debug({ err: err.message }, 'client stream error');
      socket.destroy();
    });
    const a = await this.admitLimited(req);
    if (!a.ok) {
      this.refused(a, req);
      return rawResponse(socket, a.status, a.reason);
    }
    // Only the streams upgrade: container logs asked for with an upgrade would come back through the raw relay,
    // past the plugins' output filter.
    if (!STREAM_KINDS.has(a.kind)) {
      a.release();
      const reason = `${a.kind} is not a stream: only exec, attach and portForward are upgraded`;
      this.refused({ ok: false, status: 400, reason, result: 'forbidden', tenant: a.tenant.key, kind: a.kind }, req);
      return rawResponse(socket, 400, reason);
    }
    const labels = { tenant: a.tenant.key, kind: a.kind };
    const protocol = req.headers.upgrade;
    vnAgentMetrics.activeStreams.inc(labels);
    try {
      const relay = this.relay(a);
      relay.onHandshake = (result) => {
        vnAgentMetrics.requests.inc({ ...labels, result });
        log.debug({ ...labels, node: a.endpoint.node, protocol, result }, 'upgrade handshake decided');
      };
      await forwardUpgrade(req, socket, head, relay);
      log.debug({ ...labels, node: a.endpoint.node, protocol }, 'stream ended');
    } finally {
      vnAgentMetrics.activeStreams.dec(labels);
      a.release();
    }
  }
}

/** startVnAgent starts a vn-agent (see VnAgent). */
export function startVnAgent(o: VnAgentOptions): Promise<VnAgent> {
  return VnAgent.start(o);
}
