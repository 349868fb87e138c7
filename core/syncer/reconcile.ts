/**
 * The reconcile of one key: read both sides from the caches, apply the placement filter, let Pod admission park a
 * create, plan with the key's plugin, reserve, write only the difference, run the effects, and turn failures into a
 * retry, a requeue or a report. Adoption of objects the super apiserver made itself (adopt) is part of the writes.
 */
import {
  isAlreadyExists,
  isConflict,
  isTimeout,
  isWriteFenced,
  WriteFencedError,
  type KubeClient,
  type KubeObject,
} from '../kube/client.ts';
import { eventTarget } from '../kube/events.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import type { CacheReader, PluginContext, ResourcePlugin } from '../plugins/contract.ts';
import { pluginErrorOf, reportPluginError, type PluginError } from '../plugins/failures.ts';
import type { Result } from '../controller/runner.ts';
import type { TenantSession, TenantSessions } from '../sessions/tenants.ts';
import { BYTE_RATE_REASON, type PodAdmission } from './admission.ts';
import { usageOf } from './compute.ts';
import { capRefusal, sizeOf, superQuotaRefusal, type PendingCreates } from './caps.ts';
import type { Effects } from './effects.ts';
import { isMissingNamespace, isStalePatch, isTerminatingNamespace, runSteps, stepWrite, write } from './execute.ts';
import { countWrite, syncerMetrics } from './metrics.ts';
import type { SyncerOptions } from './options.ts';
import { signatureOf } from './patrol.ts';
import { placementVerdict, tenantOnCluster, upOwned, type PlacementKind, type TenantObjects } from './placement.ts';
import { plan, planKey, superLocation, type Placed, type Plan, type Step } from './plan.ts';
import { RecentTenantWrites } from './recent.ts';
import { makeKey, parseKey } from './routing.ts';
import type { SchedulingWindow } from './window.ts';

const log = childLogger({ controller: 'syncer' });

/** MISSING_NAMESPACE_MAX_MS caps the delay between retries of a key whose super namespace does not exist yet. */
const MISSING_NAMESPACE_MAX_MS = 10_000;

/** KeyReconcilerDeps is what the reconcile of a key needs of its Syncer. */
export interface KeyReconcilerDeps {
  options: SyncerOptions;
  sessions: TenantSessions;
  superCache: CacheReader;
  /** super objects being created, counted against the tenants' quotas */
  pending: PendingCreates;
  /** the super client whose writes are fenced by the leadership term */
  superWriter: KubeClient;
  admission: PodAdmission;
  /** effects are those of the term being served (a later term gets new ones) */
  effects(): Effects;
  /** gate is the pause gate while the syncer is paused */
  gate(): Promise<void> | undefined;
  /** mayWrite is the fence of every write (Syncer.mayWrite) */
  mayWrite(): true | string;
}

/** KeyReconciler reconciles the keys of one Syncer (see the file comment). */
export class KeyReconciler {
  private readonly o: SyncerOptions;
  private readonly sessions: TenantSessions;
  private readonly superCache: CacheReader;
  private readonly pending: PendingCreates;
  private readonly superWriter: KubeClient;
  private readonly admission: PodAdmission;
  private readonly window?: SchedulingWindow;
  private readonly missingNamespaceRetries = new Map<string, number>();
  /** the binds and tenant statuses written lately, which a pass from a tenant cache behind them must not repeat */
  private readonly recent = new RecentTenantWrites();
  /** the plugins' notes by key (Decision.remember), handed back as ctx.remembered on the key's next plan */
  private readonly notes = new Map<string, string>();

  constructor(private readonly d: KeyReconcilerDeps) {
    this.o = d.options;
    this.sessions = d.sessions;
    this.superCache = d.superCache;
    this.pending = d.pending;
    this.superWriter = d.superWriter;
    this.admission = d.admission;
    this.window = d.admission.window;
  }

  private get effects(): Effects {
    return this.d.effects();
  }

  private get gate(): Promise<void> | undefined {
    return this.d.gate();
  }

  private mayWrite(): true | string {
    return this.d.mayWrite();
  }

  /** clearBackoff forgets the retries of keys waiting for their super namespace: a new term starts afresh. */
  clearBackoff(): void {
    this.missingNamespaceRetries.clear();
  }

  /**
   * forgetNotes drops the plugins' notes of one tenant (no longer served), or all of them (a new leadership term:
   * another leader may have acted meanwhile, so what this process noted before is not taken as still true).
   */
  forgetNotes(tenant?: string): void {
    if (tenant === undefined) return this.notes.clear();
    for (const key of [...this.notes.keys()]) if (parseKey(key).tenant === tenant) this.notes.delete(key);
  }

  /**
   * placed applies the placement filter to a key (placement.ts): undefined when it is not synced here, else whether
   * it is a down-only copy of the tenant's DNS (dnsFollows), or the copy of the tenant's DNS namespace on a super
   * cluster the tenant has left, to be deleted (`remove`). A key whose tenant object is gone is always
   * reconciled: deleting a tenant object deletes its super copy wherever it was synced. One that is no longer placed
   * here is otherwise left as it is (neither updated nor deleted) until the tenant deletes it or the super cluster is
   * drained. What flows up is kept by one syncer (upOwned): the one named by the object's UP_OWNER_LABEL, which also
   * deletes it once its source is gone.
   */
  private placed(s: TenantSession, p: ResourcePlugin, k: ReturnType<typeof parseKey>): Placed | undefined {
    const pl = this.o.placement;
    const SYNC: Placed = { follow: false };
    if (!pl) return SYNC;
    const r = p.manifest.resource!;
    const obj = s.cache.get(r, k.namespace || undefined, k.name);
    if (!obj) return SYNC;
    // What flows up (vNodes, PVs, public classes) comes from every super cluster the tenant is on: a tenant object
    // another super cluster's syncer owns is left to it.
    if (p.manifest.sourceOfTruth === 'super') {
      const loc = superLocation(p, this.context(s), k);
      const own = upOwned({
        cluster: pl.cluster,
        tenantObj: obj,
        hasSource: !!this.superCache.get(r, loc.namespace, loc.name),
      });
      return own ? SYNC : undefined;
    }
    const core = !r.group;
    const kind: PlacementKind =
      core && r.resource === R.namespaces.resource
        ? 'namespace'
        : !k.namespace
          ? 'cluster'
          : core && r.resource === R.pods.resource
            ? 'pod'
            : 'namespaced';
    const nsName = kind === 'namespace' ? k.name : k.namespace;
    const v = placementVerdict({
      cluster: pl.cluster,
      tenant: s.tenant.key,
      kind,
      namespace: kind === 'cluster' ? undefined : s.cache.get(R.namespaces, undefined, nsName),
      pod: kind === 'pod' ? obj : undefined,
      signed: pl.signed,
      tenantOn: (cluster) => tenantOnCluster(s.tenant.key, cluster, pl.signed, tenantObjects(s)),
    });
    if (!v.sync) {
      log.debug({ tenant: k.tenant, plugin: k.plugin, key: k, reason: v.reason }, v.message);
      return v.remove ? { follow: true, remove: true } : undefined;
    }
    return { follow: !!v.follow };
  }

  private context(s: TenantSession, key?: string): PluginContext {
    const ctx: PluginContext = {
      tenant: s.view,
      names: s.names,
      tenantCache: s.cache,
      superCache: this.superCache,
      now: new Date(),
    };
    const note = key === undefined ? undefined : this.notes.get(key);
    if (note !== undefined) ctx.remembered = note;
    if (this.o.name !== undefined) ctx.superCluster = this.o.name;
    if (this.o.placement) ctx.sharedTenants = true;
    return ctx;
  }

  /**
   * served returns the session and plugin of a key when the key is to be reconciled now, and whether it is synced
   * down only (a followed copy of the tenant's DNS).
   */
  private served(k: ReturnType<typeof parseKey>): ({ s: TenantSession; p: ResourcePlugin } & Placed) | undefined {
    const s = this.sessions.get(k.tenant);
    const p = this.o.host.get(k.plugin) as ResourcePlugin | undefined;
    if (!s?.ready || !p?.manifest.resource || !this.o.host.enabledFor(s.view, k.plugin)) return undefined;
    const placed = this.placed(s, p, k);
    return placed && { s, p, ...placed };
  }

  /** plan computes what reconciling a key would write, from the caches only. */
  plan(key: string): Plan | undefined {
    const k = parseKey(key);
    const sp = this.served(k);
    if (!sp) return undefined;
    return planKey(this.o.host, sp.p, this.context(sp.s, key), k, undefined, this.o.placement?.cluster, sp);
  }

  /** signature is the versions of the two objects a key's plan starts from (patrol.ts). */
  signature(key: string): string {
    const k = parseKey(key);
    const s = this.sessions.get(k.tenant);
    const p = this.o.host.get(k.plugin) as ResourcePlugin | undefined;
    return s && p?.manifest.resource ? signatureOf(p, this.context(s, key), k) : '';
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    if (this.gate) await this.gate;
    // Stopping: the keys still queued are not worth a write (the next start relists everything), and with a tenant
    // whose requests time out, draining them would hold stop for a timeout per key.
    if (signal.aborted) return;
    const k = parseKey(key);
    const s = this.sessions.get(k.tenant);
    if (!s) return;
    if (!s.ready) return { requeueAfter: 500 };
    const started = performance.now();
    try {
      const sp = this.served(k);
      if (!sp) {
        this.notes.delete(key);
        return;
      }
      const { p } = sp;
      const ctx = this.context(s, key);
      if (this.admission.parkedBeforePlan(s, p, ctx, k, key)) return await this.heldNotice(s, p, ctx, k, key);
      // The tenant object as the cache has it: a bind or status this syncer wrote and the cache does not show yet is
      // not written again (recent.ts).
      const cachedTenant = ctx.tenantCache.get(p.manifest.resource!, k.namespace || undefined, k.name);
      const out = this.recent.filter(
        k.tenant,
        cachedTenant,
        planKey(this.o.host, p, ctx, k, this.pending, this.o.placement?.cluster, sp),
      );
      // A note is what the plugin saw, not what was written: kept whether or not the writes below succeed.
      if (out.remember === undefined) this.notes.delete(key);
      else this.notes.set(key, out.remember);
      if (out.skip) syncerMetrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason: out.skip.reason });
      const r = p.manifest.resource!.resource;
      const compute = s.view.quota?.compute;
      const capped = s.view.quota?.objects[r] !== undefined || !!compute;
      const own = `${k.namespace}/${k.name}`;
      // A write waits, parked, while the tenant has written its byte rate; a Pod create also while the tenant has its
      // window of Pods waiting for the super scheduler, or has created Pods at its rate.
      const windowed = this.admission.reserve(s, p, k, key, out.steps);
      if (!windowed) return await this.heldNotice(s, p, ctx, k, key);
      // Reserved before the first await: a parallel worker planning another create of this tenant counts this one.
      for (const step of out.steps)
        if (capped && step.op === 'createSuper')
          this.pending.add(k.tenant, r, own, sizeOf(step.obj), compute && usageOf(r, step.obj, compute));
      let superUid: string | undefined;
      try {
        superUid = await runSteps(out.steps, {
          write: (step) => this.write(s, p, step),
          adopt: (obj) => this.adopt(s, p, ctx, k, obj),
        });
        this.recent.recordSteps(k.tenant, cachedTenant, out.steps);
      } catch (e) {
        if (capped) this.pending.remove(k.tenant, r, own);
        for (const id of windowed) this.window!.release(k.tenant, id);
        // Refused by the super namespace's ResourceQuota: the tenant is told on the object, and it is retried with
        // backoff (a Pod of the namespace may end and free the quota).
        const refused = superQuotaRefusal(e);
        const tenantObj = refused && s.cache.get(p.manifest.resource!, k.namespace || undefined, k.name);
        if (refused && tenantObj)
          for (const effect of capRefusal(p.manifest.resource!, tenantObj, refused).effects)
            await this.effects.run(
              { session: s, key, plugin: k.plugin, resource: p.manifest.resource!, ctx, superUid: undefined },
              effect,
            );
        throw e;
      }
      let requeue = out.requeueAfterMs;
      // A create waiting for its super namespace backs off as a create refused for a missing namespace does.
      if (out.skip?.reason === 'WaitingForNamespace') requeue = this.namespaceBackoff(key);
      else this.missingNamespaceRetries.delete(key);
      for (const e of out.effects) {
        const after = await this.effects.run(
          { session: s, key, plugin: k.plugin, resource: p.manifest.resource!, ctx, superUid },
          e,
        );
        if (e.type === 'bind') this.recent.bound(k.tenant, e.uid, e.node);
        if (after !== undefined) requeue = Math.min(requeue ?? after, after);
      }
      if (out.afterEffects?.length) {
        await runSteps(out.afterEffects, {
          write: (step) => this.write(s, p, step),
          adopt: (obj) => this.adopt(s, p, ctx, k, obj),
        });
        this.recent.recordSteps(k.tenant, cachedTenant, out.afterEffects);
      }
      return requeue !== undefined ? { requeueAfter: requeue } : undefined;
    } catch (e) {
      // A write refused because the term ended (or its Lease is not surely held): nothing was sent. A term that goes on
      // (a renewal that succeeds late) takes the key again soon; an ended one has shut its queue, which drops it.
      if (isWriteFenced(e)) {
        log.debug({ key, err: e.message }, 'write fenced by the leadership term');
        return { requeueAfter: 1000 };
      }
      syncerMetrics.errors.inc({ tenant: k.tenant, plugin: k.plugin });
      const failed = pluginErrorOf(e);
      // A plugin that throws on this object: reported, the object skipped and retried with backoff (the plugin or
      // its configuration may be fixed); other objects and tenants go on.
      if (failed) await this.pluginFailed(s, k, failed);
      // A stale cache (409, precondition) resolves itself: retry soon.
      if (isConflict(e) || isAlreadyExists(e) || isStalePatch(e)) {
        log.debug({ key, err: String(e) }, 'stale cache; requeueing');
        return { requeueAfter: 100 };
      }
      // So does a super namespace that is not there yet (its own key is being synced), or is still being deleted
      // before it is made again: retry quietly, backing off.
      if (isMissingNamespace(e) || isTerminatingNamespace(e)) {
        log.debug({ key, err: String(e) }, 'namespace not there yet; requeueing');
        return { requeueAfter: this.namespaceBackoff(key) };
      }
      // A tenant apiserver that does not answer (a stalled admission webhook, say) costs one worker for the timeout;
      // the runner retries the key with backoff.
      if (isTimeout(e)) {
        syncerMetrics.timeouts.inc({ tenant: k.tenant, plugin: k.plugin });
        log.warn(
          { tenant: k.tenant, plugin: k.plugin, namespace: k.namespace, name: k.name, request: e.message },
          'request timed out; retrying with backoff',
        );
      }
      throw e;
    } finally {
      syncerMetrics.latency.observe({ tenant: k.tenant, plugin: k.plugin }, (performance.now() - started) / 1000);
    }
  }

  /**
   * pluginFailed reports a plugin that threw on a key: vc_plugin_errors_total, the manager log, and a Warning event on
   * the tenant object when there is one. The event names the plugin and the hook, not the error: what a plugin's
   * error says may be about the super cluster, and the platform team reads it in the log.
   */
  private async pluginFailed(s: TenantSession, k: ReturnType<typeof parseKey>, err: PluginError): Promise<void> {
    const key = makeKey(k.tenant, k.plugin, k.namespace, k.name);
    reportPluginError(err, k.tenant, { key });
    const p = this.o.host.get(k.plugin) as ResourcePlugin | undefined;
    const r = p?.manifest.resource;
    const tenantObj = r && s.cache.get(r, k.namespace || undefined, k.name);
    const tm = tenantObj?.metadata;
    if (!r || !tm?.name) return;
    const ctx = this.context(s);
    await this.effects.run(
      { session: s, key, plugin: k.plugin, resource: r, ctx, superUid: undefined },
      {
        type: 'event',
        side: 'tenant',
        regarding: eventTarget(r, tm),
        eventType: 'Warning',
        reason: 'PluginFailed',
        message:
          `plugin ${err.plugin} failed in ${err.hook} on this object; it is not synced and is retried with backoff ` +
          '(the platform team has the error in the manager log)',
      },
    );
  }

  /**
   * heldNotice tells a tenant held back by its byte rate, at most once a minute, with a Warning event WaitingForByteRate
   * on the object that waits: the rate, where it comes from, and that the object is copied as the rate refills.
   */
  private async heldNotice(
    s: TenantSession,
    p: ResourcePlugin,
    ctx: PluginContext,
    k: ReturnType<typeof parseKey>,
    key: string,
  ): Promise<void> {
    const rate = this.admission.byteNoticeDue(s);
    if (!rate) return;
    const r = p.manifest.resource!;
    const tm = s.cache.get(r, k.namespace || undefined, k.name)?.metadata;
    if (!tm?.name) return;
    const where = tm.namespace ? `${tm.namespace}/${tm.name}` : tm.name;
    const mib = (n: number) => `${Number((n / (1024 * 1024)).toFixed(2))} MiB`;
    await this.effects.run(
      { session: s, key, plugin: k.plugin, resource: r, ctx, superUid: undefined },
      {
        type: 'event',
        side: 'tenant',
        regarding: eventTarget(r, tm),
        eventType: 'Warning',
        reason: BYTE_RATE_REASON,
        message:
          `${r.kind} ${where} waits in the syncer: this tenant's writes to the super cluster reached its byte rate ` +
          `(${mib(rate.perSecond)} per second after ${mib(rate.burst)} at once, TenantPolicy quota.byteRate); ` +
          'it and the objects after it are copied as the rate refills',
      },
    );
  }

  /** namespaceBackoff is the next delay of a key waiting for its super namespace: 100 ms doubling, capped. */
  private namespaceBackoff(key: string): number {
    const n = this.missingNamespaceRetries.get(key) ?? 0;
    this.missingNamespaceRetries.set(key, n + 1);
    if (this.missingNamespaceRetries.size > 100_000) this.missingNamespaceRetries.clear();
    return Math.min(100 * 2 ** n, MISSING_NAMESPACE_MAX_MS);
  }

  private async write(s: TenantSession, p: ResourcePlugin, step: Step): Promise<KubeObject | undefined> {
    const r = p.manifest.resource!;
    const fenced = this.mayWrite();
    if (fenced !== true) throw new WriteFencedError(step.op, `${s.tenant.key} ${r.resource}`, fenced);
    countWrite({ tenant: s.tenant.key, plugin: p.manifest.name, op: step.op, ...stepWrite(r, step) });
    return write({ superClient: this.superWriter, tenantClient: s.client }, r, step);
  }

  /**
   * adopt: the super apiserver made this object itself (the `default` ServiceAccount of a new namespace): it is
   * outside the managed-only cache, so read it and plan again with both sides known.
   */
  private async adopt(
    s: TenantSession,
    p: ResourcePlugin,
    ctx: PluginContext,
    k: ReturnType<typeof parseKey>,
    obj: KubeObject,
  ): Promise<string | undefined> {
    const r = p.manifest.resource!;
    const m = obj.metadata!;
    const actual = await this.o.superClient.get(r, m.namespace, m.name!);
    const tenantObj = s.cache.get(r, k.namespace || undefined, k.name);
    if (!tenantObj) return undefined;
    const again = plan({ host: this.o.host, plugin: p, ctx, key: k, tenantObj, superObj: actual });
    if (again.skip) {
      // The name is taken by an object the syncer may not adopt (a hand-made namespace, say): tell the tenant.
      const target = {
        session: s,
        key: makeKey(k.tenant, k.plugin, k.namespace, k.name),
        plugin: k.plugin,
        resource: r,
        ctx,
        superUid: undefined,
      };
      await this.effects.run(target, {
        type: 'event',
        side: 'tenant',
        regarding: eventTarget(r, tenantObj.metadata ?? {}),
        eventType: 'Warning',
        reason: again.skip.reason,
        message: again.skip.message,
      });
      throw new Error(`${again.skip.reason}: ${again.skip.message}`);
    }
    let uid = actual.metadata?.uid;
    for (const step of again.steps) uid = (await this.write(s, p, step))?.metadata?.uid ?? uid;
    return uid;
  }
}

/** tenantObjects reads the namespaces and Pods of a tenant from its cache (placement.ts tenantOnCluster). */
export function tenantObjects(s: TenantSession): TenantObjects {
  return { namespaces: () => s.cache.list(R.namespaces), pods: () => s.cache.list(R.pods) };
}
