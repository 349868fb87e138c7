import { KubeClient } from '../kube/client.ts';
import { InformerFactory } from '../kube/factory.ts';
import type { Tenant } from '../tenancy/tenant.ts';

/** PooledInformers is one user's hold on a tenant's shared informers; release lets go of it. */
export interface PooledInformers {
  factory: InformerFactory;
  release(): void;
}

interface Entry {
  kubeconfig: string;
  made: Promise<{ client: KubeClient; factory: InformerFactory }>;
  users: number;
}

/**
 * TenantInformerPool shares each tenant's informers among the users of one process: the syncer of every super
 * cluster and the namespace scheduler watch a tenant's Pods, Namespaces and the rest once, over one read client, in
 * the way a shared informer factory serves the controllers of one cluster. The client closes after the last user's
 * release; a tenant whose kubeconfig changed gets a new entry (its old one ends with its users).
 */
export class TenantInformerPool {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly o: { requestTimeoutMs: number }) {}

  /** acquire holds the tenant's shared informers; the caller's informer handles stop before it releases. */
  async acquire(t: Tenant): Promise<PooledInformers> {
    const id = `${t.key}\n${t.kubeconfig}`;
    let e = this.entries.get(id);
    if (!e) {
      const made = KubeClient.fromString(t.kubeconfig, `the admin kubeconfig of tenant ${t.key}`, {
        timeoutMs: this.o.requestTimeoutMs,
      }).then((client) => ({ client, factory: new InformerFactory(client, t.key) }));
      e = { kubeconfig: t.kubeconfig, made, users: 0 };
      this.entries.set(id, e);
      // A kubeconfig that does not parse leaves no entry behind for the next report to find.
      made.catch(() => this.entries.delete(id));
    }
    const entry = e;
    entry.users++;
    let made: { client: KubeClient; factory: InformerFactory };
    try {
      made = await entry.made;
    } catch (err) {
      entry.users--;
      throw err;
    }
    let held = true;
    return {
      factory: made.factory,
      release: () => {
        if (!held) return;
        held = false;
        if (--entry.users > 0) return;
        this.entries.delete(id);
        made.client.close();
      },
    };
  }

  /** size is the number of tenants (by kubeconfig) the pool holds informers for. */
  get size(): number {
    return this.entries.size;
  }
}
