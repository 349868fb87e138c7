// Over 500 lines, on purpose: the GitSource controller is one reconcile (state, suspend, dependencies, fetch result,
// apply, health, record, events) over the per-source state its pollers feed. What has a job of its own is apart:
// sourcestatus.ts, recordwriter.ts, health.ts, notify/, sourcespec.ts and the applier and source folders.
import { createHash } from 'node:crypto';
import { Counter } from 'prom-client';
import { EventRecorder } from '../core/controller/events.ts';
import { queueMetrics } from '../core/controller/metrics.ts';
import { Runner, type Result } from '../core/controller/runner.ts';
import { StatusWriter } from '../core/controller/status.ts';
import { isNotFound, type KubeClient, type KubeObject } from '../core/kube/client.ts';
import { OwnStatus, statusOnly } from '../core/controller/predicates.ts';
import { InformerFactory, type SharedInformer } from '../core/kube/factory.ts';
import { objectKey } from '../core/kube/informer.ts';
import { R } from '../core/kube/resources.ts';
import { childLogger } from '../core/log.ts';
import { IDENTITY } from '../core/names/names.ts';
import { registry } from '../core/metrics/registry.ts';
import { realClock } from '../core/queue/clock.ts';
import { BucketRateLimiter } from '../core/queue/ratelimiter.ts';
import { WorkQueue } from '../core/queue/workqueue.ts';
import type { Artifact } from './artifact.ts';
import { Applier } from './applier/applier.ts';
import {
  GITSOURCE_FINALIZER,
  GITSOURCES,
  RECONCILE_ANNOTATION,
  reconcileOptionsFor,
  type GitSource,
  type GitSourceStatus,
} from './applier/gitsource.ts';
import {
  dependencyGate,
  dependencyRefs,
  HEALTH_TIMEOUT_DEFAULT_MS,
  objectHealth,
  healthRecheck,
  readiness,
  withHealth,
  withReadiness,
} from './health.ts';
import { SOURCE_LABEL, describeRef, sourceLabelValue } from './applier/objects.ts';
import { scopeOf, type ScopePolicy } from './applier/scope.ts';
import type { AddressPolicy } from './source/address.ts';
import type { SourceError } from './source/errors.ts';
import {
  descentBase,
  readRecord,
  recordName,
  type AppliedRecord,
  type ConfigMapObject,
  type RecordData,
} from './record.ts';
import { Notifier } from './notify/notifier.ts';
import { keepRecord } from './recordwriter.ts';
import { ALLOW_REVISION_ANNOTATION } from './source/history.ts';
import { SourcePoller } from './source/poller.ts';
import { GitSourceFetcher, type SourceLimits } from './source/source.ts';
import { startWebhookReceiver, type WebhookReceiver, type WebhookRoute } from './source/webhook.ts';
import { credentialsOf, gitRefOf, hookPath, secretValue, verifyKeysOf } from './sourcespec.ts';
import { handled, healthChanged, parseDuration, reported, stalled, waiting, withCondition } from './sourcestatus.ts';

const log = childLogger({ controller: 'gitops' });

const sourceErrors = new Counter({
  name: 'vc_gitops_source_errors_total',
  help: 'Failed polls of a git source, by reason.',
  labelNames: ['source', 'reason'],
  registers: [registry],
});

/** GitOpsOptions configure the GitSource controller. */
export interface GitOpsOptions {
  /** the meta cluster: GitSources, their Secrets and the VirtualClusters they define */
  meta: KubeClient;
  /** the meta cluster's shared informers (the VirtualCluster controller's, in a manager); default: own */
  informers?: InformerFactory;
  /** directory of the bare repository caches */
  cacheRoot: string;
  /** where the webhook receiver listens (default 127.0.0.1 and a free port) */
  webhook?: { host?: string; port?: number };
  /** default timeout of network calls to git servers */
  timeoutMs?: number;
  /** which private addresses git servers may have (manager configuration gitops.allowPrivateAddresses); default none */
  addresses?: AddressPolicy;
  /** caps on the work of one revision (gitops.limits) */
  limits?: SourceLimits;
  /** the shortest poll interval a GitSource gets (gitops.minIntervalSeconds; default MIN_INTERVAL_DEFAULT_MS) */
  minIntervalMs?: number;
  /** what each GitSource may write (gitops.policy, and which sources the configuration declares) */
  scope?: ScopePolicy;
}

/** MIN_INTERVAL_DEFAULT_MS is the platform's default floor of poll intervals, as in the manager configuration schema. */
export const MIN_INTERVAL_DEFAULT_MS = 10_000;

/**
 * POLL_BURST is how many polls of one GitSource may start back to back (webhooks, `vc reconcile`) before they wait for
 * the floor: one each minIntervalMs, as a token bucket refills.
 */
export const POLL_BURST = 5;

/**
 * SourceProgress is what the controller knows of one GitSource apart from its poller: the poller's callbacks read and
 * write it, so it exists before the poller does.
 */
interface SourceProgress {
  specHash: string;
  applier: Applier;
  artifact?: Artifact;
  error?: SourceError;
  webhook?: WebhookRoute;
  /** the ALLOW_REVISION_ANNOTATION value a poll was last triggered for */
  allowTriggered?: string;
  /** uid of the GitSource this state is for */
  uid?: string;
  /** the revision last applied in full and since when: the health timeout counts from then */
  applied?: { revision: string; at: number };
  /** the last full reconcile: a health-only pass may stand in for another until the interval is over */
  lastFull?: { at: number; digest: string; generation?: number; ok: boolean };
  /**
   * the last applied revision as the manager knows it: read from its record when the state is made, then set by each
   * apply (also when writing the record failed: what this process applied is known without it)
   */
  record: AppliedRecord;
}

/** SourceState is a GitSource's progress together with the poller that feeds it. */
interface SourceState extends SourceProgress {
  poller: SourcePoller;
}

/**
 * GitOpsController keeps the meta cluster equal to the git repositories GitSources name. Each GitSource gets a
 * poller (the producer: cheap ref listing, depth-1 fetch only when the ref moved, immutable artifacts) whose newest
 * artifact is handed to the applier (the consumer: validate, server-side apply, inventory, guarded prune). A failed
 * poll never reaches the applier, so it never prunes. The newest artifact is re-applied every interval and whenever
 * an object it owns is changed or deleted by hand, which puts drift back. Status is written once per reconcile.
 */
export class GitOpsController {
  private readonly sources: SharedInformer<GitSource>;
  private readonly owned: SharedInformer<KubeObject>;
  private readonly queue = new WorkQueue({ metrics: queueMetrics('gitops') });
  private readonly runner: Runner;
  private readonly fetcher: GitSourceFetcher;
  private readonly state = new Map<string, SourceState>();
  private receiver?: WebhookReceiver;
  private receiverPort: number;
  /**
   * sources queued for a full reconcile; one queued only because a VirtualCluster it applied changed its status (or
   * by a retry) may instead have its health checked without an apply (checkHealth says when)
   */
  private readonly full = new Set<string>();
  private routesKey = '';
  /** set by stop: a reconcile still in flight starts no poller */
  private stopping = false;
  private readonly status: StatusWriter<GitSourceStatus>;
  /** the status last written per source: its echo is no reason to reconcile the source again */
  private readonly ownStatus = new OwnStatus();
  private readonly events: EventRecorder;
  private readonly notifier: Notifier;

  constructor(private readonly o: GitOpsOptions) {
    this.fetcher = new GitSourceFetcher({
      cacheRoot: o.cacheRoot,
      timeoutMs: o.timeoutMs,
      addresses: o.addresses,
      limits: o.limits,
    });
    this.receiverPort = o.webhook?.port ?? 0;
    const informers = o.informers ?? new InformerFactory(o.meta, 'gitops');
    this.sources = informers.informer<GitSource>({ resource: GITSOURCES });
    const enqueue = (gs: KubeObject) => this.requeue(objectKey(gs));
    // A source's readiness gates those that depend on it: they are queued when it changes.
    const dependents = (gs: KubeObject) => {
      const k = objectKey(gs);
      for (const other of this.sources.list())
        if (dependencyRefs(other).some((d) => `${d.namespace}/${d.name}` === k)) this.requeue(objectKey(other));
    };
    // The echo of the controller's own status write applies nothing again (else each write queued one more full
    // reconcile, whose apply could still be in flight when the source and a tenant it made were deleted, and make that
    // tenant again); it still gates the dependents. A spec, metadata or someone else's status change runs it fully.
    this.sources.addHandler({
      onAdd: (gs) => (enqueue(gs), dependents(gs)),
      onUpdate: (a, b) => {
        if (!statusOnly(a, b) || !this.ownStatus.isOwn(objectKey(b), b.status)) enqueue(b);
        dependents(b);
      },
      onDelete: (gs) => (enqueue(gs), dependents(gs)),
    });
    // Objects a source applied: a hand edit or deletion requeues their source at once. The VirtualClusters are the
    // shared cache's (the lifecycle controller reads the same), those without the source label are passed over.
    this.owned = informers.informer({ resource: R.virtualclusters });
    const back = (obj: KubeObject, healthOnly = false) => {
      const label = obj.metadata?.labels?.[SOURCE_LABEL];
      if (label === undefined) return;
      for (const gs of this.sources.list()) {
        if (sourceLabelValue(gs.metadata) !== label) continue;
        const k = objectKey(gs);
        if (healthOnly) this.queue.add(k);
        else this.requeue(k);
      }
    };
    // A status write (the lifecycle controller's) is no edit of what the source applied, but may change its health.
    this.owned.addHandler({
      onUpdate: (a, b) => (statusOnly(a, b) ? (healthChanged(a, b) ? back(b, true) : undefined) : back(b)),
      onDelete: (o) => back(o),
    });
    this.runner = new Runner({
      name: 'gitops',
      queue: this.queue,
      concurrency: 2,
      reconciler: { reconcile: (k) => this.reconcile(k) },
    });
    this.status = new StatusWriter({ client: o.meta, resource: GITSOURCES, fieldManager: IDENTITY.gitops });
    this.events = new EventRecorder({
      client: o.meta,
      component: IDENTITY.gitops,
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      log,
    });
    this.notifier = new Notifier({
      events: this.events,
      secret: (gs, name) => this.secret(gs, name),
      addresses: o.addresses,
      timeoutMs: o.timeoutMs,
    });
  }

  /** writeStatus writes a GitSource's status and hands the change to the notifier. */
  private async writeStatus(gs: GitSource, status: GitSourceStatus): Promise<void> {
    const written = await this.status.write(gs, status);
    this.ownStatus.remember(objectKey(gs), written.status);
    this.notifier.written(gs, status);
  }

  /** start syncs the caches, starts the webhook receiver and the workers. */
  async start(): Promise<void> {
    this.sources.start();
    this.owned.start();
    await Promise.all([this.sources.waitForSync(), this.owned.waitForSync()]);
    await this.refreshWebhooks();
    this.runner.start();
  }

  /** stop stops pollers, workers, informers and the webhook receiver. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const s of this.state.values()) s.poller.stop();
    await this.runner.stop();
    // A reconcile that was in flight may have made a poller meanwhile (ensureState starts none once stopping, but
    // one it made before is in the map): none outlives the controller, or its next interval holds the process.
    for (const s of this.state.values()) s.poller.stop();
    this.state.clear();
    await Promise.all([this.sources.stop(), this.owned.stop()]);
    await this.receiver?.close();
    await this.notifier.stop();
  }

  /** requeue queues a full reconcile of a source (fetch result, apply, health). */
  private requeue(key: string): void {
    this.full.add(key);
    this.queue.add(key);
  }

  /** webhookURL is where a GitSource's git host should send push notifications. */
  webhookURL(namespace: string, name: string): string | undefined {
    return this.receiver?.url(hookPath(namespace, name));
  }

  private async reconcile(key: string): Promise<Result> {
    const gs = this.sources.get(key);
    if (!gs) return this.forget(key);
    // The queue never runs a key twice at once: past this point no reconcile of this source is applying anything, so
    // the finalizer can go and the deletion finish; what the source applied stays.
    if (gs.metadata.deletionTimestamp) {
      await this.forget(key);
      await this.release(gs);
      return;
    }
    await this.hold(gs);
    const interval = this.interval(gs).ms;
    let st: SourceState;
    try {
      st = await this.ensureState(key, gs);
    } catch (e) {
      await this.writeStatus(gs, stalled(gs, 'InvalidSpec', e instanceof Error ? e.message : String(e)));
      return { requeueAfter: interval };
    }
    if (gs.spec.suspend) {
      st.poller.suspend();
      await this.writeStatus(
        gs,
        reported(
          st.record,
          withCondition(gs, {
            type: 'Ready',
            status: 'Unknown',
            reason: 'Suspended',
            message: 'reconciliation is suspended',
          }),
        ),
      );
      return;
    }
    st.poller.resume();
    const gate = dependencyGate(gs, (k) => this.sources.get(k));
    if (gate) {
      const s = gate.cycle
        ? stalled(gs, 'DependencyCycle', gate.message)
        : waiting(gs, 'DependencyNotReady', gate.message);
      await this.writeStatus(gs, reported(st.record, s));
      return gate.cycle ? undefined : { requeueAfter: interval };
    }
    const requested = gs.metadata.annotations?.[RECONCILE_ANNOTATION];
    const handle = requested && requested !== gs.status?.lastHandledReconcileAt ? requested : undefined;
    // Asked for now: fetch at once (the poll's artifact or error lands in st before the apply below).
    if (handle) await st.poller.trigger();
    if (!this.full.delete(key) && !handle) {
      const checked = await this.checkHealth(gs, st, interval);
      if (checked !== false) return checked;
    }
    // The cache may not show the source's deletion yet (the deletion of a VirtualCluster it applied, seen on another
    // watch, queues a full reconcile first): a source that is gone applies nothing, or it would make that tenant again.
    if (!(await this.stillThere(gs))) return;
    // Set again once this full reconcile's status is written: a retry after a failure is a full one.
    st.lastFull = undefined;
    const allow = gs.metadata.annotations?.[ALLOW_REVISION_ANNOTATION];
    if (st.error?.reason === 'NotDescendant' && allow && allow !== st.allowTriggered) {
      st.allowTriggered = allow;
      void st.poller.trigger();
    }
    const error = st.error;
    if (error) {
      // The last good artifact is still re-applied (drift goes back); its prune set is the one already decided, so a
      // failing source can never cause a new deletion. A poll may clear st.error meanwhile: the error read here stays.
      if (st.artifact) await st.applier.reconcile(st.artifact, gs.status, reconcileOptionsFor(gs));
      await this.writeStatus(gs, handled(reported(st.record, stalled(gs, error.reason, error.message)), handle));
      return { requeueAfter: interval };
    }
    if (!st.artifact) return;
    const report = await st.applier.reconcile(st.artifact, gs.status, reconcileOptionsFor(gs));
    report.status.artifact = { revision: st.artifact.revision, digest: st.artifact.digest };
    const r = report.result;
    const now = Date.now();
    if (!r.stop) {
      if (st.applied?.revision !== st.artifact.revision) st.applied = { revision: st.artifact.revision, at: now };
      report.status = this.healthOf(gs, report.status, st.applied, now);
    }
    const keep: RecordData = {};
    if (!r.stop && report.status.lastAppliedRevision === st.artifact.revision) keep.revision = st.artifact.revision;
    if (r.confirmationUsed) keep.confirmation = r.confirmationUsed;
    if (keep.revision || keep.confirmation)
      st.record = await keepRecord({ meta: this.o.meta, events: this.events, log }, gs, st.record, keep);
    await this.writeStatus(gs, handled(reported(st.record, report.status), handle));
    st.lastFull = { at: now, digest: st.artifact.digest, generation: gs.metadata.generation, ok: !r.stop };
    if (r.applied.length || r.pruned.length) {
      await this.events.record(
        gs,
        'Normal',
        'Applied',
        `revision ${st.artifact.revision.slice(0, 12)}: ${r.applied.length} applied, ${r.pruned.length} pruned`,
      );
    }
    if (r.stop) await this.events.record(gs, 'Warning', r.stop.reason, r.stop.message);
    if (r.foreign.length) {
      const names = r.foreign.map(describeRef).join(', ');
      await this.events.record(
        gs,
        'Warning',
        'PruneRefused',
        `not this GitSource's to delete (outside its scope or not labelled as its own), forgotten: ${names}`,
      );
    }
    const recheck = st.applied && healthRecheck(report.status, st.applied.at, now, healthTimeoutOf(gs));
    return { requeueAfter: Math.min(recheck ?? interval, interval) };
  }

  /** forget stops a source's poller and drops what is known of it (deleted, or being deleted). */
  private async forget(key: string): Promise<void> {
    const [namespace = '', name = ''] = key.split('/');
    this.notifier.forget(namespace, name);
    this.ownStatus.forget(key);
    this.state.get(key)?.poller.stop();
    this.state.delete(key);
    await this.refreshWebhooks();
  }

  /** hold puts GITSOURCE_FINALIZER on a source that lacks it (conditional on its resourceVersion). */
  private async hold(gs: GitSource): Promise<void> {
    const m = gs.metadata;
    if (m.finalizers?.includes(GITSOURCE_FINALIZER)) return;
    await this.o.meta.patch(
      GITSOURCES,
      m.namespace,
      m.name,
      { metadata: { finalizers: [...(m.finalizers ?? []), GITSOURCE_FINALIZER], resourceVersion: m.resourceVersion } },
      'merge',
      { fieldManager: IDENTITY.manager },
    );
  }

  /** release takes GITSOURCE_FINALIZER off a deleted source, leaving others' finalizers as they are. */
  private async release(gs: GitSource): Promise<void> {
    const finalizers = gs.metadata.finalizers ?? [];
    if (!finalizers.includes(GITSOURCE_FINALIZER)) return;
    try {
      await this.o.meta.patch(
        GITSOURCES,
        gs.metadata.namespace,
        gs.metadata.name,
        [
          { op: 'test', path: '/metadata/finalizers', value: finalizers },
          { op: 'replace', path: '/metadata/finalizers', value: finalizers.filter((f) => f !== GITSOURCE_FINALIZER) },
        ],
        'json',
        { fieldManager: IDENTITY.manager },
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    log.info({ source: objectKey(gs) }, 'GitSource deleted: it applies nothing more, and what it applied stays');
  }

  /** stillThere reads the source from the API: false when it is gone, replaced (another uid) or being deleted. */
  private async stillThere(gs: GitSource): Promise<boolean> {
    const live = await this.o.meta.getOrNull<GitSource>(GITSOURCES, gs.metadata.namespace, gs.metadata.name);
    return !!live && live.metadata.uid === gs.metadata.uid && !live.metadata.deletionTimestamp;
  }

  /**
   * checkHealth re-judges the health of what the last full reconcile applied, without applying again, when that
   * reconcile succeeded on the same artifact and generation within the interval (then the result, a requeue when
   * spec.healthTimeout runs out before the interval); false when a full one is due instead.
   */
  private async checkHealth(gs: GitSource, st: SourceState, intervalMs: number): Promise<Result | false> {
    const last = st.lastFull;
    const now = Date.now();
    if (!last?.ok || !st.applied || st.error || !st.artifact || last.digest !== st.artifact.digest) return false;
    if (last.generation !== gs.metadata.generation || now - last.at >= intervalMs) return false;
    const status = this.healthOf(gs, { ...(gs.status ?? {}) }, st.applied, now);
    await this.writeStatus(gs, reported(st.record, status));
    const recheck = healthRecheck(status, st.applied.at, now, healthTimeoutOf(gs));
    return recheck === undefined ? undefined : { requeueAfter: Math.min(recheck, intervalMs) };
  }

  /** healthOf is a fully applied status with each inventory entry's health and the Ready verdict from them. */
  private healthOf(
    gs: GitSource,
    status: GitSourceStatus,
    applied: { revision: string; at: number },
    now: number,
  ): GitSourceStatus {
    const inventory = withHealth(status.inventory ?? [], (e) =>
      // ClusterVersions carry no status: the apply that just succeeded is their health.
      e.kind === 'VirtualCluster'
        ? objectHealth(e.kind, this.owned.get(`${e.namespace}/${e.name}`))
        : objectHealth(e.kind, { metadata: {} }),
    );
    const verdict = readiness(inventory, applied.revision, applied.at, now, healthTimeoutOf(gs));
    return withReadiness(gs.status?.conditions, status, inventory, verdict, new Date(now));
  }

  private async ensureState(key: string, gs: GitSource): Promise<SourceState> {
    const secrets = await Promise.all(
      [gs.spec.secretRef, gs.spec.verify?.secretRef, gs.spec.webhook?.secretRef].map((r) =>
        r ? this.secret(gs, r.name) : undefined,
      ),
    );
    const specHash = createHash('sha256')
      .update(JSON.stringify([gs.spec, secrets.map((s) => s?.metadata?.resourceVersion)]))
      .digest('hex');
    const existing = this.state.get(key);
    if (existing?.specHash === specHash) return existing;
    existing?.poller.stop();
    const known =
      existing?.uid === gs.metadata.uid && existing?.record.kind === 'present' && existing.record.revision
        ? existing.record
        : undefined;
    const record =
      known ??
      readRecord(
        await this.o.meta.getOrNull<ConfigMapObject>(R.configmaps, gs.metadata.namespace, recordName(gs.metadata.name)),
        gs,
      );
    const [creds, keys, hook] = secrets;
    const ref = gitRefOf(gs);
    const progress: SourceProgress = {
      specHash,
      applier: new Applier({
        client: this.o.meta,
        source: { namespace: gs.metadata.namespace, name: gs.metadata.name },
        scope: scopeOf(gs.metadata, this.o.scope),
        health: objectHealth,
      }),
      artifact: existing?.specHash && sameSource(existing, gs) ? existing.artifact : undefined,
      uid: gs.metadata.uid,
      record,
    };
    // A poll that reaches the server and finds the ref where the last artifact was clears an earlier fetch error:
    // the poller does not emit an unchanged revision again.
    const fetcher = {
      resolve: async (req: Parameters<GitSourceFetcher['resolve']>[0]) => {
        const r = await this.fetcher.resolve(req);
        if (
          progress.error &&
          progress.error.reason !== 'VerificationFailed' &&
          r.commit === progress.artifact?.revision
        ) {
          progress.error = undefined;
          this.requeue(key);
        }
        return r;
      },
      artifact: (...a: Parameters<GitSourceFetcher['artifact']>) => this.fetcher.artifact(...a),
    };
    const poller = new SourcePoller({
      fetcher,
      spec: {
        url: gs.spec.url,
        ref,
        path: gs.spec.path,
        intervalMs: this.interval(gs).ms,
        timeoutMs: parseDuration(gs.spec.timeout, 60_000),
        credentials: creds ? credentialsOf(gs, creds) : undefined,
        verify: keys ? verifyKeysOf(keys) : undefined,
        suspend: gs.spec.suspend,
        history: () => {
          const now = this.sources.get(key) ?? gs;
          const base = descentBase(
            progress.record,
            now.status?.lastAppliedRevision,
            `${gs.metadata.namespace}/${recordName(gs.metadata.name)}`,
          );
          const allowRevision = now.metadata.annotations?.[ALLOW_REVISION_ANNOTATION];
          return 'lost' in base ? { baseLost: base.lost, allowRevision } : { since: base.since, allowRevision };
        },
      },
      onArtifact: (a) => {
        progress.artifact = a;
        progress.error = undefined;
        this.requeue(key);
      },
      onError: (e) => {
        progress.error = e;
        sourceErrors.inc({ source: key, reason: e.reason });
        this.requeue(key);
      },
      // Webhooks and `vc reconcile` ask for polls too, and whoever owns the GitSource sends them: past a burst, polls
      // start no more often than the platform's floor, so a revision pushed and announced every second is applied at
      // that pace, not as fast as the author pushes (each revision may renew certificates or roll a control plane).
      limiter: new BucketRateLimiter(1000 / this.minIntervalMs(), POLL_BURST, realClock),
    });
    const st: SourceState = Object.assign(progress, { poller });
    if (hook && gs.spec.webhook) {
      const secret = secretValue(hook, 'token');
      if (!secret)
        throw new Error(
          `Secret ${gs.metadata.namespace}/${gs.spec.webhook.secretRef.name} has no key "token" (spec.webhook.secretRef)`,
        );
      st.webhook = {
        path: hookPath(gs.metadata.namespace, gs.metadata.name),
        kind: gs.spec.webhook.kind,
        secret,
        onTrigger: () => void poller.trigger(),
      };
    }
    this.state.set(key, st);
    await this.refreshWebhooks();
    if (!this.stopping) st.poller.start();
    const { ms, raised } = this.interval(gs);
    if (raised) {
      await this.events.record(
        gs,
        'Warning',
        'IntervalRaised',
        `spec.interval ${gs.spec.interval} is below the platform's minimum; polling every ${ms / 1000}s (gitops.minIntervalSeconds)`,
      );
    }
    return st;
  }

  /** minIntervalMs is the platform's floor of poll intervals (gitops.minIntervalSeconds). */
  private minIntervalMs(): number {
    return this.o.minIntervalMs ?? MIN_INTERVAL_DEFAULT_MS;
  }

  /** interval is the poll interval of a GitSource: its own, but never below the platform's floor. */
  private interval(gs: GitSource): { ms: number; raised: boolean } {
    const asked = parseDuration(gs.spec.interval, 60_000);
    const floor = this.minIntervalMs();
    return asked < floor ? { ms: floor, raised: true } : { ms: asked, raised: false };
  }

  private async secret(gs: GitSource, name: string): Promise<KubeObject & { data?: Record<string, string> }> {
    try {
      return await this.o.meta.get(R.secrets, gs.metadata.namespace, name);
    } catch (e) {
      if (isNotFound(e))
        throw new Error(`Secret ${gs.metadata.namespace}/${name} named by the GitSource does not exist`);
      throw e;
    }
  }

  /** refreshWebhooks restarts the receiver on the same port when the set of webhook routes changed. */
  private async refreshWebhooks(): Promise<void> {
    const routes = [...this.state.values()].flatMap((s) => (s.webhook ? [s.webhook] : []));
    const routesKey = JSON.stringify(routes.map((r) => [r.path, r.kind, r.secret]));
    if (this.receiver && routesKey === this.routesKey) return;
    await this.receiver?.close();
    this.receiver = await startWebhookReceiver({
      host: this.o.webhook?.host ?? '127.0.0.1',
      port: this.receiverPort,
      routes,
    });
    this.receiverPort = this.receiver.port;
    this.routesKey = routesKey;
  }
}

function sameSource(prev: SourceState, gs: GitSource): boolean {
  return !!prev.artifact && prev.artifact.url === gs.spec.url;
}

/** healthTimeoutOf is a source's spec.healthTimeout in milliseconds. */
const healthTimeoutOf = (gs: GitSource): number => parseDuration(gs.spec.healthTimeout, HEALTH_TIMEOUT_DEFAULT_MS);
