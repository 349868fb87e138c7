/**
 * The namespace scheduler's writes to tenant control planes: signed PLACEMENTS on Namespaces and SUPER_CLUSTER on Pods,
 * evictions, events, and the Placed and PodScheduled conditions, each reported once per message.
 */
import { ApiError, isNotFound } from '../kube/client.ts';
import { recordEvent } from '../kube/events.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import type { TenantSession } from '../sessions/tenants.ts';
import { PLACEMENTS, SUPER_CLUSTER } from './annotations.ts';
import { FIELD_MANAGER, PLACED_CONDITION, type SchedulerStats } from './options.ts';
import type { Obj } from './records.ts';
import { sign, SIGNATURE } from './signature.ts';

const log = childLogger({ controller: 'scheduler' });

/** SchedulerWriter makes the scheduler's writes to tenant objects and counts them in the scheduler's stats. */
export class SchedulerWriter {
  /** the last warning reported per object uid, so a reconcile that finds the same answer stays quiet */
  private readonly reported = new Map<string, string>();

  constructor(
    private readonly signingKey: Uint8Array,
    private readonly stats: SchedulerStats,
  ) {}

  async writeNamespace(s: TenantSession, ns: Obj, value: string): Promise<string | undefined> {
    const m = ns.metadata!;
    const signature = sign(this.signingKey, {
      tenant: s.tenant.key,
      kind: 'Namespace',
      namespace: m.name!,
      name: m.name!,
      uid: m.uid!,
      value,
    });
    this.stats.writes++;
    this.stats.placementWrites++;
    const out = await s.client.patch(
      R.namespaces,
      undefined,
      m.name!,
      { metadata: { uid: m.uid, annotations: { [PLACEMENTS]: value, [SIGNATURE]: signature } } },
      'merge',
      { fieldManager: FIELD_MANAGER },
    );
    return out.metadata?.resourceVersion;
  }

  async clearNamespace(s: TenantSession, ns: Obj): Promise<void> {
    const m = ns.metadata!;
    this.stats.writes++;
    this.stats.placementWrites++;
    await s.client.patch(
      R.namespaces,
      undefined,
      m.name!,
      { metadata: { uid: m.uid, annotations: { [PLACEMENTS]: null, [SIGNATURE]: null } } },
      'merge',
      { fieldManager: FIELD_MANAGER },
    );
  }

  // writePod sets (or, with undefined, removes) a Pod's signed SUPER_CLUSTER; the uid guards against a recreated Pod.
  async writePod(s: TenantSession, pod: Obj, superCluster: string | undefined): Promise<string | undefined> {
    const m = pod.metadata!;
    const annotations =
      superCluster === undefined
        ? { [SUPER_CLUSTER]: null, [SIGNATURE]: null }
        : {
            [SUPER_CLUSTER]: superCluster,
            [SIGNATURE]: sign(this.signingKey, {
              tenant: s.tenant.key,
              kind: 'Pod',
              namespace: m.namespace!,
              name: m.name!,
              uid: m.uid!,
              value: superCluster,
            }),
          };
    this.stats.writes++;
    this.stats.placementWrites++;
    const out = await s.client.patch(R.pods, m.namespace, m.name!, { metadata: { uid: m.uid, annotations } }, 'merge', {
      fieldManager: FIELD_MANAGER,
    });
    return out.metadata?.resourceVersion;
  }

  // evict asks the tenant apiserver to evict a Pod (as kubectl drain does: PodDisruptionBudgets apply), so its
  // controller recreates it on the namespace's new placements.
  // `why` ends the Event's message: where the Pod was evicted from and why (default: a draining super cluster).
  async evict(s: TenantSession, pod: Obj, from: string, why?: string): Promise<void> {
    const m = pod.metadata!;
    if (m.deletionTimestamp) return;
    try {
      await s.client.request('POST', `/api/v1/namespaces/${m.namespace}/pods/${m.name}/eviction`, {
        body: {
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { name: m.name, namespace: m.namespace },
          deleteOptions: { preconditions: { uid: m.uid } },
        },
      });
      this.stats.evictions++;
      this.stats.writes++;
      await this.event(
        s,
        pod,
        'Normal',
        'Evicted',
        `pod ${m.namespace}/${m.name}: evicted from ${why ?? `draining super cluster ${from}`}`,
      );
    } catch (e) {
      if (isNotFound(e)) return;
      if (e instanceof ApiError && e.code === 429)
        throw new Error(`pod ${m.namespace}/${m.name}: eviction refused for now (disruption budget): ${e.message}`);
      throw e;
    }
  }

  async warn(s: TenantSession, obj: Obj, reason: string, message: string): Promise<void> {
    const uid = obj.metadata?.uid ?? '';
    if (this.reported.get(`${uid}/${reason}`) === message) return;
    this.reported.set(`${uid}/${reason}`, message);
    log.info({ tenant: s.tenant.key, object: obj.metadata?.name, reason }, message);
    await this.event(s, obj, 'Warning', reason, message);
  }

  async event(s: TenantSession, obj: Obj, type: 'Normal' | 'Warning', reason: string, message: string) {
    const m = obj.metadata ?? {};
    const isNs = obj.kind === 'Namespace' || m.namespace === undefined;
    const err = await recordEvent(
      s.client,
      {
        apiVersion: 'v1',
        kind: isNs ? 'Namespace' : 'Pod',
        name: m.name ?? '',
        namespace: isNs ? m.name : m.namespace,
        uid: m.uid,
      },
      type,
      reason,
      message,
      FIELD_MANAGER,
    );
    if (err) log.warn({ tenant: s.tenant.key, err: err.message, reason }, 'could not record event');
  }

  // setCondition keeps the Namespace's PLACED_CONDITION in its status, written only when it changes.
  async setCondition(
    s: TenantSession,
    ns: Obj,
    status: 'True' | 'False',
    reason: string,
    message: string,
  ): Promise<void> {
    const conditions = ns.status?.conditions ?? [];
    const now = conditions.find((c) => c.type === PLACED_CONDITION);
    if (now?.status === status && now.reason === reason && now.message === message) return;
    const said = `condition/${ns.metadata!.uid}`;
    if (this.reported.get(said) === `${status}/${reason}/${message}`) return;
    this.reported.set(said, `${status}/${reason}/${message}`);
    const next = [
      ...conditions.filter((c) => c.type !== PLACED_CONDITION),
      { type: PLACED_CONDITION, status, reason, message, lastTransitionTime: new Date().toISOString() },
    ];
    this.stats.writes++;
    try {
      await s.client.patch(
        R.namespaces,
        undefined,
        ns.metadata!.name!,
        { metadata: { uid: ns.metadata!.uid }, status: { conditions: next } },
        'merge',
        { fieldManager: FIELD_MANAGER, subresource: 'status' },
      );
    } catch (err) {
      if (!isNotFound(err)) log.warn({ tenant: s.tenant.key, err }, 'could not write the namespace condition');
    }
  }

  // podUnschedulable sets PodScheduled=False on a pending tenant Pod, as kube-scheduler does, once per message.
  async podUnschedulable(s: TenantSession, pod: Obj, message: string): Promise<void> {
    const now = (pod.status?.conditions ?? []).find((c) => c.type === 'PodScheduled');
    if (now?.status === 'False' && now.message === message) return;
    const said = `condition/${pod.metadata!.uid}`;
    if (this.reported.get(said) === message) return;
    this.reported.set(said, message);
    this.stats.writes++;
    try {
      await s.client.patch(
        R.pods,
        pod.metadata!.namespace,
        pod.metadata!.name!,
        {
          status: {
            conditions: [
              {
                type: 'PodScheduled',
                status: 'False',
                reason: 'Unschedulable',
                message,
                lastTransitionTime: new Date().toISOString(),
              },
            ],
          },
        },
        'strategic',
        { fieldManager: FIELD_MANAGER, subresource: 'status' },
      );
    } catch (err) {
      if (!isNotFound(err)) log.warn({ tenant: s.tenant.key, err }, 'could not write the pod condition');
    }
  }
}
