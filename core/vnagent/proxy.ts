import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex, Transform } from 'node:stream';
import { pipeline } from 'node:stream';
import type { Result } from './metrics.ts';

/** KubeletEndpoint is where a node's kubelet (kwok's server, locally) listens. */
export interface KubeletEndpoint {
  host: string;
  port: number;
  /** the node name, for messages */
  node: string;
}

/** KubeletTLS is how the agent talks TLS to kubelets: its own client certificate and how it checks theirs. */
export interface KubeletTLS {
  certPem?: string;
  keyPem?: string;
  /** CA of the kubelet serving certificates (default: the system roots) */
  caPem?: string;
  /** skip verifying the kubelet serving certificate (kwok's is self-signed); default false */
  insecureSkipVerify?: boolean;
}

/** Direction is which way relayed bytes go. */
export type Direction = 'to_kubelet' | 'to_client';

/** RelayOptions configure one forwarded request or stream. */
export interface RelayOptions {
  endpoint: KubeletEndpoint;
  /** the translated path and query */
  path: string;
  tls: KubeletTLS;
  /** how long the kubelet may take to answer (connect, TLS, response headers) */
  handshakeTimeoutMs: number;
  /** how long an upgraded stream may stay silent in both directions before it is torn down */
  idleTimeoutMs: number;
  /** a keep-alive agent for plain requests; upgrades always use a connection of their own */
  agent?: https.Agent;
  onBytes?(direction: Direction, n: number): void;
  /** called with every socket of an upgraded stream, so the owner can destroy them on shutdown */
  track?(socket: Duplex): void;
  /** called once when an upgrade's handshake is decided (101 relayed, refused, failed), before the stream runs */
  onHandshake?(result: Result): void;
  /** makes a stream a plain request's successful answer goes through (the plugins' output filters, hooks.ts) */
  output?: () => Transform;
}

/** MAX_ERROR_BODY caps how much of a refusing kubelet's body is relayed on an upgrade request. */
const MAX_ERROR_BODY = 64 * 1024;

/** HOP_BY_HOP headers are never forwarded as such (RFC 9110 7.6.1); `host` is rewritten. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

/** dropped headers carry credentials or identities a tenant must never pass to a super kubelet. */
const dropped = (lower: string): boolean =>
  lower === 'authorization' || lower === 'cookie' || lower.startsWith('impersonate-') || lower.startsWith('x-remote-');

/** tlsOptions are the https.request options for a kubelet. */
export function tlsOptions(t: KubeletTLS): { rejectUnauthorized: boolean; cert?: string; key?: string; ca?: string } {
  const o: { rejectUnauthorized: boolean; cert?: string; key?: string; ca?: string } = {
    rejectUnauthorized: !t.insecureSkipVerify,
  };
  if (t.certPem) o.cert = t.certPem;
  if (t.keyPem) o.key = t.keyPem;
  if (t.caPem) o.ca = t.caPem;
  return o;
}

/**
 * forwardHeaders builds the headers sent to the kubelet from the raw request headers: repeated headers stay
 * repeated (`X-Stream-Protocol-Version` is negotiated value by value), hop-by-hop headers and credentials are dropped,
 * Host names the kubelet. For an upgrade, Connection and Upgrade are kept and an absent Content-Length becomes 0 so the
 * request carries no chunked terminator in front of the upgraded stream.
 */
export function forwardHeaders(
  raw: readonly string[],
  endpoint: KubeletEndpoint,
  upgrade?: string,
): Record<string, string | string[]> {
  const out: Record<string, string[]> = {};
  const names = new Map<string, string>();
  const connectionTokens = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'connection')
      for (const tok of raw[i + 1]!.split(',')) connectionTokens.add(tok.trim().toLowerCase());
  }
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || dropped(lower) || (connectionTokens.has(lower) && lower !== 'upgrade')) continue;
    const key = names.get(lower) ?? name;
    names.set(lower, key);
    (out[key] ??= []).push(raw[i + 1]!);
  }
  // Node wants Host as one string (it also derives the TLS server name from it).
  const fixed: Record<string, string> = {
    Host: endpoint.host.includes(':') ? `[${endpoint.host}]:${endpoint.port}` : `${endpoint.host}:${endpoint.port}`,
  };
  if (upgrade !== undefined) {
    fixed.Connection = 'Upgrade';
    fixed.Upgrade = upgrade;
    if (!names.has('content-length')) fixed['Content-Length'] = '0';
  }
  return { ...out, ...fixed };
}

/** responseHeaders filters the kubelet's raw response headers for relaying through a ServerResponse. */
export function responseHeaders(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const lower = raw[i]!.toLowerCase();
    if (HOP_BY_HOP.has(lower)) continue;
    out.push(raw[i]!, raw[i + 1]!);
  }
  return out;
}

/**
 * closeDelimited drops Content-Length from relayed response headers, so that the body is delimited by the end of the
 * connection (RFC 9112 6.3). The apiserver streams container logs requested over WebSocket with a copy loop
 * (k8s.io/streaming wsstream messageCopy) that drops the bytes of a Read returning data together with io.EOF; Go's
 * HTTP/1.1 client returns exactly that for a chunked or Content-Length body whose end is already buffered (the log
 * was complete before the WebSocket handshake finished), so the tenant got an empty log. A body that ends with the
 * connection is read as data first and EOF on the next Read, as over HTTP/2 from a real kubelet.
 */
export function closeDelimited(headers: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2)
    if (headers[i]!.toLowerCase() !== 'content-length') out.push(headers[i]!, headers[i + 1]!);
  return out;
}

const where = (e: KubeletEndpoint): string => `kubelet ${e.host}:${e.port} of node ${e.node}`;

/** TimeoutError marks a kubelet that did not answer within the handshake timeout. */
class TimeoutError extends Error {}

function failure(
  e: unknown,
  endpoint: KubeletEndpoint,
  ms: number,
): { status: number; result: Result; message: string } {
  if (e instanceof TimeoutError)
    return { status: 504, result: 'timeout', message: `${where(endpoint)} did not answer within ${ms} ms` };
  const err = e as NodeJS.ErrnoException;
  const what =
    err.code === 'ECONNRESET' || err.message === 'socket hang up'
      ? 'closed the connection'
      : err.code === 'ECONNREFUSED'
        ? 'refused the connection'
        : `failed: ${err.message}`;
  return { status: 502, result: 'bad_gateway', message: `${where(endpoint)} ${what}` };
}

/**
 * forwardRequest relays a plain request (logs, run) to the kubelet and its answer back, both bodies piped with
 * back-pressure: nothing is buffered beyond the stream high-water marks, so `follow=true` log streams run for as long
 * as both sides stay. The client leaving destroys the kubelet request; the kubelet failing before it answered gives
 * the client a 502 (504 on timeout) with a one-line reason, after it answered the client connection is cut.
 */
export function forwardRequest(req: IncomingMessage, res: ServerResponse, o: RelayOptions): Promise<Result> {
  return new Promise((resolve) => {
    let result: Result | undefined;
    let settled = false;
    const done = (): void => {
      if (!settled) {
        settled = true;
        resolve(result ?? 'ok');
      }
    };
    const up = https.request({
      ...tlsOptions(o.tls),
      host: o.endpoint.host,
      port: o.endpoint.port,
      method: req.method,
      path: o.path,
      headers: forwardHeaders(req.rawHeaders, o.endpoint),
      agent: o.agent ?? false,
    });
    const timer = setTimeout(() => up.destroy(new TimeoutError()), o.handshakeTimeoutMs);
    up.on('response', (ur) => {
      clearTimeout(timer);
      const status = ur.statusCode ?? 502;
      result = status < 400 ? 'ok' : 'kubelet_error';
      // The body is delimited by closing the connection: no Content-Length, no chunked encoding (closeDelimited).
      res.useChunkedEncodingByDefault = false;
      res.shouldKeepAlive = false;
      res.writeHead(status, ur.statusMessage, closeDelimited(responseHeaders(ur.rawHeaders)));
      res.flushHeaders();
      ur.on('data', (c: Buffer) => o.onBytes?.('to_client', c.length));
      const end = (err: Error | null): void => {
        if (err) up.destroy();
        done();
      };
      if (o.output && status < 400) pipeline(ur, o.output(), res, end);
      else pipeline(ur, res, end);
    });
    up.on('error', (e) => {
      clearTimeout(timer);
      if (result === undefined && !res.headersSent) {
        const f = failure(e, o.endpoint, o.handshakeTimeoutMs);
        result = f.result;
        sendText(res, f.status, f.message);
      } else if (!res.writableFinished) {
        // The kubelet failed mid-answer: cut the client off so it sees a truncated body, not a clean end.
        res.destroy();
      }
      done();
    });
    res.on('close', () => {
      // The client left (or the answer is complete): nothing more to relay.
      clearTimeout(timer);
      if (!res.writableFinished) up.destroy();
      done();
    });
    req.on('data', (c: Buffer) => o.onBytes?.('to_kubelet', c.length));
    pipeline(req, up, () => undefined);
  });
}

/** sendText answers a plain request with a status and a one-line text body. */
export function sendText(res: ServerResponse, status: number, message: string): void {
  const body = `${message.replace(/\s*\n\s*/g, ' ')}\n`;
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(body);
}

/** rawResponse answers on a socket whose request asked for an upgrade (there is no ServerResponse) and closes it. */
export function rawResponse(
  socket: Duplex,
  status: number,
  message: string,
  headers: readonly string[] = [],
  body?: Buffer,
): void {
  if (socket.destroyed || !socket.writable) return;
  const payload = body ?? Buffer.from(`${message.replace(/\s*\n\s*/g, ' ')}\n`);
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}`];
  const skip = new Set(['content-length', 'connection', 'transfer-encoding', 'keep-alive', 'upgrade']);
  let hasType = false;
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const lower = headers[i]!.toLowerCase();
    if (skip.has(lower)) continue;
    if (lower === 'content-type') hasType = true;
    lines.push(`${headers[i]}: ${headers[i + 1]}`);
  }
  if (!hasType) lines.push('Content-Type: text/plain; charset=utf-8');
  lines.push(`Content-Length: ${payload.length}`, 'Connection: close', '', '');
  socket.write(lines.join('\r\n'));
  socket.end(payload);
  setTimeout(() => socket.destroy(), 2000).unref();
}

/**
 * forwardUpgrade relays an upgrade request (exec, attach, portForward over SPDY/3.1 or WebSocket): it opens a TLS
 * connection of its own to the kubelet, sends the translated request with the upgrade headers, and waits for the
 * answer. On 101 the answer is relayed verbatim and both sockets are piped into each other until either side closes
 * (the other is ended, and destroyed if it does not finish), errs (both are destroyed) or both stay silent for the
 * idle timeout. A refusal (any other status) is relayed with its body and the client connection closed; a kubelet that
 * cannot be reached, drops the connection or does not answer in time gives 502/504 with a one-line reason.
 */
export function forwardUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, o: RelayOptions): Promise<Result> {
  return new Promise((resolve) => {
    let settled = false;
    let decided = false;
    const decide = (r: Result): void => {
      if (!decided) {
        decided = true;
        o.onHandshake?.(r);
      }
    };
    const done = (r: Result): void => {
      decide(r);
      if (!settled) {
        settled = true;
        resolve(r);
      }
    };
    const upgrade = req.headers.upgrade ?? '';
    const up = https.request({
      ...tlsOptions(o.tls),
      host: o.endpoint.host,
      port: o.endpoint.port,
      method: req.method,
      path: o.path,
      headers: forwardHeaders(req.rawHeaders, o.endpoint, upgrade),
      agent: false,
    });
    const timer = setTimeout(() => up.destroy(new TimeoutError()), o.handshakeTimeoutMs);
    const clientGone = (): void => {
      up.destroy();
      done('ok');
    };
    socket.once('close', clientGone);
    const settleHandshake = (): void => {
      clearTimeout(timer);
      socket.off('close', clientGone);
    };

    up.on('upgrade', (ur, kubelet, kubeletHead) => {
      settleHandshake();
      if (socket.destroyed) {
        kubelet.destroy();
        return done('ok');
      }
      const lines = [`HTTP/1.1 ${ur.statusCode ?? 101} ${ur.statusMessage || 'Switching Protocols'}`];
      for (let i = 0; i + 1 < ur.rawHeaders.length; i += 2) lines.push(`${ur.rawHeaders[i]}: ${ur.rawHeaders[i + 1]}`);
      lines.push('', '');
      socket.write(lines.join('\r\n'));
      o.track?.(kubelet);
      decide('ok');
      if (kubeletHead.length) {
        o.onBytes?.('to_client', kubeletHead.length);
        socket.write(kubeletHead);
      }
      if (head.length) {
        o.onBytes?.('to_kubelet', head.length);
        kubelet.write(head);
      }
      void splice(socket, kubelet, o).then(() => done('ok'));
    });

    up.on('response', (ur) => {
      settleHandshake();
      const chunks: Buffer[] = [];
      let size = 0;
      let finished = false;
      const finish = (): void => {
        if (finished) return;
        finished = true;
        up.destroy();
        rawResponse(socket, ur.statusCode ?? 502, '', ur.rawHeaders, Buffer.concat(chunks));
        done('kubelet_error');
      };
      const bodyTimer = setTimeout(finish, o.handshakeTimeoutMs);
      ur.on('data', (c: Buffer) => {
        if (size >= MAX_ERROR_BODY) return;
        chunks.push(c.subarray(0, MAX_ERROR_BODY - size));
        size += c.length;
      });
      ur.on('end', () => {
        clearTimeout(bodyTimer);
        finish();
      });
      ur.on('error', () => {
        clearTimeout(bodyTimer);
        finish();
      });
    });

    up.on('error', (e) => {
      settleHandshake();
      const f = failure(e, o.endpoint, o.handshakeTimeoutMs);
      rawResponse(socket, f.status, f.message);
      done(f.result);
    });
    up.end();
  });
}

/**
 * splice pipes two sockets into each other and resolves once both are closed. An orderly close of one side ends the
 * other after its pending writes (destroyed if that does not finish within 5 s); an error or the idle timeout destroys
 * both at once. Idleness is judged over both directions by one check a quarter of the timeout apart, not by each
 * socket's own timeout: that fires once per silence of its socket, so a check it made a moment too early (the other
 * side had talked just under the timeout before) was never made again and a dead stream stayed open for good.
 */
function splice(client: Duplex, kubelet: Duplex, o: RelayOptions): Promise<void> {
  return new Promise((resolve) => {
    let open = 2;
    let lastActivity = Date.now();
    const idle = setInterval(
      () => {
        if (Date.now() - lastActivity >= o.idleTimeoutMs) kill();
      },
      Math.max(1, Math.floor(o.idleTimeoutMs / 4)),
    );
    idle.unref();
    const kill = (): void => {
      clearInterval(idle);
      client.destroy();
      kubelet.destroy();
    };
    const ended = (other: Duplex) => (): void => {
      if (--open === 0) {
        clearInterval(idle);
        return resolve();
      }
      if (other.destroyed) return;
      if (other.writableFinished) return void other.destroy();
      other.end();
      const t = setTimeout(() => other.destroy(), 5000);
      t.unref();
      other.once('close', () => clearTimeout(t));
      other.once('finish', () => other.destroy());
    };
    for (const [s, other, dir] of [
      [client, kubelet, 'to_kubelet'],
      [kubelet, client, 'to_client'],
    ] as const) {
      // After the upgrade the stream's idleness is ours to judge (both sides): drop any other 'timeout' listener and
      // timer (an HTTP server with `timeout` set would destroy the socket when this side alone was idle).
      s.removeAllListeners('timeout');
      // Upgraded sockets are net.Sockets (TLS ones) even though the 'upgrade' event types them as Duplex.
      (s as Socket).setTimeout?.(0);
      s.on('error', kill);
      s.on('close', ended(other));
      s.on('data', (c: Buffer) => {
        lastActivity = Date.now();
        o.onBytes?.(dir, c.length);
      });
      s.pipe(other);
    }
  });
}
