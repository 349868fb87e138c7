// The tenants of VirtualClusters read from the meta cluster, fed into the tenant set the syncers serve.

import type { MutableTenantRegistry, Tenant, TenantRegistry } from '../../tenancy/tenant.ts';

/** TenantFeedSource is where the feed reads tenants from (the meta cluster's MetaTenantRegistry). */
export interface TenantFeedSource extends TenantRegistry {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * TenantFeed keeps the tenant set the syncers serve following the meta cluster's VirtualClusters, as the manager's
 * VirtualCluster controller builds their tenants. A separate syncer process (`standby` false) follows them for its
 * whole life. A manager under leader election (`standby` true) follows them while it stands by, so its syncers'
 * caches are warm when it wins; while it leads, its own controller alone changes the set, and when the term ends the
 * meta cluster's set is applied again. The configuration's static tenants are never the feed's to remove.
 */
export class TenantFeed {
  private leading = false;
  /** the meta cluster's tenants as last reported */
  private readonly metaSet = new Map<string, Tenant>();
  private readonly staticKeys: ReadonlySet<string>;
  private started: Promise<void> | undefined;

  constructor(
    private readonly tenants: MutableTenantRegistry,
    private readonly source: TenantFeedSource | undefined,
    private readonly standby: boolean,
  ) {
    this.staticKeys = new Set(tenants.list().map((t) => t.key));
    source?.subscribe((e) => {
      if (e.type === 'upsert') this.metaSet.set(e.tenant.key, e.tenant);
      else this.metaSet.delete(e.key);
      if (this.leading && standby) return;
      if (e.type === 'upsert') tenants.upsert(e.tenant);
      else if (!this.staticKeys.has(e.key)) tenants.remove(e.key);
    });
  }

  /**
   * start starts reading the meta cluster once; it reads only, so it runs for the whole process, standing by
   * included. A start that failed is tried again by the next call.
   */
  start(): Promise<void> {
    return (this.started ??= (this.source?.start() ?? Promise.resolve()).catch((e: unknown) => {
      this.started = undefined;
      throw e;
    }));
  }

  /** lead hands the tenant set to the controller of a leadership term, once the feed has started. */
  async lead(): Promise<void> {
    await this.start();
    this.leading = true;
  }

  /** standBy makes the tenant set the meta cluster's again after a term, whatever the term's controller left. */
  standBy(): void {
    this.leading = false;
    if (!this.standby) return;
    for (const t of this.tenants.list())
      if (!this.staticKeys.has(t.key) && !this.metaSet.has(t.key)) this.tenants.remove(t.key);
    for (const t of this.metaSet.values()) this.tenants.upsert(t);
  }

  /** stop stops reading the meta cluster (which releases a warm-up still waiting for its cache to sync). */
  async stop(): Promise<void> {
    await this.source?.stop();
  }
}
