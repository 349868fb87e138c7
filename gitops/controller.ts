import { createHash } from 'node:crypto';
import { Counter } from 'prom-client';
import { EventRecorder } from '../core/controller/events.ts';
import { queueMetrics } from '../core/controller/metrics.ts';
import { Runner, type Result } from '../core/controller/runner.ts';
import { setCondition, StatusWriter, type ConditionInput } from '../core/controller/status.ts';
import { isNotFound, type KubeClient, type KubeObject } from '../core/kube/client.ts';
import { Informer, objectKey } from '../core/kube/informer.ts';
import { R } from '../core/kube/resources.ts';
import { childLogger } from '../core/log.ts';
import { IDENTITY } from '../core/names/names.ts';
import { registry } from '../core/metrics/registry.ts';
import { WorkQueue } from '../core/queue/workqueue.ts';
import type { Artifact } from './artifact.ts';
import { Applier } from './applier/applier.ts';
import { GITSOURCES, reconcileOptionsFor, type GitSource, type GitSourceStatus } from './applier/gitsource.ts';
import { SOURCE_LABEL, describeRef, sourceLabelValue } from './applier/objects.ts';
import { scopeOf, type ScopePolicy } from './applier/scope.ts';
import type { AddressPolicy } from './source/address.ts';
import { credentialHosts } from './source/credentials.ts';
import type { SourceError } from './source/errors.ts';
import {
  descentBase,
  ownsRecord,
  readRecord,
  recordedData,
  recordName,
  recordObject,
  type AppliedRecord,
  type ConfigMapObject,
  type RecordData,
} from './record.ts';
import { ALLOW_REVISION_ANNOTATION } from './source/history.ts';
import { SourcePoller } from './source/poller.ts';
import { GitSourceFetcher, type Credentials, type GitRef, type SourceLimits } from './source/source.ts';
import type { VerifyKeys } from './source/verify.ts';
import { startWebhookReceiver, type WebhookReceiver, type WebhookRoute } from './source/webhook.ts';

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

/** parseDuration reads `90s`, `1m`, `1h30m`, `500ms` into milliseconds. */
export function parseDuration(s: string | undefined, fallbackMs: number): number {
  if (!s) return fallbackMs;
  let total = 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  let m: RegExpExecArray | null;
  let matched = '';
  while ((m = re.exec(s))) {
    total += Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
    matched += m[0];
  }
  return matched === s && total > 0 ? total : fallbackMs;
}

/**
 * GitOpsController keeps the meta cluster equal to the git repositories GitSources name. Each GitSource gets a
 * poller (the producer: cheap ref listing, depth-1 fetch only when the ref moved, immutable artifacts) whose newest
 * artifact is handed to the applier (the consumer: validate, server-side apply, inventory, guarded prune). A failed
 * poll never reaches the applier, so it never prunes. The newest artifact is re-applied every interval and whenever
 * an object it owns is changed or deleted by hand, which puts drift back. Status is written once per reconcile.
 */
export class GitOpsController {
  private readonly sources: Informer<GitSource>;
  private readonly owned: Informer;
  private readonly queue = new WorkQueue({ metrics: queueMetrics('gitops') });
  private readonly runner: Runner;
  private readonly fetcher: GitSourceFetcher;
  private readonly state = new Map<string, SourceState>();
  private receiver?: WebhookReceiver;
  private receiverPort: number;
  private routesKey = '';
  private readonly status: StatusWriter<GitSourceStatus>;
  private readonly events: EventRecorder;

  constructor(private readonly o: GitOpsOptions) {
    this.fetcher = new GitSourceFetcher({
      cacheRoot: o.cacheRoot,
      timeoutMs: o.timeoutMs,
      addresses: o.addresses,
      limits: o.limits,
    });
    this.receiverPort = o.webhook?.port ?? 0;
    this.sources = new Informer<GitSource>({ client: o.meta, resource: GITSOURCES, name: 'gitsources' });
    const enqueue = (gs: KubeObject) => this.queue.add(objectKey(gs));
    this.sources.addHandler({ onAdd: enqueue, onUpdate: (_a, b) => enqueue(b), onDelete: enqueue });
    // Objects a source applied: a hand edit or deletion requeues their source at once.
    this.owned = new Informer({
      client: o.meta,
      resource: R.virtualclusters,
      name: 'gitops-owned',
      labelSelector: SOURCE_LABEL,
    });
    const back = (obj: KubeObject) => {
      const label = obj.metadata?.labels?.[SOURCE_LABEL];
      for (const gs of this.sources.list()) if (sourceLabelValue(gs.metadata) === label) this.queue.add(objectKey(gs));
    };
    this.owned.addHandler({ onUpdate: (_a, b) => back(b), onDelete: back });
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
    for (const s of this.state.values()) s.poller.stop();
    this.state.clear();
    await this.runner.stop();
    await Promise.all([this.sources.stop(), this.owned.stop()]);
    await this.receiver?.close();
  }

  /** webhookURL is where a GitSource's git host should send push notifications. */
  webhookURL(namespace: string, name: string): string | undefined {
    return this.receiver?.url(hookPath(namespace, name));
  }

  private async reconcile(key: string): Promise<Result> {
    const gs = this.sources.get(key);
    if (!gs) {
      this.state.get(key)?.poller.stop();
      this.state.delete(key);
      await this.refreshWebhooks();
      return;
    }
    const interval = this.interval(gs).ms;
    let st: SourceState;
    try {
      st = await this.ensureState(key, gs);
    } catch (e) {
      await this.status.write(gs, stalled(gs, 'InvalidSpec', e instanceof Error ? e.message : String(e)));
      return { requeueAfter: interval };
    }
    if (gs.spec.suspend) {
      st.poller.suspend();
      await this.status.write(
        gs,
        reported(
          st,
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
      await this.status.write(gs, reported(st, stalled(gs, error.reason, error.message)));
      return { requeueAfter: interval };
    }
    if (!st.artifact) return;
    const report = await st.applier.reconcile(st.artifact, gs.status, reconcileOptionsFor(gs));
    report.status.artifact = { revision: st.artifact.revision, digest: st.artifact.digest };
    const r = report.result;
    const keep: RecordData = {};
    if (!r.stop && report.status.lastAppliedRevision === st.artifact.revision) keep.revision = st.artifact.revision;
    if (r.confirmationUsed) keep.confirmation = r.confirmationUsed;
    if (keep.revision || keep.confirmation) await this.keepRecord(gs, st, keep);
    await this.status.write(gs, reported(st, report.status));
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
    return { requeueAfter: interval };
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
          this.queue.add(key);
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
        this.queue.add(key);
      },
      onError: (e) => {
        progress.error = e;
        sourceErrors.inc({ source: key, reason: e.reason });
        this.queue.add(key);
      },
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
    st.poller.start();
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

  /**
   * keepRecord writes the revision just applied (which the next revision must descend from) and the deletion
   * confirmation just used to the GitSource's record (gitops/record.ts), keeping what it already holds. It never takes
   * over a ConfigMap of that name it did not write for this GitSource; a failed write is reported as an event, and the
   * record is kept in memory all the same.
   */
  private async keepRecord(gs: GitSource, st: SourceState, update: RecordData): Promise<void> {
    const had = recordedData(st.record);
    const next: RecordData = { ...had, ...update };
    if (st.record.kind === 'present' && had.revision === next.revision && had.confirmation === next.confirmation)
      return;
    st.record = { kind: 'present', ...next };
    const want = recordObject(gs, next);
    const { namespace, name } = want.metadata as { namespace: string; name: string };
    try {
      const cur = await this.o.meta.getOrNull<ConfigMapObject>(R.configmaps, namespace, name);
      if (!cur) {
        await this.o.meta.create(R.configmaps, want, { fieldManager: IDENTITY.gitops });
      } else if (ownsRecord(cur, gs)) {
        await this.o.meta.update(R.configmaps, { ...cur, data: want.data }, { fieldManager: IDENTITY.gitops });
      } else {
        const found = readRecord(cur, gs);
        await this.events.record(
          gs,
          'Warning',
          'RecordRefused',
          `${found.kind === 'foreign' ? found.why : ''}; not overwritten, so after a restart the next revision needs ${ALLOW_REVISION_ANNOTATION}`,
        );
      }
    } catch (e) {
      log.warn(
        { gitSource: `${gs.metadata.namespace}/${gs.metadata.name}`, err: e instanceof Error ? e.message : String(e) },
        'writing the applied record failed',
      );
      await this.events.record(
        gs,
        'Warning',
        'RecordFailed',
        `could not write ConfigMap ${namespace}/${name}: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }

  /** interval is the poll interval of a GitSource: its own, but never below the platform's floor. */
  private interval(gs: GitSource): { ms: number; raised: boolean } {
    const asked = parseDuration(gs.spec.interval, 60_000);
    const floor = this.o.minIntervalMs ?? MIN_INTERVAL_DEFAULT_MS;
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

function hookPath(namespace: string, name: string): string {
  return `/hook/${namespace}/${name}`;
}

function gitRefOf(gs: GitSource): GitRef {
  const r = gs.spec.ref;
  if (r.branch) return { branch: r.branch };
  if (r.tag) return { tag: r.tag };
  if (r.semver) return { semver: r.semver };
  if (r.commit) return { commit: r.commit };
  throw new Error('spec.ref names no branch, tag, semver range or commit');
}

function sameSource(prev: SourceState, gs: GitSource): boolean {
  return !!prev.artifact && prev.artifact.url === gs.spec.url;
}

function secretValue(s: { data?: Record<string, string> }, key: string): string | undefined {
  const v = s.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
}

/**
 * credentialsOf reads the credentials of spec.secretRef: only from a Secret marked as git credentials, and only for
 * the hosts it names (gitops/source/credentials.ts); the fetcher sends them nowhere else.
 */
function credentialsOf(gs: GitSource, s: KubeObject & { data?: Record<string, string> }): Credentials {
  const hosts = credentialHosts(s, gs.spec.url);
  const token = secretValue(s, 'token');
  if (token) return { token, username: secretValue(s, 'username'), hosts };
  const username = secretValue(s, 'username');
  const password = secretValue(s, 'password');
  if (username && password) return { username, password, hosts };
  throw new Error(
    `Secret ${gs.metadata.namespace}/${gs.spec.secretRef!.name} needs keys username and password, or token (spec.secretRef)`,
  );
}

function verifyKeysOf(s: { data?: Record<string, string> }): VerifyKeys {
  const values = Object.keys(s.data ?? {}).map((k) => secretValue(s, k)!);
  return {
    openpgp: values.filter((v) => v.includes('BEGIN PGP PUBLIC KEY')),
    ssh: values.filter((v) => !v.includes('BEGIN PGP')),
  };
}

/** withCondition is the GitSource's status with one condition set (at its generation). */
function withCondition(gs: GitSource, c: Omit<ConditionInput, 'observedGeneration'>): GitSourceStatus {
  const old = gs.status ?? {};
  const generation = gs.metadata.generation;
  return {
    ...old,
    observedGeneration: generation,
    conditions: setCondition(old.conditions, { ...c, observedGeneration: generation }),
  };
}

/**
 * reported is a status to write with lastAppliedRevision and lastHandledConfirmation from the manager's record,
 * whatever status said before.
 */
function reported(st: SourceState, status: GitSourceStatus): GitSourceStatus {
  const d = recordedData(st.record);
  const out: GitSourceStatus = d.revision ? { ...status, lastAppliedRevision: d.revision } : { ...status };
  // The handled confirmation is reported from the record only: a value found in status that the record does not hold
  // (written there by a status writer) is removed, null being a deletion in the status merge patch.
  if (d.confirmation) out.lastHandledConfirmation = d.confirmation;
  else if (out.lastHandledConfirmation !== undefined) out.lastHandledConfirmation = null;
  return out;
}

/** stalled keeps the last applied revision and inventory, and says why the source cannot go on. */
function stalled(gs: GitSource, reason: string, message: string): GitSourceStatus {
  const s = withCondition(gs, { type: 'Ready', status: 'False', reason, message });
  const others = (s.conditions ?? []).filter((x) => x.type !== 'Reconciling');
  return {
    ...s,
    conditions: setCondition(others, {
      type: 'Stalled',
      status: 'True',
      reason,
      message,
      observedGeneration: gs.metadata.generation,
    }),
  };
}
