import { isDeepStrictEqual } from 'node:util';
import { isAlreadyExists, isConflict, isNotFound, KubeClient, type KubeObject, type Resource } from '../kube/client.ts';
import { apiVersionOf, recordEvent } from '../kube/events.ts';
import { EventLane } from './eventlane.ts';
import { childLogger } from '../log.ts';
import { ANN, LABEL, MANAGER, namespaceOwnedBy } from '../names/names.ts';
import { QUOTA_OBJECT_NAME } from '../../plugins/sdk/src/wellknown.ts';
import { R } from '../kube/resources.ts';
import type { BindEffect, CacheReader, Effect, PluginContext } from '../plugins/contract.ts';
import { callPlugin } from '../plugins/failures.ts';
import type { PluginHost } from '../plugins/host.ts';
import { RecentApplies } from './applied.ts';
import { diffStatus, forCreate } from './diff.ts';
import { resourceName } from './execute.ts';
import { countSend, countWrite, syncerMetrics, type Write, type WriteOp } from './metrics.ts';
import { markManaged } from './plan.ts';
import { covers, specHash } from './semantic.ts';
import type { TenantSession } from '../sessions/tenants.ts';
import type { TokenMinter } from './tokens.ts';

const log = childLogger({ controller: 'syncer' });

type EventEffect = Extract<Effect, { type: 'event' }>;
type ConditionEffect = Extract<Effect, { type: 'tenantCondition' }>;
type DeleteTenantEffect = Extract<Effect, { type: 'deleteTenant' }>;
type NetworkPolicyEffect = Extract<Effect, { type: 'superNetworkPolicy' }>;
type QuotaEffect = Extract<Effect, { type: 'superQuota' }>;

/**
 * podServiceAccount is the ServiceAccount super Pods run under in one super namespace: no token automounting, no
 * secrets, bound to nothing. It carries the managed-by label (so the super cache holds it) but no provenance: no
 * tenant object is its source, so nothing routes it to a tenant or deletes it as an orphan.
 */
export function podServiceAccount(
  namespace: string,
  name: string,
  cluster: string,
): KubeObject & { automountServiceAccountToken: boolean } {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name, namespace, labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: cluster } },
    automountServiceAccountToken: false,
  };
}

/** EffectsOptions are what carrying out effects needs beyond the tenant session. */
export interface EffectsOptions {
  superClient: KubeClient;
  superCache: CacheReader;
  host: PluginHost;
  tokens: TokenMinter;
  /** the low-priority lane events are written on; default one of its own */
  events?: EventLane;
}

/** EffectTarget is the reconcile an effect belongs to. */
export interface EffectTarget {
  session: TenantSession;
  /** the queue key, for event dedupe and logs */
  key: string;
  /** the plugin whose plan asked for the effect, and its resource */
  plugin: string;
  resource: Resource;
  ctx: PluginContext;
  /** uid of the super object the plan's steps wrote, if any */
  superUid: string | undefined;
}

/** write names one write of an effect for vc_syncer_writes_total. */
function write(
  t: Pick<EffectTarget, 'session' | 'plugin'>,
  op: WriteOp,
  ...w: [Write['side'], Write['verb'], string]
): Write {
  return { tenant: t.session.tenant.key, plugin: t.plugin, op, side: w[0], verb: w[1], resource: w[2] };
}

/**
 * Effects carries out the declarative effects plugins ask for, each write counted in vc_syncer_writes_total: events
 * (best effort, deduplicated), binds (after the objects other plugins say must exist first), deletion of a tenant
 * Pod no kubelet finalizes, and service account tokens.
 */
export class Effects {
  private readonly recentEvents = new Set<string>();
  private readonly recentConditions = new Set<string>();
  /** the super ServiceAccounts applied lately, by super namespace and name */
  private readonly serviceAccounts = new RecentApplies();

  private readonly lane: EventLane;

  constructor(private readonly o: EffectsOptions) {
    this.lane = o.events ?? new EventLane({ onDrop: (tenant) => syncerMetrics.eventsDropped.inc({ tenant }) });
  }

  /**
   * count counts one write of an effect in vc_syncer_writes_total just before it is sent, through the client of its
   * side, or throws WriteFencedError without counting when that client's fence refuses it.
   */
  private count(t: Pick<EffectTarget, 'session'>, w: Write): void {
    // Every tenant write of an effect goes through the session's client, every super write through superClient.
    countSend(w.side === 'super' ? this.o.superClient : t.session.client, w);
  }

  /** events is the lane the events of this syncer are written on. */
  get events(): EventLane {
    return this.lane;
  }

  /** run carries out one effect and returns a requeue delay in milliseconds, if it needs one. */
  async run(t: EffectTarget, e: Effect): Promise<number | undefined> {
    const s = t.session;
    switch (e.type) {
      case 'event':
        this.event(t, e);
        return;
      case 'bind':
        await this.bind(t, e);
        return;
      case 'deleteTenant':
        if (e.status) await this.tenantStatus(t, e);
        this.count(t, write(t, 'deleteTenant', 'tenant', 'delete', resourceName(t.resource)));
        await s.client.delete(t.resource, e.namespace, e.name, {
          uid: e.uid,
          gracePeriodSeconds: e.gracePeriodSeconds,
        });
        return;
      case 'serviceAccountToken': {
        const superNs = s.names.superNamespace(e.namespace);
        const uid = t.superUid ?? this.o.superCache.get(t.resource, superNs, e.pod)?.metadata?.uid;
        // No super Pod yet (its creation is waiting, e.g. for DNS): its creation event brings us back.
        if (!uid) return;
        const r = await this.o.tokens.ensure(
          s.tenant,
          s.client,
          { ...e, superNamespace: superNs, superPodUid: uid },
          (w) => this.count(t, write(t, 'token', ...w)),
        );
        return r.refreshInMs;
      }
      case 'superServiceAccount': {
        const sns = s.names.superNamespace(e.namespace);
        // Only in a super namespace the syncer wrote for this tenant's namespace (as every create: plan.ts).
        if (!namespaceOwnedBy(this.o.superCache.get(R.namespaces, undefined, sns), s.tenant, e.namespace)) return;
        // Every Pod of a new namespace asks for it until the cache shows it: one apply serves them all.
        await this.serviceAccounts.run(`${sns}/${e.name}`, async () => {
          this.count(t, write(t, 'superServiceAccount', 'super', 'patch', resourceName(R.serviceaccounts)));
          await this.o.superClient.apply(R.serviceaccounts, podServiceAccount(sns, e.name, s.tenant.key), MANAGER, {
            force: true,
          });
        });
        return;
      }
      case 'superNetworkPolicy':
        await this.networkPolicy(t, e);
        return;
      case 'tenantCondition':
        await this.condition(t, e);
        return;
      case 'superQuota':
        await this.quota(t, e);
        return;
    }
  }

  /**
   * quota keeps the tenant's ResourceQuota and LimitRange in a super namespace the syncer wrote for this tenant's
   * namespace (as every create: plan.ts), by server-side apply, writing only when the cached copy differs; a null
   * object deletes the one the syncer wrote (uid precondition). They carry the managed-by and tenant labels, so the
   * super cache holds them, and no provenance: no tenant object is their source.
   */
  private async quota(t: EffectTarget, e: QuotaEffect): Promise<void> {
    const s = t.session;
    const sns = s.names.superNamespace(e.namespace);
    if (!namespaceOwnedBy(this.o.superCache.get(R.namespaces, undefined, sns), s.tenant, e.namespace)) return;
    const labels = { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: s.tenant.key };
    const pairs: Array<[Resource, KubeObject | null]> = [
      [R.resourcequotas, e.resourceQuota],
      [R.limitranges, e.limitRange],
    ];
    for (const [r, want] of pairs) {
      const name = want?.metadata?.name ?? QUOTA_OBJECT_NAME;
      const cached = this.o.superCache.get(r, sns, name);
      if (!want) {
        const uid = cached?.metadata?.uid;
        if (!uid || cached.metadata?.labels?.[LABEL.cluster] !== s.tenant.key) continue;
        this.count(t, write(t, 'superQuota', 'super', 'delete', resourceName(r)));
        try {
          await this.o.superClient.delete(r, sns, name, { uid });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
        continue;
      }
      const spec = (o: KubeObject | undefined) => (o as { spec?: unknown } | undefined)?.spec;
      // The apiserver rewrites quantities ("1000" comes back as "1k") and defaults fields (a LimitRange's
      // defaultRequest): the stored spec is compared by what it covers, and the hash of the last applied spec tells a
      // field dropped since. Otherwise every reconcile of the namespace would write both again.
      const hash = specHash(spec(want));
      if (
        cached &&
        isDeepStrictEqual(cached.metadata?.labels, labels) &&
        cached.metadata?.annotations?.[ANN.specHash] === hash &&
        covers(spec(cached), spec(want))
      )
        continue;
      const desired: KubeObject = {
        ...want,
        metadata: { name, namespace: sns, labels, annotations: { [ANN.specHash]: hash } },
      };
      this.count(t, write(t, 'superQuota', 'super', 'patch', resourceName(r)));
      await this.o.superClient.apply(r, desired, MANAGER, { force: true });
    }
  }

  /**
   * networkPolicy keeps a NetworkPolicy no tenant object is the source of in a super namespace the syncer wrote for
   * this tenant's namespace (as every create: plan.ts), by server-side apply. It carries the managed-by and tenant
   * labels, so the super cache holds it, and no provenance, so nothing routes it to a tenant NetworkPolicy or deletes
   * it as an orphan. When the cached copy already has the desired spec, nothing is written.
   */
  private async networkPolicy(t: EffectTarget, e: NetworkPolicyEffect): Promise<void> {
    const s = t.session;
    const sns = s.names.superNamespace(e.namespace);
    if (!namespaceOwnedBy(this.o.superCache.get(R.namespaces, undefined, sns), s.tenant, e.namespace)) return;
    const name = e.policy.metadata?.name ?? '';
    const labels = { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: s.tenant.key };
    const cached = this.o.superCache.get(R.networkpolicies, sns, name);
    const { metadata: _m, apiVersion: _a, kind: _k, ...body } = e.policy;
    if (
      cached &&
      isDeepStrictEqual(cached.metadata?.labels, labels) &&
      isDeepStrictEqual((cached as { spec?: unknown }).spec, (body as { spec?: unknown }).spec)
    )
      return;
    const desired: KubeObject = {
      ...body,
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name, namespace: sns, labels },
    };
    this.count(t, write(t, 'superNetworkPolicy', 'super', 'patch', resourceName(R.networkpolicies)));
    await this.o.superClient.apply(R.networkpolicies, desired, MANAGER, { force: true });
  }

  /**
   * tenantStatus applies a deleteTenant effect's status to the tenant object before it is deleted (server-side apply,
   * the uid a precondition); an object already gone is not an error.
   */
  private async tenantStatus(t: EffectTarget, e: DeleteTenantEffect): Promise<void> {
    const r = t.resource;
    const obj = {
      apiVersion: apiVersionOf(r),
      kind: r.kind,
      metadata: { namespace: e.namespace, name: e.name, uid: e.uid },
      status: e.status,
    };
    // Counted before it is sent, as every other write: a write the apiserver refused still reached it.
    this.count(t, write(t, 'patchTenantStatus', 'tenant', 'patch', resourceName(r, 'status')));
    try {
      await t.session.client.apply(r, obj, MANAGER, { force: true, subresource: 'status' });
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
  }

  /**
   * condition sets a condition on a tenant object's status by server-side apply, once per object, type, reason and
   * message (the condition list merges by type, so other conditions stay).
   */
  private async condition(t: EffectTarget, e: ConditionEffect): Promise<void> {
    const id = `${t.key}|${e.uid}|${e.condition.type}|${e.condition.reason}|${e.condition.message}`;
    if (this.recentConditions.has(id)) return;
    if (this.recentConditions.size > 10_000) this.recentConditions.clear();
    const r = t.resource;
    const obj = {
      apiVersion: apiVersionOf(r),
      kind: r.kind,
      metadata: { namespace: e.namespace, name: e.name },
      status: { conditions: [{ ...e.condition, lastTransitionTime: new Date().toISOString() }] },
    };
    this.count(t, write(t, 'patchTenantStatus', 'tenant', 'patch', resourceName(r, 'status')));
    try {
      await t.session.client.apply(r, obj, MANAGER, { force: true, subresource: 'status' });
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    this.recentConditions.add(id);
  }

  /**
   * event records an event once per key, object, reason and message, on the low-priority lane: the reconcile does not
   * wait for it. Events are best effort (core/kube/events.ts): a failure is logged at debug level and forgotten, so
   * the same event is tried again next time, and it never fails the reconcile.
   */
  private event(t: EffectTarget, e: EventEffect): void {
    const id = `${t.key}|${e.regarding.uid}|${e.reason}|${e.message}`;
    if (this.recentEvents.has(id)) return;
    if (this.recentEvents.size > 10_000) this.recentEvents.clear();
    this.recentEvents.add(id);
    const client = e.side === 'tenant' ? t.session.client : this.o.superClient;
    const tenant = t.session.tenant.key;
    const queued = this.lane.push(tenant, async () => {
      // A write the fence refuses is not sent nor counted; the event may be recorded again in a later term.
      if (client.mayWrite() !== true) {
        this.recentEvents.delete(id);
        return;
      }
      countWrite(write(t, 'event', e.side, 'create', resourceName(R.events)));
      const err = await recordEvent(client, e.regarding, e.eventType, e.reason, e.message, MANAGER);
      if (err) {
        this.recentEvents.delete(id);
        log.debug({ key: t.key, reason: e.reason, err: String(err) }, 'event not recorded');
      }
    });
    if (!queued) this.recentEvents.delete(id);
  }

  /**
   * bind binds a tenant object (a Pod: the requesting plugin's resource) to a node through its binding subresource.
   * First every enabled plugin implementing beforeBind may name an object that
   * must exist in the tenant (the nodes plugin's vNode); the core creates it, with its status.
   */
  private async bind(t: EffectTarget, e: BindEffect): Promise<void> {
    const s = t.session;
    for (const p of this.o.host.resourcePlugins()) {
      if (!p.beforeBind || !this.o.host.enabledFor(s.view, p.manifest.name)) continue;
      const beforeBind = p.beforeBind;
      const needed = callPlugin(p.manifest.name, 'beforeBind', () => beforeBind(e, t.ctx));
      if (!needed) continue;
      const r = p.manifest.resource!;
      const desired = markManaged(needed);
      const by = { ...t, plugin: p.manifest.name };
      try {
        this.count(by, write(by, 'createTenant', 'tenant', 'create', resourceName(r)));
        const created = await s.client.create(r, forCreate(desired), { fieldManager: MANAGER });
        const st = diffStatus(created, desired);
        if (st.length) {
          this.count(by, write(by, 'patchTenantStatus', 'tenant', 'patch', resourceName(r, 'status')));
          await s.client.patch(r, created.metadata?.namespace, created.metadata?.name ?? '', st, 'json', {
            subresource: 'status',
            fieldManager: MANAGER,
          });
        }
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
    }
    this.count(t, write(t, 'bind', 'tenant', 'create', resourceName(t.resource, 'binding')));
    try {
      await s.client.request('POST', KubeClient.path(t.resource, e.namespace, e.name, 'binding'), {
        body: {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name: e.name, namespace: e.namespace, uid: e.uid },
          target: { apiVersion: 'v1', kind: 'Node', name: e.node },
        },
      });
    } catch (err) {
      // Already bound (a previous attempt succeeded before the cache caught up) is success.
      if (!isConflict(err) && !isNotFound(err)) throw err;
    }
  }
}
