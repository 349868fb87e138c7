import type { KubeObject, Resource } from '../kube/client.ts';
import { superNamespace } from '../names/names.ts';
import type { Tenant } from '../syncer/tenant.ts';
import type { CacheReader, PluginContext } from './contract.ts';

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

/** testTenant returns a tenant with sensible defaults for unit tests. */
export function testTenant(over: Partial<Tenant> = {}): Tenant {
  return {
    key: 'team-a-1a2b3c-dev',
    vcName: 'dev',
    vcNamespace: 'team-a',
    vcUid: '00000000-0000-0000-0000-00000000000a',
    kubeconfig: '',
    weight: 1,
    clusterDomain: 'cluster.local',
    podSecurityLevel: 'baseline',
    opaqueMetaPrefixes: [],
    transparentMetaPrefixes: [],
    ...over,
  };
}

/** testContext builds a PluginContext over the given tenant and caches. */
export function testContext(o: { tenant?: Tenant; tenantCache?: CacheReader; superCache?: CacheReader; now?: Date } = {}): PluginContext {
  const tenant = o.tenant ?? testTenant();
  const prefix = `${tenant.key}-`;
  return {
    tenant,
    names: {
      superNamespace: (ns) => superNamespace(tenant.key, ns),
      tenantNamespace: (sns) => (sns.startsWith(prefix) && sns.length < 63 ? sns.slice(prefix.length) : undefined),
    },
    tenantCache: o.tenantCache ?? new MapCache(),
    superCache: o.superCache ?? new MapCache(),
    now: o.now ?? new Date('2026-01-01T00:00:00Z'),
  };
}
