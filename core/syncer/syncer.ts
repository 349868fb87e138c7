import {
  isAlreadyExists,
  isConflict,
  isTimeout,
  isWriteFenced,
  WriteFencedError,
  type KubeClient,
  type KubeObject,
} from '../kube/client.ts';
import { Informer, objectKey, type EventHandler } from '../kube/informer.ts';
import { childLogger } from '../log.ts';
import { LABEL, MANAGER, provenanceOf } from '../names/names.ts';
import type { PluginContext, ResourcePlugin } from '../plugins/contract.ts';
import { pluginErrorOf, reportPluginError, type PluginError } from '../plugins/failures.ts';
import type { PluginHost } from '../plugins/host.ts';
import { FairQueue } from '../queue/fairqueue.ts';
import { AdaptiveLimit } from '../queue/limit.ts';
import { queueMetrics } from '../controller/metrics.ts';
import { Runner, type Result } from '../controller/runner.ts';
import { capRefusal, PendingCreates, sizeOf, superQuotaRefusal } from './caps.ts';
import { Effects } from './effects.ts';
import { isMissingNamespace, isStalePatch, runSteps, stepWrite, write } from './execute.ts';
import { countWrite, syncerMetrics, watchCaches, watchDepth } from './metrics.ts';
import { patrol, PatrolMemo, signatureOf } from './patrol.ts';
import { plan, planKey, superLocation, type Plan, type Step } from './plan.ts';
import { makeKey, parseKey, Router, superResources, tenantResources } from './routing.ts';
import {
  PLACEMENT_ANNOTATIONS,
  placementChanged,
  placementVerdict,
  upOwned,
  type PlacementKind,
  type SignedPlacements,
} from './placement.ts';
import { R } from '../kube/resources.ts';
import type { Tenant, TenantRegistry } from '../tenancy/tenant.ts';
import type { CacheLimits } from '../kube/budget.ts';
import { DEFAULT_CREATE_RATE, type CreateRate } from '../api/tenantpolicy.ts';
import { readerOf, TenantSessions, type TenantSession } from '../sessions/tenants.ts';
import { TokenMinter } from './tokens.ts';
import { checkCreateRate, checkYieldShare, CreatePacer, DEFAULT_YIELD_SHARE } from './pacer.ts';
import { SchedulingWindow } from './window.ts';

const log = childLogger({ controller: 'syncer' });

/** SYNCER_DEFAULTS are the syncer's settings when its options leave them out. */
export const SYNCER_DEFAULTS = {
  workers: 8,
  /** super Pods of one tenant waiting for the super scheduler at once (see SchedulingWindow) */
  schedulingWindow: 16,
  /** super Pods created per tenant per second, and at once (see CreatePacer); a TenantPolicy's pods.createRate wins */
  podCreateRate: DEFAULT_CREATE_RATE,
  /** the share of its create rate a tenant with a backlog keeps while another tenant creates Pods (see CreatePacer) */
  podCreateYield: DEFAULT_YIELD_SHARE,
  /** the adaptive concurrency limit (see SyncerOptions.adaptiveConcurrency) */
  adaptiveConcurrency: false,
  /** a tenant admission webhook may take 30 s (the apiserver's limit); the syncer gives up well before */
  tenantRequestTimeoutMs: 10_000,
  /**
   * the most objects and bytes (JSON) the manager caches of one tenant: a tenant may keep more in its own etcd than
   * its caps let into the super cluster, but not make the manager hold it all (see SyncerOptions.tenantCache)
   */
  tenantCache: { objects: 50_000, bytes: 256 * 1024 * 1024 },
} as const;

/**
 * isEventKey tells whether a queue key belongs to a plugin that syncs core/v1 Events (the events plugin copying super
 * Pods' events up): those keys go on the fair queue's low-priority lane.
 */
export function isEventKey(host: Pick<PluginHost, 'get'>, key: string): boolean {
  // Asked on every add, hand-out and done: the plugin segment is read without splitting the whole key.
  const start = key.indexOf('/') + 1;
  const end = key.indexOf('/', start);
  if (start === 0 || end < 0) return false;
  const r = host.get(key.slice(start, end))?.manifest.resource;
  return r?.resource === R.events.resource && r.group === R.events.group;
}

/**
 * defaultMaxInFlightPerTenant is the share of the workers one tenant may hold at once when the options do not say:
 * a quarter, at least one, so a tenant whose requests hang leaves three quarters to the others.
 */
export function defaultMaxInFlightPerTenant(workers: number): number {
  return Math.max(1, Math.floor(workers / 4));
}

/** MISSING_NAMESPACE_MAX_MS caps the delay between retries of a key whose super namespace does not exist yet. */
const MISSING_NAMESPACE_MAX_MS = 10_000;

/** SyncerOptions configure one syncer, which serves one super cluster. */
export interface SyncerOptions {
  superClient: KubeClient;
  host: PluginHost;
  registry: TenantRegistry;
  /**
   * the most objects and bytes the informers of one tenant cache; a tenant over it is not served (QuotaExceeded
   * reason, vc_syncer_tenant_cache_exceeded_total) and is listed again after CACHE_RETRY_MS. Default
   * SYNCER_DEFAULTS.tenantCache.
   */
  tenantCache?: CacheLimits;
  /** called when a tenant goes over tenantCache, with the reason (the manager tells the VirtualCluster) */
  onTenantCacheExceeded?(t: Tenant, reason: string): void;
  /** concurrent workers over the fair queue; default SYNCER_DEFAULTS.workers */
  workers?: number;
  /** keys of one tenant reconciled at once, at most `workers`; default defaultMaxInFlightPerTenant(workers) */
  maxInFlightPerTenant?: number;
  /**
   * the bound of every request to a tenant apiserver except watches, in ms; a request past it fails the reconcile,
   * which is retried with backoff. Default SYNCER_DEFAULTS.tenantRequestTimeoutMs.
   */
  tenantRequestTimeoutMs?: number;
  /**
   * adaptiveConcurrency (default false) bounds the keys of all tenants reconciled at once by the super cluster's
   * write latency (AdaptiveLimit, between 1 and `workers`): once more writes in flight only lengthen the super
   * apiserver's queue, a tenant's second and later keys wait in the fair queue instead, and a tenant with nothing in
   * flight is still served at once. Off, the workers and the per-tenant cap alone bound it: at 10,000 Pods on a
   * CPU-bound host the limit cost 5-10% of the throughput (36.5-36.8 Pods/s with it, 38.7-40.3 without) for a smaller
   * gain in a quiet tenant's latency during a flood than the scheduling window gives on its own.
   */
  adaptiveConcurrency?: boolean;
  /**
   * schedulingWindow: the super Pods of one tenant that may wait for the super cluster's scheduler at once; a tenant's
   * further Pod creates wait in the syncer until one is bound, so another tenant's Pod is not queued behind a flood
   * (SchedulingWindow). Default SYNCER_DEFAULTS.schedulingWindow; 0 turns it off.
   */
  schedulingWindow?: number;
  /**
   * podCreateRate paces the super Pods the syncer creates for one tenant (CreatePacer): `burst` at once, then
   * `perSecond`; a tenant's own rate (its TenantPolicy's pods.createRate, Tenant.podCreateRate) wins over it.
   * Default SYNCER_DEFAULTS.podCreateRate; a perSecond of 0 turns pacing off.
   */
  podCreateRate?: CreateRate;
  /**
   * podCreateYield is the share of its create rate a tenant with parked creates keeps while another tenant without
   * any is creating Pods (CreatePacer yieldShare): a flood yields to a tenant creating at its own pace. Default
   * SYNCER_DEFAULTS.podCreateYield; 1 turns yielding off.
   */
  podCreateYield?: number;
  /** interval of the patrol pass (0 disables it) */
  patrolIntervalMs?: number;
  /** name of the super cluster, for logs and for plugins (PluginContext.superCluster) */
  name?: string;
  /**
   * placement turns the placement filter on (several super clusters, with the namespace scheduler): this syncer then
   * syncs only what the scheduler placed on `cluster`, as signed (placement.ts). Absent: everything of
   * every tenant the registry reports is synced.
   */
  placement?: { cluster: string; signed: SignedPlacements };
}

/**
 * SyncerTerm is the leadership term a syncer's workers serve (start). Without one, the term lasts until stop.
 */
export interface SyncerTerm {
  /** aborts when the term ends: the workers stop at once and the syncer sends no write after it */
  signal?: AbortSignal;
  /**
   * holds is asked before every write: true while the leader Lease is surely still held, else the reason it may not
   * be (no renewal within the renew deadline). A process that was paused past its Lease wakes up writing nothing.
   */
  holds?: () => true | string;
}

/** TERM_ENDED is why a write after the end of a leadership term is refused. */
const TERM_ENDED = 'the leadership term of this syncer has ended';

/**
 * Syncer copies what tenant Pods need from each tenant control plane into the super cluster and status back. It is
 * a composition of small parts: TenantSessions (per-tenant clients and informers), Router (events to keys, from the
 * plugins' declarations), the pure planner (plan.ts), runSteps (writes), Effects and patrol. Events only enqueue
 * keys into a fair queue (one sub-queue per tenant, weighted round robin); workers plan each key from the caches and
 * write only the difference. A patrol pass compares both sides periodically and requeues drift.
 */
export class Syncer {
  private readonly superInformers = new Map<string, Informer>();
  private readonly queue: FairQueue;
  private readonly runner: Runner;
  private readonly workers: number;
  private readonly superCache = readerOf(this.superInformers);
  private readonly sessions: TenantSessions;
  private readonly router: Router;
  /** the effects and token minter of the current term: a new term starts with fresh ones, as a fresh syncer would */
  private effects: Effects;
  private tokens: TokenMinter;
  private readonly missingNamespaceRetries = new Map<string, number>();
  /** creates sent to the super cluster and not in its cache yet, counted against the tenants' caps */
  private readonly pending = new PendingCreates();
  /** keys whose last patrol plan found nothing, with their objects' versions */
  private readonly patrolMemo = new PatrolMemo();
  private readonly unwatchDepth: () => void;
  private readonly limit?: AdaptiveLimit;
  private readonly window?: SchedulingWindow;
  private readonly pacer: CreatePacer;
  private readonly podCreateRate: CreateRate;
  private unwatchLatency?: () => void;
  private unsubscribe?: () => void;
  private unwatchCaches?: () => void;
  private gate?: Promise<void>;
  private openGate?: () => void;
  private patrolTimer?: NodeJS.Timeout;
  /** the super client every write of this syncer goes through: fenced by the leadership term (mayWrite) */
  private readonly superWriter: KubeClient;
  /** the caches being started (warm), kept from one leadership term to the next */
  private warming?: Promise<void>;
  /** the leadership term being served, while it is */
  private term?: SyncerTerm & { ended?: Promise<void> };
  private terms = 0;
  private stopped = false;
  /** patrolRuns counts completed patrol passes; patrolFixes counts the drift they found. */
  readonly stats = { patrolRuns: 0, patrolFixes: 0 };

  constructor(private readonly o: SyncerOptions) {
    const workers = o.workers ?? SYNCER_DEFAULTS.workers;
    this.workers = workers;
    const cap = o.maxInFlightPerTenant ?? defaultMaxInFlightPerTenant(workers);
    if (cap > workers) {
      throw new RangeError(`syncer: maxInFlightPerTenant (${cap}) must not exceed workers (${workers})`);
    }
    // Tenants at their cap may borrow idle workers up to half of them; the other half waits for tenants that arrive.
    this.queue = new FairQueue({
      metrics: queueMetrics('syncer'),
      maxInFlightPerTenant: cap,
      borrowUpTo: Math.floor(workers / 2),
      // Copied events wait on the low-priority lane: a Pod's create, bind and status never wait behind them, and a
      // copy is late, never dropped (its key stays queued or in flight, counted in the tenant's depth and in-flight).
      lowPriority: (key) => isEventKey(o.host, key),
      maxLowInFlight: defaultMaxInFlightPerTenant(workers),
    });
    this.runner = new Runner({
      name: 'syncer',
      queue: this.queue,
      concurrency: workers,
      reconciler: { reconcile: (key, signal) => this.reconcile(key, signal) },
    });
    this.sessions = new TenantSessions({
      queue: this.queue,
      superCache: this.superCache,
      resourcesFor: (t) => tenantResources(o.host, t),
      handlerFor: (s, resource) => this.tenantHandler(s, resource),
      onServed: (s) => this.replaySuper(s),
      onSettingsChanged: (s) => this.replayTenant(s),
      mayWrite: () => this.mayWrite(),
      requestTimeoutMs: o.tenantRequestTimeoutMs ?? SYNCER_DEFAULTS.tenantRequestTimeoutMs,
      cacheLimits: o.tenantCache ?? SYNCER_DEFAULTS.tenantCache,
      onCacheExceeded: (t, reason) => {
        syncerMetrics.tenantCacheExceeded.inc({ tenant: t.key });
        o.onTenantCacheExceeded?.(t, reason);
      },
    });
    this.router = new Router({
      host: o.host,
      queue: this.queue,
      sessions: this.sessions,
      superCache: this.superCache,
      ...(o.name !== undefined && { superCluster: o.name }),
      ...(o.placement && { sharedTenants: true }),
    });
    this.superWriter = o.superClient.fenced(() => this.mayWrite());
    this.tokens = new TokenMinter(this.superWriter, this.superCache);
    this.effects = this.newEffects();
    if (o.adaptiveConcurrency ?? SYNCER_DEFAULTS.adaptiveConcurrency) {
      const limit = (this.limit = new AdaptiveLimit({ min: 1, max: workers }));
      this.unwatchLatency = o.superClient.onWriteLatency((ms) => {
        if (limit.observe(ms)) this.queue.setConcurrencyLimit(limit.limit);
      });
    }
    const size = o.schedulingWindow ?? SYNCER_DEFAULTS.schedulingWindow;
    if (size > 0) this.window = new SchedulingWindow({ size, wake: (key) => this.queue.add(key) });
    this.podCreateRate = checkCreateRate(o.podCreateRate ?? SYNCER_DEFAULTS.podCreateRate, 'syncer podCreateRate');
    this.pacer = new CreatePacer({
      wake: (key) => this.queue.add(key),
      yieldShare: checkYieldShare(o.podCreateYield ?? SYNCER_DEFAULTS.podCreateYield, 'syncer podCreateYield'),
    });
    this.unwatchDepth = watchDepth(this);
  }

  /** concurrencyLimit is the adaptive limit now (see SyncerOptions.adaptiveConcurrency), when the syncer adapts. */
  concurrencyLimit(): { superCluster: string; limit: number } | undefined {
    return this.limit && { superCluster: this.o.name ?? 'default', limit: this.limit.limit };
  }

  private newEffects(): Effects {
    return new Effects({
      superClient: this.superWriter,
      superCache: this.superCache,
      host: this.o.host,
      tokens: this.tokens,
    });
  }

  /**
   * warm starts the read side only: the super informers (resolving once they have synced) and, following the tenant
   * registry, every tenant's session and informers. No key is queued, nothing is written: a standby replica keeps its
   * caches synced this way, so that start serves from them when it wins the Lease. Calling it again is harmless.
   */
  warm(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.warming ??= this.startCaches().catch((e: unknown) => {
      this.warming = undefined;
      throw e;
    });
    return this.warming;
  }

  private async startCaches(): Promise<void> {
    // Nothing is queued outside a term: its start queues every cached key once.
    if (!this.term) this.queue.shutDown();
    for (const [name, { resource, all }] of superResources(this.o.host)) {
      if (this.superInformers.has(name)) continue;
      const inf = new Informer({
        client: this.o.superClient,
        resource,
        name: `super/${name}`,
        labelSelector: all ? undefined : `${LABEL.managedBy}=${MANAGER}`,
      });
      inf.addHandler(this.router.superHandler(name));
      // The handler of the minter of the term at the time of the event.
      if (name === R.pods.resource) inf.addHandler({ onDelete: (pod) => this.tokens.podHandler().onDelete?.(pod) });
      if (name === R.pods.resource && this.window) inf.addHandler(this.window.podHandler());
      this.superInformers.set(name, inf);
      inf.start();
    }
    this.unwatchCaches ??= watchCaches(this);
    await Promise.all([...this.superInformers.values()].map((i) => i.waitForSync()));
    if (this.unsubscribe || this.stopped) return;
    // A tenant that cannot be served (a kubeconfig that does not parse, a failing add) is reported and skipped; the
    // registry's next report of it tries again.
    this.unsubscribe = this.o.registry.subscribe((e) => {
      const key = e.type === 'upsert' ? e.tenant.key : e.key;
      if (e.type === 'remove') this.effects.events.forget(e.key);
      if (e.type === 'remove') this.window?.forget(e.key);
      if (e.type === 'remove') this.pacer.forget(e.key);
      const done = e.type === 'upsert' ? this.sessions.upsert(e.tenant) : this.sessions.remove(e.key);
      done.catch((err: unknown) => {
        syncerMetrics.tenantFailures.inc({ tenant: key, op: e.type });
        log.error({ tenant: key, op: e.type, err }, 'tenant could not be served; skipped until reported again');
      });
    });
  }

  /**
   * start serves a leadership term: it warms the caches if they are not yet, then starts the workers over them, queues
   * every cached key once (as a fresh start would) and starts the patrol. The term ends with its signal or standDown.
   */
  async start(term: SyncerTerm = {}): Promise<void> {
    await this.warm();
    if (this.term) throw new Error('syncer: a leadership term is being served already');
    if (this.stopped) throw new Error('syncer: stopped');
    if (term.signal?.aborted) return;
    // A later term starts its writes afresh: the token Secrets are read again before the first mint (another leader
    // may have minted meanwhile), and no event or condition is taken as recently written.
    if (this.terms++) {
      this.tokens = new TokenMinter(this.superWriter, this.superCache);
      this.effects = this.newEffects();
      this.pending.clear();
      this.missingNamespaceRetries.clear();
    }
    this.term = { ...term };
    this.queue.reopen();
    this.runner.start();
    term.signal?.addEventListener('abort', () => void this.standDown(), { once: true });
    this.replayAll();
    const every = this.o.patrolIntervalMs ?? 60_000;
    if (every > 0) {
      this.patrolTimer = setInterval(() => {
        try {
          this.patrol();
        } catch (err) {
          log.error({ err }, 'patrol pass failed; the next one runs as planned');
        }
      }, every);
      this.patrolTimer.unref();
    }
    log.info(
      { superCluster: this.o.name ?? 'default', plugins: this.o.host.names(), tenants: this.sessions.keys().length },
      'syncer started',
    );
  }

  /**
   * standDown ends the leadership term: from now on no write is sent, the workers stop (the keys they hold end
   * without writing), and so do the patrol, the event lane and the token minter. The caches stay warm for the next
   * term. It resolves once the workers have stopped.
   */
  standDown(): Promise<void> {
    const t = this.term;
    if (!t) return Promise.resolve();
    t.ended ??= (async () => {
      clearInterval(this.patrolTimer);
      this.tokens.stop();
      const events = this.effects.events.stop();
      this.resume();
      await this.runner.stop();
      await events;
      // Parked Pod creates belong to the term: the next one queues every key again.
      this.window?.clear();
      this.pacer.clear();
      if (this.term === t) this.term = undefined;
      log.info({ superCluster: this.o.name ?? 'default' }, 'syncer stood down; caches kept');
    })();
    return t.ended;
  }

  /** superCluster is the name of the super cluster this syncer serves ('default' when unnamed). */
  get superCluster(): string {
    return this.o.name ?? 'default';
  }

  /** serving reports whether a leadership term is being served (the workers run). */
  serving(): boolean {
    return !!this.term && !this.term.ended;
  }

  /** cachesSynced reports whether the super caches and those of every tenant the registry reports have synced. */
  cachesSynced(): { super: boolean; tenants: Array<[string, boolean]> } {
    return {
      super: this.superInformers.size > 0 && [...this.superInformers.values()].every((i) => i.hasSynced()),
      tenants: this.sessions.keys().map((k) => [k, this.tenantReady(k)]),
    };
  }

  /**
   * mayWrite is the fence of every write: only during a term that has not ended, while its Lease is surely held.
   */
  private mayWrite(): true | string {
    const t = this.term;
    if (!t || t.ended || t.signal?.aborted) return TERM_ENDED;
    return t.holds?.() ?? true;
  }

  /** replayAll queues every key the caches hold, as the informers' first adds and the tenants' replays would. */
  private replayAll(): void {
    for (const [name, inf] of this.superInformers) {
      const h = this.router.superHandler(name);
      for (const obj of inf.list()) h.onAdd?.(obj);
    }
    for (const s of this.sessions.all()) {
      if (!s.ready) continue;
      for (const [name, inf] of s.informers) {
        const h = this.router.tenantHandler(s, name);
        for (const obj of inf.list()) h.onAdd?.(obj);
      }
      this.replaySuper(s);
    }
  }

  /** stop ends the term being served and stops the informers: nothing of the syncer runs after it. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unwatchDepth();
    this.unwatchLatency?.();
    this.window?.stop();
    this.pacer.clear();
    this.unwatchCaches?.();
    await this.standDown();
    this.tokens.stop();
    // Stopped super informers release a warm-up still waiting for them to sync; it then subscribes to nothing.
    await Promise.all([...this.superInformers.values()].map((i) => i.stop()));
    await this.warming?.catch(() => {});
    this.unsubscribe?.();
    await this.effects.events.stop();
    await this.sessions.removeAll();
  }

  /** tenantReady reports whether a tenant's caches have synced and its keys are being served. */
  tenantReady(key: string): boolean {
    return this.sessions.get(key)?.ready ?? false;
  }

  /**
   * depthByTenant lists the keys waiting per tenant: on the queue, and Pod creates parked by the scheduling window or
   * the create rate (a flooding tenant's backlog is mostly parked).
   */
  depthByTenant(): Array<[string, number]> {
    return this.sessions
      .keys()
      .map((t) => [t, this.queue.tenantLen(t) + (this.window?.parkedOf(t) ?? 0) + this.pacer.parkedOf(t)]);
  }

  /**
   * setMaxInFlightPerTenant changes how many workers one tenant may hold, between 1 and the number of workers; keys
   * already being reconciled finish where they are.
   */
  setMaxInFlightPerTenant(cap: number): void {
    if (cap > this.workers) {
      throw new RangeError(`syncer: maxInFlightPerTenant (${cap}) must not exceed workers (${this.workers})`);
    }
    this.queue.setMaxInFlightPerTenant(cap);
  }

  /** yieldingTenants lists the tenants whose create rate is lowered now for another tenant creating Pods. */
  yieldingTenants(): string[] {
    return this.sessions.keys().filter((t) => this.pacer.yielding(t));
  }

  /** inFlightByTenant lists the keys being reconciled per tenant (the workers each tenant holds). */
  inFlightByTenant(): Array<[string, number]> {
    return this.sessions.keys().map((t) => [t, this.queue.tenantInFlight(t)]);
  }

  /** lowInFlightByTenant lists, per tenant, its low-priority keys (copied events) being reconciled: at most one each. */
  lowInFlightByTenant(): Array<[string, number]> {
    return this.sessions.keys().map((t) => [t, this.queue.tenantLowInFlight(t)]);
  }

  /** queueLength is the number of keys waiting. */
  queueLength(): number {
    return this.queue.len();
  }

  /**
   * pause stops all writes: workers hold on to their next key until resume, while informers keep watching and
   * keys keep queueing. For maintenance windows; patrol still reports drift while paused.
   */
  pause(): void {
    if (!this.gate) this.gate = new Promise((res) => (this.openGate = res));
  }

  /** resume lets the workers continue after pause. */
  resume(): void {
    this.openGate?.();
    this.gate = undefined;
    this.openGate = undefined;
  }

  /**
   * patrol compares both sides for every tenant and requeues every key whose plan is not empty; a key a plugin fails
   * on is reported and skipped (patrol.ts).
   */
  patrol(): number {
    const fixes = patrol({
      sessions: this.sessions.all(),
      host: this.o.host,
      superCache: this.superCache,
      router: this.router,
      plan: (key) => this.plan(key),
      signature: (key) => this.signature(key),
      memo: this.patrolMemo,
      enqueue: (key) => this.queue.add(key),
    });
    this.stats.patrolRuns++;
    this.stats.patrolFixes += fixes;
    return fixes;
  }

  /**
   * replaySuper replays the super caches for a newly served tenant: the super objects whose tenant object is gone, and
   * every super object an up plugin routes to it (a public class that existed before the tenant did: its add event
   * came when no session could take it).
   */
  private replaySuper(s: TenantSession): void {
    for (const p of this.o.host.resourcePlugins()) {
      const inf = this.superInformers.get(p.manifest.resource!.resource);
      if (!inf) continue;
      if (p.manifest.sourceOfTruth === 'super') {
        for (const obj of inf.list())
          for (const k of this.router.routeOf(p, obj))
            if (k.tenant === s.tenant.key) this.queue.add(makeKey(k.tenant, p.manifest.name, k.namespace, k.name));
        continue;
      }
      for (const obj of inf.list()) {
        const prov = provenanceOf(obj);
        if (prov?.cluster === s.tenant.key)
          this.queue.add(makeKey(s.tenant.key, p.manifest.name, prov.namespace, prov.name));
      }
    }
  }

  /** replayTenant plans every object of a tenant again after its settings changed, from both sides' caches. */
  private replayTenant(s: TenantSession): void {
    log.info({ tenant: s.tenant.key }, 'tenant settings changed; planning its objects again');
    for (const [name, inf] of s.informers) {
      const h = this.router.tenantHandler(s, name);
      for (const obj of inf.list()) h.onAdd?.(obj);
    }
    this.replaySuper(s);
  }

  /**
   * tenantHandler is the router's handler of a tenant informer; with the placement filter on, a namespace whose
   * placement changed also replays every object of that namespace, so a super cluster the namespace gains gets them.
   */
  private tenantHandler(s: TenantSession, resource: string): EventHandler<KubeObject> {
    const h = this.router.tenantHandler(s, resource);
    if (!this.o.placement || resource !== R.namespaces.resource) return h;
    return {
      ...h,
      onUpdate: (a, b) => {
        h.onUpdate?.(a, b);
        if (placementChanged(a, b, PLACEMENT_ANNOTATIONS)) this.replayNamespace(s, b.metadata?.name ?? '');
      },
    };
  }

  /** replayNamespace plans every object of one tenant namespace again. */
  private replayNamespace(s: TenantSession, namespace: string): void {
    log.info({ tenant: s.tenant.key, namespace, superCluster: this.o.name }, 'placement changed; planning again');
    for (const [name, inf] of s.informers) {
      if (name === R.namespaces.resource) continue;
      const h = this.router.tenantHandler(s, name);
      for (const obj of inf.list()) if (obj.metadata?.namespace === namespace) h.onAdd?.(obj);
    }
  }

  /**
   * placed applies the placement filter to a key (placement.ts). A key whose tenant object is gone is always
   * reconciled: deleting a tenant object deletes its super copy wherever it was synced. One that is no longer placed
   * here is left as it is (neither updated nor deleted) until the tenant deletes it or the super cluster is drained.
   * What flows up is kept by one syncer (upOwned): the one named by the object's UP_OWNER_LABEL, which also deletes
   * it once its source is gone.
   */
  private placed(s: TenantSession, p: ResourcePlugin, k: ReturnType<typeof parseKey>): boolean {
    const pl = this.o.placement;
    if (!pl) return true;
    const r = p.manifest.resource!;
    const obj = s.cache.get(r, k.namespace || undefined, k.name);
    if (!obj) return true;
    // What flows up (vNodes, PVs, public classes) comes from every super cluster the tenant is on: a tenant object
    // another super cluster's syncer owns is left to it.
    if (p.manifest.sourceOfTruth === 'super') {
      const loc = superLocation(p, this.context(s), k);
      return upOwned({
        cluster: pl.cluster,
        tenantObj: obj,
        hasSource: !!this.superCache.get(r, loc.namespace, loc.name),
      });
    }
    const core = !r.group;
    const kind: PlacementKind =
      core && r.resource === R.namespaces.resource
        ? 'namespace'
        : !k.namespace
          ? 'cluster'
          : core && r.resource === R.pods.resource
            ? 'pod'
            : 'namespaced';
    const nsName = kind === 'namespace' ? k.name : k.namespace;
    const v = placementVerdict({
      cluster: pl.cluster,
      tenant: s.tenant.key,
      kind,
      namespace: kind === 'cluster' ? undefined : s.cache.get(R.namespaces, undefined, nsName),
      pod: kind === 'pod' ? obj : undefined,
      signed: pl.signed,
    });
    if (!v.sync) log.debug({ tenant: k.tenant, plugin: k.plugin, key: k, reason: v.reason }, v.message);
    return v.sync;
  }

  private context(s: TenantSession): PluginContext {
    const ctx: PluginContext = {
      tenant: s.view,
      names: s.names,
      tenantCache: s.cache,
      superCache: this.superCache,
      now: new Date(),
    };
    if (this.o.name !== undefined) ctx.superCluster = this.o.name;
    if (this.o.placement) ctx.sharedTenants = true;
    return ctx;
  }

  /** served returns the session and plugin of a key when the key is to be reconciled now. */
  private served(k: ReturnType<typeof parseKey>): { s: TenantSession; p: ResourcePlugin } | undefined {
    const s = this.sessions.get(k.tenant);
    const p = this.o.host.get(k.plugin) as ResourcePlugin | undefined;
    if (!s?.ready || !p?.manifest.resource || !this.o.host.enabledFor(s.view, k.plugin)) return undefined;
    if (!this.placed(s, p, k)) return undefined;
    return { s, p };
  }

  /** plan computes what reconciling a key would write, from the caches only. */
  private plan(key: string): Plan | undefined {
    const k = parseKey(key);
    const sp = this.served(k);
    return sp && planKey(this.o.host, sp.p, this.context(sp.s), k, undefined, this.o.placement?.cluster);
  }

  /** signature is the versions of the two objects a key's plan starts from (patrol.ts). */
  private signature(key: string): string {
    const k = parseKey(key);
    const s = this.sessions.get(k.tenant);
    const p = this.o.host.get(k.plugin) as ResourcePlugin | undefined;
    return s && p?.manifest.resource ? signatureOf(p, this.context(s), k) : '';
  }

  /** createRateOf is the pace of a tenant's super Pod creates: its policy's, else the syncer's. */
  private createRateOf(s: TenantSession): CreateRate {
    return s.tenant.podCreateRate ?? this.podCreateRate;
  }

  /** createdPods names the super Pods a plan creates: they count in the scheduling window and the create rate. */
  private createdPods(p: ResourcePlugin, steps: readonly Step[]): string[] {
    const r = p.manifest.resource!;
    if (r.resource !== R.pods.resource || r.group !== R.pods.group) return [];
    return steps.flatMap((st) => (st.op === 'createSuper' ? [objectKey(st.obj)] : []));
  }

  /**
   * parkedBeforePlan parks a Pod key whose super copy is still to be created while its tenant's scheduling window is
   * full or its create bucket empty, before it is planned: the plan would only be thrown away (reconcile parks it
   * too), and at 10,000 Pods 1.2 keys per Pod were planned in full to be parked. A Pod the plan would refuse waits
   * with the others: its refusal is reported once it is planned.
   */
  private parkedBeforePlan(
    s: TenantSession,
    p: ResourcePlugin,
    ctx: PluginContext,
    k: ReturnType<typeof parseKey>,
    key: string,
  ): boolean {
    const r = p.manifest.resource!;
    if (r.resource !== R.pods.resource || r.group !== R.pods.group) return false;
    const pod = s.cache.get(r, k.namespace || undefined, k.name);
    if (!pod || pod.metadata?.deletionTimestamp) return false;
    const loc = superLocation(p, ctx, k);
    if (!loc.namespace || this.superCache.get(r, loc.namespace, loc.name)) return false;
    const superPod = `${loc.namespace}/${loc.name}`;
    const reason = this.window?.parkIfFull(k.tenant, superPod, key)
      ? 'WaitingForSchedulingWindow'
      : this.pacer.parkIfEmpty(k.tenant, key, this.createRateOf(s))
        ? 'WaitingForCreateRate'
        : undefined;
    if (!reason) return false;
    syncerMetrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason });
    return true;
  }

  private async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    if (this.gate) await this.gate;
    // Stopping: the keys still queued are not worth a write (the next start relists everything), and with a tenant
    // whose requests time out, draining them would hold stop for a timeout per key.
    if (signal.aborted) return;
    const k = parseKey(key);
    const s = this.sessions.get(k.tenant);
    if (!s) return;
    if (!s.ready) return { requeueAfter: 500 };
    const started = performance.now();
    try {
      const sp = this.served(k);
      if (!sp) return;
      const { p } = sp;
      const ctx = this.context(s);
      if (this.parkedBeforePlan(s, p, ctx, k, key)) return;
      const out = planKey(this.o.host, p, ctx, k, this.pending, this.o.placement?.cluster);
      if (out.skip) syncerMetrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason: out.skip.reason });
      const r = p.manifest.resource!.resource;
      const capped = s.view.quota?.objects[r] !== undefined;
      const own = `${k.namespace}/${k.name}`;
      // A Pod create waits, parked, while the tenant has its window of Pods waiting for the super scheduler, or has
      // created Pods at its rate.
      const created = this.createdPods(p, out.steps);
      const windowed = this.window ? created : [];
      for (let i = 0; i < windowed.length; i++) {
        if (this.window!.reserve(k.tenant, windowed[i]!, key)) continue;
        for (const id of windowed.slice(0, i)) this.window!.release(k.tenant, id);
        syncerMetrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason: 'WaitingForSchedulingWindow' });
        return;
      }
      const rate = this.createRateOf(s);
      for (let i = 0; i < created.length; i++) {
        if (this.pacer.take(k.tenant, key, rate)) continue;
        for (let j = 0; j < i; j++) this.pacer.giveBack(k.tenant);
        for (const id of windowed) this.window!.release(k.tenant, id);
        syncerMetrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason: 'WaitingForCreateRate' });
        return;
      }
      // Reserved before the first await: a parallel worker planning another create of this tenant counts this one.
      for (const step of out.steps)
        if (capped && step.op === 'createSuper') this.pending.add(k.tenant, r, own, sizeOf(step.obj));
      let superUid: string | undefined;
      try {
        superUid = await runSteps(out.steps, {
          write: (step) => this.write(s, p, step),
          adopt: (obj) => this.adopt(s, p, ctx, k, obj),
        });
      } catch (e) {
        if (capped) this.pending.remove(k.tenant, r, own);
        for (const id of windowed) this.window!.release(k.tenant, id);
        // Refused by the super namespace's ResourceQuota: the tenant is told on the object, and it is retried with
        // backoff (a Pod of the namespace may end and free the quota).
        const refused = superQuotaRefusal(e);
        const tenantObj = refused && s.cache.get(p.manifest.resource!, k.namespace || undefined, k.name);
        if (refused && tenantObj)
          for (const effect of capRefusal(p.manifest.resource!, tenantObj, refused).effects)
            await this.effects.run(
              { session: s, key, plugin: k.plugin, resource: p.manifest.resource!, ctx, superUid: undefined },
              effect,
            );
        throw e;
      }
      let requeue = out.requeueAfterMs;
      // A create waiting for its super namespace backs off as a create refused for a missing namespace does.
      if (out.skip?.reason === 'WaitingForNamespace') requeue = this.namespaceBackoff(key);
      else this.missingNamespaceRetries.delete(key);
      for (const e of out.effects) {
        const after = await this.effects.run(
          { session: s, key, plugin: k.plugin, resource: p.manifest.resource!, ctx, superUid },
          e,
        );
        if (after !== undefined) requeue = Math.min(requeue ?? after, after);
      }
      if (out.afterEffects?.length)
        await runSteps(out.afterEffects, {
          write: (step) => this.write(s, p, step),
          adopt: (obj) => this.adopt(s, p, ctx, k, obj),
        });
      return requeue !== undefined ? { requeueAfter: requeue } : undefined;
    } catch (e) {
      // A write refused because the term ended (or its Lease is not surely held): nothing was sent. A term that goes on
      // (a renewal that succeeds late) takes the key again soon; an ended one has shut its queue, which drops it.
      if (isWriteFenced(e)) {
        log.debug({ key, err: e.message }, 'write fenced by the leadership term');
        return { requeueAfter: 1000 };
      }
      syncerMetrics.errors.inc({ tenant: k.tenant, plugin: k.plugin });
      const failed = pluginErrorOf(e);
      // A plugin that throws on this object: reported, the object skipped and retried with backoff (the plugin or
      // its configuration may be fixed); other objects and tenants go on.
      if (failed) await this.pluginFailed(s, k, failed);
      // A stale cache (409, precondition) resolves itself: retry soon.
      if (isConflict(e) || isAlreadyExists(e) || isStalePatch(e)) {
        log.debug({ key, err: String(e) }, 'stale cache; requeueing');
        return { requeueAfter: 100 };
      }
      // So does a super namespace that is not there yet (its own key is being synced): retry quietly, backing off.
      if (isMissingNamespace(e)) {
        log.debug({ key, err: String(e) }, 'namespace not there yet; requeueing');
        return { requeueAfter: this.namespaceBackoff(key) };
      }
      // A tenant apiserver that does not answer (a stalled admission webhook, say) costs one worker for the timeout;
      // the runner retries the key with backoff.
      if (isTimeout(e)) {
        syncerMetrics.timeouts.inc({ tenant: k.tenant, plugin: k.plugin });
        log.warn(
          { tenant: k.tenant, plugin: k.plugin, namespace: k.namespace, name: k.name, request: e.message },
          'request timed out; retrying with backoff',
        );
      }
      throw e;
    } finally {
      syncerMetrics.latency.observe({ tenant: k.tenant, plugin: k.plugin }, (performance.now() - started) / 1000);
    }
  }

  /**
   * pluginFailed reports a plugin that threw on a key: vc_plugin_errors_total, the manager log, and a Warning event on
   * the tenant object when there is one. The event names the plugin and the hook, not the error: what a plugin's
   * error says may be about the super cluster, and the platform team reads it in the log.
   */
  private async pluginFailed(s: TenantSession, k: ReturnType<typeof parseKey>, err: PluginError): Promise<void> {
    const key = makeKey(k.tenant, k.plugin, k.namespace, k.name);
    reportPluginError(err, k.tenant, { key });
    const p = this.o.host.get(k.plugin) as ResourcePlugin | undefined;
    const r = p?.manifest.resource;
    const tenantObj = r && s.cache.get(r, k.namespace || undefined, k.name);
    const tm = tenantObj?.metadata;
    if (!r || !tm?.name) return;
    const ctx = this.context(s);
    const regarding = {
      apiVersion: r.group ? `${r.group}/${r.version}` : r.version,
      kind: r.kind,
      namespace: tm.namespace,
      name: tm.name,
      uid: tm.uid,
    };
    await this.effects.run(
      { session: s, key, plugin: k.plugin, resource: r, ctx, superUid: undefined },
      {
        type: 'event',
        side: 'tenant',
        regarding,
        eventType: 'Warning',
        reason: 'PluginFailed',
        message:
          `plugin ${err.plugin} failed in ${err.hook} on this object; it is not synced and is retried with backoff ` +
          '(the platform team has the error in the manager log)',
      },
    );
  }

  /** namespaceBackoff is the next delay of a key waiting for its super namespace: 100 ms doubling, capped. */
  private namespaceBackoff(key: string): number {
    const n = this.missingNamespaceRetries.get(key) ?? 0;
    this.missingNamespaceRetries.set(key, n + 1);
    if (this.missingNamespaceRetries.size > 100_000) this.missingNamespaceRetries.clear();
    return Math.min(100 * 2 ** n, MISSING_NAMESPACE_MAX_MS);
  }

  private async write(s: TenantSession, p: ResourcePlugin, step: Step): Promise<KubeObject | undefined> {
    const r = p.manifest.resource!;
    const fenced = this.mayWrite();
    if (fenced !== true) throw new WriteFencedError(step.op, `${s.tenant.key} ${r.resource}`, fenced);
    countWrite({ tenant: s.tenant.key, plugin: p.manifest.name, op: step.op, ...stepWrite(r, step) });
    return write({ superClient: this.superWriter, tenantClient: s.client }, r, step);
  }

  /**
   * adopt: the super apiserver made this object itself (the `default` ServiceAccount of a new namespace): it is
   * outside the managed-only cache, so read it and plan again with both sides known.
   */
  private async adopt(
    s: TenantSession,
    p: ResourcePlugin,
    ctx: PluginContext,
    k: ReturnType<typeof parseKey>,
    obj: KubeObject,
  ): Promise<string | undefined> {
    const r = p.manifest.resource!;
    const m = obj.metadata!;
    const actual = await this.o.superClient.get(r, m.namespace, m.name!);
    const tenantObj = s.cache.get(r, k.namespace || undefined, k.name);
    if (!tenantObj) return undefined;
    const again = plan({ host: this.o.host, plugin: p, ctx, key: k, tenantObj, superObj: actual });
    if (again.skip) {
      // The name is taken by an object the syncer may not adopt (a hand-made namespace, say): tell the tenant.
      const tm = tenantObj.metadata ?? {};
      const regarding = {
        apiVersion: r.group ? `${r.group}/${r.version}` : r.version,
        kind: r.kind,
        namespace: tm.namespace,
        name: tm.name ?? '',
        uid: tm.uid,
      };
      const target = {
        session: s,
        key: makeKey(k.tenant, k.plugin, k.namespace, k.name),
        plugin: k.plugin,
        resource: r,
        ctx,
        superUid: undefined,
      };
      await this.effects.run(target, {
        type: 'event',
        side: 'tenant',
        regarding,
        eventType: 'Warning',
        reason: again.skip.reason,
        message: again.skip.message,
      });
      throw new Error(`${again.skip.reason}: ${again.skip.message}`);
    }
    let uid = actual.metadata?.uid;
    for (const step of again.steps) uid = (await this.write(s, p, step))?.metadata?.uid ?? uid;
    return uid;
  }
}
