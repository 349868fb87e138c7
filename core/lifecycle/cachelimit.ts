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
