import type { Operation } from 'rfc6902';
import { Counter, Gauge, Histogram } from 'prom-client';
import { ApiError, isAlreadyExists, isConflict, isNotFound, KubeClient, type KubeObject, type Resource } from '../kube/client.ts';
import { recordEvent } from '../kube/events.ts';
import { Informer, objectKey } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { registry } from '../metrics/registry.ts';
import { LABEL, MANAGER, ownedBy, pickUp, provenanceOf, stampOwnership, superNamespace } from '../names/names.ts';
import type { CacheReader, Decision, Effect, Naming, PluginContext, ResourcePlugin, RouteContext, TenantKey } from '../plugins/contract.ts';
import type { PluginHost } from '../plugins/host.ts';
import { FairQueue } from '../queue/fairqueue.ts';
import { Runner, type Result } from '../controller/runner.ts';
import { diffSpec, diffStatus, forCreate } from './diff.ts';
import type { Tenant, TenantRegistry } from './tenant.ts';
import { TokenMinter } from './tokens.ts';

const log = childLogger({ controller: 'syncer' });

const liveSyncers = new Set<Syncer>();

const metrics = {
  depth: new Gauge({
    name: 'vc_syncer_queue_depth',
    help: 'Keys waiting in the fair queue, per tenant.',
    labelNames: ['tenant'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of liveSyncers) for (const [t, n] of s.depthByTenant()) this.set({ tenant: t }, n);
    },
  }),
  latency: new Histogram({
    name: 'vc_syncer_sync_duration_seconds',
    help: 'Time to reconcile one key (plan and writes), per tenant and plugin.',
    labelNames: ['tenant', 'plugin'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  }),
  errors: new Counter({ name: 'vc_syncer_sync_errors_total', help: 'Failed reconciles, per tenant and plugin.', labelNames: ['tenant', 'plugin'], registers: [registry] }),
  writes: new Counter({ name: 'vc_syncer_writes_total', help: 'Writes made, per tenant, plugin and operation.', labelNames: ['tenant', 'plugin', 'op'], registers: [registry] }),
  skips: new Counter({ name: 'vc_syncer_skips_total', help: 'Objects deliberately not synced, per reason.', labelNames: ['tenant', 'plugin', 'reason'], registers: [registry] }),
  patrol: new Counter({ name: 'vc_syncer_patrol_fixes_total', help: 'Drift found and requeued by patrol.', labelNames: ['tenant', 'plugin'], registers: [registry] }),
};

/** SyncerOptions configure one syncer, which serves one super cluster. */
export interface SyncerOptions {
  superClient: KubeClient;
  host: PluginHost;
  registry: TenantRegistry;
  /** concurrent workers over the fair queue */
  workers?: number;
  /** interval of the patrol pass (0 disables it) */
  patrolIntervalMs?: number;
  /** name of the super cluster, for logs */
  name?: string;
}

/** Step is one write a plan makes. */
export type Step =
  | { op: 'createSuper'; obj: KubeObject }
  | { op: 'patchSuper'; namespace?: string; name: string; ops: Operation[] }
  | { op: 'deleteSuper'; namespace?: string; name: string; uid: string }
  | { op: 'createTenant'; obj: KubeObject }
  | { op: 'patchTenant'; namespace?: string; name: string; ops: Operation[] }
  | { op: 'patchTenantStatus'; namespace?: string; name: string; ops: Operation[] }
  | { op: 'deleteTenant'; namespace?: string; name: string; uid: string };

/** Plan is what reconciling one key would do: writes, effects and when to look again. */
export interface Plan {
  steps: Step[];
  effects: Effect[];
  requeueAfterMs?: number;
  skip?: { reason: string; message: string };
}

interface TenantState {
  tenant: Tenant;
  client: KubeClient;
  informers: Map<string, Informer>;
  cache: CacheReader;
  names: Naming;
  ready: boolean;
  stopped: boolean;
}

/** parseKey splits a queue key `tenant/plugin/namespace/name`. */
export function parseKey(key: string): { tenant: string; plugin: string; namespace: string; name: string } {
  const [tenant = '', plugin = '', namespace = '', ...rest] = key.split('/');
  return { tenant, plugin, namespace, name: rest.join('/') };
}

/** makeKey builds a queue key. */
export function makeKey(tenant: string, plugin: string, namespace: string, name: string): string {
  return `${tenant}/${plugin}/${namespace}/${name}`;
}

const cacheKey = (namespace: string | undefined, name: string) => (namespace ? `${namespace}/${name}` : name);

/**
 * Syncer copies what tenant Pods need from each tenant control plane into the super cluster and status back. It
 * keeps informers per tenant and one shared set on the super cluster; events only enqueue keys into a fair queue
 * (one sub-queue per tenant, weighted round robin); workers plan each key from the caches with the resource's
 * plugin, then write only the difference. A patrol pass compares both sides periodically and requeues drift.
 */
export class Syncer {
  private readonly superInformers = new Map<string, Informer>();
  private readonly tenants = new Map<string, TenantState>();
  private readonly queue = new FairQueue({});
  private readonly runner: Runner;
  private readonly superCache: CacheReader;
  private readonly nodeIndex = new Map<string, Map<string, string>>();
  private readonly tokens: TokenMinter;
  private readonly recentEvents = new Set<string>();
  private readonly adding = new Map<string, Tenant>();
  private readonly removeAfterAdd = new Set<string>();
  private unsubscribe?: () => void;
  private gate?: Promise<void>;
  private openGate?: () => void;
  private patrolTimer?: NodeJS.Timeout;
  /** patrolRuns counts completed patrol passes; patrolFixes counts the drift they found. */
  readonly stats = { patrolRuns: 0, patrolFixes: 0 };

  constructor(private readonly o: SyncerOptions) {
    this.runner = new Runner({
      name: 'syncer',
      queue: this.queue,
      concurrency: o.workers ?? 8,
      reconciler: { reconcile: (key) => this.reconcile(key) },
    });
    this.superCache = this.readerOf(this.superInformers);
    this.tokens = new TokenMinter(o.superClient);
    liveSyncers.add(this);
  }

  /** start syncs the super caches, then follows the tenant registry and starts the workers and the patrol. */
  async start(): Promise<void> {
    const resources = new Map<string, Resource>();
    for (const p of this.o.host.resourcePlugins()) resources.set(p.manifest.resource!.resource, toResource(p));
    resources.set('namespaces', R.namespaces);
    resources.set('pods', R.pods);
    resources.set('services', R.services);
    for (const [name, r] of resources) {
      const superTruth = this.o.host.resourcePlugins().some((p) => p.manifest.resource?.resource === name && p.manifest.sourceOfTruth === 'super');
      const inf = new Informer({
        client: this.o.superClient,
        resource: r,
        name: `super/${name}`,
        labelSelector: superTruth ? undefined : `${LABEL.managedBy}=${MANAGER}`,
      });
      inf.addHandler(this.superHandler(name));
      this.superInformers.set(name, inf);
      inf.start();
    }
    await Promise.all([...this.superInformers.values()].map((i) => i.waitForSync()));
    this.runner.start();
    this.unsubscribe = this.o.registry.subscribe((e) => {
      if (e.type === 'upsert') void this.upsertTenant(e.tenant);
      else void this.removeTenant(e.key);
    });
    const every = this.o.patrolIntervalMs ?? 60_000;
    if (every > 0) {
      this.patrolTimer = setInterval(() => this.patrol(), every);
      this.patrolTimer.unref();
    }
    log.info({ superCluster: this.o.name ?? 'default', plugins: this.o.host.names() }, 'syncer started');
  }

  /** stop stops workers, informers and the patrol. */
  async stop(): Promise<void> {
    liveSyncers.delete(this);
    this.resume();
    clearInterval(this.patrolTimer);
    this.unsubscribe?.();
    await this.runner.stop();
    await Promise.all([...this.tenants.keys()].map((k) => this.removeTenant(k)));
    await Promise.all([...this.superInformers.values()].map((i) => i.stop()));
  }

  /** tenantReady reports whether a tenant's caches have synced and its keys are being served. */
  tenantReady(key: string): boolean {
    return this.tenants.get(key)?.ready ?? false;
  }

  /** depthByTenant lists the keys waiting per tenant. */
  depthByTenant(): Array<[string, number]> {
    return [...this.tenants.keys()].map((t) => [t, this.queue.tenantLen(t)]);
  }

  /** queueLength is the number of keys waiting. */
  queueLength(): number {
    return this.queue.len();
  }

  // ---- tenants -------------------------------------------------------------------------------------------------

  private async upsertTenant(t: Tenant): Promise<void> {
    // Registries report the same tenant often (every reconcile of a Running VirtualCluster): while one add is under
    // way, later reports only record the newest tenant, which is applied when the add finishes.
    if (this.adding.has(t.key)) {
      this.adding.set(t.key, t);
      this.removeAfterAdd.delete(t.key);
      return;
    }
    const existing = this.tenants.get(t.key);
    if (existing && existing.tenant.kubeconfig === t.kubeconfig) {
      existing.tenant = t;
      this.queue.setWeight(t.key, t.weight);
      return;
    }
    this.adding.set(t.key, t);
    try {
      // A new kubeconfig (rotated certificates, a moved apiserver) means new connections and fresh caches.
      if (existing) await this.dropTenant(t.key);
      await this.addTenant(t);
    } finally {
      const latest = this.adding.get(t.key);
      this.adding.delete(t.key);
      if (this.removeAfterAdd.delete(t.key)) await this.dropTenant(t.key);
      else if (latest && latest !== t) await this.upsertTenant(latest);
    }
  }

  private async addTenant(t: Tenant): Promise<void> {
    const client = await KubeClient.fromString(t.kubeconfig);
    const informers = new Map<string, Informer>();
    const state: TenantState = {
      tenant: t,
      client,
      informers,
      cache: this.readerOf(informers),
      names: this.namingFor(t),
      ready: false,
      stopped: false,
    };
    this.tenants.set(t.key, state);
    this.queue.setWeight(t.key, t.weight);
    const resources = new Map<string, Resource>([['pods', R.pods], ['namespaces', R.namespaces]]);
    for (const p of this.o.host.resourcePlugins()) {
      if (this.o.host.enabledFor(t, p.manifest.name)) resources.set(p.manifest.resource!.resource, toResource(p));
    }
    for (const [name, r] of resources) {
      const inf = new Informer({ client, resource: r, name: `${t.key}/${name}` });
      informers.set(name, inf);
      inf.start();
    }
    await Promise.all([...informers.values()].map((i) => i.waitForSync()));
    if (state.stopped) return;
    for (const [name, inf] of informers) inf.addHandler(this.tenantHandler(state, name));
    state.ready = true;
    log.info({ tenant: t.key }, 'tenant caches synced; serving');
    // Super objects of this tenant whose tenant object is gone are found by replaying the super caches.
    for (const p of this.o.host.resourcePlugins()) {
      const inf = this.superInformers.get(p.manifest.resource!.resource);
      if (!inf || p.manifest.sourceOfTruth !== 'tenant') continue;
      for (const o of inf.list()) {
        const prov = provenanceOf(o);
        if (prov?.cluster === t.key) this.queue.add(makeKey(t.key, p.manifest.name, prov.namespace, prov.name));
      }
    }
  }

  private async removeTenant(key: string): Promise<void> {
    // An add under way may be waiting for caches that never sync (the tenant apiserver is gone): drop what it has
    // registered now, which releases it, and make sure nothing of it stays when it returns.
    if (this.adding.has(key)) this.removeAfterAdd.add(key);
    await this.dropTenant(key);
  }

  /** dropTenant stops a tenant's informers and forgets its queued keys. */
  private async dropTenant(key: string): Promise<void> {
    const s = this.tenants.get(key);
    if (!s) return;
    s.stopped = true;
    this.tenants.delete(key);
    this.queue.removeTenant(key);
    await Promise.all([...s.informers.values()].map((i) => i.stop()));
    s.client.close();
    log.info({ tenant: key }, 'tenant removed');
  }

  private namingFor(t: Tenant): Naming {
    return {
      superNamespace: (ns) => superNamespace(t.key, ns),
      tenantNamespace: (sns) => {
        const p = provenanceOf(this.superCache.get(R.namespaces, undefined, sns));
        return p?.cluster === t.key ? p.name : undefined;
      },
    };
  }

  private readerOf(informers: Map<string, Informer>): CacheReader {
    return {
      get: <T extends KubeObject>(r: Resource, namespace: string | undefined, name: string) =>
        informers.get(r.resource)?.get(cacheKey(namespace, name)) as T | undefined,
      list: <T extends KubeObject>(r: Resource, namespace?: string) => {
        const all = (informers.get(r.resource)?.list() ?? []) as T[];
        return namespace === undefined ? all : all.filter((o) => o.metadata?.namespace === namespace);
      },
    };
  }

  // ---- event handlers: map events to keys, nothing else ----------------------------------------------------------

  private tenantHandler(s: TenantState, resource: string) {
    const t = s.tenant.key;
    const plugins = this.o.host.resourcePlugins().filter((p) => p.manifest.resource!.resource === resource);
    const enqueue = (o: KubeObject) => {
      for (const p of plugins) {
        if (this.o.host.enabledFor(s.tenant, p.manifest.name)) this.queue.add(makeKey(t, p.manifest.name, o.metadata?.namespace ?? '', o.metadata?.name ?? ''));
      }
      if (resource === 'pods') {
        const node = (o as { spec?: { nodeName?: string } }).spec?.nodeName;
        if (node && this.o.host.get('nodes')) this.queue.add(makeKey(t, 'nodes', '', node));
      }
      const volume = (o as { spec?: { volumeName?: string } }).spec?.volumeName;
      if (resource === 'persistentvolumeclaims' && volume && this.o.host.get('persistentvolumes')) {
        this.queue.add(makeKey(t, 'persistentvolumes', '', volume));
      }
      if (resource === 'services' && this.o.host.get('endpoints')) {
        this.queue.add(makeKey(t, 'endpoints', o.metadata?.namespace ?? '', o.metadata?.name ?? ''));
      }
    };
    return { onAdd: enqueue, onUpdate: (_a: KubeObject, b: KubeObject) => enqueue(b), onDelete: enqueue };
  }

  private superHandler(resource: string) {
    const plugins = () => this.o.host.resourcePlugins().filter((p) => p.manifest.resource!.resource === resource);
    const enqueue = (o: KubeObject, deleted: boolean) => {
      if (resource === 'pods') this.indexPod(o, deleted);
      for (const p of plugins()) {
        for (const k of this.routeOf(p, o)) {
          const s = this.tenants.get(k.tenant);
          if (s && this.o.host.enabledFor(s.tenant, p.manifest.name)) this.queue.add(makeKey(k.tenant, p.manifest.name, k.namespace, k.name));
        }
      }
    };
    // An update routes the old version too: an object that moved (a PV re-bound, a class that lost its public
    // label) must reach the tenants that had it.
    return {
      onAdd: (o: KubeObject) => enqueue(o, false),
      onUpdate: (a: KubeObject, b: KubeObject) => {
        enqueue(a, true);
        enqueue(b, false);
      },
      onDelete: (o: KubeObject) => enqueue(o, true),
    };
  }

  private indexPod(o: KubeObject, deleted: boolean): void {
    const prov = provenanceOf(o);
    const node = (o as { spec?: { nodeName?: string } }).spec?.nodeName;
    if (!prov || !node) return;
    const k = objectKey(o);
    let m = this.nodeIndex.get(node);
    if (deleted) {
      m?.delete(k);
      if (m && !m.size) this.nodeIndex.delete(node);
      if (this.o.host.get('nodes')) this.queue.add(makeKey(prov.cluster, 'nodes', '', node));
      return;
    }
    if (!m) this.nodeIndex.set(node, (m = new Map()));
    m.set(k, prov.cluster);
  }

  private routeOf(p: ResourcePlugin, o: KubeObject): TenantKey[] {
    if (p.route) {
      try {
        return p.route(o, this.routeContext());
      } catch (err) {
        log.error({ plugin: p.manifest.name, err }, 'route failed');
        return [];
      }
    }
    const prov = provenanceOf(o);
    return prov ? [{ tenant: prov.cluster, namespace: prov.namespace, name: prov.name }] : [];
  }

  private routeContext(): RouteContext {
    return {
      tenants: [...this.tenants.values()].map((s) => s.tenant),
      superCache: this.superCache,
      tenantsOnNode: (node) => [...new Set(this.nodeIndex.get(node)?.values() ?? [])],
      tenantOfNamespace: (sns) => {
        const p = provenanceOf(this.superCache.get(R.namespaces, undefined, sns));
        return p ? { tenant: p.cluster, namespace: p.name } : undefined;
      },
    };
  }

  // ---- reconcile -----------------------------------------------------------------------------------------------

  private context(s: TenantState): PluginContext {
    return { tenant: s.tenant, names: s.names, tenantCache: s.cache, superCache: this.superCache, now: new Date() };
  }

  /** plan computes what reconciling a key would write, from the caches only. */
  plan(key: string): Plan | undefined {
    const k = parseKey(key);
    const s = this.tenants.get(k.tenant);
    const p = this.o.host.get(k.plugin) as ResourcePlugin | undefined;
    if (!s?.ready || !p?.manifest.resource || !this.o.host.enabledFor(s.tenant, k.plugin)) return undefined;
    const ctx = this.context(s);
    const r = toResource(p);
    const loc = p.superName?.(k.namespace, k.name, ctx) ?? { namespace: r.namespaced ? s.names.superNamespace(k.namespace) : undefined, name: k.name };
    const tenantObj = s.cache.get(r, k.namespace || undefined, k.name);
    const superObj = this.superCache.get(r, loc.namespace, loc.name);
    if (p.manifest.sourceOfTruth === 'super') return this.planUp(p, ctx, tenantObj, superObj);
    if (tenantObj && !superObj) return this.planOnlyTenant(p, ctx, tenantObj);
    if (tenantObj && superObj) return this.planBoth(s, p, ctx, tenantObj, superObj, k);
    if (!tenantObj && superObj) return this.planOnlySuper(s, superObj);
    return { steps: [], effects: [] };
  }

  private desiredSuper(p: ResourcePlugin, ctx: PluginContext, tenantObj: KubeObject, superObj: KubeObject | undefined): Decision {
    let d = p.toSuper!(structuredClone(tenantObj), superObj && structuredClone(superObj), ctx);
    const effects = [...(d.effects ?? [])];
    for (const m of this.o.host.mutatorsOf(p.manifest.name)) {
      if (!d.object || d.skip || !this.o.host.enabledFor(ctx.tenant, m.manifest.name)) break;
      const md = m.mutate(d.object, structuredClone(tenantObj), ctx);
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

  /** planOnlyTenant: the tenant object exists, its super counterpart does not: create it. */
  private planOnlyTenant(p: ResourcePlugin, ctx: PluginContext, tenantObj: KubeObject): Plan {
    if (!p.toSuper) return { steps: [], effects: [] };
    const d = this.desiredSuper(p, ctx, tenantObj, undefined);
    const plan: Plan = { steps: [], effects: d.effects ?? [], requeueAfterMs: d.requeueAfterMs, skip: d.skip };
    if (d.object && !d.skip) plan.steps.push({ op: 'createSuper', obj: forCreate(d.object) });
    return plan;
  }

  /** planBoth: both exist: check ownership, patch the super object, then carry status up. */
  private planBoth(
    s: TenantState,
    p: ResourcePlugin,
    ctx: PluginContext,
    tenantObj: KubeObject,
    superObj: KubeObject,
    k: { namespace: string; name: string },
  ): Plan {
    const prov = provenanceOf(superObj);
    const sm = superObj.metadata!;
    if (prov && !ownedBy(superObj, s.tenant, tenantObj)) {
      if (prov.cluster === s.tenant.key && prov.namespace === k.namespace && prov.name === k.name) {
        // The tenant object was deleted and recreated under the same name: the old super object goes first.
        return { steps: [{ op: 'deleteSuper', namespace: sm.namespace, name: sm.name!, uid: sm.uid! }], effects: [], requeueAfterMs: 200 };
      }
      const owner = prov.cluster === s.tenant.key ? `tenant object ${prov.namespace}/${prov.name}` : 'another tenant';
      return { steps: [], effects: [], skip: { reason: 'NameCollision', message: `super ${p.manifest.resource!.kind} ${sm.namespace ?? ''}/${sm.name} belongs to ${owner}` } };
    }
    if (!prov && !this.adoptable(s, superObj)) {
      return { steps: [], effects: [], skip: { reason: 'NotManaged', message: `super ${p.manifest.resource!.kind} ${sm.name} exists and is not managed by the syncer` } };
    }
    const plan: Plan = { steps: [], effects: [] };
    if (p.toSuper) {
      const d = this.desiredSuper(p, ctx, tenantObj, superObj);
      plan.effects.push(...(d.effects ?? []));
      plan.requeueAfterMs = d.requeueAfterMs;
      plan.skip = d.skip;
      if (d.skip) return plan;
      if (d.object === null) {
        plan.steps.push({ op: 'deleteSuper', namespace: sm.namespace, name: sm.name!, uid: sm.uid! });
        return plan;
      }
      if (d.object && !d.skip) {
        const ops = diffSpec(superObj, d.object);
        if (ops.length) plan.steps.push({ op: 'patchSuper', namespace: sm.namespace, name: sm.name!, ops });
      }
    }
    if (p.toTenant && p.manifest.direction === 'both') {
      const u = p.toTenant(structuredClone(superObj), structuredClone(tenantObj), ctx);
      plan.effects.push(...(u.effects ?? []));
      if (u.object) copyTransparent(superObj, u.object, s.tenant.transparentMetaPrefixes ?? []);
      // Bind first: the tenant must not see a Running Pod without a node. Status follows on the next pass, which
      // the Binding itself triggers through the tenant informer.
      if (u.object && !u.effects?.some((e) => e.type === 'bind')) this.tenantDiff(plan, tenantObj, u.object);
    }
    return plan;
  }

  /** adoptable: an unmanaged super object inside a super namespace this tenant owns (e.g. the `default` ServiceAccount). */
  private adoptable(s: TenantState, superObj: KubeObject): boolean {
    const ns = superObj.metadata?.namespace;
    return !!ns && provenanceOf(this.superCache.get(R.namespaces, undefined, ns))?.cluster === s.tenant.key;
  }

  /** planOnlySuper: the tenant object is gone: delete the super object this tenant wrote (uid precondition). */
  private planOnlySuper(s: TenantState, superObj: KubeObject): Plan {
    const prov = provenanceOf(superObj);
    const m = superObj.metadata!;
    if (prov?.cluster !== s.tenant.key || m.deletionTimestamp) return { steps: [], effects: [] };
    return { steps: [{ op: 'deleteSuper', namespace: m.namespace, name: m.name!, uid: m.uid! }], effects: [] };
  }

  /** planUp: the super object is the truth; the tenant object follows it. */
  private planUp(p: ResourcePlugin, ctx: PluginContext, tenantObj: KubeObject | undefined, superObj: KubeObject | undefined): Plan {
    if (!p.toTenant) return { steps: [], effects: [] };
    const d = p.toTenant(superObj && structuredClone(superObj), tenantObj && structuredClone(tenantObj), ctx);
    const plan: Plan = { steps: [], effects: d.effects ?? [], requeueAfterMs: d.requeueAfterMs, skip: d.skip };
    if (d.skip) return plan;
    if (d.object === null) {
      const m = tenantObj?.metadata;
      if (m && m.labels?.[LABEL.managedBy] === MANAGER && !m.deletionTimestamp) plan.steps.push({ op: 'deleteTenant', namespace: m.namespace, name: m.name!, uid: m.uid! });
      return plan;
    }
    const desired = d.object;
    desired.metadata ??= {};
    desired.metadata.labels = { ...desired.metadata.labels, [LABEL.managedBy]: MANAGER };
    if (!tenantObj) plan.steps.push({ op: 'createTenant', obj: forCreate(desired) });
    else this.tenantDiff(plan, tenantObj, desired);
    return plan;
  }

  private tenantDiff(plan: Plan, actual: KubeObject, desired: KubeObject): void {
    const m = actual.metadata!;
    const ops = diffSpec(actual, desired);
    if (ops.length) plan.steps.push({ op: 'patchTenant', namespace: m.namespace, name: m.name!, ops });
    const st = diffStatus(actual, desired);
    if (st.length) plan.steps.push({ op: 'patchTenantStatus', namespace: m.namespace, name: m.name!, ops: st });
  }

  /**
   * pause stops all writes: workers hold on to their next key until resume, while informers keep watching and
   * keys keep queueing. For maintenance windows; patrol still reports drift while paused.
   */
  pause(): void {
    if (!this.gate) this.gate = new Promise((res) => (this.openGate = res));
  }

  /** resume lets the workers continue after pause. */
  resume(): void {
    this.openGate?.();
    this.gate = undefined;
    this.openGate = undefined;
  }

  private async reconcile(key: string): Promise<Result> {
    if (this.gate) await this.gate;
    const k = parseKey(key);
    const s = this.tenants.get(k.tenant);
    if (!s) return;
    if (!s.ready) return { requeueAfter: 500 };
    const started = performance.now();
    const p = this.o.host.get(k.plugin) as ResourcePlugin;
    try {
      const plan = this.plan(key);
      if (!plan) return;
      if (plan.skip) metrics.skips.inc({ tenant: k.tenant, plugin: k.plugin, reason: plan.skip.reason });
      const r = toResource(p);
      let superUid: string | undefined;
      const written = new Map<string, string>();
      for (const step of plan.steps) {
        // A status patch after a spec patch of the same object must test the version the first patch produced.
        const target = `${step.op.endsWith('Super') ? 'super' : 'tenant'}/${'obj' in step ? '' : `${step.namespace ?? ''}/${step.name}`}`;
        const rv = written.get(target);
        if (rv && 'ops' in step && step.ops[0]?.op === 'test') step.ops[0] = { ...step.ops[0], value: rv };
        try {
          const out = await this.execute(s, r, k.plugin, step);
          superUid = (step.op.endsWith('Super') ? out?.metadata?.uid : undefined) ?? superUid;
          if (out?.metadata?.resourceVersion) written.set(target, out.metadata.resourceVersion);
        } catch (e) {
          // The super apiserver made this object itself (the `default` ServiceAccount of a new namespace): it is
          // outside the managed-only cache, so read it and plan again with both sides known.
          if (!(step.op === 'createSuper' && isAlreadyExists(e))) throw e;
          superUid = await this.adopt(s, p, key, step.obj);
        }
      }
      let requeue = plan.requeueAfterMs;
      for (const e of plan.effects) {
        const after = await this.effect(s, key, e, superUid);
        if (after !== undefined) requeue = Math.min(requeue ?? after, after);
      }
      return requeue !== undefined ? { requeueAfter: requeue } : undefined;
    } catch (e) {
      metrics.errors.inc({ tenant: k.tenant, plugin: k.plugin });
      // A stale cache (409, precondition) or a namespace not there yet resolves itself: retry soon.
      if (isConflict(e) || isAlreadyExists(e) || isStalePatch(e)) {
        log.debug({ key, err: String(e) }, 'stale cache; requeueing');
        return { requeueAfter: 100 };
      }
      throw e;
    } finally {
      metrics.latency.observe({ tenant: k.tenant, plugin: k.plugin }, (performance.now() - started) / 1000);
    }
  }

  private async adopt(s: TenantState, p: ResourcePlugin, key: string, obj: KubeObject): Promise<string | undefined> {
    const r = toResource(p);
    const m = obj.metadata!;
    const actual = await this.o.superClient.get(r, m.namespace, m.name!);
    const k = parseKey(key);
    const tenantObj = s.cache.get(r, k.namespace || undefined, k.name);
    if (!tenantObj) return undefined;
    const plan = this.planBoth(s, p, this.context(s), tenantObj, actual, k);
    if (plan.skip) throw new Error(`${plan.skip.reason}: ${plan.skip.message}`);
    let uid = actual.metadata?.uid;
    for (const step of plan.steps) uid = (await this.execute(s, r, p.manifest.name, step))?.metadata?.uid ?? uid;
    return uid;
  }

  /** execute performs one step and returns the object written, if the step writes one. */
  private async execute(s: TenantState, r: Resource, plugin: string, step: Step): Promise<KubeObject | undefined> {
    const sup = this.o.superClient;
    const fm = { fieldManager: MANAGER };
    metrics.writes.inc({ tenant: s.tenant.key, plugin, op: step.op });
    switch (step.op) {
      case 'createSuper':
        return sup.create(r, step.obj, fm);
      case 'patchSuper':
        return sup.patch(r, step.namespace, step.name, step.ops, 'json', fm);
      case 'deleteSuper':
        await sup.delete(r, step.namespace, step.name, { uid: step.uid, propagationPolicy: 'Background' });
        return;
      case 'createTenant':
        return s.client.create(r, step.obj, fm);
      case 'patchTenant':
        return s.client.patch(r, step.namespace, step.name, step.ops, 'json', fm);
      case 'patchTenantStatus':
        return s.client.patch(r, step.namespace, step.name, step.ops, 'json', { ...fm, subresource: 'status' });
      case 'deleteTenant':
        await s.client.delete(r, step.namespace, step.name, { uid: step.uid });
        return;
    }
  }

  private async effect(s: TenantState, key: string, e: Effect, superUid: string | undefined): Promise<number | undefined> {
    switch (e.type) {
      case 'event':
        await this.recordEvent(s, key, e);
        return;
      case 'bind':
        await this.bind(s, e);
        return;
      case 'deleteTenant':
        await s.client.delete(R.pods, e.namespace, e.name, { uid: e.uid, gracePeriodSeconds: e.gracePeriodSeconds });
        return;
      case 'serviceAccountToken': {
        const superNs = s.names.superNamespace(e.namespace);
        const superPod = this.superCache.get(R.pods, superNs, e.pod);
        const uid = superUid ?? superPod?.metadata?.uid;
        // No super Pod yet (its creation is waiting, e.g. for DNS): its creation event brings us back.
        if (!uid) return;
        return this.tokens.ensure(s.tenant, s.client, { ...e, superNamespace: superNs, superPodUid: uid });
      }
    }
  }

  private async recordEvent(s: TenantState, key: string, e: Extract<Effect, { type: 'event' }>): Promise<void> {
    const id = `${key}|${e.regarding.uid}|${e.reason}|${e.message}`;
    if (this.recentEvents.has(id)) return;
    if (this.recentEvents.size > 10_000) this.recentEvents.clear();
    this.recentEvents.add(id);
    const client = e.side === 'tenant' ? s.client : this.o.superClient;
    const err = await recordEvent(client, e.regarding, e.eventType, e.reason, e.message, MANAGER);
    if (err) {
      this.recentEvents.delete(id);
      throw err;
    }
  }


  private async bind(s: TenantState, e: Extract<Effect, { type: 'bind' }>): Promise<void> {
    const nodes = this.o.host.get('nodes') as ResourcePlugin | undefined;
    if (nodes && !s.cache.get(R.nodes, undefined, e.node)) {
      const superNode = this.superCache.get(R.nodes, undefined, e.node);
      const d = nodes.toTenant?.(superNode && structuredClone(superNode), undefined, { ...this.context(s), tenantCache: this.withBoundPod(s, e) });
      if (d?.object) {
        d.object.metadata!.labels = { ...d.object.metadata!.labels, [LABEL.managedBy]: MANAGER };
        try {
          const created = await s.client.create(R.nodes, forCreate(d.object), { fieldManager: MANAGER });
          const st = diffStatus(created, d.object);
          if (st.length) await s.client.patch(R.nodes, undefined, e.node, st, 'json', { subresource: 'status', fieldManager: MANAGER });
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
        }
      }
    }
    try {
      await s.client.request('POST', KubeClient.path(R.pods, e.namespace, e.name, 'binding'), {
        body: { apiVersion: 'v1', kind: 'Binding', metadata: { name: e.name, namespace: e.namespace, uid: e.uid }, target: { apiVersion: 'v1', kind: 'Node', name: e.node } },
      });
    } catch (err) {
      // Already bound (a previous attempt succeeded before the cache caught up) is success.
      if (!isConflict(err) && !isNotFound(err)) throw err;
    }
  }

  /** withBoundPod lets the nodes plugin see the Pod about to be bound, so it builds the vNode instead of GC'ing it. */
  private withBoundPod(s: TenantState, e: Extract<Effect, { type: 'bind' }>): CacheReader {
    return {
      get: (r, ns, n) => s.cache.get(r, ns, n),
      list: <T extends KubeObject>(r: Resource, ns?: string) => {
        const items = s.cache.list<T>(r, ns);
        if (r.resource !== 'pods') return items;
        return items.map((o) =>
          o.metadata?.namespace === e.namespace && o.metadata?.name === e.name ? ({ ...o, spec: { ...(o.spec as object), nodeName: e.node } } as T) : o,
        );
      },
    };
  }

  // ---- patrol --------------------------------------------------------------------------------------------------

  /** patrol compares both sides for every tenant and requeues every key whose plan is not empty. */
  patrol(): number {
    let fixes = 0;
    for (const s of this.tenants.values()) {
      if (!s.ready) continue;
      for (const p of this.o.host.resourcePlugins()) {
        if (!this.o.host.enabledFor(s.tenant, p.manifest.name)) continue;
        const keys = new Set<string>();
        const r = toResource(p);
        for (const o of s.cache.list(r)) keys.add(makeKey(s.tenant.key, p.manifest.name, o.metadata?.namespace ?? '', o.metadata?.name ?? ''));
        for (const o of this.superCache.list(r)) {
          for (const k of this.routeOf(p, o)) if (k.tenant === s.tenant.key) keys.add(makeKey(k.tenant, p.manifest.name, k.namespace, k.name));
        }
        for (const key of keys) {
          const plan = this.plan(key);
          if (plan?.steps.length) {
            fixes++;
            metrics.patrol.inc({ tenant: s.tenant.key, plugin: p.manifest.name });
            this.queue.add(key);
          }
        }
      }
    }
    this.stats.patrolRuns++;
    this.stats.patrolFixes += fixes;
    if (fixes) log.info({ fixes }, 'patrol requeued drift');
    return fixes;
  }
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

/**
 * isStalePatch recognises the apiserver's answer to a JSON Patch whose resourceVersion test failed (422 with no
 * field causes): the cache was behind, not the request wrong.
 */
function isStalePatch(e: unknown): boolean {
  if (!(e instanceof ApiError) || e.code !== 422 || !e.message.startsWith('PATCH ')) return false;
  const causes = (e.body as { details?: { causes?: unknown[] } } | undefined)?.details?.causes;
  return !causes?.length;
}

function toResource(p: ResourcePlugin): Resource {
  return p.manifest.resource!;
}
