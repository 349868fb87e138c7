// Over 500 lines, on purpose: KubeClient is one class of the REST verbs (get, list, create, apply, patch, delete,
// watch) over one connection pool, authentication and timeout policy, which every verb shares through its private
// request path. What has a job of its own is already apart: errors.ts, wire.ts (watch streams), credentials.ts,
// kubeconfig.ts, informer.ts. Splitting the verbs out would only pass the private request path between files.
import https from 'node:https';
import http from 'node:http';
import { isNotFound, RequestTimeoutError, toApiError, WriteFencedError } from './errors.ts';
import { readAll, readWatchEvents } from './wire.ts';
import { staticSource, type Auth, type CredentialSource } from './credentials.ts';
import { countAnswer, currentUserAgent, watchOpened } from './identity.ts';
import { parseKubeconfig, type SafeKubeconfig } from './kubeconfig.ts';
import { Kubeconfig } from './kubeconfigfile.ts';
import {
  inClusterConfig,
  inClusterKubeConfig,
  platformAuth,
  platformFileHints,
  type PlatformFileHints,
} from './platform.ts';

import type { KubeObject, Resource } from '../../plugins/sdk/src/kube.ts';

/** Resource, KubeObject and ObjectMeta are the plugin SDK's object shapes: the core and plugins share one definition. */
export type { KubeObject, ObjectMeta, ObjectReference, Resource } from '../../plugins/sdk/src/kube.ts';
/** The request errors and their predicates (errors.ts), and the watch stream reader (wire.ts), as before. */
export {
  ApiError,
  RequestTimeoutError,
  WriteFencedError,
  isAlreadyExists,
  isConflict,
  isGone,
  isNotFound,
  isTimeout,
  isWriteFenced,
} from './errors.ts';
export { WATCH_SLICE_MS, readWatchEvents } from './wire.ts';

/** KubeList is a list response. */
export interface KubeList<T extends KubeObject = KubeObject> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion?: string; continue?: string };
  items: T[];
}

/** WatchEvent is one line of a watch stream. */
export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

/** RequestOptions are the knobs of one request. */
export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** timeoutMs bounds the whole request, answer included; default the client's timeoutMs (0: none). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** ClientOptions configure a KubeClient. */
export interface ClientOptions {
  /** maxSockets caps the connections of requests to the apiserver (watches have their own, uncapped); default 64. */
  maxSockets?: number;
  /**
   * timeoutMs bounds every request except watches: past it the client closes the connection and the call rejects
   * with RequestTimeoutError. A watch is bounded by it until the answer's headers arrive, and then by its own
   * `timeoutSeconds` plus WATCH_GRACE_MS. Default 0: no bound.
   */
  timeoutMs?: number;
}

/**
 * WATCH_GRACE_MS is how long past its `timeoutSeconds` a watch may stay open before the client closes it: the server
 * should have ended it by then, so a watch still open is a dead connection (a half-open socket, a stuck proxy).
 */
export const WATCH_GRACE_MS = 30_000;

/**
 * WATCH_IDLE_MS is how long a watch opened with `allowWatchBookmarks` may go without a byte before the client closes
 * it as stalled. The apiserver's watch cache sends each such watch a bookmark about once a minute even when nothing
 * changes, so two and a half minutes of silence means the stream carries nothing any more (a server that lost its
 * storage and never ended the watch, a proxy that stopped forwarding); the caller reopens it from its last
 * resourceVersion instead of waiting out `timeoutSeconds`.
 */
export const WATCH_IDLE_MS = 150_000;

/** ListOptions are the query parameters of a list or watch. */
export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: string;
}

/** DeleteOptions of one delete. */
export interface DeleteOptions {
  /** only delete the object with this uid (a precondition the apiserver checks atomically) */
  uid?: string;
  resourceVersion?: string;
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  gracePeriodSeconds?: number;
}

/** PatchType is the content type of a patch. */
export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';
const patchContentType: Record<PatchType, string> = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

/**
 * IDLE_SOCKET_MS is how long a kept-alive connection may sit unused before the client closes it: well inside the 90 s
 * after which kube-apiserver closes an idle one, so a request is not written onto a connection the server is closing
 * at that moment (the request fails with 'socket hang up'), even when this process's event loop runs late.
 */
const IDLE_SOCKET_MS = 30_000;

/** SAFE are the methods sent once more when a kept-alive connection turns out closed (see send). */
const SAFE = new Set(['GET', 'HEAD']);

/** keepAliveAgent pools connections to server, closing those idle for IDLE_SOCKET_MS (a request in flight is not bound). */
function keepAliveAgent(server: URL, opts: https.AgentOptions): http.Agent {
  const o = { ...opts, keepAlive: true, timeout: IDLE_SOCKET_MS };
  return server.protocol === 'https:' ? new https.Agent(o) : new http.Agent(o);
}

/**
 * KubeClient is a small dynamic client over one apiserver: every verb for any resource, and streaming watches.
 * It keeps connections alive through one agent for requests; watches get connections of their own (see watchAgent).
 * Every request asks the client's credential source for its credentials (cached, re-read or re-run as they change:
 * credentials.ts), carries the process's User-Agent (identity.ts) and is counted by status code; a 401 answer is
 * retried once with fresh credentials when the source has other ones to give.
 */
export class KubeClient {
  /**
   * watchAgent carries the watches, without a cap: a watch holds its connection for minutes, so on the capped request
   * agent enough informers (a manager's, with a few tenants) would hold every socket and queue every other request,
   * lease renewals included, until a watch ends.
   */
  private readonly watchAgent: http.Agent;
  private readonly writeListeners = new Set<(ms: number) => void>();

  private constructor(
    readonly server: URL,
    private readonly tls: https.RequestOptions,
    private readonly agent: http.Agent,
    readonly kubeConfig: Kubeconfig,
    /** timeoutMs is the default bound of every request but watches (0: none); see ClientOptions. */
    readonly timeoutMs: number,
    private readonly credentials: CredentialSource,
  ) {
    const tlsOpts = pickTls(tls);
    this.watchAgent = keepAliveAgent(server, tlsOpts);
  }

  /**
   * KubeClient.fromKubeConfig builds a client for the current context of a kubeconfig the platform owns. Its
   * credentials are got per request: an exec plugin runs when needed and again after expiry, a token file (the
   * in-cluster token provider's included) and client certificate files are re-read as they change (platform.ts).
   * `hints` carry what the kubeconfig loader drops from a file (fromFile fills them).
   */
  static async fromKubeConfig(
    kc: Kubeconfig,
    opts: ClientOptions = {},
    hints: PlatformFileHints = {},
  ): Promise<KubeClient> {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    const { tls, credentials } = await platformAuth(kc, hints);
    const server = new URL(cluster.server);
    const agent = keepAliveAgent(server, { maxSockets: opts.maxSockets ?? 64, ...pickTls(tls) });
    return new KubeClient(server, tls, agent, kc, checkTimeout(opts.timeoutMs), credentials);
  }

  /** KubeClient.fromFile loads a kubeconfig file the platform owns (see fromKubeConfig). */
  static async fromFile(path: string, opts: ClientOptions = {}): Promise<KubeClient> {
    const kc = new Kubeconfig();
    kc.loadFromFile(path);
    return KubeClient.fromKubeConfig(kc, opts, platformFileHints(path, kc));
  }

  /**
   * KubeClient.inCluster builds a client from the in-cluster configuration of a Pod, as client-go's
   * rest.InClusterConfig: the apiserver from KUBERNETES_SERVICE_HOST and _PORT, the ServiceAccount's CA, and its
   * token, re-read as the kubelet rotates it. `dir` is the ServiceAccount directory (tests).
   */
  static inCluster(opts: ClientOptions = {}, dir?: string): Promise<KubeClient> {
    return KubeClient.fromKubeConfig(inClusterKubeConfig(inClusterConfig(process.env, dir)), opts);
  }

  /**
   * KubeClient.fromString builds a client from a kubeconfig's YAML text that the platform does not own (a Secret, a
   * tenant's admin kubeconfig): parseKubeconfig reads it and refuses exec and auth-provider plugins, files, plain
   * http and skipped TLS verification, and only the inline data it accepted reaches the client. `source` names where
   * the text came from in the error (e.g. `Secret team-a/imported (key "kubeconfig")`).
   */
  static async fromString(text: string, source = 'a kubeconfig string', opts: ClientOptions = {}): Promise<KubeClient> {
    return KubeClient.fromSafe(parseKubeconfig(text, source), opts);
  }

  /**
   * KubeClient.fromSafe builds a client from a kubeconfig parseKubeconfig accepted; nothing is read or run. A
   * `credentials` source the program gives (a node credential it renews) replaces the kubeconfig's inline user for
   * every request: a certificate it hands out opens connections of its own.
   */
  static fromSafe(k: SafeKubeconfig, opts: ClientOptions = {}, credentials?: CredentialSource): KubeClient {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const kc = new Kubeconfig();
    kc.loadFromOptions({
      clusters: [
        {
          name: 'c',
          server: k.server,
          caData: k.caPem && b64(k.caPem),
          tlsServerName: k.tlsServerName,
          skipTLSVerify: false,
        },
      ],
      users: [{ name: 'u', certData: k.certPem && b64(k.certPem), keyData: k.keyPem && b64(k.keyPem), token: k.token }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u', namespace: k.namespace }],
      currentContext: 'x',
    });
    const tls: https.RequestOptions = { rejectUnauthorized: true };
    if (k.caPem) tls.ca = k.caPem;
    // A source's certificate goes per request: the connection pools must not hold one of their own, since an
    // agent's options win over a request's (Node's Agent.addRequest) and the first certificate would stay for good.
    if (k.certPem && !credentials) tls.cert = k.certPem;
    if (k.keyPem && !credentials) tls.key = k.keyPem;
    if (k.tlsServerName) tls.servername = k.tlsServerName;
    // Only what the parser accepted, inline and fixed: nothing here is read again or run.
    const source = credentials ?? staticSource(k.token ? { authorization: `Bearer ${k.token}` } : {});
    const server = new URL(k.server);
    const agent = keepAliveAgent(server, { maxSockets: opts.maxSockets ?? 64, ...pickTls(tls) });
    return new KubeClient(server, tls, agent, kc, checkTimeout(opts.timeoutMs), source);
  }

  /**
   * onWriteLatency calls fn with the milliseconds of every write (POST, PUT, PATCH, DELETE) this client completes,
   * refused ones included (the server spent the time); a write that timed out or failed on the wire is not measured.
   * It returns the function that stops the calls.
   */
  onWriteLatency(fn: (ms: number) => void): () => void {
    this.writeListeners.add(fn);
    return () => this.writeListeners.delete(fn);
  }

  /** close frees the sockets kept alive for this client. */
  close(): void {
    this.agent.destroy();
    this.watchAgent.destroy();
  }

  /**
   * fenced returns a view of this client, sharing its connections, whose writes (every request but GET, watches
   * included among the reads) first ask `mayWrite`: a reason instead of true refuses the write with WriteFencedError
   * before anything is sent. Closing the view closes this client.
   */
  fenced(mayWrite: () => true | string): KubeClient {
    const view = Object.create(this) as KubeClient;
    view.mayWrite = mayWrite;
    view.request = <T>(method: string, path: string, opts?: RequestOptions): Promise<T> => {
      const verdict = method === 'GET' ? true : mayWrite();
      if (verdict !== true) return Promise.reject(new WriteFencedError(method, path, verdict));
      return this.request<T>(method, path, opts);
    };
    return view;
  }

  /**
   * mayWrite is this client's fence: true when a write would be sent now, else why it would be refused (only a view
   * made by fenced refuses anything). Code that counts its writes asks it first, so a refused write is not counted.
   */
  mayWrite(): true | string {
    return true;
  }

  /** path returns the URL path of a collection or of one object. */
  static path(r: Resource, namespace?: string, name?: string, sub?: string): string {
    let p = r.group === '' ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
    if (r.namespaced && namespace) p += `/namespaces/${encodeURIComponent(namespace)}`;
    p += `/${r.resource}`;
    if (name) p += `/${encodeURIComponent(name)}`;
    if (sub) p += `/${sub}`;
    return p;
  }

  /**
   * getText GETs a plain-text endpoint (`/readyz?verbose`, `/livez`) and answers its status code and body whatever the
   * code: a failing health endpoint answers 500 with the list of its checks, which is what the caller wants to read.
   */
  async getText(path: string, opts: RequestOptions = {}): Promise<{ status: number; text: string }> {
    return this.withDeadline('GET', path, opts, async (signal) => {
      const res = await this.sendAuthenticated('GET', path, { ...opts, signal });
      return { status: res.statusCode ?? 0, text: await readAll(res, signal) };
    });
  }

  /**
   * request sends one request and parses the JSON answer; a non-2xx answer throws ApiError, and no complete answer
   * within the timeout throws RequestTimeoutError.
   */
  async request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    return this.withDeadline(method, path, opts, async (signal) => {
      const start = this.writeListeners.size && method !== 'GET' ? performance.now() : -1;
      const res = await this.sendAuthenticated(method, path, { ...opts, signal });
      const text = await readAll(res, signal);
      if (start >= 0) {
        const ms = performance.now() - start;
        for (const fn of this.writeListeners) fn(ms);
      }
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) throw toApiError(status, text, method, path);
      return (text ? JSON.parse(text) : undefined) as T;
    });
  }

  /**
   * withDeadline runs fn with a signal that aborts on the caller's signal or once the request's timeout has passed;
   * an abort by the timeout rejects with RequestTimeoutError, whatever error the aborted I/O raised.
   */
  private async withDeadline<T>(
    method: string,
    path: string,
    opts: RequestOptions,
    fn: (signal: AbortSignal | undefined) => Promise<T>,
  ): Promise<T> {
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    if (!(timeoutMs > 0)) return fn(opts.signal);
    const deadline = new AbortController();
    const timeout = new RequestTimeoutError(method, path, timeoutMs);
    const timer = setTimeout(() => deadline.abort(timeout), timeoutMs);
    try {
      return await fn(opts.signal ? AbortSignal.any([opts.signal, deadline.signal]) : deadline.signal);
    } catch (e) {
      if (deadline.signal.aborted && !opts.signal?.aborted) throw timeout;
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * sendAuthenticated sends a request with the source's current credentials; a 401 answer to credentials the source
   * then drops is discarded and the request sent once more with the fresh ones (a rotated token file, an exec
   * credential that expired early). `countAs` names the verb in the metric (WATCH for a watch).
   */
  private async sendAuthenticated(
    method: string,
    path: string,
    opts: RequestOptions,
    agent?: http.Agent,
    countAs = method,
  ): Promise<http.IncomingMessage> {
    const auth = await this.credentials.get();
    const res = await this.send(method, path, opts, auth, agent, countAs);
    if (res.statusCode !== 401 || !this.credentials.rejected(auth)) return res;
    await readAll(res, opts.signal).catch(() => undefined);
    return this.send(method, path, opts, await this.credentials.get(), agent, countAs);
  }

  private send(
    method: string,
    path: string,
    opts: RequestOptions,
    auth: Auth,
    agent: http.Agent | undefined,
    countAs: string,
    retried = false,
  ): Promise<http.IncomingMessage> {
    const url = new URL(path, this.server);
    for (const [k, v] of Object.entries(opts.query ?? {}))
      if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': currentUserAgent() };
    if (auth.authorization) headers.Authorization = auth.authorization;
    let payload: string | undefined;
    if (opts.body !== undefined) {
      payload = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      headers['Content-Type'] = opts.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    const mod = url.protocol === 'https:' ? https : http;
    const tls = pickTls(this.tls);
    // A certificate from the source (exec, files) goes per request: the agent pools connections by certificate, so a
    // new one opens new connections and the old ones idle out.
    if (auth.cert && auth.key) Object.assign(tls, { cert: auth.cert, key: auth.key });
    return new Promise((resolve, reject) => {
      const req = mod.request(
        url,
        { method, headers, agent: agent ?? this.agent, signal: opts.signal, ...tls },
        (res) => {
          countAnswer(countAs, res.statusCode);
          resolve(res);
        },
      );
      req.on('error', (e: NodeJS.ErrnoException) => {
        // A kept-alive connection the server closed just as this request went out on it: a read goes once more on a
        // new connection, as Go's transport does; a write may have been read, so its caller sees the error.
        if (!retried && req.reusedSocket && e.code === 'ECONNRESET' && SAFE.has(method) && !opts.signal?.aborted) {
          resolve(this.send(method, path, opts, auth, agent, countAs, true));
          return;
        }
        countAnswer(countAs, undefined);
        reject(e);
      });
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  /** get reads one object. */
  get<T extends KubeObject = KubeObject>(r: Resource, namespace: string | undefined, name: string): Promise<T> {
    return this.request<T>('GET', KubeClient.path(r, namespace, name));
  }

  /** getOrNull reads one object, or returns null when it does not exist. */
  async getOrNull<T extends KubeObject = KubeObject>(
    r: Resource,
    namespace: string | undefined,
    name: string,
  ): Promise<T | null> {
    try {
      return await this.get<T>(r, namespace, name);
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  /** list reads one page of a collection (all namespaces when no namespace is given). */
  list<T extends KubeObject = KubeObject>(r: Resource, o: ListOptions = {}): Promise<KubeList<T>> {
    const { namespace, ...query } = o;
    return this.request<KubeList<T>>('GET', KubeClient.path(r, namespace), { query: { ...query } });
  }

  /**
   * listAll follows continue tokens and returns every item with the resourceVersion of the list; onPage sees each page
   * as it comes (a throw stops the list).
   */
  async listAll<T extends KubeObject = KubeObject>(
    r: Resource,
    o: ListOptions = {},
    onPage?: (items: T[]) => void,
  ): Promise<KubeList<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv: string | undefined;
    do {
      const page = await this.list<T>(r, { limit: 500, ...o, continue: cont });
      onPage?.(page.items);
      items.push(...page.items);
      cont = page.metadata.continue || undefined;
      rv = page.metadata.resourceVersion;
    } while (cont);
    return { metadata: { resourceVersion: rv }, items };
  }

  /** create creates an object; its namespace comes from metadata. */
  create<T extends KubeObject = KubeObject>(
    r: Resource,
    obj: KubeObject,
    opts: { fieldManager?: string; dryRun?: boolean } = {},
  ): Promise<T> {
    return this.request<T>('POST', KubeClient.path(r, obj.metadata?.namespace), {
      body: obj,
      query: { fieldManager: opts.fieldManager, dryRun: opts.dryRun ? 'All' : undefined },
    });
  }

  /** update replaces an object (optimistic concurrency through metadata.resourceVersion). */
  update<T extends KubeObject = KubeObject>(
    r: Resource,
    obj: T,
    opts: { fieldManager?: string; subresource?: string } = {},
  ): Promise<T> {
    return this.request<T>('PUT', KubeClient.path(r, obj.metadata?.namespace, obj.metadata?.name, opts.subresource), {
      body: obj,
      query: { fieldManager: opts.fieldManager },
    });
  }

  /** patch patches an object or one of its subresources. */
  patch<T extends KubeObject = KubeObject>(
    r: Resource,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type: PatchType,
    opts: { fieldManager?: string; force?: boolean; subresource?: string; dryRun?: boolean } = {},
  ): Promise<T> {
    return this.request<T>('PATCH', KubeClient.path(r, namespace, name, opts.subresource), {
      body: patch,
      contentType: patchContentType[type],
      query: { fieldManager: opts.fieldManager, force: opts.force, dryRun: opts.dryRun ? 'All' : undefined },
    });
  }

  /** apply server-side-applies an object under the given field manager. */
  apply<T extends KubeObject = KubeObject>(
    r: Resource,
    obj: KubeObject,
    fieldManager: string,
    opts: { force?: boolean; dryRun?: boolean; subresource?: string } = {},
  ): Promise<T> {
    return this.patch<T>(r, obj.metadata?.namespace, obj.metadata?.name ?? '', obj, 'apply', {
      fieldManager,
      force: opts.force ?? true,
      dryRun: opts.dryRun,
      subresource: opts.subresource,
    });
  }

  /** delete deletes one object; a missing object is not an error (returns false). */
  async delete(r: Resource, namespace: string | undefined, name: string, o: DeleteOptions = {}): Promise<boolean> {
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (o.uid || o.resourceVersion) body.preconditions = { uid: o.uid, resourceVersion: o.resourceVersion };
    if (o.propagationPolicy) body.propagationPolicy = o.propagationPolicy;
    if (o.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = o.gracePeriodSeconds;
    try {
      await this.request('DELETE', KubeClient.path(r, namespace, name), { body });
      return true;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw e;
    }
  }

  /**
   * watch opens a watch stream and calls onEvent for every event until the server ends the stream (resolves),
   * the signal aborts (resolves) or the connection fails (rejects). An ERROR event with a Status rejects with
   * ApiError, so a 410 Gone surfaces as isGone().
   */
  async watch<T extends KubeObject = KubeObject>(
    r: Resource,
    o: ListOptions & {
      allowWatchBookmarks?: boolean;
      timeoutSeconds?: number;
      /** close the stream as stalled after this long without data (default WATCH_IDLE_MS with bookmarks; 0: never) */
      idleMs?: number;
    },
    onEvent: (e: WatchEvent<T>) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    const { namespace, idleMs: idleOption, ...query } = o;
    const path = KubeClient.path(r, namespace);
    const idleMs = idleOption ?? (o.allowWatchBookmarks ? WATCH_IDLE_MS : 0);
    let res: http.IncomingMessage;
    try {
      // The request timeout bounds the wait for the answer's headers only; the stream has its own deadline below.
      res = await this.withDeadline('WATCH', path, { signal }, async (s) => {
        const q = { query: { ...query, watch: true }, signal: s };
        const answer = await this.sendAuthenticated('GET', path, q, this.watchAgent, 'WATCH');
        const status = answer.statusCode ?? 0;
        if (status < 200 || status >= 300) throw toApiError(status, await readAll(answer, s), 'WATCH', path);
        return answer;
      });
    } catch (e) {
      if (signal?.aborted) return;
      throw e;
    }
    const closed = watchOpened(r.resource);
    const streamMs = o.timeoutSeconds ? o.timeoutSeconds * 1000 + WATCH_GRACE_MS : 0;
    let stale: RequestTimeoutError | undefined;
    const liveness =
      streamMs > 0
        ? setTimeout(() => {
            stale = new RequestTimeoutError('WATCH', path, streamMs);
            res.destroy(stale);
          }, streamMs)
        : undefined;
    // A stream that sends nothing for idleMs (not even a bookmark) is stalled: closed like one past its deadline.
    // Each chunk only notes its time; one timer checks it when due, so a busy watch sets no timer per chunk.
    let idle: NodeJS.Timeout | undefined;
    let lastData = Date.now();
    const check = () => {
      const silent = Date.now() - lastData;
      if (silent < idleMs) {
        idle = setTimeout(check, idleMs - silent);
        return;
      }
      stale = new RequestTimeoutError('WATCH', path, idleMs);
      res.destroy(stale);
    };
    if (idleMs > 0) {
      idle = setTimeout(check, idleMs);
      res.on('data', () => (lastData = Date.now()));
    }
    try {
      await readWatchEvents(res, onEvent);
      if (stale) throw stale;
    } catch (e) {
      if (signal?.aborted) return;
      throw stale ?? e;
    } finally {
      clearTimeout(liveness);
      clearTimeout(idle);
      res.destroy();
      closed();
    }
  }
}

/** checkTimeout validates a client's default timeout: a non-negative number of milliseconds. */
function checkTimeout(ms: number | undefined): number {
  if (ms === undefined) return 0;
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`kube client: timeoutMs must be >= 0, got ${ms}`);
  return ms;
}

function pickTls(o: https.RequestOptions): https.AgentOptions {
  const { ca, cert, key, rejectUnauthorized, servername } = o;
  const out: https.AgentOptions = {};
  if (ca) out.ca = ca;
  if (cert) out.cert = cert;
  if (key) out.key = key;
  if (rejectUnauthorized !== undefined) out.rejectUnauthorized = rejectUnauthorized;
  if (servername) out.servername = servername;
  return out;
}
