import type { KubeObject, Resource } from '../kube/client.ts';
import { objectKey, type EventHandler } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import { provenanceOf } from '../names/names.ts';
import type {
  CacheReader,
  CacheNeed,
  ResourcePlugin,
  RouteContext,
  SuperIndex,
  TenantKey,
  Watch,
} from '../plugins/contract.ts';
import { PluginError, reportPluginError, type PluginHook } from '../plugins/failures.ts';
import type { PluginHost } from '../plugins/host.ts';
import type { FairQueue } from '../queue/fairqueue.ts';
import type { TenantSession, TenantSessions } from '../sessions/tenants.ts';

/**
 * Routing maps informer events to queue keys and nothing else (no I/O, no cached object mutated). Everything it
 * knows about which resource concerns which plugin comes from the plugins' declarations: the resource a plugin owns,
 * its `route`, its `watches` and its `indexes` (see the contract).
 */

/** parseKey splits a queue key `tenant/plugin/namespace/name`. */
export function parseKey(key: string): { tenant: string; plugin: string; namespace: string; name: string } {
  const [tenant = '', plugin = '', namespace = '', ...rest] = key.split('/');
  return { tenant, plugin, namespace, name: rest.join('/') };
}

/** makeKey builds a queue key. */
export function makeKey(tenant: string, plugin: string, namespace: string, name: string): string {
  return `${tenant}/${plugin}/${namespace}/${name}`;
}

const resourceOf = (p: ResourcePlugin): Resource => p.manifest.resource!;

/** needsOf lists the caches a plugin and its mutators (those enabled for `tenant`, if given) declare, on one side. */
function needsOf(
  host: PluginHost,
  p: ResourcePlugin,
  side: CacheNeed['side'],
  tenant?: TenantSession['view'],
): CacheNeed[] {
  const mutators = host.mutatorsOf(p.manifest.name).filter((m) => !tenant || host.enabledFor(tenant, m.manifest.name));
  const mutatorReads = mutators.flatMap((m) => m.reads ?? []);
  return [...(p.reads ?? []), ...(p.watches ?? []), ...mutatorReads].filter((n) => n.side === side);
}

/**
 * superResources lists the super resources to watch: every plugin's own resource, what plugins read, watch or index
 * there, and namespaces, which the core itself reads for naming and adoption. `all` is set when a plugin whose source
 * of truth is the super cluster owns the resource; otherwise only objects the syncer manages are watched.
 */
export function superResources(host: PluginHost): Map<string, { resource: Resource; all: boolean }> {
  const out = new Map<string, { resource: Resource; all: boolean }>([
    [R.namespaces.resource, { resource: R.namespaces, all: false }],
  ]);
  const want = (r: Resource, all: boolean) => {
    const had = out.get(r.resource);
    out.set(r.resource, { resource: had?.resource ?? r, all: all || !!had?.all });
  };
  for (const p of host.resourcePlugins()) {
    want(resourceOf(p), p.manifest.sourceOfTruth === 'super');
    for (const n of needsOf(host, p, 'super')) want(n.resource, false);
    for (const i of p.indexes ?? []) want(i.resource, false);
  }
  return out;
}

/** tenantResources lists the resources to watch in one tenant: those of the plugins enabled for it and their needs. */
export function tenantResources(host: PluginHost, tenant: TenantSession['view']): Map<string, Resource> {
  const out = new Map<string, Resource>();
  for (const p of host.resourcePlugins()) {
    if (!host.enabledFor(tenant, p.manifest.name)) continue;
    out.set(resourceOf(p).resource, resourceOf(p));
    for (const n of needsOf(host, p, 'tenant', tenant))
      if (!out.has(n.resource.resource)) out.set(n.resource.resource, n.resource);
  }
  return out;
}

type TenantWatch = Extract<Watch, { side: 'tenant' }>;
type SuperWatch = Extract<Watch, { side: 'super' }>;

/**
 * Router turns informer events into keys for the fair queue, and keeps the super-side indexes plugins declare
 * (the nodes plugin's Pods by node, for example), which route() reads through RouteContext.tenantsBy.
 */
export class Router {
  /** index name -> value -> super object key -> owning tenant */
  private readonly indexes = new Map<string, Map<string, Map<string, string>>>();

  constructor(
    private readonly o: {
      host: PluginHost;
      queue: Pick<FairQueue, 'add'>;
      sessions: Pick<TenantSessions, 'get' | 'all'>;
      superCache: CacheReader;
      /** the super cluster this router's syncer serves (RouteContext.superCluster) */
      superCluster?: string;
      /** RouteContext.sharedTenants */
      sharedTenants?: boolean;
    },
  ) {}

  private enqueue(plugin: string, k: TenantKey): void {
    const s = this.o.sessions.get(k.tenant);
    if (s && this.o.host.enabledFor(s.view, plugin)) this.o.queue.add(makeKey(k.tenant, plugin, k.namespace, k.name));
  }

  /** tenantHandler maps events of one tenant informer to keys: the owning plugins' and those of plugins watching it. */
  tenantHandler(s: TenantSession, resource: string): EventHandler<KubeObject> {
    const t = s.tenant.key;
    const plugins = this.o.host.resourcePlugins();
    const owners = plugins.filter((p) => resourceOf(p).resource === resource);
    const watchers = plugins.flatMap((p) =>
      (p.watches ?? [])
        .filter((w): w is TenantWatch => w.side === 'tenant' && w.resource.resource === resource)
        .map((w) => [p, w] as const),
    );
    const owned = (o: KubeObject) => {
      for (const p of owners)
        this.enqueue(p.manifest.name, {
          tenant: t,
          namespace: o.metadata?.namespace ?? '',
          name: o.metadata?.name ?? '',
        });
    };
    const watched = (o: KubeObject) => {
      for (const [p, w] of watchers) {
        if (!this.o.host.enabledFor(s.view, p.manifest.name)) continue;
        for (const k of this.safely(p, 'watch', t, () => w.map(o, s.view)))
          this.enqueue(p.manifest.name, { tenant: t, ...k });
      }
    };
    return {
      onAdd: (o) => {
        owned(o);
        watched(o);
      },
      onUpdate: (a, b) => {
        owned(b);
        watched(a);
        watched(b);
      },
      onDelete: (o) => {
        owned(o);
        watched(o);
      },
    };
  }

  /** superHandler updates the indexes over one super resource, then maps its events to keys. */
  superHandler(resource: string): EventHandler<KubeObject> {
    const each = (o: KubeObject, deleted: boolean) => {
      const plugins = this.o.host.resourcePlugins();
      for (const p of plugins)
        for (const i of p.indexes ?? []) if (i.resource.resource === resource) this.index(p, i, o, deleted);
      for (const p of plugins) {
        if (resourceOf(p).resource === resource) for (const k of this.routeOf(p, o)) this.enqueue(p.manifest.name, k);
        for (const w of p.watches ?? []) {
          if (w.side !== 'super' || w.resource.resource !== resource) continue;
          const sw: SuperWatch = w;
          for (const k of this.safely(p, 'watch', '', () => sw.map(o, this.routeContext())))
            this.enqueue(p.manifest.name, k);
        }
      }
    };
    // An update routes the old version too: an object that moved (a PV re-bound, a class that lost its public
    // label) must reach the tenants that had it.
    return {
      onAdd: (o) => each(o, false),
      onUpdate: (a, b) => {
        each(a, true);
        each(b, false);
      },
      onDelete: (o) => each(o, true),
    };
  }

  private index(p: ResourcePlugin, i: SuperIndex, o: KubeObject, deleted: boolean): void {
    const tenant = provenanceOf(o)?.cluster;
    if (!tenant) return;
    let byValue = this.indexes.get(i.name);
    if (!byValue) this.indexes.set(i.name, (byValue = new Map()));
    const k = objectKey(o);
    for (const v of this.safely(p, 'index', tenant, () => i.values(o))) {
      let m = byValue.get(v);
      if (deleted) {
        m?.delete(k);
        if (m && !m.size) byValue.delete(v);
        continue;
      }
      if (!m) byValue.set(v, (m = new Map()));
      m.set(k, tenant);
    }
  }

  /** routeOf maps a super object of a plugin's resource to tenant keys: the plugin's route, or the ownership annotations. */
  routeOf(p: ResourcePlugin, o: KubeObject): TenantKey[] {
    if (p.route) return this.safely(p, 'route', '', () => p.route!(o, this.routeContext()));
    const prov = provenanceOf(o);
    return prov ? [{ tenant: prov.cluster, namespace: prov.namespace, name: prov.name }] : [];
  }

  /** routeContext is what route() and super watches may consult. */
  routeContext(): RouteContext {
    return {
      tenants: this.o.sessions.all().map((s) => s.view),
      superCache: this.o.superCache,
      tenantsBy: (index, value) => [...new Set(this.indexes.get(index)?.get(value)?.values() ?? [])],
      tenantOfNamespace: (sns) => {
        const p = provenanceOf(this.o.superCache.get(R.namespaces, undefined, sns));
        return p ? { tenant: p.cluster, namespace: p.name } : undefined;
      },
      ...(this.o.superCluster !== undefined && { superCluster: this.o.superCluster }),
      ...(this.o.sharedTenants && { sharedTenants: true }),
    };
  }

  /**
   * safely runs a plugin's mapping function; one that throws maps to nothing, and is counted in
   * vc_plugin_errors_total and logged (tenant: the tenant of the event, empty on the super side where it is what
   * the function was to find).
   */
  private safely<T>(p: ResourcePlugin, hook: PluginHook, tenant: string, fn: () => T[]): T[] {
    try {
      return fn();
    } catch (err) {
      reportPluginError(new PluginError(p.manifest.name, hook, err), tenant);
      return [];
    }
  }
}
