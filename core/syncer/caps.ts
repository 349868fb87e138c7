import { ApiError, type KubeObject, type Resource } from '../kube/client.ts';
import { eventTarget } from '../kube/events.ts';
import { provenanceOf } from '../names/names.ts';
import type { Effect, ObjectCaps, PluginContext } from '../plugins/contract.ts';
import { QUOTA_EXCEEDED } from '../../plugins/sdk/src/wellknown.ts';
import type { PendingUsage, Usage } from './compute.ts';
import { specOf } from './diff.ts';

/**
 * Per-tenant object caps (TenantPolicy spec.quota.objects): before the syncer copies a tenant object into the super
 * cluster it counts what the tenant already has there, over all its super namespaces, so that creating namespaces
 * does not multiply what a tenant may store in the super's etcd. The count reads the super cache plus the creates
 * still on their way into it (PendingCreates), so parallel workers cannot overshoot a cap together.
 */

/** SYNCED_CONDITION is the condition type that tells the tenant whether an object reached the super cluster. */
export const SYNCED_CONDITION = 'VCSynced';

/** CONDITION_KINDS are the kinds whose status carries conditions the syncer may set. */
const CONDITION_KINDS = new Set(['Pod', 'Service', 'PersistentVolumeClaim']);

const sizes = new WeakMap<KubeObject, number>();

/**
 * sizeOf is an object's size as the caps count it: the bytes of its JSON without status and server-owned metadata
 * (managedFields and the like), which is what the tenant controls. Cached objects are immutable, so it is memoized.
 */
export function sizeOf(o: KubeObject): number {
  let n = sizes.get(o);
  if (n === undefined) {
    n = Buffer.byteLength(JSON.stringify(specOf(o)));
    sizes.set(o, n);
  }
  return n;
}

/** PendingCreate is a create the syncer has sent and the super cache does not show yet. */
export interface PendingCreate {
  /** the tenant object's `namespace/name` */
  key: string;
  bytes: number;
}

/** PendingReader lists the pending creates of one tenant and resource, and the compute usage of those that have one. */
export interface PendingReader extends Partial<PendingUsage> {
  pending(tenant: string, resource: string): readonly PendingCreate[];
}

/** PENDING_TTL_MS is how long a create counts as pending at most: long after any informer has seen it. */
export const PENDING_TTL_MS = 60_000;

/** PendingCreates is the ledger of creates on their way into the super cache, per tenant and resource. */
export class PendingCreates implements PendingReader {
  private readonly byTenant = new Map<string, Map<string, { bytes: number; at: number; usage?: Usage }>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** clear forgets every create recorded (a new leadership term: what the last one sent is in the cache or failed). */
  clear(): void {
    this.byTenant.clear();
  }

  /** add records a create about to be sent, with what it holds against the compute quota when it counts there. */
  add(tenant: string, resource: string, key: string, bytes: number, usage?: Usage): void {
    const id = `${tenant}|${resource}`;
    let m = this.byTenant.get(id);
    if (!m) this.byTenant.set(id, (m = new Map()));
    m.set(key, { bytes, at: this.now(), ...(usage && { usage }) });
  }

  /** remove forgets a create (it failed). */
  remove(tenant: string, resource: string, key: string): void {
    const id = `${tenant}|${resource}`;
    this.byTenant.get(id)?.delete(key);
  }

  /** forget drops every pending create of a tenant (it is no longer served). */
  forget(tenant: string): void {
    for (const id of this.byTenant.keys()) if (id.startsWith(`${tenant}|`)) this.byTenant.delete(id);
  }

  pending(tenant: string, resource: string): PendingCreate[] {
    return this.live(tenant, resource).map(([key, v]) => ({ key, bytes: v.bytes }));
  }

  pendingUsage(tenant: string, resource: string): Array<{ key: string; usage: Usage }> {
    return this.live(tenant, resource).flatMap(([key, v]) => (v.usage ? [{ key, usage: v.usage }] : []));
  }

  /** live lists the creates of a tenant and resource not older than PENDING_TTL_MS, forgetting the older ones. */
  private live(tenant: string, resource: string): Array<[string, { bytes: number; usage?: Usage }]> {
    const m = this.byTenant.get(`${tenant}|${resource}`);
    if (!m) return [];
    const out: Array<[string, { bytes: number; usage?: Usage }]> = [];
    const oldest = this.now() - PENDING_TTL_MS;
    for (const [key, v] of m) {
      if (v.at < oldest) m.delete(key);
      else out.push([key, v]);
    }
    return out;
  }
}

/**
 * ANY_RESOURCE is the key of quota.objects whose caps hold for every resource the policy does not name: a kind a
 * plugin syncs (built in or third party, namespaced or cluster-scoped) is never without a count and a size.
 */
export const ANY_RESOURCE = '*';

/** CapCheck is what checkCaps needs to know about one write into the super cluster. */
export interface CapCheck {
  ctx: PluginContext;
  resource: Resource;
  tenantObj: KubeObject;
  /** the desired super object */
  desired: KubeObject;
  /** the current super object (an update), or undefined (a create) */
  superObj: KubeObject | undefined;
  pending?: PendingReader;
}

/**
 * checkCaps returns why a write breaks the tenant's caps on its resource, or undefined. A create must fit the count,
 * the per-object size and the total size; an update only the sizes, and only when it grows the object (an object
 * already over a lowered cap may shrink). Objects the tenant already has are never removed for a cap.
 */
export function checkCaps(c: CapCheck): string | undefined {
  const r = c.resource.resource;
  const objects = c.ctx.tenant.quota?.objects;
  const named: ObjectCaps | undefined = objects?.[r];
  const caps = named ?? objects?.[ANY_RESOURCE];
  if (!caps) return undefined;
  const field = (cap: keyof ObjectCaps) =>
    named
      ? `TenantPolicy quota.objects.${r}.${cap}`
      : `TenantPolicy quota.objects["${ANY_RESOURCE}"].${cap}, which holds for ${r}`;
  const bytes = sizeOf(c.desired);
  const before = c.superObj ? sizeOf(c.superObj) : 0;
  const grows = !c.superObj || bytes > before;
  if (caps.maxBytes !== undefined && bytes > caps.maxBytes && grows)
    return `it is ${bytes} bytes, over the cap of ${caps.maxBytes} bytes per object (${field('maxBytes')})`;
  if (caps.count === undefined && caps.totalBytes === undefined) return undefined;
  if (!grows) return undefined;
  const key = c.ctx.tenant.key;
  const self = `${c.tenantObj.metadata?.namespace ?? ''}/${c.tenantObj.metadata?.name ?? ''}`;
  const seen = new Set<string>([self]);
  const sized = caps.totalBytes !== undefined;
  let count = 0;
  let total = 0;
  for (const o of c.ctx.superCache.list(c.resource)) {
    const p = provenanceOf(o);
    if (p?.cluster !== key) continue;
    const id = `${p.namespace}/${p.name}`;
    if (seen.has(id)) continue;
    seen.add(id);
    count++;
    if (sized) total += sizeOf(o);
  }
  for (const p of c.pending?.pending(key, r) ?? []) {
    if (seen.has(p.key)) continue;
    seen.add(p.key);
    count++;
    total += p.bytes;
  }
  if (!c.superObj && caps.count !== undefined && count + 1 > caps.count)
    return `the tenant has ${caps.count} ${r} in the super cluster already, the cap (${field('count')})`;
  if (caps.totalBytes !== undefined && total + bytes > caps.totalBytes)
    return `its ${bytes} bytes would take the tenant's ${r} over the cap of ${caps.totalBytes} bytes in all (${field('totalBytes')})`;
  return undefined;
}

/**
 * superQuotaRefusal recognises a write the super namespace's ResourceQuota refused (403, `exceeded quota`) and returns
 * the part of the answer a tenant may read: the quota's name and its figures, not the super object's names.
 */
export function superQuotaRefusal(e: unknown): string | undefined {
  if (!(e instanceof ApiError) || e.code !== 403) return undefined;
  const i = e.message.indexOf('exceeded quota:');
  return i < 0 ? undefined : `the ResourceQuota of its super namespace refuses it (${e.message.slice(i)})`;
}

/**
 * capRefusal is what the syncer does with an object over a cap: nothing is written, the tenant gets a Warning event
 * QuotaExceeded on the object naming the cap, and objects with conditions a VCSynced=False condition.
 */
export function capRefusal(
  resource: Resource,
  tenantObj: KubeObject,
  reason: string,
): { effects: Effect[]; skip: { reason: string; message: string } } {
  const m = tenantObj.metadata ?? {};
  const where = m.namespace ? `${m.namespace}/${m.name}` : (m.name ?? '');
  const message = `${resource.kind} ${where} is not copied to the super cluster: ${reason}`;
  const effects: Effect[] = [
    {
      type: 'event',
      side: 'tenant',
      regarding: eventTarget(resource, m),
      eventType: 'Warning',
      reason: QUOTA_EXCEEDED,
      message,
    },
  ];
  if (CONDITION_KINDS.has(resource.kind) && m.uid)
    effects.push({
      type: 'tenantCondition',
      namespace: m.namespace ?? '',
      name: m.name ?? '',
      uid: m.uid,
      condition: { type: SYNCED_CONDITION, status: 'False', reason: QUOTA_EXCEEDED, message },
    });
  return { effects, skip: { reason: QUOTA_EXCEEDED, message } };
}
