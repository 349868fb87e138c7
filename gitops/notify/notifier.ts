/**
 * The notifier sends a GitSource's outcomes (outcome.ts) where its spec.notifications say: a generic webhook with the
 * payload of schemas/notification.schema.json, or commit statuses through the Gitea/Forgejo API. Each delivery runs in
 * the background with retries and backoff, never holding up a reconcile; the last failure of one becomes a Warning
 * event (NotificationFailed) on the GitSource. Destinations pass the same address rules as git URLs, and a Secret is
 * used only when the platform marked it as credentials for the destination's host (source/credentials.ts).
 */
import { createHmac } from 'node:crypto';
import * as http from 'node:http';
import * as https from 'node:https';
import { Counter } from 'prom-client';
import type { EventRecorder } from '../../core/controller/events.ts';
import { currentUserAgent } from '../../core/kube/identity.ts';
import { registry } from '../../core/metrics/registry.ts';
import type { GitSource, GitSourceStatus } from '../applier/gitsource.ts';
import { hostOf, pinnedAgent, resolveChecked, type AddressPolicy } from '../source/address.ts';
import { credentialHosts, type CredentialSecret, urlRefusal } from '../source/credentials.ts';
import { redactUrl } from '../source/ref.ts';
import { outcomesOf, type NotificationEvent, type Outcome } from './outcome.ts';

const sent = new Counter({
  name: 'vc_gitops_notifications_total',
  help: 'Notifications of GitSource outcomes, by destination type, event and result (sent, failed, dropped).',
  labelNames: ['type', 'event', 'result'],
  registers: [registry],
});

// A destination that is down shows here while its retries run, before they run out and become an event.
const retried = new Counter({
  name: 'vc_gitops_notification_retries_total',
  help: 'Failed attempts to deliver a GitSource notification that are retried, by destination type and event.',
  labelNames: ['type', 'event'],
  registers: [registry],
});

/** Notification is one entry of a GitSource's spec.notifications. */
export type Notification = NonNullable<GitSource['spec']['notifications']>[number];

/** COMMIT_STATES maps outcomes to commit status states. */
const COMMIT_STATES: Record<NotificationEvent, string | undefined> = {
  Applied: 'pending',
  Healthy: 'success',
  Refused: 'failure',
  Unhealthy: 'failure',
  Failed: undefined,
};

/** Request is one HTTP call a delivery makes. */
export interface Request {
  url: string;
  body: string;
  headers: Record<string, string>;
}

/** payloadOf is the webhook body of one outcome (schemas/notification.schema.json). */
export function payloadOf(gs: GitSource, o: Outcome, now: Date): Record<string, unknown> {
  const url = new URL(gs.spec.url);
  url.username = '';
  url.password = '';
  return {
    apiVersion: 'notification.tenancy.x-k8s.io/v1alpha1',
    kind: 'Notification',
    event: o.event,
    severity: o.event === 'Applied' || o.event === 'Healthy' ? 'info' : 'error',
    gitSource: { namespace: gs.metadata.namespace, name: gs.metadata.name, url: url.toString() },
    ...(o.revision && { revision: o.revision }),
    ...(o.reason && { reason: o.reason }),
    message: o.message.slice(0, 4096),
    time: now.toISOString(),
  };
}

/**
 * takes tells whether a destination takes an outcome: it is among its events, and for a commit status it has a state
 * and names a commit.
 */
export function takes(n: Notification, o: Outcome): boolean {
  const events = n.events ?? ['Applied', 'Healthy', 'Refused', 'Unhealthy', 'Failed'];
  if (!events.includes(o.event)) return false;
  return n.type === 'webhook' || (!!COMMIT_STATES[o.event] && !!o.revision && /^[0-9a-f]{40,64}$/.test(o.revision));
}

/**
 * requestOf is the call that delivers one outcome to one destination, or undefined when the destination does not take
 * it (not among its events, or a commit status for an outcome without a revision). `token` is the Secret's key token.
 */
export function requestOf(
  gs: GitSource,
  n: Notification,
  o: Outcome,
  token: string | undefined,
  now: Date,
): Request | undefined {
  if (!takes(n, o)) return undefined;
  const headers: Record<string, string> = { 'Content-Type': 'application/json', 'User-Agent': currentUserAgent() };
  if (n.type === 'webhook') {
    const body = JSON.stringify(payloadOf(gs, o, now));
    if (token) headers['X-Signature'] = `sha256=${createHmac('sha256', token).update(body).digest('hex')}`;
    return { url: n.url!, body, headers };
  }
  const state = COMMIT_STATES[o.event]!;
  const repo = new URL(gs.spec.url);
  const path = repo.pathname.replace(/^\/+/, '').replace(/\.git$/, '');
  const base = (n.url ?? `${repo.origin}/api/v1`).replace(/\/+$/, '');
  if (token) headers.Authorization = `token ${token}`;
  const body = JSON.stringify({
    state,
    context: `virtualcluster-ts/${gs.metadata.namespace}/${gs.metadata.name}`,
    description: `${o.event.toLowerCase()}: ${o.message}`.slice(0, 140),
  });
  return { url: `${base}/repos/${path}/statuses/${o.revision}`, body, headers };
}

/** NotifierOptions configure a Notifier. */
export interface NotifierOptions {
  events: EventRecorder;
  /** reads a Secret of the GitSource's namespace by name (throws when it cannot) */
  secret: (gs: GitSource, name: string) => Promise<CredentialSecret & { data?: Record<string, string> }>;
  addresses?: AddressPolicy;
  timeoutMs?: number;
  /** the first retry's delay; each next one doubles (default 1 s) */
  backoffMs?: number;
  /** deliveries waiting or running at most; beyond it new ones are dropped and counted (default 256) */
  maxPending?: number;
}

/** Notifier turns status writes into deliveries. */
export class Notifier {
  private readonly last = new Map<string, GitSourceStatus | undefined>();
  private pending = 0;
  private readonly lanes = new Map<string, Promise<void>>();
  private readonly running = new Set<Promise<void>>();
  private stopped = false;

  constructor(private readonly o: NotifierOptions) {}

  /**
   * written is called after a status write of `gs` (as it was read before the write) with the status written; the
   * outcomes between the last status this process saw and this one are sent.
   */
  written(gs: GitSource, next: GitSourceStatus): void {
    const key = `${gs.metadata.namespace}/${gs.metadata.name}`;
    const prev = this.last.has(key) ? this.last.get(key) : gs.status;
    this.last.set(key, next);
    if (!gs.spec.notifications?.length) return;
    for (const o of outcomesOf(prev, next))
      gs.spec.notifications.forEach((n, i) => this.deliver(`${key}#${i}`, gs, n, o));
  }

  /** forget drops what is known of a deleted GitSource. */
  forget(namespace: string, name: string): void {
    this.last.delete(`${namespace}/${name}`);
  }

  /** stop waits for deliveries under way (their retries cut short). */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.running]);
  }

  /**
   * deliver queues one outcome for one destination (`lane`: the source and the destination's index). Deliveries of a
   * lane go one after the other, in the order of the outcomes: a commit's `success` never lands before its `pending`.
   */
  private deliver(lane: string, gs: GitSource, n: Notification, o: Outcome): void {
    if (!takes(n, o)) return;
    if (this.pending >= (this.o.maxPending ?? 256)) {
      sent.inc({ type: n.type, event: o.event, result: 'dropped' });
      return;
    }
    this.pending++;
    const p = (this.lanes.get(lane) ?? Promise.resolve())
      .then(() => this.attempt(gs, n, o))
      .finally(() => {
        this.pending--;
        this.running.delete(p);
        if (this.lanes.get(lane) === p) this.lanes.delete(lane);
      });
    this.lanes.set(lane, p);
    this.running.add(p);
  }

  private async attempt(gs: GitSource, n: Notification, o: Outcome): Promise<void> {
    let error = '';
    try {
      // credentials written into a notification url (sent with every call and echoed in the event of a failed one), or
      // a host that parsers read differently
      const inUrl =
        n.url === undefined
          ? undefined
          : urlRefusal(n.url, 'spec.notifications[].url', 'spec.notifications[].secretRef');
      if (inUrl) throw new Error(inUrl);
      const token = await this.token(gs, n);
      const req = requestOf(gs, n, o, token, new Date());
      if (!req) return;
      const retries = n.retries ?? 3;
      for (let i = 0; i <= retries && !this.stopped; i++) {
        if (i) await new Promise((r) => setTimeout(r, (this.o.backoffMs ?? 1000) * 2 ** (i - 1)));
        error = await this.send(req);
        if (!error) {
          sent.inc({ type: n.type, event: o.event, result: 'sent' });
          return;
        }
        if (i < retries && !this.stopped) retried.inc({ type: n.type, event: o.event });
      }
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
    sent.inc({ type: n.type, event: o.event, result: 'failed' });
    const where =
      n.type === 'webhook' ? `webhook ${redactUrl(n.url ?? '')}` : `commit status for ${o.revision?.slice(0, 12)}`;
    await this.o.events
      .record(gs, 'Warning', 'NotificationFailed', `${o.event} not delivered to ${where}: ${error}`)
      .catch(() => undefined);
  }

  /** token reads the Secret's key token, refusing one not marked as credentials for the destination's host. */
  private async token(gs: GitSource, n: Notification): Promise<string | undefined> {
    if (!n.secretRef) return undefined;
    const secret = await this.o.secret(gs, n.secretRef.name);
    const url = n.url ?? new URL(gs.spec.url).origin;
    try {
      credentialHosts(secret, url);
    } catch (e) {
      throw new Error(
        `${(e as Error).message.replace('spec.secretRef', 'spec.notifications[].secretRef').replace('spec.url', 'the notification')}`,
      );
    }
    const v = secret.data?.token;
    if (!v)
      throw new Error(
        `Secret ${gs.metadata.namespace}/${n.secretRef.name} has no key "token" (spec.notifications[].secretRef)`,
      );
    return Buffer.from(v, 'base64').toString('utf8');
  }

  /** send makes one call to a checked address; the error, or '' on a 2xx answer. */
  private async send(r: Request): Promise<string> {
    let addresses;
    try {
      addresses = await resolveChecked(r.url, this.o.addresses ?? {});
    } catch (e) {
      return (e as Error).message.replace('git sources may not reach it', 'notifications may not reach it');
    }
    const agent = pinnedAgent(r.url, hostOf(r.url), addresses);
    const mod = new URL(r.url).protocol === 'https:' ? https : http;
    return new Promise((resolve) => {
      const req = mod.request(
        r.url,
        {
          method: 'POST',
          agent,
          headers: { ...r.headers, 'Content-Length': String(Buffer.byteLength(r.body)) },
          timeout: this.o.timeoutMs ?? 10_000,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode! >= 200 && res.statusCode! < 300 ? '' : `HTTP ${res.statusCode}`));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (e) => resolve(e.message));
      req.end(r.body);
    }).finally(() => agent.destroy()) as Promise<string>;
  }
}
