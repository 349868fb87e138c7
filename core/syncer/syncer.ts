import { type KubeClient, type KubeObject } from '../kube/client.ts';
import { InformerFactory, type SharedInformer } from '../kube/factory.ts';
import { type EventHandler } from '../kube/informer.ts';
import { childLogger } from '../log.ts';
import { LABEL, MANAGER, provenanceOf } from '../names/names.ts';
import { FairQueue } from '../queue/fairqueue.ts';
import { AdaptiveLimit } from '../queue/limit.ts';
import { queueMetrics } from '../controller/metrics.ts';
import { Runner } from '../controller/runner.ts';
import { PendingCreates } from './caps.ts';
import { Effects } from './effects.ts';
import { forgetTenant, syncerMetrics, watchCaches, watchDepth } from './metrics.ts';
import { patrol, PatrolMemo } from './patrol.ts';
import { makeKey, Router, superResources, tenantResources } from './routing.ts';
import { DNS_NAMESPACE } from '../scheduler/namespace.ts';
import { PLACEMENT_ANNOTATIONS, placementChanged, podEndsPresence, tenantOnCluster } from './placement.ts';
import { R } from '../kube/resources.ts';
import { type CreateRate } from '../api/tenantpolicy.ts';
import { readerOf, TenantSessions, type TenantSession } from '../sessions/tenants.ts';
import { TokenMinter } from './tokens.ts';
import { checkCreateRate, checkYieldShare, CreatePacer } from './pacer.ts';
import { BytePacer, checkByteRate } from './bytepacer.ts';
import { SchedulingWindow } from './window.ts';
import { PodAdmission } from './admission.ts';
import {
  defaultMaxInFlightPerTenant,
  isEventKey,
  SYNCER_DEFAULTS,
  type SyncerOptions,
  type SyncerTerm,
} from './options.ts';
import { KeyReconciler, tenantObjects } from './reconcile.ts';

const log = childLogger({ controller: 'syncer' });

export {
  defaultMaxInFlightPerTenant,
  isEventKey,
  SYNCER_DEFAULTS,
  type SyncerOptions,
  type SyncerTerm,
} from './options.ts';

/** TERM_ENDED is why a write after the end of a leadership term is refused. */
const TERM_ENDED = 'the leadership term of this syncer has ended';

/**
 * Syncer copies what tenant Pods need from each tenant control plane into the super cluster and status back. It is
 * a composition of small parts: TenantSessions (per-tenant clients and informers), Router (events to keys, from the
 * plugins' declarations), the pure planner (plan.ts), runSteps (writes), Effects and patrol. Events only enqueue
 * keys into a fair queue (one sub-queue per tenant, weighted round robin); workers plan each key from the caches and
 * write only the difference. A patrol pass compares both sides periodically and requeues drift.
 *
 * A little over 500 lines, on purpose: what stays in this file is the composition itself (construction of the parts,
 * the start, warm-up, leadership term and stop that order them, the replay of caches into the queue) and the
 * read-only views the manager's metrics and health read; reconcile, admission, effects and patrol are modules of
 * their own beside it.
 */
export class Syncer {
  private readonly superInformers = new Map<string, SharedInformer<KubeObject>>();
  private superFactory?: InformerFactory;
  /** resolved by stop: a warm-up waiting for the super informers to sync gives up */
  private readonly onStop: Array<() => void> = [];
  private readonly queue: FairQueue;
  private readonly runner: Runner;
  private readonly workers: number;
  private readonly superCache = readerOf(this.superInformers);
  private readonly sessions: TenantSessions;
  private readonly router: Router;
  /** the effects and token minter of the current term: a new term starts with fresh ones, as a fresh syncer would */
  private effects: Effects;
  private tokens: TokenMinter;
  /** keys reconciles each key (reconcile.ts) */
  private readonly keys: KeyReconciler;
  /** creates sent to the super cluster and not in its cache yet, counted against the tenants' caps */
  private readonly pending = new PendingCreates();
  /** keys whose last patrol plan found nothing, with their objects' versions */
  private readonly patrolMemo = new PatrolMemo();
  private readonly unwatchDepth: () => void;
  private readonly limit?: AdaptiveLimit;
  private readonly window?: SchedulingWindow;
  private readonly pacer: CreatePacer;
  private readonly bytePacer: BytePacer;
  private readonly podCreateRate: CreateRate;
  private unwatchLatency?: () => void;
  private unsubscribe?: () => void;
  /** ends the subscription to the placement records' changes */
  private unwatchPlacements?: () => void;
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
      reconciler: { reconcile: (key, signal) => this.keys.reconcile(key, signal) },
    });
    this.sessions = new TenantSessions({
      queue: this.queue,
      superCache: this.superCache,
      resourcesFor: (t) => tenantResources(o.host, t),
      handlerFor: (s, resource) => this.tenantHandler(s, resource),
      onServed: (s) => {
        this.replaySuper(s);
        o.onTenantServed?.(s.tenant);
      },
      onSettingsChanged: (s) => this.replayTenant(s),
      mayWrite: () => this.mayWrite(),
      requestTimeoutMs: o.tenantRequestTimeoutMs ?? SYNCER_DEFAULTS.tenantRequestTimeoutMs,
      pool: o.tenantInformers,
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
    this.bytePacer = new BytePacer({ wake: (key) => this.queue.add(key) });
    const superByteRate = checkByteRate(o.superByteRate ?? SYNCER_DEFAULTS.superByteRate, 'syncer superByteRate');
    this.keys = new KeyReconciler({
      options: o,
      sessions: this.sessions,
      superCache: this.superCache,
      pending: this.pending,
      superWriter: this.superWriter,
      admission: new PodAdmission(this.window, this.pacer, this.podCreateRate, this.superCache, {
        pacer: this.bytePacer,
        rate: superByteRate,
      }),
      effects: () => this.effects,
      gate: () => this.gate,
      mayWrite: () => this.mayWrite(),
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
      this.superFactory ??= this.o.superInformers ?? new InformerFactory(this.o.superClient, 'super');
      const inf = this.superFactory.informer<KubeObject>({
        resource,
        ...(!all && { labelSelector: `${LABEL.managedBy}=${MANAGER}` }),
      });
      inf.addHandler(this.router.superHandler(name));
      // The handler of the minter of the term at the time of the event.
      if (name === R.pods.resource) inf.addHandler({ onDelete: (pod) => this.tokens.podHandler().onDelete?.(pod) });
      if (name === R.pods.resource && this.window) inf.addHandler(this.window.podHandler());
      this.superInformers.set(name, inf);
      inf.start();
    }
    this.unwatchCaches ??= watchCaches(this);
    // A shared informer another reader keeps open does not end with this syncer's stop: the stop ends the wait.
    await Promise.race([
      Promise.all([...this.superInformers.values()].map((i) => i.waitForSync())),
      new Promise<void>((resolve) => this.onStop.push(resolve)),
    ]);
    if (this.unsubscribe || this.stopped) return;
    // A tenant that cannot be served (a kubeconfig that does not parse, a failing add) is reported and skipped; the
    // registry's next report of it tries again.
    this.unsubscribe = this.o.registry.subscribe((e) => {
      const key = e.type === 'upsert' ? e.tenant.key : e.key;
      if (e.type === 'remove') this.effects.events.forget(e.key);
      if (e.type === 'remove') this.window?.forget(e.key);
      if (e.type === 'remove') this.pacer.forget(e.key);
      if (e.type === 'remove') this.bytePacer.forget(e.key);
      if (e.type === 'remove') this.keys.forgetNotes(e.key);
      const done = e.type === 'upsert' ? this.sessions.upsert(e.tenant) : this.sessions.remove(e.key);
      // A tenant no longer synced leaves the metrics too: the tenant label stays bounded by the tenants synced now.
      if (e.type === 'remove') done.then(() => forgetTenant(e.key)).catch(() => {});
      done.catch((err: unknown) => {
        syncerMetrics.tenantFailures.inc({ tenant: key, op: e.type });
        log.error({ tenant: key, op: e.type, err }, 'tenant could not be served; skipped until reported again');
      });
    });
    this.unwatchPlacements = this.o.placement?.signed.onChange?.((tenant, names) => {
      const s = this.sessions.get(tenant);
      if (!s?.ready) return;
      for (const name of names) {
        const ns = s.cache.get(R.namespaces, undefined, name);
        if (ns) this.router.tenantHandler(s, R.namespaces.resource).onAdd?.(ns);
        this.replayNamespace(s, name);
      }
      if (names.some((n) => n !== DNS_NAMESPACE)) this.replayDns(s);
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
      this.keys.clearBackoff();
      this.keys.forgetNotes();
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
      this.bytePacer.clear();
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
  superPods(): readonly KubeObject[] {
    return this.superInformers.get(R.pods.resource)?.list() ?? [];
  }

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
    for (const resolve of this.onStop.splice(0)) resolve();
    this.unwatchDepth();
    this.unwatchLatency?.();
    this.window?.stop();
    this.pacer.clear();
    this.bytePacer.clear();
    this.unwatchCaches?.();
    await this.standDown();
    this.tokens.stop();
    // Stopped super informers release a warm-up still waiting for them to sync; it then subscribes to nothing.
    await Promise.all([...this.superInformers.values()].map((i) => i.stop()));
    await this.warming?.catch(() => {});
    this.unsubscribe?.();
    this.unwatchPlacements?.();
    await this.effects.events.stop();
    await this.sessions.removeAll();
  }

  /** tenantReady reports whether a tenant's caches have synced and its keys are being served. */
  tenantReady(key: string): boolean {
    return this.sessions.get(key)?.ready ?? false;
  }

  /**
   * depthByTenant lists the keys waiting per tenant: on the queue, and Pod creates parked by the scheduling window or
   * the create rate, and writes parked by the byte rate (a flooding tenant's backlog is mostly parked).
   */
  depthByTenant(): Array<[string, number]> {
    return this.sessions
      .keys()
      .map((t) => [
        t,
        this.queue.tenantLen(t) + (this.window?.parkedOf(t) ?? 0) + this.pacer.parkedOf(t) + this.bytePacer.parkedOf(t),
      ]);
  }

  /** byteHeldByTenant lists the tenants held back by their byte rate now, with the keys each has waiting for bytes. */
  byteHeldByTenant(): Array<[string, number]> {
    return this.bytePacer.held();
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
      plan: (key) => this.keys.plan(key),
      signature: (key) => this.keys.signature(key),
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
   * placement changed also replays every object of that namespace, so a super cluster the namespace gains gets them,
   * and those of the tenant's DNS namespace, which follows the tenant (placement.ts dnsFollows) and is removed where
   * the tenant no longer is: after a placement change, and after the tenant's last namespace or Pod here goes or ends.
   */
  private tenantHandler(s: TenantSession, resource: string): EventHandler<KubeObject> {
    const h = this.router.tenantHandler(s, resource);
    const pl = this.o.placement;
    if (!pl) return h;
    if (resource === R.pods.resource)
      return {
        ...h,
        onUpdate: (a, b) => {
          h.onUpdate?.(a, b);
          if (podEndsPresence(s.tenant.key, pl.cluster, pl.signed, a, b)) this.replayDnsIfLeft(s);
        },
        onDelete: (obj) => {
          h.onDelete?.(obj);
          if (podEndsPresence(s.tenant.key, pl.cluster, pl.signed, obj, undefined)) this.replayDnsIfLeft(s);
        },
      };
    if (resource !== R.namespaces.resource) return h;
    return {
      ...h,
      onUpdate: (a, b) => {
        h.onUpdate?.(a, b);
        // Recorded placements report their own changes (above); the annotations count for a tenant without a record.
        if (!placementChanged(a, b, PLACEMENT_ANNOTATIONS)) return;
        const name = b.metadata?.name ?? '';
        this.replayNamespace(s, name);
        if (name !== DNS_NAMESPACE) this.replayDns(s);
      },
      onDelete: (obj) => {
        h.onDelete?.(obj);
        if (obj.metadata?.name !== DNS_NAMESPACE) this.replayDnsIfLeft(s);
      },
    };
  }

  /** replayDns plans the tenant's DNS namespace and its objects again (placement.ts dnsFollows). */
  private replayDns(s: TenantSession): void {
    const dns = s.cache.get(R.namespaces, undefined, DNS_NAMESPACE);
    if (!dns) return;
    this.router.tenantHandler(s, R.namespaces.resource).onAdd?.(dns);
    this.replayNamespace(s, DNS_NAMESPACE);
  }

  /** replayDnsIfLeft replays the tenant's DNS namespace once the tenant is no longer on this super cluster. */
  private replayDnsIfLeft(s: TenantSession): void {
    const pl = this.o.placement!;
    if (!tenantOnCluster(s.tenant.key, pl.cluster, pl.signed, tenantObjects(s))) this.replayDns(s);
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
}
