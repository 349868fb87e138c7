import type { ConditionInput } from '../controller/status.ts';
import type { KubeClient } from '../kube/client.ts';
import { recordEvent } from '../kube/events.ts';
import { childLogger } from '../log.ts';
import { IDENTITY } from '../names/names.ts';
import type { Tenant } from '../tenancy/tenant.ts';

const log = childLogger({ controller: 'virtualcluster' });

/**
 * TENANT_CACHE_EXCEEDED is the reason of the Warning event on a VirtualCluster whose tenant holds more objects or
 * bytes than the manager caches for one tenant: the syncer stops serving it until the tenant deletes some.
 */
export const TENANT_CACHE_EXCEEDED = 'TenantCacheExceeded';

/**
 * reportCacheExceeded tells the platform and the definition's author, on the VirtualCluster in the meta cluster, that
 * the syncer stopped serving its tenant for the manager's cache limit, and why. Best effort: a failure is logged.
 */
export async function reportCacheExceeded(meta: KubeClient, t: Tenant, reason: string): Promise<void> {
  const target = {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    namespace: t.vcNamespace,
    name: t.vcName,
    uid: t.vcUid,
  };
  const message =
    `the syncer does not serve this tenant for now: ${reason}. Delete objects in the tenant; ` +
    'the syncer lists it again after a few minutes';
  const err = await recordEvent(meta, target, 'Warning', TENANT_CACHE_EXCEEDED, message, IDENTITY.manager);
  if (err) log.warn({ tenant: t.key, err: err.message }, 'could not record the cache limit event');
}

/** CACHE_CONDITION is the VirtualCluster condition that says whether the syncer caches and serves the tenant. */
export const CACHE_CONDITION = 'CacheWithinLimit';
/** WITHIN_LIMIT is the reason of a True CacheWithinLimit condition: the syncer serves the tenant from its caches. */
export const WITHIN_LIMIT = 'WithinLimit';

/**
 * cacheCondition is the CacheWithinLimit condition of a tenant: False with reason TenantCacheExceeded and the
 * syncer's reason while the syncer refuses to cache it, True otherwise.
 */
export function cacheCondition(refusal: string | undefined): ConditionInput {
  return refusal === undefined
    ? {
        type: CACHE_CONDITION,
        status: 'True',
        reason: WITHIN_LIMIT,
        message: 'the syncer caches and serves the tenant',
      }
    : {
        type: CACHE_CONDITION,
        status: 'False',
        reason: TENANT_CACHE_EXCEEDED,
        message: `the syncer does not serve this tenant for now: ${refusal}. Delete objects in the tenant`,
      };
}

/**
 * TenantCacheStates is what the syncers of this manager last said about each tenant's caches: over the limit (with
 * the reason) or served again. The VirtualCluster controller reads it for the CacheWithinLimit condition and is told
 * of every change, so the condition is set when the syncer refuses and cleared when it serves the tenant again.
 * `retryAfterMs` after a refusal it tells the controller again, whose next hand-over of the tenant lets the syncer
 * list it again (the syncer ignores hand-overs of a refused tenant until then).
 */
export class TenantCacheStates {
  private readonly refused = new Map<string, { reason: string; retry: NodeJS.Timeout }>();
  private readonly listeners = new Set<(t: Tenant) => void>();

  constructor(private readonly retryAfterMs: number) {}

  /** exceeded records that a syncer stopped serving t for its cache limit. */
  exceeded(t: Tenant, reason: string): void {
    clearTimeout(this.refused.get(t.key)?.retry);
    const retry = setTimeout(() => this.tell(t), this.retryAfterMs).unref();
    this.refused.set(t.key, { reason, retry });
    this.tell(t);
  }

  /** served records that a syncer serves t from whole caches; a change only when t was refused. */
  served(t: Tenant): void {
    const r = this.refused.get(t.key);
    if (!r) return;
    clearTimeout(r.retry);
    this.refused.delete(t.key);
    this.tell(t);
  }

  /** clear forgets every tenant and its retry (the manager stops). */
  clear(): void {
    for (const r of this.refused.values()) clearTimeout(r.retry);
    this.refused.clear();
  }

  private tell(t: Tenant): void {
    for (const l of this.listeners) l(t);
  }

  /** refusal is the reason the tenant of cluster key `key` is not served, or undefined. */
  refusal(key: string): string | undefined {
    return this.refused.get(key)?.reason;
  }

  /** onChange calls cb with the tenant whenever its state changes; it returns the function that stops it. */
  onChange(cb: (t: Tenant) => void): () => void {
    this.listeners.add(cb);
    return () => void this.listeners.delete(cb);
  }
}
