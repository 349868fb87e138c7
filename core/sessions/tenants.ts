import { KubeClient, type KubeObject, type Resource } from '../kube/client.ts';
import { CacheBudget, type CacheLimits } from '../kube/budget.ts';
import type { EventHandler } from '../kube/informer.ts';
import { InformerFactory, type SharedInformer } from '../kube/factory.ts';
import type { PooledInformers, TenantInformerPool } from './pool.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { namespaceOwnerIn, tenantNaming, type Naming } from '../names/names.ts';
import type { CacheReader, TenantView } from '../plugins/contract.ts';
import type { FairQueue } from '../queue/fairqueue.ts';
import { tenantView, type Tenant } from '../tenancy/tenant.ts';

// The per-tenant connections and informers, shared by the syncer and the namespace scheduler: both serve every tenant
// the registry reports, and the scheduler sits below the syncer (whose placement filter reads its annotations).

const log = childLogger({ controller: 'syncer' });

/** TenantSession is one served tenant: its client, its informers and what plugins see of it. */
export interface TenantSession {
  tenant: Tenant;
  /** what plugins see of the tenant (no credentials) */
  view: TenantView;
  client: KubeClient;
  informers: Map<string, SharedInformer<KubeObject>>;
  /** release lets go of the tenant's shared informers (the pool's), once this session's handles are stopped */
  release: () => void;
  cache: CacheReader;
  names: Naming;
  ready: boolean;
  stopped: boolean;
}

/** TenantSessionsOptions wire the sessions to their user: the syncer, or the namespace scheduler. */
export interface TenantSessionsOptions {
  queue: FairQueue;
  superCache: CacheReader;
  /** the resources to watch in a tenant, by resource name */
  resourcesFor(tenant: TenantView): Map<string, Resource>;
  /** the event handler of one tenant informer, attached once the tenant's caches have synced */
  handlerFor(s: TenantSession, resource: string): EventHandler<KubeObject>;
  /** called once a tenant is served (its caches synced, its handlers attached) */
  onServed(s: TenantSession): void;
  /**
   * called when a served tenant's settings change (its policy, its plugin configuration): objects planned under the
   * old settings, such as a Pod refused by the old policy, are planned again now rather than at the next patrol
   */
  onSettingsChanged?(s: TenantSession): void;
  /**
   * mayWrite fences every write to a tenant apiserver (KubeClient.fenced): a reason instead of true refuses it unsent.
   * Absent: writes are not fenced.
   */
  mayWrite?: () => true | string;
  /** requestTimeoutMs bounds every request to a tenant apiserver but watches (see KubeClient's ClientOptions) */
  requestTimeoutMs: number;
  /**
   * the most objects and bytes the informers of one tenant may cache together: a tenant over it is no longer served
   * (its informers stop, its session goes) and is tried again after CACHE_RETRY_MS. Absent: no limit.
   */
  cacheLimits?: CacheLimits;
  /**
   * pool shares the tenant informers with the process's other users (the syncer of each super cluster, the
   * namespace scheduler): one watch per resource per tenant, and the pool's cache limits instead of cacheLimits.
   * Absent: the sessions' own informers.
   */
  pool?: TenantInformerPool;
  /** called when a tenant is dropped for its cache limit, with the reason */
  onCacheExceeded?(t: Tenant, reason: string): void;
  /** the clock of the retry after a cache refusal */
  now?: () => number;
}

/** CACHE_RETRY_MS is how long a tenant over its cache limit stays unserved before its caches are listed again. */
export const CACHE_RETRY_MS = 5 * 60_000;

const cacheKey = (namespace: string | undefined, name: string) => (namespace ? `${namespace}/${name}` : name);

/** readerOf is the CacheReader over a set of informers, by resource name. */
export function readerOf(informers: Map<string, Pick<SharedInformer<KubeObject>, 'get' | 'list'>>): CacheReader {
  return {
    get: <T extends KubeObject>(r: Resource, namespace: string | undefined, name: string) =>
      informers.get(r.resource)?.get(cacheKey(namespace, name)) as T | undefined,
    list: <T extends KubeObject>(r: Resource, namespace?: string) => {
      const all = (informers.get(r.resource)?.list() ?? []) as T[];
      return namespace === undefined ? all : all.filter((o) => o.metadata?.namespace === namespace);
    },
  };
}

/**
 * TenantSessions keeps one session per tenant the registry reports: it connects, starts the tenant informers, waits
 * for them to sync, then serves the tenant. It handles the races of a registry that reports a tenant again while it
 * is being added (the newest report wins once the add finishes) and removes a tenant whose add is still waiting.
 */
export class TenantSessions {
  private readonly sessions = new Map<string, TenantSession>();
  private readonly adding = new Map<string, Tenant>();
  private readonly removeAfterAdd = new Set<string>();
  /** tenants dropped for their cache limit: the reason and when they may be served again */
  private readonly overLimit = new Map<string, { reason: string; until: number }>();

  constructor(private readonly o: TenantSessionsOptions) {}

  /** get returns the session of a tenant key. */
  get(key: string): TenantSession | undefined {
    return this.sessions.get(key);
  }

  /** all lists the sessions. */
  all(): TenantSession[] {
    return [...this.sessions.values()];
  }

  /** keys lists the tenant keys with a session. */
  keys(): string[] {
    return [...this.sessions.keys()];
  }

  /** refusal is why a tenant is not served for its cache limit now, or undefined. */
  refusal(key: string): string | undefined {
    const r = this.overLimit.get(key);
    return r && r.until > this.now() ? r.reason : undefined;
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  /** upsert adds a tenant, or updates its settings; a new kubeconfig means new connections and fresh caches. */
  async upsert(t: Tenant): Promise<void> {
    // A tenant over its cache limit is not listed again on every report of it, only after CACHE_RETRY_MS.
    if (this.refusal(t.key)) return;
    // Registries report the same tenant often (every reconcile of a Running VirtualCluster): while one add is under
    // way, later reports only record the newest tenant, which is applied when the add finishes.
    if (this.adding.has(t.key)) {
      this.adding.set(t.key, t);
      this.removeAfterAdd.delete(t.key);
      return;
    }
    const existing = this.sessions.get(t.key);
    if (existing && existing.tenant.kubeconfig === t.kubeconfig) {
      const view = tenantView(t);
      const changed = JSON.stringify(view) !== JSON.stringify(existing.view);
      existing.tenant = t;
      existing.view = view;
      this.o.queue.setWeight(t.key, t.weight);
      if (changed && existing.ready) this.o.onSettingsChanged?.(existing);
      return;
    }
    this.adding.set(t.key, t);
    try {
      if (existing) await this.drop(t.key);
      await this.add(t);
    } finally {
      const latest = this.adding.get(t.key);
      this.adding.delete(t.key);
      if (this.removeAfterAdd.delete(t.key)) await this.drop(t.key);
      else if (latest && latest !== t) await this.upsert(latest);
    }
  }

  /** remove stops serving a tenant, including one whose add is still waiting for its caches. */
  async remove(key: string): Promise<void> {
    this.overLimit.delete(key);
    await this.stopServing(key);
  }

  private async stopServing(key: string): Promise<void> {
    // An add under way may be waiting for caches that never sync (the tenant apiserver is gone): drop what it has
    // registered now, which releases it, and make sure nothing of it stays when it returns.
    if (this.adding.has(key)) this.removeAfterAdd.add(key);
    await this.drop(key);
  }

  /** removeAll stops serving every tenant, including those whose add is under way. */
  async removeAll(): Promise<void> {
    await Promise.all([...new Set([...this.keys(), ...this.adding.keys()])].map((k) => this.remove(k)));
  }

  private async add(t: Tenant): Promise<void> {
    const direct = await KubeClient.fromString(t.kubeconfig, `the admin kubeconfig of tenant ${t.key}`, {
      timeoutMs: this.o.requestTimeoutMs,
    });
    const client = this.o.mayWrite ? direct.fenced(this.o.mayWrite) : direct;
    // Removed while its client was being made (the syncer stopping at the end of a leadership term): a session
    // registered now would outlive the removal, with its informers' watches and its client's connections.
    if (this.removeAfterAdd.has(t.key)) {
      client.close();
      return;
    }
    const informers = new Map<string, SharedInformer<KubeObject>>();
    const onExceeded = (r: string) => this.exceeded(t, r);
    let pooled: PooledInformers | undefined;
    try {
      pooled = this.o.pool && (await this.o.pool.acquire(t, onExceeded));
    } catch (e) {
      client.close();
      throw e;
    }
    const limits = this.o.cacheLimits;
    const factory =
      pooled?.factory ??
      new InformerFactory(
        direct,
        t.key,
        limits && new CacheBudget(limits, `the caches of tenant ${t.key}`, onExceeded),
      );
    const view = tenantView(t);
    const superCache = this.o.superCache;
    const s: TenantSession = {
      tenant: t,
      view,
      client,
      informers,
      cache: readerOf(informers),
      names: tenantNaming(
        t.key,
        namespaceOwnerIn((n) => superCache.get(R.namespaces, undefined, n)),
      ),
      ready: false,
      stopped: false,
      release: () => pooled?.release(),
    };
    this.sessions.set(t.key, s);
    this.o.queue.setWeight(t.key, t.weight);
    for (const [name, r] of this.o.resourcesFor(view)) {
      const inf = factory.informer<KubeObject>({ resource: r });
      informers.set(name, inf);
      inf.start();
    }
    await Promise.all([...informers.values()].map((i) => i.waitForSync()));
    if (s.stopped) return;
    for (const [name, inf] of informers) inf.addHandler(this.o.handlerFor(s, name));
    s.ready = true;
    log.info({ tenant: t.key }, 'tenant caches synced; serving');
    this.o.onServed(s);
  }

  /**
   * exceeded drops a tenant whose caches went over the limit: its informers have stopped growing, and its session goes
   * now (while its caches are still whole, so nothing is planned from a partial cache).
   */
  private exceeded(t: Tenant, reason: string): void {
    this.overLimit.set(t.key, { reason, until: this.now() + CACHE_RETRY_MS });
    log.error({ tenant: t.key, reason }, 'tenant caches over their limit; tenant not served');
    this.o.onCacheExceeded?.(t, reason);
    void this.stopServing(t.key).catch((err: unknown) => log.error({ tenant: t.key, err }, 'tenant drop failed'));
  }

  /** drop stops a tenant's informers and forgets its queued keys. */
  private async drop(key: string): Promise<void> {
    const s = this.sessions.get(key);
    if (!s) return;
    s.stopped = true;
    this.sessions.delete(key);
    this.o.queue.removeTenant(key);
    await Promise.all([...s.informers.values()].map((i) => i.stop()));
    s.release();
    s.client.close();
    log.info({ tenant: key }, 'tenant removed');
  }
}
