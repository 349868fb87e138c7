/**
 * The webhook receiver: authenticated push notifications from GitHub, GitLab or a generic sender that only request an
 * immediate poll of a source. It never reads or applies anything itself.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { childLogger, type Logger } from '../../core/log.ts';

/** WebhookKinds are the supported senders. */
export const WebhookKinds = ['github', 'gitlab', 'generic'] as const;

/** WebhookKind is one of WebhookKinds. */
export type WebhookKind = (typeof WebhookKinds)[number];

/** WebhookRoute binds a URL path to a sender kind, its shared secret and the poll to request. */
export interface WebhookRoute {
  path: string;
  kind: WebhookKind;
  secret: string;
  onTrigger: () => void;
}

/** WebhookReceiverOptions configures startWebhookReceiver. */
export interface WebhookReceiverOptions {
  /** default 127.0.0.1 */
  host?: string;
  /** default 0 (a free port) */
  port?: number;
  routes: readonly WebhookRoute[];
  /** larger bodies are refused with 400 (default 1 MiB) */
  maxBodyBytes?: number;
  logger?: Logger;
}

/** WebhookReceiver is a running receiver. */
export interface WebhookReceiver {
  readonly port: number;
  /** url is the address of a route path on this receiver. */
  url(path: string): string;
  close(): Promise<void>;
}

/** GITHUB_TRIGGER_EVENTS are the GitHub events that request a poll (`ping` is answered without one). */
const GITHUB_TRIGGER_EVENTS = new Set(['push']);
/** GITLAB_TRIGGER_EVENTS are the GitLab events that request a poll. */
const GITLAB_TRIGGER_EVENTS = new Set(['Push Hook', 'Tag Push Hook']);

/** WebhookOutcome is how a request was answered. */
interface WebhookOutcome {
  status: number;
  message: string;
  trigger?: boolean;
}

class BodyTooLarge extends Error {}

/** safeEqual compares two strings in time independent of where they differ (and of their lengths). */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

/** hmacSha256Hex is the hex HMAC-SHA256 of `body` with `secret`. */
export function hmacSha256Hex(secret: string, body: Uint8Array | string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** checkSignature verifies a `sha256=<hex>` HMAC header over the body. */
function checkSignature(value: string | undefined, secret: string, body: Buffer): boolean {
  if (!value) return false;
  const match = /^sha256=([0-9a-f]{64})$/i.exec(value.trim());
  if (!match?.[1]) return false;
  return safeEqual(match[1].toLowerCase(), hmacSha256Hex(secret, body));
}

function parseJson(body: Buffer, contentType: string | undefined): boolean {
  let text = body.toString('utf8');
  if (contentType?.startsWith('application/x-www-form-urlencoded')) {
    const payload = new URLSearchParams(text).get('payload');
    if (payload === null) return false;
    text = payload;
  }
  if (text.trim() === '') return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** judge authenticates and classifies one webhook call; it does not call the route. */
function judge(route: WebhookRoute, req: IncomingMessage, body: Buffer): WebhookOutcome {
  const contentType = header(req, 'content-type');
  switch (route.kind) {
    case 'github': {
      if (!checkSignature(header(req, 'x-hub-signature-256'), route.secret, body))
        return { status: 401, message: 'bad or missing X-Hub-Signature-256' };
      const event = header(req, 'x-github-event');
      if (!event) return { status: 400, message: 'missing X-GitHub-Event' };
      if (!parseJson(body, contentType)) return { status: 400, message: 'body is not JSON' };
      if (event === 'ping') return { status: 200, message: 'pong' };
      if (!GITHUB_TRIGGER_EVENTS.has(event)) return { status: 202, message: `event ${event} ignored` };
      return { status: 200, message: 'poll requested', trigger: true };
    }
    case 'gitlab': {
      const token = header(req, 'x-gitlab-token');
      if (token === undefined || !safeEqual(token, route.secret))
        return { status: 401, message: 'bad or missing X-Gitlab-Token' };
      const event = header(req, 'x-gitlab-event');
      if (!event) return { status: 400, message: 'missing X-Gitlab-Event' };
      if (!parseJson(body, contentType)) return { status: 400, message: 'body is not JSON' };
      if (!GITLAB_TRIGGER_EVENTS.has(event)) return { status: 202, message: `event ${event} ignored` };
      return { status: 200, message: 'poll requested', trigger: true };
    }
    case 'generic': {
      if (!checkSignature(header(req, 'x-signature'), route.secret, body))
        return { status: 401, message: 'bad or missing X-Signature' };
      if (body.length > 0 && !parseJson(body, contentType)) return { status: 400, message: 'body is not JSON' };
      return { status: 200, message: 'poll requested', trigger: true };
    }
  }
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(header(req, 'content-length') ?? NaN);
  if (declared > limit) throw new BodyTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new BodyTooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function reply(res: ServerResponse, status: number, message: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...extra });
  res.end(`${JSON.stringify({ message })}\n`);
}

/**
 * startWebhookReceiver listens for webhook calls. Unknown path: 404; method other than POST: 405; body over the limit,
 * missing event header or bad JSON: 400; missing or wrong signature or token: 401; event that does not request a
 * poll: 202; otherwise the route's onTrigger is called and the answer is 200.
 */
export async function startWebhookReceiver(opts: WebhookReceiverOptions): Promise<WebhookReceiver> {
  const log = opts.logger ?? childLogger({ component: 'webhook-receiver' });
  const limit = opts.maxBodyBytes ?? 1024 * 1024;
  const routes = new Map<string, WebhookRoute>();
  for (const route of opts.routes) {
    if (!route.path.startsWith('/')) throw new Error(`webhook path ${JSON.stringify(route.path)} must start with "/"`);
    if (!route.secret) throw new Error(`webhook path ${route.path} has an empty secret`);
    if (routes.has(route.path)) throw new Error(`webhook path ${route.path} is declared twice`);
    routes.set(route.path, route);
  }
  const sockets = new Set<Socket>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const route = routes.get(path);
    if (!route) {
      req.resume();
      reply(res, 404, 'not found');
      return;
    }
    if (req.method !== 'POST') {
      req.resume();
      reply(res, 405, 'method not allowed', { Allow: 'POST' });
      return;
    }
    let body: Buffer;
    try {
      body = await readBody(req, limit);
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        reply(res, 400, `body is larger than ${limit} bytes`, { Connection: 'close' });
        return;
      }
      throw err;
    }
    const outcome = judge(route, req, body);
    log.debug({ path, kind: route.kind, status: outcome.status }, outcome.message);
    if (outcome.trigger) {
      try {
        route.onTrigger();
      } catch (err) {
        log.warn({ path, err: err instanceof Error ? err.message : String(err) }, 'webhook trigger failed');
      }
    }
    reply(res, outcome.status, outcome.message);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log.warn({ err: err instanceof Error ? err.message : String(err) }, 'webhook request failed');
      if (!res.headersSent) reply(res, 400, 'bad request', { Connection: 'close' });
      else res.destroy();
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', fail);
      ok();
    });
  });
  const address = server.address();
  const port = address && typeof address === 'object' ? address.port : 0;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    port,
    url: (path) => `http://${urlHost}:${port}${path}`,
    close: async () => {
      const closed = new Promise<void>((ok) => server.close(() => ok()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
