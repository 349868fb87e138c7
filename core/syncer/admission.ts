/**
 * Admission: what holds a tenant's super writes back, apart from the generic reconcile of every resource. A Pod create
 * waits, parked, while the tenant has its scheduling window of Pods waiting for the super scheduler (window.ts), or has
 * created Pods at its rate (pacer.ts); any write to the super cluster waits while the tenant has written its byte rate
 * (bytepacer.ts). Parked keys are woken when room appears.
 */
import { objectKey } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import type { CacheReader, PluginContext, ResourcePlugin } from '../plugins/contract.ts';
import type { Operation } from 'rfc6902';
import type { ByteRate, CreateRate } from '../api/tenantpolicy.ts';
import type { KubeObject } from '../kube/client.ts';
import type { TenantSession } from '../sessions/tenants.ts';
import { syncerMetrics } from './metrics.ts';
import type { BytePacer } from './bytepacer.ts';
import { sizeOf } from './caps.ts';
import type { CreatePacer } from './pacer.ts';
import { superLocation, type Step } from './plan.ts';
import type { parseKey } from './routing.ts';
import type { SchedulingWindow } from './window.ts';

/** BYTE_RATE_REASON is the skip reason and the event reason of a write held back by the tenant's byte rate. */
export const BYTE_RATE_REASON = 'WaitingForByteRate';

/**
 * superWriteBytes is what the super writes of a plan count against the tenant's byte rate: the size of each object it
 * creates, and for a patch the size of the object after it, as the super apiserver stores it and its watches send it
 * back (taken as the larger of the copy now, `sizeNow`, and the patch). Deletes count nothing.
 */
export function superWriteBytes(
  steps: readonly Step[],
  sizeNow: (namespace: string | undefined, name: string) => number,
): number {
  let n = 0;
  for (const st of steps) {
    if (st.op === 'createSuper') n += sizeOf(st.obj);
    else if (st.op === 'patchSuper') n += Math.max(sizeNow(st.namespace, st.name), opsBytes(st.ops));
  }
  return n;
}

/** opsBytes is the size of a JSON patch, as sent. */
function opsBytes(ops: readonly Operation[]): number {
  return Buffer.byteLength(JSON.stringify(ops));
}

/** PodAdmission decides whether a tenant's super writes (Pod creates in particular) go ahead now or wait, parked. */
export class PodAdmission {
  constructor(
    /** window bounds the super Pods of one tenant waiting for the super scheduler (absent: no window) */
    readonly window: SchedulingWindow | undefined,
    private readonly pacer: CreatePacer,
    /** podCreateRate is the syncer's create rate, for tenants whose policy sets none */
    private readonly podCreateRate: CreateRate,
    private readonly superCache: CacheReader,
    /** bytes paces the bytes written to the super cluster per tenant; `rate` is the syncer's, for tenants without one */
    private readonly bytes: { pacer: BytePacer; rate: ByteRate },
  ) {}

  /** byteRateOf is the pace of a tenant's super writes in bytes: its policy's, else the syncer's. */
  byteRateOf(s: TenantSession): ByteRate {
    return s.tenant.byteRate ?? this.bytes.rate;
  }

  /**
   * byteNoticeDue tells whether a tenant held back by its byte rate is to be told now (at most once a minute), with the
   * rate that holds it.
   */
  byteNoticeDue(s: TenantSession): ByteRate | undefined {
    return this.bytes.pacer.noticeDue(s.tenant.key) ? this.byteRateOf(s) : undefined;
  }

  /** createRateOf is the pace of a tenant's super Pod creates: its policy's, else the syncer's. */
  createRateOf(s: TenantSession): CreateRate {
    return s.tenant.podCreateRate ?? this.podCreateRate;
  }

  /** createdPods names the super Pods a plan creates: they count in the scheduling window and the create rate. */
  createdPods(p: ResourcePlugin, steps: readonly Step[]): string[] {
    const r = p.manifest.resource!;
    if (r.resource !== R.pods.resource || r.group !== R.pods.group) return [];
    return steps.flatMap((st) => (st.op === 'createSuper' ? [objectKey(st.obj)] : []));
  }

  /**
   * parkedBeforePlan parks a key whose super copy is still to be created while its tenant's byte bucket does not hold
   * the tenant object's size, or, for a Pod, while its scheduling window is full or its create bucket empty, before it
   * is planned: the plan would only be thrown away (reconcile parks it too), at 10,000 Pods 1.2 keys per Pod were
   * planned in full to be parked, and planning an object near 1 MiB copies it. An object the plan would refuse waits
   * with the others: its refusal is reported once it is planned.
   */
  parkedBeforePlan(
    s: TenantSession,
    p: ResourcePlugin,
    ctx: PluginContext,
    k: ReturnType<typeof parseKey>,
    key: string,
  ): boolean {
    const r = p.manifest.resource!;
    if (p.manifest.direction === 'up' || p.manifest.direction === 'mutator') return false;
    const obj = s.cache.get(r, k.namespace || undefined, k.name);
    if (!obj || obj.metadata?.deletionTimestamp) return false;
    const loc = superLocation(p, ctx, k);
    if (r.namespaced && !loc.namespace) return false;
    if (this.superCache.get(r, loc.namespace, loc.name)) return false;
    const pod = r.resource === R.pods.resource && r.group === R.pods.group;
    const superPod = `${loc.namespace}/${loc.name}`;
    const reason =
      pod && this.window?.parkIfFull(k.tenant, superPod, key)
        ? 'WaitingForSchedulingWindow'
        : pod && this.pacer.parkIfEmpty(k.tenant, key, this.createRateOf(s))
          ? 'WaitingForCreateRate'
          : this.bytes.pacer.parkIfShort(k.tenant, key, sizeOf(obj), this.byteRateOf(s))
            ? BYTE_RATE_REASON
            : undefined;
    if (!reason) return false;
    syncerMetrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason });
    return true;
  }

  /**
   * reserve takes the bytes of the plan's super writes (`steps`, see superWriteBytes) from the tenant's byte rate, and
   * room in its scheduling window and tokens of its create rate for the super Pods the plan creates (createdPods), all
   * or none. It returns the window reservations, to be released if the writes fail, or undefined
   * when the key is parked instead (counted as a skip; it is woken when room appears).
   */
  reserve(
    s: TenantSession,
    p: ResourcePlugin,
    k: ReturnType<typeof parseKey>,
    key: string,
    steps: readonly Step[],
  ): string[] | undefined {
    const r = p.manifest.resource!;
    const bytes = superWriteBytes(steps, (namespace, name) => {
      const now = this.superCache.get(r, namespace, name) as KubeObject | undefined;
      return now ? sizeOf(now) : 0;
    });
    if (!this.bytes.pacer.take(k.tenant, key, bytes, this.byteRateOf(s))) {
      syncerMetrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason: BYTE_RATE_REASON });
      return undefined;
    }
    const created = this.createdPods(p, steps);
    const windowed = this.window ? created : [];
    for (let i = 0; i < windowed.length; i++) {
      if (this.window!.reserve(k.tenant, windowed[i]!, key)) continue;
      for (const id of windowed.slice(0, i)) this.window!.release(k.tenant, id);
      this.bytes.pacer.giveBack(k.tenant, bytes);
      syncerMetrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason: 'WaitingForSchedulingWindow' });
      return undefined;
    }
    const rate = this.createRateOf(s);
    for (let i = 0; i < created.length; i++) {
      if (this.pacer.take(k.tenant, key, rate)) continue;
      for (let j = 0; j < i; j++) this.pacer.giveBack(k.tenant);
      for (const id of windowed) this.window!.release(k.tenant, id);
      this.bytes.pacer.giveBack(k.tenant, bytes);
      syncerMetrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason: 'WaitingForCreateRate' });
      return undefined;
    }
    if (bytes > 0) syncerMetrics.superBytes.inc({ tenant: k.tenant, plugin: k.plugin }, bytes);
    return windowed;
  }
}
