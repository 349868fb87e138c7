// Over 500 lines, on purpose: the planner is one pure decision over the tenant and super objects, its directions
// (only tenant, both, only super, up) side by side with the helpers they share, tested as one table in plan.test.ts.

import type { Operation } from 'rfc6902';
import type { KubeObject } from '../kube/client.ts';
import { eventTarget } from '../kube/events.ts';
import { R } from '../kube/resources.ts';
import { LABEL, MANAGER, namespaceOwnedBy, ownedBy, pickUp, provenanceOf, stampOwnership } from '../names/names.ts';
import type {
  Decision,
  Effect,
  MutatorPlugin,
  PluginContext,
  ResourcePlugin,
  TenantView,
} from '../plugins/contract.ts';
import { callPlugin } from '../plugins/failures.ts';
import { capRefusal, checkCaps, type PendingReader } from './caps.ts';
import { checkCompute, COMPUTE_RETRY_MS } from './compute.ts';
import { diffSpec, diffStatus, forCreate, sameStatus } from './diff.ts';
import { UP_OWNER_LABEL } from './placement.ts';

/**
 * The planner: what reconciling one key would write, computed from the two objects and the caches alone. It is a
 * pure function (no I/O, no clock but ctx.now), so every direction is tested from tables in plan.test.ts. A plugin
 * function that throws ends the plan with a PluginError naming the plugin and hook (the caller reports it). The core
 * chooses the direction: only tenant (create), both (ownership check, patch, status up), only super (delete), or
 * up (the super object is the truth and the tenant object follows it).
 */

/** PodSubresource is a Pod subresource a super patch goes through (splitPodPatch). */
export type PodSubresource = 'resize' | 'ephemeralcontainers';

/** Step is one write a plan makes. */
export type Step =
  | { op: 'createSuper'; obj: KubeObject }
  | { op: 'patchSuper'; namespace?: string; name: string; ops: Operation[]; subresource?: PodSubresource }
  | { op: 'deleteSuper'; namespace?: string; name: string; uid: string }
  | { op: 'createTenant'; obj: KubeObject }
  | { op: 'patchTenant'; namespace?: string; name: string; ops: Operation[] }
  | { op: 'patchTenantStatus'; namespace?: string; name: string; ops: Operation[] }
  | { op: 'deleteTenant'; namespace?: string; name: string; uid: string };

/** Plan is what reconciling one key would do: writes, effects and when to look again. */
export interface Plan {
  steps: Step[];
  effects: Effect[];
  /** steps that run after the effects, in the same pass: the status a tenant Pod gets right after its bind */
  afterEffects?: Step[];
  requeueAfterMs?: number;
  skip?: { reason: string; message: string };
  /** the plugin's note for this key's next plan (Decision.remember: an up plugin's toTenant, a create's toSuper) */
  remember?: string;
}

/** PlanHost is the part of the plugin host the planner consults: the mutator chain and per-tenant enablement. */
export interface PlanHost {
  mutatorsOf(plugin: string): readonly MutatorPlugin[];
  enabledFor(tenant: Pick<TenantView, 'plugins'>, plugin: string): boolean;
}

/** ObjectName is the tenant namespace (empty for cluster-scoped objects) and name a key stands for. */
export interface ObjectName {
  namespace: string;
  name: string;
}

/** PlanInput is everything one plan depends on. */
export interface PlanInput {
  host: PlanHost;
  plugin: ResourcePlugin;
  /** the tenant view, its naming, both caches and the time */
  ctx: PluginContext;
  key: ObjectName;
  tenantObj: KubeObject | undefined;
  superObj: KubeObject | undefined;
  /** creates sent and not in the super cache yet, which count against the tenant's caps (caps.ts) */
  pending?: PendingReader;
  /** with the placement filter on, the super cluster recorded on what flows up (UP_OWNER_LABEL) */
  upOwner?: string;
}

const nothing = (): Plan => ({ steps: [], effects: [] });

const TENANT_EFFECTS: ReadonlySet<Effect['type']> = new Set(['bind', 'deleteTenant', 'tenantCondition']);

/**
 * downOnly keeps of a plan what it writes to the super cluster: its super steps and the effects on the super side
 * (a Pod's token Secret, ServiceAccount, NetworkPolicy, quota, super events). It is the plan of a copy another super
 * cluster's syncer answers for in the tenant (a followed copy of the tenant's DNS, placement.ts dnsFollows): the
 * tenant object's status, binding and conditions stay that syncer's.
 */
export function downOnly(p: Plan): Plan {
  const out: Plan = {
    steps: p.steps.filter((s) => s.op.endsWith('Super')),
    effects: p.effects.filter((e) => !TENANT_EFFECTS.has(e.type) && !(e.type === 'event' && e.side === 'tenant')),
  };
  if (p.requeueAfterMs !== undefined) out.requeueAfterMs = p.requeueAfterMs;
  if (p.skip) out.skip = p.skip;
  return out;
}

/** superLocation is where the super counterpart of a tenant object lives. */
export function superLocation(
  p: ResourcePlugin,
  ctx: PluginContext,
  k: ObjectName,
): { namespace?: string; name: string } {
  const r = p.manifest.resource!;
  const named = p.superName && callPlugin(p.manifest.name, 'superName', () => p.superName!(k.namespace, k.name, ctx));
  return (
    named ?? {
      namespace: r.namespaced ? ctx.names.superNamespace(k.namespace) : undefined,
      name: k.name,
    }
  );
}

/**
 * Placed is how the placement filter lets a key be planned (reconcile.ts): `follow` plans a followed copy of the
 * tenant's DNS (placement.ts dnsFollows) from the unbound tenant object, down only; `remove` plans the copy of the
 * tenant's DNS namespace on a super cluster the tenant has left as if the tenant object were gone (its super copy is
 * deleted), down only.
 */
export interface Placed {
  follow: boolean;
  remove?: true;
}

/** planKey reads both objects of a key from the caches in ctx and plans them as the placement filter lets it. */
export function planKey(
  host: PlanHost,
  plugin: ResourcePlugin,
  ctx: PluginContext,
  key: ObjectName,
  pending?: PendingReader,
  upOwner?: string,
  placed?: Placed,
): Plan {
  const r = plugin.manifest.resource!;
  const loc = superLocation(plugin, ctx, key);
  const cached = placed?.remove ? undefined : ctx.tenantCache.get(r, key.namespace || undefined, key.name);
  const tenantObj = placed?.follow && cached ? unbound(cached) : cached;
  const superObj = ctx.superCache.get(r, loc.namespace, loc.name);
  const out = plan({ host, plugin, ctx, key, tenantObj, superObj, pending, upOwner });
  return placed?.follow ? downOnly(out) : out;
}

/**
 * unbound is a tenant object as a followed copy is planned from: a Pod without the node and status its home's syncer
 * gave it, since the copy is placed afresh by its own super cluster (a bound Pod without a super Pod would otherwise
 * read as one whose super Pod is gone).
 */
function unbound(o: KubeObject): KubeObject {
  if (o.kind !== undefined && o.kind !== 'Pod') return o;
  const spec = (o as { spec?: Record<string, unknown> }).spec;
  if (!spec || !('nodeName' in spec)) return o;
  const copy = structuredClone(o) as KubeObject & { spec: Record<string, unknown>; status?: unknown };
  delete copy.spec.nodeName;
  delete copy.status;
  return copy;
}

/** plan chooses the direction from which objects exist and the plugin's source of truth. */
export function plan(i: PlanInput): Plan {
  if (i.plugin.manifest.sourceOfTruth === 'super') return planUp(i.plugin, i.ctx, i.tenantObj, i.superObj, i.upOwner);
  if (i.tenantObj && !i.superObj) return planOnlyTenant(i.host, i.plugin, i.ctx, i.tenantObj, i.pending);
  if (i.tenantObj && i.superObj) return planBoth(i.host, i.plugin, i.ctx, i.tenantObj, i.superObj, i.key, i.pending);
  if (!i.tenantObj && i.superObj) return planOnlySuper(i.ctx, i.superObj);
  return nothing();
}

/**
 * desiredSuper runs the plugin's toSuper, then its mutator chain (see MutatorPlugin for the order), then keeps the
 * super side's transparent keys and stamps ownership.
 */
export function desiredSuper(
  host: PlanHost,
  p: ResourcePlugin,
  ctx: PluginContext,
  tenantObj: KubeObject,
  superObj: KubeObject | undefined,
): Decision {
  let d = callPlugin(p.manifest.name, 'toSuper', () =>
    p.toSuper!(structuredClone(tenantObj), superObj && structuredClone(superObj), ctx),
  );
  const effects = [...(d.effects ?? [])];
  for (const m of host.mutatorsOf(p.manifest.name)) {
    if (!d.object || d.skip) break;
    if (!host.enabledFor(ctx.tenant, m.manifest.name)) continue;
    const input = d.object;
    const md = callPlugin(m.manifest.name, 'mutate', () => m.mutate(input, structuredClone(tenantObj), ctx));
    effects.push(...(md.effects ?? []));
    d = { ...d, object: md.object, skip: md.skip ?? d.skip, requeueAfterMs: md.requeueAfterMs ?? d.requeueAfterMs };
  }
  if (d.object) {
    // Keys under the tenant's transparent prefixes belong to the super side: keep them, they flow up.
    if (superObj) copyTransparent(superObj, d.object, ctx.tenant.transparentMetaPrefixes ?? []);
    stampOwnership(d.object, ctx.tenant, tenantObj);
  }
  return { ...d, effects };
}

/** WAIT_FOR_NAMESPACE_MS is when a create waiting for its super namespace to reach the cache looks again. */
export const WAIT_FOR_NAMESPACE_MS = 1000;

/** computeRefusal is capRefusal for the compute quota, planned again after COMPUTE_RETRY_MS: Pods may have ended. */
function computeRefusal(p: ResourcePlugin, tenantObj: KubeObject, reason: string): Plan {
  return { steps: [], ...capRefusal(p.manifest.resource!, tenantObj, reason), requeueAfterMs: COMPUTE_RETRY_MS };
}

/** planOnlyTenant: the tenant object exists, its super counterpart does not: create it. */
function planOnlyTenant(
  host: PlanHost,
  p: ResourcePlugin,
  ctx: PluginContext,
  tenantObj: KubeObject,
  pending: PendingReader | undefined,
): Plan {
  if (!p.toSuper) return nothing();
  const d = desiredSuper(host, p, ctx, tenantObj, undefined);
  const out: Plan = { steps: [], effects: d.effects ?? [], requeueAfterMs: d.requeueAfterMs, skip: d.skip };
  // a create's note (what it asked for) is handed back if the create has to be planned again
  if (d.remember !== undefined) out.remember = d.remember;
  if (!d.object) return out;
  // Before a plugin's own skip: its effects (the pods plugin's super ServiceAccount) write where the object would.
  const refused = createRefusal(ctx, p, tenantObj, d.object);
  if (refused) return refused;
  if (d.skip) return out;
  const over = checkCaps({
    ctx,
    resource: p.manifest.resource!,
    tenantObj,
    desired: d.object,
    superObj: undefined,
    pending,
  });
  if (over) return { steps: [], ...capRefusal(p.manifest.resource!, tenantObj, over) };
  const overCompute = checkCompute({
    ctx,
    resource: p.manifest.resource!,
    tenantObj,
    desired: d.object,
    superObj: undefined,
    pending,
  });
  if (overCompute) return computeRefusal(p, tenantObj, overCompute);
  out.steps.push({ op: 'createSuper', obj: forCreate(d.object) });
  return out;
}

/**
 * createRefusal is the rule that guards every namespaced create in the super cluster: the super namespace must be one
 * the syncer wrote for this tenant's namespace of the object (namespaceOwnedBy: provenance naming this tenant's key,
 * the tenant namespace, and its VirtualCluster uid). A namespace not in the cache yet (it is being created, or it
 * exists without the syncer's label: hand-made) waits; one that belongs to someone else refuses the create with a
 * Warning event on the tenant object naming the namespace. Nothing is ever created in a namespace that is not the
 * tenant's, whatever name the naming rules produced.
 */
function createRefusal(
  ctx: PluginContext,
  p: ResourcePlugin,
  tenantObj: KubeObject,
  desired: KubeObject,
): Plan | undefined {
  const sns = desired.metadata?.namespace;
  if (!sns) return undefined;
  const tm = tenantObj.metadata ?? {};
  const tenantNs = tm.namespace ?? '';
  const ns = ctx.superCache.get(R.namespaces, undefined, sns);
  if (!ns) {
    return {
      steps: [],
      effects: [],
      requeueAfterMs: WAIT_FOR_NAMESPACE_MS,
      skip: { reason: 'WaitingForNamespace', message: `super namespace ${sns} is not there yet` },
    };
  }
  if (namespaceOwnedBy(ns, ctx.tenant, tenantNs)) return undefined;
  const owner = provenanceOf(ns);
  const whose = !owner
    ? 'not managed by the syncer'
    : owner.cluster === ctx.tenant.key
      ? `written for tenant namespace ${owner.name}`
      : 'owned by another tenant';
  const message = `super namespace ${sns} of tenant namespace ${tenantNs} is ${whose}: nothing is created in it`;
  const r = p.manifest.resource!;
  return {
    steps: [],
    effects: [
      {
        type: 'event',
        side: 'tenant',
        regarding: eventTarget(r, tm),
        eventType: 'Warning',
        reason: 'NamespaceNotOwned',
        message,
      },
    ],
    skip: { reason: 'NamespaceNotOwned', message },
  };
}

/** planBoth: both exist: check ownership, patch the super object, then carry status up. */
function planBoth(
  host: PlanHost,
  p: ResourcePlugin,
  ctx: PluginContext,
  tenantObj: KubeObject,
  superObj: KubeObject,
  k: ObjectName,
  pending?: PendingReader,
): Plan {
  const prov = provenanceOf(superObj);
  const sm = superObj.metadata!;
  const kind = p.manifest.resource!.kind;
  if (prov && !ownedBy(superObj, ctx.tenant, tenantObj)) {
    if (prov.cluster === ctx.tenant.key && prov.namespace === k.namespace && prov.name === k.name) {
      // The tenant object was deleted and recreated under the same name: the old super object goes first.
      return {
        steps: [{ op: 'deleteSuper', namespace: sm.namespace, name: sm.name!, uid: sm.uid! }],
        effects: [],
        requeueAfterMs: 200,
      };
    }
    const owner = prov.cluster === ctx.tenant.key ? `tenant object ${prov.namespace}/${prov.name}` : 'another tenant';
    return {
      steps: [],
      effects: [],
      skip: { reason: 'NameCollision', message: `super ${kind} ${sm.namespace ?? ''}/${sm.name} belongs to ${owner}` },
    };
  }
  if (!prov && !adoptable(ctx, superObj, tenantObj)) {
    return {
      steps: [],
      effects: [],
      skip: { reason: 'NotManaged', message: `super ${kind} ${sm.name} exists and is not managed by the syncer` },
    };
  }
  const out = nothing();
  if (p.toSuper) {
    const d = desiredSuper(host, p, ctx, tenantObj, superObj);
    out.effects.push(...(d.effects ?? []));
    out.requeueAfterMs = d.requeueAfterMs;
    out.skip = d.skip;
    if (d.skip) return out;
    if (d.object === null) {
      out.steps.push({ op: 'deleteSuper', namespace: sm.namespace, name: sm.name!, uid: sm.uid! });
      return out;
    }
    const check = { ctx, resource: p.manifest.resource!, tenantObj, desired: d.object, superObj, pending };
    const over = checkCaps(check);
    if (over) return { steps: [], ...capRefusal(p.manifest.resource!, tenantObj, over) };
    const overCompute = checkCompute(check);
    if (overCompute) return computeRefusal(p, tenantObj, overCompute);
    const ops = diffSpec(superObj, d.object);
    const parts: PodPatch = kind === 'Pod' ? splitPodPatch(ops) : { main: ops, resize: [], ephemeralcontainers: [] };
    if (parts.main.length)
      out.steps.push({ op: 'patchSuper', namespace: sm.namespace, name: sm.name!, ops: parts.main });
    for (const sub of ['resize', 'ephemeralcontainers'] as const)
      if (parts[sub].length)
        out.steps.push({
          op: 'patchSuper',
          namespace: sm.namespace,
          name: sm.name!,
          ops: parts[sub],
          subresource: sub,
        });
  }
  if (p.toTenant && p.manifest.direction === 'both') {
    const toTenant = p.toTenant;
    const u = callPlugin(p.manifest.name, 'toTenant', () =>
      toTenant(structuredClone(superObj), structuredClone(tenantObj), ctx),
    );
    out.effects.push(...(u.effects ?? []));
    if (u.object) copyTransparent(superObj, u.object, ctx.tenant.transparentMetaPrefixes ?? []);
    // Bind first: the tenant must not see a Running Pod without a node. Status follows in the same pass, after the
    // bind, instead of on the next pass the Binding would trigger: one trip through the queue less per Pod.
    if (u.object && u.effects?.some((e) => e.type === 'bind')) {
      const st = statusAfterBind(tenantObj, u.object);
      if (st) out.afterEffects = [st];
    } else if (u.object) tenantDiff(out, tenantObj, u.object);
  }
  return out;
}

/** RESIZED is the path of what only a Pod's resize subresource changes: a container's resources and resize policy. */
const RESIZED = /^\/spec\/containers\/\d+\/(resources|resizePolicy)(\/|$)/;
/** DEBUGGED is the path of what only a Pod's ephemeralcontainers subresource changes (kubectl debug's containers). */
const DEBUGGED = /^\/spec\/ephemeralContainers(\/|$)/;

/** PodPatch is a Pod patch split by where each part goes: the Pod itself and its two subresources. */
export interface PodPatch {
  main: Operation[];
  resize: Operation[];
  ephemeralcontainers: Operation[];
}

/**
 * splitPodPatch splits a Pod patch (diffSpec's: a resourceVersion test, then the changes) into the part the Pod itself
 * takes and the parts only a subresource takes: resize, the only way to change a running container's CPU and memory
 * (in-place resize), and ephemeralcontainers, the only way to add an ephemeral container. Each part keeps the test,
 * and a part with nothing but the test is empty.
 */
export function splitPodPatch(ops: readonly Operation[]): PodPatch {
  const tests = ops.filter((o) => o.op === 'test');
  const changes = ops.filter((o) => o.op !== 'test');
  const part = (keep: (path: string) => boolean): Operation[] => {
    const mine = changes.filter((o) => keep(o.path));
    return mine.length ? [...tests, ...mine] : [];
  };
  return {
    main: part((p) => !RESIZED.test(p) && !DEBUGGED.test(p)),
    resize: part((p) => RESIZED.test(p)),
    ephemeralcontainers: part((p) => DEBUGGED.test(p)),
  };
}

/**
 * adoptable: an unmanaged super object inside the super namespace this tenant owns for the tenant object's namespace
 * (e.g. the `default` ServiceAccount).
 */
function adoptable(ctx: PluginContext, superObj: KubeObject, tenantObj: KubeObject): boolean {
  const ns = superObj.metadata?.namespace;
  return (
    !!ns &&
    namespaceOwnedBy(ctx.superCache.get(R.namespaces, undefined, ns), ctx.tenant, tenantObj.metadata?.namespace ?? '')
  );
}

/** planOnlySuper: the tenant object is gone: delete the super object this tenant wrote (uid precondition). */
function planOnlySuper(ctx: PluginContext, superObj: KubeObject): Plan {
  const prov = provenanceOf(superObj);
  const m = superObj.metadata!;
  if (prov?.cluster !== ctx.tenant.key || m.deletionTimestamp) return nothing();
  return { steps: [{ op: 'deleteSuper', namespace: m.namespace, name: m.name!, uid: m.uid! }], effects: [] };
}

/** planUp: the super object is the truth; the tenant object follows it. */
function planUp(
  p: ResourcePlugin,
  ctx: PluginContext,
  tenantObj: KubeObject | undefined,
  superObj: KubeObject | undefined,
  upOwner: string | undefined,
): Plan {
  if (!p.toTenant) return nothing();
  const toTenant = p.toTenant;
  const d = callPlugin(p.manifest.name, 'toTenant', () =>
    toTenant(superObj && structuredClone(superObj), tenantObj && structuredClone(tenantObj), ctx),
  );
  const out: Plan = { steps: [], effects: d.effects ?? [], requeueAfterMs: d.requeueAfterMs, skip: d.skip };
  if (d.remember !== undefined) out.remember = d.remember;
  if (d.skip) return out;
  if (d.object === null) {
    const m = tenantObj?.metadata;
    if (m && m.labels?.[LABEL.managedBy] === MANAGER && !m.deletionTimestamp)
      out.steps.push({ op: 'deleteTenant', namespace: m.namespace, name: m.name!, uid: m.uid! });
    return out;
  }
  const desired = markManaged(d.object);
  if (upOwner !== undefined) desired.metadata!.labels![UP_OWNER_LABEL] = upOwner;
  if (!tenantObj) out.steps.push({ op: 'createTenant', obj: forCreate(desired) });
  else tenantDiff(out, tenantObj, desired);
  return out;
}

/** markManaged labels a desired tenant object as written by the syncer (so only such objects are ever deleted). */
export function markManaged<T extends KubeObject>(desired: T): T {
  desired.metadata ??= {};
  desired.metadata.labels = { ...desired.metadata.labels, [LABEL.managedBy]: MANAGER };
  return desired;
}

/**
 * statusAfterBind is the status write that follows a bind in the same pass, or undefined when the status is already
 * right. The Binding changes the object (a new resourceVersion, and PodScheduled, which the super status has too), so
 * the patch sets the whole desired status under a uid precondition instead of a resourceVersion one: it lands on this
 * Pod or on nothing.
 */
export function statusAfterBind(actual: KubeObject, desired: KubeObject): Step | undefined {
  const status = (desired as { status?: unknown }).status ?? {};
  // A super Pod scheduled but not yet started says nothing the Binding does not say itself: its status is written
  // once, when the kubelet (or kwok) reports the next change.
  // Both as the Binding leaves them: a PodScheduled the super status lacks is kept from the tenant's on the next pass.
  const bound = (o: KubeObject) => boundStatus((o as { status?: PodStatusLike }).status);
  if (sameStatus(bound(actual), bound(desired))) return undefined;
  const m = actual.metadata!;
  return {
    op: 'patchTenantStatus',
    namespace: m.namespace,
    name: m.name!,
    ops: [
      { op: 'test', path: '/metadata/uid', value: m.uid },
      { op: 'add', path: '/status', value: status },
    ],
  };
}

/** PodStatusLike is the part of a status boundStatus reads: its conditions. */
interface PodStatusLike {
  conditions?: Array<{ type?: string; status?: string }>;
}

/**
 * boundStatus is a tenant Pod's status as the Binding leaves it: PodScheduled=True (the apiserver's binding sets it,
 * keeping a PodScheduled condition that is already True as it is).
 */
export function boundStatus(status: PodStatusLike | undefined): PodStatusLike {
  const conditions = [...(status?.conditions ?? [])];
  const at = conditions.findIndex((c) => c.type === 'PodScheduled');
  const scheduled = { type: 'PodScheduled', status: 'True' };
  if (at < 0) conditions.push(scheduled);
  else if (conditions[at]!.status !== 'True') conditions[at] = scheduled;
  return { ...status, conditions };
}

/**
 * tenantDiff adds the writes that bring a tenant object to the desired one: its spec and metadata, then its status
 * unless the status says the same already (sameStatus).
 */
function tenantDiff(out: Plan, actual: KubeObject, desired: KubeObject): void {
  const m = actual.metadata!;
  const ops = diffSpec(actual, desired);
  if (ops.length) out.steps.push({ op: 'patchTenant', namespace: m.namespace, name: m.name!, ops });
  if (sameStatus((actual as { status?: unknown }).status, (desired as { status?: unknown }).status)) return;
  const st = diffStatus(actual, desired);
  if (st.length) out.steps.push({ op: 'patchTenantStatus', namespace: m.namespace, name: m.name!, ops: st });
}

/**
 * copyTransparent copies the super object's labels and annotations under the tenant's transparent prefixes onto a
 * desired object: onto the tenant copy going up (a super admission controller's annotation the tenant should see),
 * and onto the desired super object going down, so the syncer does not strip what the super side owns.
 */
function copyTransparent(superObj: KubeObject, desired: KubeObject, prefixes: readonly string[]): void {
  if (!prefixes.length) return;
  const m = (desired.metadata ??= {});
  const labels = pickUp(superObj.metadata?.labels, prefixes);
  const annotations = pickUp(superObj.metadata?.annotations, prefixes);
  if (Object.keys(labels).length) m.labels = { ...m.labels, ...labels };
  if (Object.keys(annotations).length) m.annotations = { ...m.annotations, ...annotations };
}
