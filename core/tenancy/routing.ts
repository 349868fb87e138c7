import type { Tenant, TenantEvent, TenantRegistry } from './tenant.ts';

/** TenantRouting says which tenants the syncer of one super cluster serves. */
export interface TenantRouting {
  /** the super cluster of this syncer */
  cluster: string;
  /** the super cluster that serves unpinned tenants when `everywhere` is off (the first configured one) */
  home: string;
  /**
   * everywhere: every syncer serves every unpinned tenant (the namespace scheduler decides what goes where, and the
   * placement filter of each syncer syncs only that); off, unpinned tenants go to `home` alone
   */
  everywhere: boolean;
}

/**
 * routesTo reports whether the syncer of r.cluster serves a tenant: a tenant pinned by spec.superCluster only by the
 * syncer of that super cluster (a name no syncer has: by none, and the VirtualCluster reports it); an unpinned one by
 * the home super cluster, or by all of them when scheduling is on.
 */
export function routesTo(t: Pick<Tenant, 'superCluster'>, r: TenantRouting): boolean {
  if (t.superCluster !== undefined) return t.superCluster === r.cluster;
  return r.everywhere || r.cluster === r.home;
}

/**
 * routedRegistry is the part of a tenant registry that one super cluster's syncer serves. A tenant whose routing
 * changes (its spec.superCluster edited) is removed from the syncers that no longer serve it.
 */
export function routedRegistry(source: TenantRegistry, r: TenantRouting): TenantRegistry {
  return {
    subscribe(fn: (e: TenantEvent) => void): () => void {
      const served = new Set<string>();
      return source.subscribe((e) => {
        if (e.type === 'upsert' && routesTo(e.tenant, r)) {
          served.add(e.tenant.key);
          fn(e);
          return;
        }
        const key = e.type === 'upsert' ? e.tenant.key : e.key;
        if (served.delete(key)) fn({ type: 'remove', key });
      });
    },
  };
}
