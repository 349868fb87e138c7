/**
 * Pod admission: what holds a tenant's super Pod creates back, apart from the generic reconcile of every resource. A
 * create waits, parked, while the tenant has its scheduling window of Pods waiting for the super scheduler
 * (window.ts), or has created Pods at its rate (pacer.ts); parked keys are woken when room appears.
 */
import { objectKey } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import type { CacheReader, PluginContext, ResourcePlugin } from '../plugins/contract.ts';
import type { CreateRate } from '../api/tenantpolicy.ts';
import type { TenantSession } from '../sessions/tenants.ts';
import { syncerMetrics } from './metrics.ts';
import type { CreatePacer } from './pacer.ts';
import { superLocation, type Step } from './plan.ts';
import type { parseKey } from './routing.ts';
import type { SchedulingWindow } from './window.ts';

/** PodAdmission decides whether a tenant's Pod create goes ahead now or waits, parked. */
export class PodAdmission {
  constructor(
    /** window bounds the super Pods of one tenant waiting for the super scheduler (absent: no window) */
    readonly window: SchedulingWindow | undefined,
    private readonly pacer: CreatePacer,
    /** podCreateRate is the syncer's create rate, for tenants whose policy sets none */
    private readonly podCreateRate: CreateRate,
    private readonly superCache: CacheReader,
  ) {}

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
   * parkedBeforePlan parks a Pod key whose super copy is still to be created while its tenant's scheduling window is
   * full or its create bucket empty, before it is planned: the plan would only be thrown away (reconcile parks it
   * too), and at 10,000 Pods 1.2 keys per Pod were planned in full to be parked. A Pod the plan would refuse waits
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
    if (r.resource !== R.pods.resource || r.group !== R.pods.group) return false;
    const pod = s.cache.get(r, k.namespace || undefined, k.name);
    if (!pod || pod.metadata?.deletionTimestamp) return false;
    const loc = superLocation(p, ctx, k);
    if (!loc.namespace || this.superCache.get(r, loc.namespace, loc.name)) return false;
    const superPod = `${loc.namespace}/${loc.name}`;
    const reason = this.window?.parkIfFull(k.tenant, superPod, key)
      ? 'WaitingForSchedulingWindow'
      : this.pacer.parkIfEmpty(k.tenant, key, this.createRateOf(s))
        ? 'WaitingForCreateRate'
        : undefined;
    if (!reason) return false;
    syncerMetrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason });
    return true;
  }

  /**
   * reserve takes room in the tenant's scheduling window and tokens of its create rate for the super Pods a plan
   * creates (`created`, see createdPods), all or none. It returns the window reservations, to be released if the
   * writes fail, or undefined when the key is parked instead (counted as a skip; it is woken when room appears).
   */
  reserve(s: TenantSession, k: ReturnType<typeof parseKey>, key: string, created: string[]): string[] | undefined {
    const windowed = this.window ? created : [];
    for (let i = 0; i < windowed.length; i++) {
      if (this.window!.reserve(k.tenant, windowed[i]!, key)) continue;
      for (const id of windowed.slice(0, i)) this.window!.release(k.tenant, id);
      syncerMetrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason: 'WaitingForSchedulingWindow' });
      return undefined;
    }
    const rate = this.createRateOf(s);
    for (let i = 0; i < created.length; i++) {
      if (this.pacer.take(k.tenant, key, rate)) continue;
      for (let j = 0; j < i; j++) this.pacer.giveBack(k.tenant);
      for (const id of windowed) this.window!.release(k.tenant, id);
      syncerMetrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason: 'WaitingForCreateRate' });
      return undefined;
    }
    return windowed;
  }
}
