/** The syncer's options, their defaults, and the leadership term it serves. */
import type { KubeClient } from '../kube/client.ts';
import type { InformerFactory } from '../kube/factory.ts';
import type { TenantInformerPool } from '../sessions/pool.ts';
import type { CacheLimits } from '../kube/budget.ts';
import type { PluginHost } from '../plugins/host.ts';
import { R } from '../kube/resources.ts';
import type { Tenant, TenantRegistry } from '../tenancy/tenant.ts';
import { DEFAULT_BYTE_RATE, DEFAULT_CREATE_RATE, type ByteRate, type CreateRate } from '../api/tenantpolicy.ts';
import { DEFAULT_YIELD_SHARE } from './pacer.ts';
import type { SignedPlacements } from './placement.ts';

/** SYNCER_DEFAULTS are the syncer's settings when its options leave them out. */
export const SYNCER_DEFAULTS = {
  workers: 8,
  /** super Pods of one tenant waiting for the super scheduler at once (see SchedulingWindow) */
  schedulingWindow: 16,
  /** super Pods created per tenant per second, and at once (see CreatePacer); a TenantPolicy's pods.createRate wins */
  podCreateRate: DEFAULT_CREATE_RATE,
  /** the share of its create rate a tenant with a backlog keeps while another tenant creates Pods (see CreatePacer) */
  podCreateYield: DEFAULT_YIELD_SHARE,
  /** bytes written to the super cluster per tenant per second, and at once (see BytePacer); a TenantPolicy's quota.byteRate wins */
  superByteRate: DEFAULT_BYTE_RATE,
  /** the adaptive concurrency limit (see SyncerOptions.adaptiveConcurrency) */
  adaptiveConcurrency: false,
  /** a tenant admission webhook may take 30 s (the apiserver's limit); the syncer gives up well before */
  tenantRequestTimeoutMs: 10_000,
  /**
   * the most objects and bytes (JSON) the manager caches of one tenant: a tenant may keep more in its own etcd than
   * its caps let into the super cluster, but not make the manager hold it all (see SyncerOptions.tenantCache)
   */
  tenantCache: { objects: 50_000, bytes: 256 * 1024 * 1024 },
} as const;

/**
 * isEventKey tells whether a queue key belongs to a plugin that syncs core/v1 Events (the events plugin copying super
 * Pods' events up): those keys go on the fair queue's low-priority lane.
 */
export function isEventKey(host: Pick<PluginHost, 'get'>, key: string): boolean {
  // Asked on every add, hand-out and done: the plugin segment is read without splitting the whole key.
  const start = key.indexOf('/') + 1;
  const end = key.indexOf('/', start);
  if (start === 0 || end < 0) return false;
  const r = host.get(key.slice(start, end))?.manifest.resource;
  return r?.resource === R.events.resource && r.group === R.events.group;
}

/**
 * defaultMaxInFlightPerTenant is the share of the workers one tenant may hold at once when the options do not say:
 * a quarter, at least one, so a tenant whose requests hang leaves three quarters to the others.
 */
export function defaultMaxInFlightPerTenant(workers: number): number {
  return Math.max(1, Math.floor(workers / 4));
}

/** SyncerOptions configure one syncer, which serves one super cluster. */
export interface SyncerOptions {
  superClient: KubeClient;
  /**
   * the super cluster's shared informers (the scheduler reads its nodes, the meta cluster's controllers its other
   * objects): one watch per resource and selector on it however many read it; default: the syncer's own, on superClient
   */
  superInformers?: InformerFactory;
  host: PluginHost;
  registry: TenantRegistry;
  /** the process's shared tenant informers (other syncers', the scheduler's); default: the syncer's own */
  tenantInformers?: TenantInformerPool;
  /**
   * the most objects and bytes the informers of one tenant cache (the pool's limits instead, with tenantInformers);
   * a tenant over it is not served (vc_syncer_tenant_cache_exceeded_total) and is listed again after CACHE_RETRY_MS.
   * Default SYNCER_DEFAULTS.tenantCache.
   */
  tenantCache?: CacheLimits;
  /** called when a tenant goes over its cache limit, with the reason (the manager tells the VirtualCluster) */
  onTenantCacheExceeded?(t: Tenant, reason: string): void;
  /** called when the syncer serves a tenant from synced caches (again, after a cache refusal) */
  onTenantServed?(t: Tenant): void;
  /** concurrent workers over the fair queue; default SYNCER_DEFAULTS.workers */
  workers?: number;
  /** keys of one tenant reconciled at once, at most `workers`; default defaultMaxInFlightPerTenant(workers) */
  maxInFlightPerTenant?: number;
  /**
   * the bound of every request to a tenant apiserver except watches, in ms; a request past it fails the reconcile,
   * which is retried with backoff. Default SYNCER_DEFAULTS.tenantRequestTimeoutMs.
   */
  tenantRequestTimeoutMs?: number;
  /**
   * adaptiveConcurrency (default false) bounds the keys of all tenants reconciled at once by the super cluster's
   * write latency (AdaptiveLimit, between 1 and `workers`): once more writes in flight only lengthen the super
   * apiserver's queue, a tenant's second and later keys wait in the fair queue instead, and a tenant with nothing in
   * flight is still served at once. Off, the workers and the per-tenant cap alone bound it: at 10,000 Pods on a
   * CPU-bound host the limit cost 5-10% of the throughput (36.5-36.8 Pods/s with it, 38.7-40.3 without) for a smaller
   * gain in a quiet tenant's latency during a flood than the scheduling window gives on its own.
   */
  adaptiveConcurrency?: boolean;
  /**
   * schedulingWindow: the super Pods of one tenant that may wait for the super cluster's scheduler at once; a tenant's
   * further Pod creates wait in the syncer until one is bound, so another tenant's Pod is not queued behind a flood
   * (SchedulingWindow). Default SYNCER_DEFAULTS.schedulingWindow; 0 turns it off.
   */
  schedulingWindow?: number;
  /**
   * podCreateRate paces the super Pods the syncer creates for one tenant (CreatePacer): `burst` at once, then
   * `perSecond`; a tenant's own rate (its TenantPolicy's pods.createRate, Tenant.podCreateRate) wins over it.
   * Default SYNCER_DEFAULTS.podCreateRate; a perSecond of 0 turns pacing off.
   */
  podCreateRate?: CreateRate;
  /**
   * podCreateYield is the share of its create rate a tenant with parked creates keeps while another tenant without
   * any is creating Pods (CreatePacer yieldShare): a flood yields to a tenant creating at its own pace. Default
   * SYNCER_DEFAULTS.podCreateYield; 1 turns yielding off.
   */
  podCreateYield?: number;
  /**
   * superByteRate paces the bytes the syncer writes to the super cluster for one tenant (BytePacer): `burst` at once,
   * then `perSecond`; a tenant's own rate (its TenantPolicy's quota.byteRate, Tenant.byteRate) wins over it. Default
   * SYNCER_DEFAULTS.superByteRate; a perSecond of 0 turns pacing off for tenants without a rate of their own.
   */
  superByteRate?: ByteRate;
  /** interval of the patrol pass (0 disables it) */
  patrolIntervalMs?: number;
  /** name of the super cluster, for logs and for plugins (PluginContext.superCluster) */
  name?: string;
  /**
   * placement turns the placement filter on (several super clusters, with the namespace scheduler): this syncer then
   * syncs only what the scheduler placed on `cluster`, as signed (placement.ts). Absent: everything of
   * every tenant the registry reports is synced.
   */
  placement?: { cluster: string; signed: SignedPlacements };
}

/**
 * SyncerTerm is the leadership term a syncer's workers serve (start). Without one, the term lasts until stop.
 */
export interface SyncerTerm {
  /** aborts when the term ends: the workers stop at once and the syncer sends no write after it */
  signal?: AbortSignal;
  /**
   * holds is asked before every write: true while the leader Lease is surely still held, else the reason it may not
   * be (no renewal within the renew deadline). A process that was paused past its Lease wakes up writing nothing.
   */
  holds?: () => true | string;
}
