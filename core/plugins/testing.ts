import type { KubeObject, Resource } from '../kube/client.ts';
import { namespaceOwnerIn, tenantNaming } from '../names/names.ts';
import { R } from '../kube/resources.ts';
import { tenantFrom, tenantView } from '../tenancy/tenant.ts';
import type { CacheReader, PluginContext, TenantView } from './contract.ts';

/**
 * MapCache is a CacheReader over plain arrays of objects, for table-driven plugin tests: a plugin is a pure
 * transform, so its tests give it the tenant and super state it would find in the informer caches.
 */
export class MapCache implements CacheReader {
  private readonly byResource = new Map<string, KubeObject[]>();

  constructor(entries: Array<[Resource, KubeObject[]]> = []) {
    for (const [r, objs] of entries) this.byResource.set(r.resource, objs);
  }

  get<T extends KubeObject = KubeObject>(r: Resource, namespace: string | undefined, name: string): T | undefined {
    return this.list<T>(r).find((o) => o.metadata?.name === name && (o.metadata?.namespace ?? '') === (namespace ?? ''));
  }

  list<T extends KubeObject = KubeObject>(r: Resource, namespace?: string): T[] {
    const all = (this.byResource.get(r.resource) ?? []) as T[];
    return namespace === undefined ? all : all.filter((o) => o.metadata?.namespace === namespace);
  }
}

/** testTenant returns the view of a tenant that plugins get, with sensible defaults for unit tests. */
export function testTenant(over: Partial<TenantView> = {}): TenantView {
  const t = tenantFrom({ key: 'team-a-1a2b3c-dev', vcName: 'dev', vcNamespace: 'team-a', vcUid: '00000000-0000-0000-0000-00000000000a' });
  return { ...tenantView(t), ...over };
}

/**
 * testContext builds a PluginContext over the given tenant and caches. Its naming is the production one
 * (tenantNaming), reading super namespaces from the super cache as the syncer does.
 */
export function testContext(o: { tenant?: TenantView; tenantCache?: CacheReader; superCache?: CacheReader; now?: Date } = {}): PluginContext {
  const tenant = o.tenant ?? testTenant();
  const superCache = o.superCache ?? new MapCache();
  return {
    tenant,
    names: tenantNaming(tenant.key, namespaceOwnerIn((n) => superCache.get(R.namespaces, undefined, n))),
    tenantCache: o.tenantCache ?? new MapCache(),
    superCache,
    now: o.now ?? new Date('2026-01-01T00:00:00Z'),
  };
}
