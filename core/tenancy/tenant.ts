import type { TenantIdentity } from '../names/names.ts';

/** POD_SECURITY_LEVELS are the Pod Security admission levels a tenant's super namespaces may be labelled with. */
export const POD_SECURITY_LEVELS = ['privileged', 'baseline', 'restricted'] as const;
/** PodSecurityLevel is one of POD_SECURITY_LEVELS. */
export type PodSecurityLevel = (typeof POD_SECURITY_LEVELS)[number];

/** Tenant is one tenant control plane as the syncer sees it. */
export interface Tenant extends TenantIdentity {
  /** uid of the VirtualCluster object */
  vcUid: string;
  /** admin kubeconfig of the tenant control plane (YAML text) */
  kubeconfig: string;
  /** fair-queue weight (positive integer) */
  weight: number;
  /** cluster domain used in DNS search paths */
  clusterDomain: string;
  /** Pod Security admission level written on the tenant's super namespaces */
  podSecurityLevel: PodSecurityLevel;
  /** plugins enabled for this tenant beyond the defaults (opt-in ones) and disabled for it */
  plugins?: { enable?: string[]; disable?: string[] };
  /** opaque per-tenant settings for plugins, e.g. `{ sandbox: { runtimeClassName: "kata" } }` */
  pluginConfig?: Record<string, unknown>;
  /** where Pods in the super reach this tenant's apiserver (host and port), for their service account tokens */
  apiserverEndpoint?: { host: string; port: number };
}

/** TenantEvent is a change in the set of tenants a registry reports. */
export type TenantEvent = { type: 'upsert'; tenant: Tenant } | { type: 'remove'; key: string };

/**
 * TenantRegistry tells the syncer which tenants exist. subscribe replays the current tenants as upserts, then
 * reports changes; it returns an unsubscribe function.
 */
export interface TenantRegistry {
  subscribe(fn: (e: TenantEvent) => void): () => void;
}

/**
 * MutableTenantRegistry is the tenant set that its owners change while it runs: the manager seeds it with the
 * configuration's static tenants and the VirtualCluster controller upserts a tenant when its control plane serves
 * and removes it when it stops. Every subscriber sees each change.
 */
export class MutableTenantRegistry implements TenantRegistry {
  private readonly tenants = new Map<string, Tenant>();
  private readonly subs = new Set<(e: TenantEvent) => void>();

  constructor(tenants: Tenant[] = []) {
    for (const t of tenants) this.tenants.set(t.key, t);
  }

  subscribe(fn: (e: TenantEvent) => void): () => void {
    this.subs.add(fn);
    for (const t of this.tenants.values()) fn({ type: 'upsert', tenant: t });
    return () => this.subs.delete(fn);
  }

  /** upsert adds or changes a tenant. */
  upsert(t: Tenant): void {
    this.tenants.set(t.key, t);
    for (const s of this.subs) s({ type: 'upsert', tenant: t });
  }

  /** remove removes a tenant. */
  remove(key: string): void {
    this.tenants.delete(key);
    for (const s of this.subs) s({ type: 'remove', key });
  }
}
