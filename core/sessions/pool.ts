import { CacheBudget, type CacheLimits } from '../kube/budget.ts';
import { KubeClient } from '../kube/client.ts';
import { InformerFactory } from '../kube/factory.ts';
import type { Tenant } from '../tenancy/tenant.ts';

/** PooledInformers is one user's hold on a tenant's shared informers; release lets go of it. */
export interface PooledInformers {
  factory: InformerFactory;
  release(): void;
}

interface Entry {
  made: Promise<{ client: KubeClient; factory: InformerFactory }>;
  users: number;
  /** the users' calls for a cache budget gone over: each drops its session */
  listeners: Set<(reason: string) => void>;
  budget?: CacheBudget;
}

/**
 * TenantInformerPool shares each tenant's informers among the users of one process: the syncer of every super
 * cluster and the namespace scheduler watch a tenant's Pods, Namespaces and the rest once, over one read client, in
 * the way a shared informer factory serves the controllers of one cluster. The client closes after the last user's
 * release; a tenant whose kubeconfig changed gets a new entry (its old one ends with its users). What one tenant's
 * informers cache together is bounded by the pool's cacheLimits, whoever reads them.
 */
export class TenantInformerPool {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly o: {
      requestTimeoutMs: number;
      /** the most objects and bytes one tenant's shared informers cache together (core/kube/budget.ts) */
      cacheLimits?: CacheLimits;
    },
  ) {}

  /**
   * acquire holds the tenant's shared informers; the caller's informer handles stop before it releases. onExceeded
   * is called when the tenant's caches go over the pool's limits (the informers have stopped): the caller drops its
   * session, and a later acquire lists the tenant afresh.
   */
  async acquire(t: Tenant, onExceeded: (reason: string) => void = () => {}): Promise<PooledInformers> {
    const id = `${t.key}\n${t.kubeconfig}`;
    let e = this.entries.get(id);
    if (!e || e.budget?.exceeded) {
      const listeners = new Set<(reason: string) => void>();
      const limits = this.o.cacheLimits;
      const budget =
        limits &&
        new CacheBudget(limits, `the caches of tenant ${t.key}`, (reason) => {
          for (const l of [...listeners]) l(reason);
        });
      const made = KubeClient.fromString(t.kubeconfig, `the admin kubeconfig of tenant ${t.key}`, {
        timeoutMs: this.o.requestTimeoutMs,
      }).then((client) => ({ client, factory: new InformerFactory(client, t.key, budget) }));
      const fresh: Entry = { made, users: 0, listeners, ...(budget && { budget }) };
      e = fresh;
      this.entries.set(id, fresh);
      // A kubeconfig that does not parse leaves no entry behind for the next report to find.
      made.catch(() => {
        if (this.entries.get(id) === fresh) this.entries.delete(id);
      });
    }
    const entry = e;
    entry.users++;
    entry.listeners.add(onExceeded);
    let made: { client: KubeClient; factory: InformerFactory };
    try {
      made = await entry.made;
    } catch (err) {
      entry.users--;
      entry.listeners.delete(onExceeded);
      throw err;
    }
    let held = true;
    return {
      factory: made.factory,
      release: () => {
        if (!held) return;
        held = false;
        entry.listeners.delete(onExceeded);
        if (--entry.users > 0) return;
        if (this.entries.get(id) === entry) this.entries.delete(id);
        made.client.close();
      },
    };
  }

  /** size is the number of tenants (by kubeconfig) the pool holds informers for. */
  get size(): number {
    return this.entries.size;
  }
}
