// The namespace scheduler controller: it wires the pure decisions of this folder (namespace.ts, pod.ts, drain.ts,
// rebalance.ts) to the tenants' control planes and the super clusters. It follows every tenant's namespaces,
// ResourceQuotas and Pods through the same TenantSessions the syncer uses, and every registered super cluster's Nodes;
// it writes PLACEMENTS on tenant namespaces and SUPER_CLUSTER on the Pods of sliced namespaces, each signed
// (signature.ts).
//
// Level-triggered: informer events only enqueue keys (`<tenant>/<namespace>`, `@cluster/<name>`, `@clusters/all`,
// `@rebalance/request` for the request annotation on the state ConfigMap) into a fair queue; a reconcile reads the
// caches. The capacity cache lives in memory but is rebuilt from the tenant's placement record in the meta cluster
// (placementrecord.ts; from the signed annotations for a tenant not yet recorded) whenever a tenant is (re)served, so a
// restarted scheduler starts from exactly what it had decided and moves nothing. Decisions and the
// reservations they make happen in one synchronous step, so several workers never hand out the same room twice; a
// write that fails gives its reservation back.
//
// Over 500 lines, on purpose: the writes are in writer.ts and the Pods of sliced namespaces in placepods.ts; what
// stays here is the capacity cache with the namespace and rebalance reconciles that reserve from it, kept in one class
// so that a decision and its reservation stay one synchronous step.

import type { KubeClient, KubeObject } from '../kube/client.ts';
import type { SharedInformer } from '../kube/factory.ts';
import { Informer } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { queueMetrics } from '../controller/metrics.ts';
import { Runner, type Result } from '../controller/runner.ts';
import { FairQueue } from '../queue/fairqueue.ts';
import { realClock, type Clock } from '../queue/clock.ts';
import { readerOf, TenantSessions, type TenantSession } from '../sessions/tenants.ts';
import {
  AnnotationError,
  formatPlacements,
  parsePlacements,
  parseSlice,
  PLACEMENTS,
  SLICE,
  type Placements,
  type Resources,
} from './annotations.ts';
import {
  addTimes,
  quotaResources,
  ResourceError,
  sumAllocatable,
  unitOf,
  type Capacity,
  type ClusterCapacity,
} from './capacity.ts';
import type { ClusterState } from '../superclusters/registration.ts';
import { drainPlacements } from './drain.ts';
import { homeOf, placeNamespace, type Policy } from './namespace.ts';
import {
  FIELD_MANAGER,
  SCHEDULER_DEFAULTS,
  type RegisteredSuperCluster,
  type SchedulerOptions,
  type SchedulerStats,
} from './options.ts';
import type { Milli } from './quantity.ts';
import {
  CLUSTERS_KEY,
  clusterKey,
  REBALANCE_KEY,
  isReadyNode,
  olderThan,
  samePlacements,
  sameResources,
  splitKey,
  type NamespaceRec,
  type Obj,
} from './records.ts';
import { signedValue } from './signature.ts';
import { RecordError, recordedValue, type RecordEntries, type RecordEntry } from './placementrecord.ts';
import { STATE_CONFIGMAP, summarize, type RebalanceReport, type SchedulerState } from './state.ts';
import {
  MAX_MOVES,
  parseRebalanceRequest,
  planRebalance,
  type REBALANCE_REASONS,
  REBALANCE_REQUEST,
  type Move,
  type RebalanceNamespace,
} from './rebalance.ts';
import { recordEvent } from '../kube/events.ts';
import { reconcilePods, type PodContext } from './placepods.ts';
import { SchedulerWriter } from './writer.ts';

export {
  FIELD_MANAGER,
  PLACED_CONDITION,
  SCHEDULER_DEFAULTS,
  type RegisteredSuperCluster,
  type SchedulerOptions,
  type SchedulerStats,
  type SuperClusterSource,
} from './options.ts';

const log = childLogger({ controller: 'scheduler' });

/**
 * NamespaceScheduler places tenant namespaces on super clusters in slices and the Pods of sliced namespaces in those
 * slices, drains super clusters marked draining, and publishes a per-super-cluster summary.
 */
export class NamespaceScheduler {
  private readonly queue: FairQueue;
  private readonly runner: Runner;
  private readonly sessions: TenantSessions;
  private readonly policy: Policy;
  private readonly clock: Clock;
  private readonly nodes = new Map<string, { client: KubeClient; informer: SharedInformer<Obj> }>();
  private readonly allocatable = new Map<string, Resources>();
  private clusters: RegisteredSuperCluster[] = [];
  private readonly records = new Map<string, NamespaceRec>();
  private readonly usage = new Map<string, { used: Resources; placed: number }>();
  /**
   * the placed Pods per namespace key: pod uid -> super cluster and the resourceVersion of the scheduler's write.
   * Rebuilt from signed annotations; it outlives a tenant's later edit of the annotation, which is put back.
   */
  private readonly pods = new Map<string, Map<string, { superCluster: string; rv?: string }>>();
  /** namespaces left (partly) unplaced, tried again when room appears */
  private readonly waiting = new Set<string>();
  /** tenants known at start whose placements are not counted yet */
  private readonly awaiting = new Set<string>();
  /** tenants whose placements are counted (from their record): only their namespaces are reconciled */
  private readonly counted = new Set<string>();
  private startedAt = 0;
  private unsubscribe: Array<() => void> = [];
  private publishTimer?: NodeJS.Timeout;
  private lastPublished = '';
  /**
   * the state ConfigMap as last read (undefined: not read yet; null: not there), for its rebalance request annotation.
   * It is read at every publish interval rather than watched: the meta cluster is often also a super cluster, whose
   * ConfigMaps the syncer already watches, and a second watch of one resource on one cluster is what the shared
   * informers are there to avoid (`npm run bench -- watches` counts them).
   */
  private state?: StateMap | null;
  /** the answer to the last rebalance request, published in the state ConfigMap */
  private lastRebalance?: RebalanceReport;
  /** namespaces a rebalance moved, not yet written: the super clusters that lost slices, and the Event to record */
  private readonly rebalanced = new Map<string, { trim: Set<string>; message: string; announced?: boolean }>();
  /** stats counts decisions and writes. */
  readonly stats: SchedulerStats = {
    namespaceDecisions: 0,
    podDecisions: 0,
    writes: 0,
    placementWrites: 0,
    evictions: 0,
    unschedulable: 0,
    pending: 0,
  };
  /** writer makes every write to tenant objects, counting them in stats */
  private readonly writer: SchedulerWriter;
  /** podContext is what reconcilePods (placepods.ts) needs of this scheduler */
  private readonly podContext: PodContext;

  constructor(private readonly o: SchedulerOptions) {
    this.policy = o.policy ?? SCHEDULER_DEFAULTS.policy;
    this.clock = o.clock ?? realClock;
    this.writer = new SchedulerWriter(o.signingKey, this.stats);
    this.podContext = {
      pods: this.pods,
      signingKey: o.signingKey,
      writer: this.writer,
      clock: this.clock,
      policy: this.policy,
      stats: this.stats,
      observe: o.observe,
      clusterState: (name) => this.clusterState(name),
    };
    const workers = o.workers ?? SCHEDULER_DEFAULTS.workers;
    this.queue = new FairQueue({ metrics: queueMetrics('scheduler') });
    this.runner = new Runner({
      name: 'scheduler',
      queue: this.queue,
      concurrency: workers,
      reconciler: { reconcile: (key) => this.reconcile(key) },
    });
    const none = readerOf(new Map());
    this.sessions = new TenantSessions({
      queue: this.queue,
      superCache: none,
      resourcesFor: () =>
        new Map([
          ['namespaces', R.namespaces],
          ['resourcequotas', R.resourcequotas],
          ['pods', R.pods],
        ]),
      handlerFor: (s, resource) => ({
        onAdd: (obj) => this.enqueueFor(s, resource, obj),
        onUpdate: (_, obj) => this.enqueueFor(s, resource, obj),
        onDelete: (obj) => this.enqueueFor(s, resource, obj),
      }),
      onServed: (s) => this.served(s),
      requestTimeoutMs: o.tenantRequestTimeoutMs ?? SCHEDULER_DEFAULTS.tenantRequestTimeoutMs,
      pool: o.tenantInformers,
    });
  }

  /** start follows the super clusters and the tenants and starts the workers; it does not wait for any cache. */
  async start(): Promise<void> {
    this.startedAt = this.clock.now();
    this.syncClusters();
    this.runner.start();
    const off = this.o.supers.onChange(() => this.queue.add(CLUSTERS_KEY));
    if (off) this.unsubscribe.push(off);
    let replaying = true;
    this.unsubscribe.push(
      this.o.tenants.subscribe((e) => {
        if (e.type === 'upsert') {
          if (replaying) this.awaiting.add(e.tenant.key);
          this.sessions.upsert(e.tenant).catch((err: unknown) => {
            log.error({ tenant: e.tenant.key, err }, 'tenant could not be served; skipped until reported again');
          });
        } else {
          this.awaiting.delete(e.key);
          this.forgetTenant(e.key);
          void this.sessions.remove(e.key);
        }
      }),
    );
    replaying = false;
    const every = this.o.publishIntervalMs ?? SCHEDULER_DEFAULTS.publishIntervalMs;
    if (this.o.publish) {
      const tick = async () => {
        await this.readState();
        await this.publish();
      };
      this.publishTimer = setInterval(() => void tick(), every);
      this.publishTimer.unref();
      void tick();
    }
    log.info({ policy: this.policy }, 'scheduler started');
  }

  /** stop stops the workers, the tenants' informers and the super clusters' node informers. */
  async stop(): Promise<void> {
    clearInterval(this.publishTimer);
    this.counted.clear();
    for (const off of this.unsubscribe) off();
    this.unsubscribe = [];
    await this.runner.stop();
    await this.sessions.removeAll();
    await Promise.all([...this.nodes.values()].map((n) => n.informer.stop()));
    this.nodes.clear();
    await this.publish();
  }

  /** capacity is the cache now: every super cluster with its allocatable, what is placed and what is free. */
  capacity(): Capacity {
    const out = new Map<string, ClusterCapacity>();
    const add = (name: string, state: ClusterState, allocatable: Resources) => {
      const u = this.usage.get(name) ?? { used: {}, placed: 0 };
      out.set(name, {
        name,
        state,
        allocatable,
        used: u.used,
        free: addTimes(allocatable, u.used, -1n),
        placed: u.placed,
      });
    };
    for (const c of this.clusters) add(c.name, this.effectiveState(c), this.allocatable.get(c.name) ?? {});
    for (const name of this.usage.keys()) if (!out.has(name)) add(name, 'deregistered', {});
    return out;
  }

  /** summary is what the state ConfigMap holds. */
  summary(): SchedulerState {
    const out = summarize(
      this.capacity(),
      [...this.records].map(([k, r]) => ({ tenant: splitKey(k)[0], sliced: r.sliced, placements: r.placements })),
    );
    return this.lastRebalance ? { ...out, rebalance: this.lastRebalance } : out;
  }

  /** tenantReady reports whether a tenant's caches have synced and its placements are counted. */
  tenantReady(key: string): boolean {
    return this.sessions.get(key)?.ready ?? false;
  }

  /**
   * readState reads the state ConfigMap and queues a rebalance when it holds a request not answered yet; a failed read
   * keeps the last one and is tried again at the next interval.
   */
  private async readState(): Promise<void> {
    const p = this.o.publish;
    if (!p) return;
    try {
      this.state = await p.client.getOrNull<StateMap>(R.configmaps, p.namespace, STATE_CONFIGMAP.name);
    } catch (err) {
      log.warn({ err }, 'could not read the scheduler state');
      return;
    }
    const raw = this.state?.metadata?.annotations?.[REBALANCE_REQUEST];
    if (raw !== undefined && raw !== this.lastRebalance?.request) this.queue.add(REBALANCE_KEY);
  }

  /** publish writes the summary ConfigMap when it changed; failures are logged and retried at the next interval. */
  async publish(): Promise<void> {
    const p = this.o.publish;
    if (!p) return;
    // The state holds the rebalance request answered last: read it back before it is written over.
    if (this.state === undefined) return;
    this.lastRebalance ??= answered(this.state?.data?.[STATE_CONFIGMAP.key]);
    const text = JSON.stringify(this.summary());
    if (text === this.lastPublished) return;
    try {
      await p.client.apply(
        R.configmaps,
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: STATE_CONFIGMAP.name, namespace: p.namespace },
          data: { [STATE_CONFIGMAP.key]: text },
        } as KubeObject,
        FIELD_MANAGER,
      );
      this.lastPublished = text;
    } catch (err) {
      log.warn({ err }, 'could not publish the scheduler state');
    }
  }

  private nodesListed(c: RegisteredSuperCluster): boolean {
    return this.nodes.get(c.name)?.informer.hasSynced() ?? false;
  }

  private effectiveState(c: RegisteredSuperCluster): ClusterState {
    // A ready registration whose Nodes are not listed yet has no known room: no new placements until they are.
    if (c.state === 'ready' && !this.nodesListed(c)) return 'unreachable';
    return c.state;
  }

  private enqueueFor(s: TenantSession, resource: string, obj: KubeObject): void {
    const m = obj.metadata ?? {};
    const ns = resource === 'namespaces' ? m.name : m.namespace;
    if (ns) this.queue.add(`${s.tenant.key}/${ns}`);
  }

  // served counts a tenant's placements before any of its keys is reconciled: from its record in the meta cluster,
  // which the tenant cannot reach (a signed annotation it wrote back after a move would verify), or, for a tenant
  // that has none yet (placed by a scheduler before records), from the signed annotations, then recorded.
  private served(s: TenantSession): void {
    const records = this.o.records;
    if (!records) return this.count(s, undefined);
    records.load(s.tenant.key).then(
      (entries) => this.sessions.get(s.tenant.key) === s && this.count(s, entries),
      (err: unknown) => {
        if (this.sessions.get(s.tenant.key) !== s) return;
        if (err instanceof RecordError) {
          log.error(
            { tenant: s.tenant.key, err: err.message },
            'placement record unreadable: counted from signed annotations',
          );
          return this.count(s, undefined);
        }
        log.warn({ tenant: s.tenant.key, err }, 'could not read the placement record; trying again');
        setTimeout(() => this.sessions.get(s.tenant.key) === s && this.served(s), RECORD_RETRY_MS).unref();
      },
    );
  }

  private count(s: TenantSession, entries: RecordEntries | undefined): void {
    const fromAnnotations: Array<[string, RecordEntry]> = [];
    for (const ns of s.cache.list<Obj>(R.namespaces)) {
      const name = ns.metadata!.name!;
      const key = `${s.tenant.key}/${name}`;
      const placements = entries ? parsedOrNone(name, recordedValue(entries, ns)) : this.signedPlacements(s, ns);
      if (!entries && placements.size > 0)
        fromAnnotations.push([name, { uid: ns.metadata!.uid!, placements: formatPlacements(placements) }]);
      const { slice, quota } = this.readUnit(s, ns);
      this.setRecord(key, { uid: ns.metadata!.uid!, sliced: !!slice, unit: unitOf({ slice, quota }), placements });
    }
    this.counted.add(s.tenant.key);
    const records = this.o.records;
    for (const [name, e] of fromAnnotations)
      records?.set(s.tenant.key, name, e).catch((err: unknown) => {
        log.warn(
          { tenant: s.tenant.key, namespace: name, err },
          'could not record a placement; written at its next reconcile',
        );
      });
    if (this.awaiting.delete(s.tenant.key) && this.awaiting.size === 0) log.info('every tenant known at start counted');
    for (const k of this.waiting) this.queue.add(k);
  }

  private forgetTenant(tenant: string): void {
    this.counted.delete(tenant);
    this.o.records?.forget(tenant);
    for (const key of [...this.records.keys()]) if (key.startsWith(`${tenant}/`)) this.setRecord(key, undefined);
    for (const key of [...this.pods.keys()]) if (key.startsWith(`${tenant}/`)) this.pods.delete(key);
    for (const key of [...this.waiting]) if (key.startsWith(`${tenant}/`)) this.waiting.delete(key);
    for (const key of [...this.rebalanced.keys()]) if (key.startsWith(`${tenant}/`)) this.rebalanced.delete(key);
    this.roomChanged();
  }

  private setRecord(key: string, rec: NamespaceRec | undefined): void {
    const old = this.records.get(key);
    if (old) this.account(old, -1n);
    if (rec) {
      this.records.set(key, rec);
      this.account(rec, 1n);
    } else this.records.delete(key);
  }

  private account(rec: NamespaceRec, sign: bigint): void {
    for (const [name, n] of rec.placements) {
      const u = this.usage.get(name) ?? { used: {}, placed: 0 };
      const next = { used: addTimes(u.used, rec.unit, sign * BigInt(n)), placed: u.placed + Number(sign) * n };
      if (next.placed === 0) this.usage.delete(name);
      else this.usage.set(name, next);
    }
  }

  private roomChanged(): void {
    for (const k of this.waiting) this.queue.add(k);
  }

  private signedPlacements(s: TenantSession, ns: Obj): Placements {
    return parsedOrNone(ns.metadata!.name!, signedValue(this.o.signingKey, s.tenant.key, ns, PLACEMENTS, 'Namespace'));
  }

  private readUnit(s: TenantSession, ns: Obj): { slice?: Resources; quota?: Resources; error?: Error } {
    const name = ns.metadata!.name!;
    const out: { slice?: Resources; quota?: Resources; error?: Error } = {};
    const raw = ns.metadata?.annotations?.[SLICE];
    try {
      if (raw !== undefined) out.slice = parseSlice(`namespace ${name}`, raw);
      // Several ResourceQuotas all apply: the namespace may use, per resource, the least of them.
      for (const rq of s.cache.list<Obj>(R.resourcequotas, name)) {
        const hard = (rq.spec as { hard?: Record<string, string> } | undefined)?.hard ?? {};
        const r = quotaResources(`resourcequota ${name}/${rq.metadata!.name}`, hard);
        const merged: Record<string, Milli> = { ...(out.quota ?? {}) };
        for (const [k, v] of Object.entries(r)) if (merged[k] === undefined || v < merged[k]) merged[k] = v;
        out.quota = merged;
      }
    } catch (e) {
      if (e instanceof AnnotationError || e instanceof ResourceError) out.error = e;
      else throw e;
    }
    return out;
  }

  private async reconcile(key: string): Promise<Result> {
    if (key === CLUSTERS_KEY) return this.syncClusters();
    if (key === REBALANCE_KEY) return this.reconcileRebalance();
    if (key.startsWith('@cluster/')) return this.syncNodes(key.slice('@cluster/'.length));
    return this.reconcileNamespace(key);
  }

  // syncClusters follows the registrations: node informers for those with a client, and every namespace looked at
  // again, since a state change (draining, ready again) may move or place slices.
  private syncClusters(): void {
    const before = JSON.stringify(this.clusters.map((c) => [c.name, c.state]));
    this.clusters = this.o.supers.list();
    const names = new Set(this.clusters.map((c) => c.name));
    for (const c of this.clusters) {
      const have = this.nodes.get(c.name);
      if (have && have.client === c.client) continue;
      if (have) void have.informer.stop();
      this.nodes.delete(c.name);
      if (!c.client) continue;
      const informer: SharedInformer<Obj> =
        this.o.superInformers?.(c.client).informer<Obj>({ resource: R.nodes }) ??
        new Informer<Obj>({ client: c.client, resource: R.nodes, name: `super/${c.name}/nodes` });
      const enqueue = () => this.queue.add(clusterKey(c.name));
      informer.addHandler({ onAdd: enqueue, onUpdate: enqueue, onDelete: enqueue });
      this.nodes.set(c.name, { client: c.client, informer });
      informer.start();
      void informer.waitForSync().then(enqueue);
    }
    for (const [name, n] of this.nodes)
      if (!names.has(name)) {
        void n.informer.stop();
        this.nodes.delete(name);
        this.allocatable.delete(name);
      }
    if (JSON.stringify(this.clusters.map((c) => [c.name, c.state])) !== before)
      for (const k of this.records.keys()) this.queue.add(k);
  }

  private syncNodes(name: string): void {
    const n = this.nodes.get(name);
    if (!n?.informer.hasSynced()) return;
    let sum: Resources;
    try {
      sum = sumAllocatable(
        n.informer
          .list()
          .filter(isReadyNode)
          .map((node) => ({ name: node.metadata!.name!, allocatable: node.status?.allocatable ?? {} })),
      );
    } catch (err) {
      log.warn({ superCluster: name, err }, 'a node of the super cluster has an unreadable allocatable; skipped');
      return;
    }
    const old = this.allocatable.get(name);
    if (old && sameResources(old, sum)) return;
    this.allocatable.set(name, sum);
    log.info({ superCluster: name, nodes: n.informer.list().length }, 'super cluster capacity changed');
    // Room appeared (or a first list arrived): waiting namespaces and those draining onto others try again.
    this.roomChanged();
    if (!old) for (const k of this.records.keys()) this.queue.add(k);
  }

  /** homeOf is the home super cluster of a tenant from the placements of its other namespaces placed whole. */
  private homeOf(tenant: string, key: string): string | undefined {
    const whole = new Map<string, Placements>();
    for (const [k, r] of this.records)
      if (k !== key && !r.sliced && r.placements.size > 0 && k.startsWith(`${tenant}/`))
        whole.set(k.slice(tenant.length + 1), r.placements);
    return homeOf(whole);
  }

  private pinned(s: TenantSession): string | undefined {
    return this.o.pinnedOf ? this.o.pinnedOf(s.tenant) : s.tenant.superCluster;
  }

  private async reconcileNamespace(key: string): Promise<Result> {
    const [tenant, name] = splitKey(key);
    const s = this.sessions.get(tenant);
    if (!s?.ready) return;
    if (!this.counted.has(tenant)) return { requeueAfter: RECORD_RETRY_MS };
    const ns = s.cache.get<Obj>(R.namespaces, undefined, name);
    if (!ns) {
      await this.o.records?.set(tenant, name, undefined);
      this.setRecord(key, undefined);
      this.pods.delete(key);
      this.waiting.delete(key);
      this.rebalanced.delete(key);
      this.roomChanged();
      return;
    }
    const uid = ns.metadata!.uid!;
    let rec = this.records.get(key);
    if (rec && rec.uid !== uid) {
      this.setRecord(key, undefined);
      rec = undefined;
    }
    const signed = this.signedPlacements(s, ns);
    const placements = rec?.placements ?? signed;
    const { slice, quota, error } = this.readUnit(s, ns);
    if (error) {
      await this.writer.warn(s, ns, 'InvalidSchedulingInput', error.message);
      await this.writer.setCondition(s, ns, 'False', 'InvalidSchedulingInput', error.message);
      return;
    }
    rec = { uid, rv: rec?.rv, sliced: !!slice, unit: unitOf({ slice, quota }), placements };
    this.setRecord(key, rec);
    if (ns.metadata?.deletionTimestamp) return;

    // Decide in one synchronous step against the cache, reserving at once.
    const pinned = this.pinned(s);
    let next = placements;
    const evictFrom = new Set<string>();
    const capacity = this.capacity();
    let stuck = '';
    if ([...placements.keys()].some((c) => capacity.get(c)?.state === 'draining')) {
      const dr = drainPlacements(capacity, rec.unit, placements, this.policy, pinned);
      next = dr.placements;
      for (const c of placements.keys()) if (capacity.get(c)?.state === 'draining' && !next.has(c)) evictFrom.add(c);
      stuck = [...dr.stuck].map(([c, n]) => `${n} slice(s) on draining ${c}`).join(', ');
    }
    this.setRecord(key, { ...rec, placements: next });
    const decidedAt = this.clock.now();
    const home = slice ? undefined : this.homeOf(tenant, key);
    const d = placeNamespace(
      this.capacity(),
      { key, slice, quota, pinned, placements: next, ...(home !== undefined && { home }) },
      this.policy,
    );
    this.stats.namespaceDecisions++;
    // Until every tenant known at start is counted, the cache may miss placements, and until every ready super
    // cluster's Nodes are listed it misses room: nothing new is handed out (a placement made then would crowd the
    // clusters listed first, and placed slices move only when drained or rebalanced on request).
    const grows = (d.kind === 'placed' && d.added.size > 0) || !samePlacements(next, placements);
    if (grows && this.warming()) {
      this.setRecord(key, rec);
      return { requeueAfter: 500 };
    }
    if (stuck)
      await this.writer.warn(
        s,
        ns,
        'DrainBlocked',
        `namespace ${name}: ${stuck} found no room elsewhere; they stay, with their Pods`,
      );
    if (d.kind === 'placed') {
      this.waiting.delete(key);
      next = d.placements;
      this.setRecord(key, { ...rec, placements: next });
    } else {
      this.waiting.add(key);
      this.stats.unschedulable++;
      await this.writer.warn(s, ns, d.reason, d.message);
      await this.writer.setCondition(s, ns, 'False', d.reason, d.message);
    }
    const value = formatPlacements(next);
    // The record is what the syncers follow: kept equal to the decision whatever the annotation says (a record
    // write that failed, as when a tenant of an earlier version was first recorded, is made here again).
    try {
      await this.o.records?.set(tenant, name, next.size > 0 ? { uid, placements: value } : undefined);
    } catch (e) {
      this.setRecord(key, { ...rec, placements });
      throw e;
    }
    const annotated = ns.metadata?.annotations?.[PLACEMENTS];
    // The cache may not show the scheduler's own last write yet: only a new decision is written then.
    const lagging = rec.rv !== undefined && olderThan(ns.metadata?.resourceVersion, rec.rv);
    const differs = annotated !== value || !samePlacements(signed, next);
    if (next.size > 0 && differs && (!lagging || !samePlacements(placements, next))) {
      try {
        const rv = await this.writer.writeNamespace(s, ns, value);
        this.setRecord(key, { ...rec, placements: next, rv });
      } catch (e) {
        // Give the reservation back unless the record holds it: the syncers follow the record, and the next try
        // writes the annotation again from it; else it decides again from what the tenant shows.
        if (!this.o.records) this.setRecord(key, { ...rec, placements });
        throw e;
      }
      if (!samePlacements(placements, next))
        this.o.observe?.({ kind: 'namespace', key, superClusters: [...next.keys()], decidedAt });
      // (A rebalance changed the record before this write: what the annotation said was the scheduler's own.)
      if (annotated !== undefined && !samePlacements(signed, placements) && !this.rebalanced.has(key))
        await this.writer.warn(
          s,
          ns,
          'PlacementsOverwritten',
          `namespace ${name}: ${PLACEMENTS} ${annotated} was not written by the scheduler; replaced by ${value}`,
        );
      if (evictFrom.size) this.roomChanged();
    } else if (next.size === 0 && annotated !== undefined && !lagging) {
      await this.writer.clearNamespace(s, ns);
      await this.writer.warn(
        s,
        ns,
        'PlacementsOverwritten',
        `namespace ${name}: ${PLACEMENTS} ${annotated} was not written by the scheduler; removed (namespace not placed)`,
      );
    }
    if (d.kind === 'placed') await this.writer.setCondition(s, ns, 'True', 'Placed', `placed: ${value}`);
    // A rebalance's move is written: its Event, then the Pods that must go.
    const moved = this.rebalanced.get(key);
    if (moved && !moved.announced) {
      moved.announced = true;
      await this.writer.event(s, ns, 'Normal', 'Rebalanced', moved.message);
    }
    const result = await reconcilePods(
      this.podContext,
      s,
      key,
      name,
      { slice, placements: next },
      evictFrom,
      moved?.trim,
    );
    // Trimmed without a failure: done with this move (a failed eviction throws and is retried).
    if (moved && this.rebalanced.get(key) === moved) this.rebalanced.delete(key);
    return result;
  }

  // warming tells whether the cache may still miss placements (tenants known at start not counted) or room (ready
  // super clusters whose Nodes are not listed), within the startup grace.
  private warming(): boolean {
    const partial = this.awaiting.size > 0 || this.clusters.some((c) => c.state === 'ready' && !this.nodesListed(c));
    return partial && this.clock.now() - this.startedAt < this.graceMs();
  }

  // reconcileRebalance answers a new rebalance request on the state ConfigMap: it plans the moves against the cache
  // (rebalance.ts) and, unless a dry run, reserves them at once in the namespaces' records, in the same synchronous
  // step, then lets each namespace's reconcile write its placements and evict its Pods, as a drain does.
  private async reconcileRebalance(): Promise<Result> {
    const p = this.o.publish;
    const cm = this.state;
    if (!p || !cm) return;
    const object = `configmap ${p.namespace}/${STATE_CONFIGMAP.name}`;
    // A restarted scheduler knows the request it answered last from the published state.
    this.lastRebalance ??= answered(cm.data?.[STATE_CONFIGMAP.key]);
    const raw = cm.metadata?.annotations?.[REBALANCE_REQUEST];
    if (raw === undefined || raw === this.lastRebalance?.request) return;
    if (this.warming()) return { requeueAfter: 500 };
    const handledAt = new Date().toISOString();
    let req;
    try {
      req = parseRebalanceRequest(object, raw);
    } catch (e) {
      if (!(e instanceof AnnotationError)) throw e;
      this.lastRebalance = { request: raw, handledAt, policy: this.policy, dryRun: true, moves: [], remaining: 0 };
      this.lastRebalance.error = e.message;
      await this.metaEvent(cm, 'Warning', 'InvalidRebalanceRequest', e.message);
      await this.publish();
      return;
    }
    const namespaces: RebalanceNamespace[] = [];
    for (const [key, r] of this.records) {
      const [tenant, name] = splitKey(key);
      const s = this.sessions.get(tenant);
      const ns = s?.ready ? s.cache.get<Obj>(R.namespaces, undefined, name) : undefined;
      // A namespace being deleted, or of a tenant not served, stays where it is (its use still counts).
      const fixed = !s || !ns || !!ns.metadata?.deletionTimestamp;
      const pinned = s && this.pinned(s);
      namespaces.push({
        key,
        sliced: r.sliced && !fixed,
        unit: r.unit,
        placements: r.placements,
        ...(pinned !== undefined && { pinned }),
      });
    }
    const capacity = this.capacity();
    const all = planRebalance(capacity, namespaces, this.policy, MAX_MOVES).moves.length;
    const plan = planRebalance(capacity, namespaces, this.policy, req.maxMoves);
    const report: RebalanceReport = {
      request: raw,
      requestedAt: req.requestedAt,
      handledAt,
      policy: this.policy,
      dryRun: req.dryRun,
      maxMoves: req.maxMoves,
      moves: plan.moves.map((m) => ({
        tenant: splitKey(m.key)[0],
        namespace: splitKey(m.key)[1],
        from: m.from,
        to: m.to,
      })),
      remaining: all - plan.moves.length,
    };
    if (!req.dryRun)
      for (const [key, next] of plan.placements) {
        const rec = this.records.get(key)!;
        if (samePlacements(rec.placements, next)) continue;
        const trim = new Set([...rec.placements].filter(([c, n]) => (next.get(c) ?? 0) < n).map(([c]) => c));
        for (const c of this.rebalanced.get(key)?.trim ?? []) trim.add(c);
        this.setRecord(key, { ...rec, placements: next });
        const mine = plan.moves.filter((m) => m.key === key);
        this.rebalanced.set(key, {
          trim,
          message:
            `namespace ${splitKey(key)[1]}: rebalance (${this.policy}, requested at ${req.requestedAt}) moved ` +
            `${describeMoves(mine)}; placements now ${formatPlacements(next)}`,
        });
        this.queue.add(key);
      }
    this.lastRebalance = report;
    // Room moved between super clusters: namespaces waiting for room try again.
    if (!req.dryRun && plan.moves.length) this.roomChanged();
    const listed = plan.moves.length ? `: ${describeMoves(plan.moves, true)}` : '';
    const left = report.remaining ? `; ${report.remaining} more move(s) past maxMoves ${req.maxMoves}` : '';
    const what = `${req.dryRun ? 'dry run: would move' : 'moved'} ${plan.moves.length} slice(s)${listed}${left}`;
    log.info({ requestedAt: req.requestedAt, dryRun: req.dryRun, moves: plan.moves.length }, `rebalance: ${what}`);
    await this.metaEvent(
      cm,
      'Normal',
      req.dryRun ? 'RebalancePlanned' : 'Rebalanced',
      `rebalance (${this.policy}, requested at ${req.requestedAt}): ${what}`,
    );
    await this.publish();
  }

  private async metaEvent(
    cm: Obj,
    type: 'Normal' | 'Warning',
    reason: (typeof REBALANCE_REASONS)[number],
    message: string,
  ): Promise<void> {
    const p = this.o.publish!;
    const m = cm.metadata!;
    const err = await recordEvent(
      p.client,
      { apiVersion: 'v1', kind: 'ConfigMap', name: m.name!, namespace: m.namespace, uid: m.uid },
      type,
      reason,
      message,
      FIELD_MANAGER,
    );
    if (err) log.warn({ err: err.message, reason }, 'could not record event');
  }

  private graceMs(): number {
    return this.o.startupGraceMs ?? SCHEDULER_DEFAULTS.startupGraceMs;
  }

  private clusterState(name: string): ClusterState | undefined {
    const c = this.clusters.find((x) => x.name === name);
    return c && this.effectiveState(c);
  }
}

/** StateMap is the state ConfigMap as the scheduler reads it back. */
type StateMap = Obj & { data?: Record<string, string> };

// describeMoves writes moves for messages: `1 slice r1->r2` per pair of super clusters, optionally naming the namespace.
function describeMoves(moves: readonly Move[], named = false): string {
  const count = new Map<string, number>();
  for (const m of moves) {
    const k = `${named ? `${m.key} ` : ''}${m.from}->${m.to}`;
    count.set(k, (count.get(k) ?? 0) + 1);
  }
  return [...count].map(([k, n]) => `${n} slice(s) ${k}`).join(', ');
}

// answered reads the request the published state answered last, so a restarted scheduler does not run it again.
function answered(text: string | undefined): RebalanceReport | undefined {
  try {
    const r = (JSON.parse(text ?? '') as { rebalance?: RebalanceReport }).rebalance;
    return typeof r?.request === 'string' ? r : undefined;
  } catch {
    return undefined;
  }
}

/** RECORD_RETRY_MS is how soon a placement record that could not be read is read again. */
const RECORD_RETRY_MS = 1000;

/** parsedOrNone parses a PLACEMENTS value; none, or one that does not parse, is no placement. */
function parsedOrNone(namespace: string, value: string | undefined): Placements {
  if (value === undefined) return new Map();
  try {
    return parsePlacements(`namespace ${namespace}`, value);
  } catch {
    return new Map();
  }
}
