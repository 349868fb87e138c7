import { agentTenant, type AgentTenant, type AgentTenantSpec } from './auth.ts';
import type { TenantDirectory } from './directory.ts';

/**
 * Test fixtures of the vn-agent: a TenantDirectory over a fixed set of tenants. Only tests import this file; the
 * build leaves testing.ts files out.
 */

/** StaticTenantDirectory serves a fixed set of tenants (tests) that can be changed in place. */
export class StaticTenantDirectory implements TenantDirectory {
  private readonly map = new Map<string, AgentTenant>();

  constructor(tenants: Array<AgentTenant | AgentTenantSpec> = []) {
    for (const t of tenants) this.upsert(t);
  }

  /** upsert adds or replaces a tenant. */
  upsert(t: AgentTenant | AgentTenantSpec): void {
    const entry = 'cas' in t ? t : agentTenant(t);
    this.map.set(entry.key, entry);
  }

  /** remove drops a tenant; its certificate is refused from the next request on. */
  remove(key: string): void {
    this.map.delete(key);
  }

  tenants(): Iterable<AgentTenant> {
    return this.map.values();
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  ready(): true {
    return true;
  }
}
