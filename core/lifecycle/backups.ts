import { backupTenant, isSnapshotter, restoreTenant, type Snapshotter } from '../backup/backup.ts';
import type { Retention, SnapshotMeta, SnapshotReason } from '../backup/catalog.ts';
import { resolvePolicy, type TenantPolicy } from '../tenancy/policy.ts';
import { backupSettingsOf, nextAutomatic, restoreRefusal, retainedFate, type BackupSettings } from './backuppolicy.ts';
import { dropRetained, listRetained, readRetained, writeRetained } from './retained.ts';
import {
  BACKUP_REQUEST_ANNOTATION,
  BACKUP_RESULT_ANNOTATION,
  CATALOG_KEY,
  catalogName,
  pendingAction,
  requestToken,
  type BackupAction,
  type BackupResult,
} from '../backup/requests.ts';
import type { BackupStore } from '../backup/store.ts';
import type { ProvisionerType, VirtualCluster } from '../api/virtualcluster.ts';
import { VC_API_VERSION } from './ownership.ts';
import { EventRecorder } from '../controller/events.ts';
import { queueMetrics } from '../controller/metrics.ts';
import { Runner, type Result } from '../controller/runner.ts';
import type { KubeClient, KubeObject } from '../kube/client.ts';
import { InformerFactory, type SharedInformer } from '../kube/factory.ts';
import { objectKey } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { IDENTITY, LABEL, rootNamespace } from '../names/names.ts';
import type { Provisioner } from '../provisioners/provisioner.ts';
import { WorkQueue } from '../queue/workqueue.ts';
import { defaultProvisioner } from '../tenancy/defaults.ts';

const log = childLogger({ controller: 'backups' });

/** NOT_RUNNING_RECHECK_MS is how soon a request for a tenant that is not Running yet is looked at again. */
const NOT_RUNNING_RECHECK_MS = 2000;

/** UNSETTLED_RECHECK_MS is how soon a tenant whose git revision is still being applied is looked at again. */
const UNSETTLED_RECHECK_MS = 2000;

/** NO_STORE answers requests to a manager configured without a store. */
const NO_STORE = 'this manager keeps no backups: its configuration sets no /backups/directory';

/** BackupControllerOptions configure the BackupController. */
export interface BackupControllerOptions {
  meta: KubeClient;
  informers?: InformerFactory;
  provisioners: Partial<Record<string, Provisioner>>;
  /** the provisioner of a VirtualCluster that names none, as the VirtualCluster controller picks it */
  defaultProvisioner?: ProvisionerType;
  /** the platform's store; absent, every request is answered with an error saying so */
  store?: BackupStore;
  /** the platform's retention, applied after every snapshot unless the tenant's TenantPolicy sets its own */
  retention?: Retention;
  /** how often the records of tenants deleted under Retain are looked at for expiry (default 60 s) */
  sweepMs?: number;
}

/** settingsFor resolves a VirtualCluster's backup settings from its TenantPolicy (listed now when none are given). */
async function settingsFor(
  o: BackupControllerOptions,
  vc: VirtualCluster,
  policies?: readonly TenantPolicy[],
): Promise<BackupSettings> {
  const known = policies ?? (await o.meta.list<TenantPolicy>(R.tenantpolicies)).items;
  const r = resolvePolicy(vc, known);
  const policy = 'policy' in r ? r.policy : undefined;
  return backupSettingsOf(vc.spec, policy?.spec?.backup, o.retention);
}

/**
 * snapshotBeforeDeletion takes the snapshot a VirtualCluster being deleted gets before its control plane is removed
 * (reason deletion), once: a second call finds it by the VirtualCluster's uid and takes none. It returns the snapshot
 * id, or undefined when there is no store or the provisioner cannot snapshot; a failed snapshot throws.
 */
export async function snapshotBeforeDeletion(
  o: BackupControllerOptions,
  vc: VirtualCluster,
): Promise<string | undefined> {
  const m = vc.metadata!;
  const store = o.store;
  const type = vc.spec?.provisioner?.type ?? defaultProvisioner(o.defaultProvisioner, Object.keys(o.provisioners));
  const p = type ? o.provisioners[type] : undefined;
  if (!store || !isSnapshotter(p)) return undefined;
  const settings = await settingsFor(o, vc);
  // Delete means the tenant goes for good now: nothing of it is kept, so nothing can bring it back by surprise.
  if (settings.deletionPolicy === 'Delete') return undefined;
  let id = (await store.list({ namespace: m.namespace!, name: m.name! })).find(
    (x) => x.reason === 'deletion' && x.tenant.uid === m.uid,
  )?.id;
  if (!id) {
    id = (await takeSnapshot(o, vc, p, store, 'deletion', settings.retention)).meta.id;
    await writeCatalog(o.meta, vc, store);
    log.info({ vc: objectKey(vc), snapshot: id }, 'snapshot taken before deletion');
  }
  const now = new Date();
  const record = {
    uid: m.uid!,
    snapshot: id,
    deletedAt: now.toISOString(),
    until: new Date(now.getTime() + settings.retainForMs).toISOString(),
  };
  // A second pass (the finalizer's retry) keeps the first record's times.
  const had = await readRetained(o.meta, m.namespace!, m.name!);
  if (had?.record.uid !== m.uid) await writeRetained(o.meta, { namespace: m.namespace!, name: m.name!, record });
  return id;
}

/**
 * snapshotBeforeUpgrade takes the snapshot (reason upgrade) a tenant gets before its control plane moves from one
 * Kubernetes minor to the next, so that `vc restore NAME --from ID` can bring back the data of the older version. It
 * returns the snapshot id, or undefined when there is no store or the provisioner cannot snapshot; a failure throws.
 */
export async function snapshotBeforeUpgrade(
  o: BackupControllerOptions,
  vc: VirtualCluster,
  from: string,
): Promise<string | undefined> {
  const store = o.store;
  const type = vc.spec?.provisioner?.type ?? defaultProvisioner(o.defaultProvisioner, Object.keys(o.provisioners));
  const p = type ? o.provisioners[type] : undefined;
  if (!store || !isSnapshotter(p)) return undefined;
  // The version the snapshot's data was written by is the one running now, whatever the health monitor saw last.
  const { retention } = await settingsFor(o, vc);
  const { meta } = await takeSnapshot(o, vc, p, store, 'upgrade', retention, from);
  await writeCatalog(o.meta, vc, store);
  log.info({ vc: objectKey(vc), snapshot: meta.id, from }, 'snapshot taken before an upgrade');
  return meta.id;
}

/**
 * takeSnapshot snapshots one tenant with the metadata the meta cluster knows (git revision, Kubernetes version: `version`
 * when given, else the one the health monitor last saw).
 */
async function takeSnapshot(
  o: BackupControllerOptions,
  vc: VirtualCluster,
  s: Snapshotter,
  store: BackupStore,
  reason: SnapshotReason,
  retention: Retention | undefined,
  version?: string,
) {
  const m = vc.metadata!;
  const gitRevision = (await gitRevisionOf(o.meta, vc))?.applied;
  const kubernetesVersion = version ?? kubernetesVersionOf(vc);
  return backupTenant(s, store, {
    vc,
    root: rootNamespace(m.namespace!, m.name!, m.uid!),
    reason,
    ...(gitRevision && { gitRevision }),
    ...(kubernetesVersion && { kubernetesVersion }),
    ...(retention && { retention }),
  });
}

/** ManagedFieldsEntry is the part of a managedFields entry read here. */
type ManagedFieldsEntry = { manager?: string; operation?: string; subresource?: string; time?: string };

/** fieldsTime is the latest time (ms) of the managedFields entries that match, or undefined. */
function fieldsTime(o: KubeObject, match: (e: ManagedFieldsEntry) => boolean): number | undefined {
  const entries = ((o.metadata as { managedFields?: ManagedFieldsEntry[] } | undefined)?.managedFields ?? []).filter(
    (e) => match(e) && e.time,
  );
  return entries.length ? Math.max(...entries.map((e) => Date.parse(e.time!))) : undefined;
}

/**
 * gitRevisionOf is the last applied revision of the GitSource whose label the VirtualCluster carries, and whether the
 * VirtualCluster runs what that revision defines (settled): the source finished with it (its last attempted revision
 * is the same) and wrote that status no earlier than the applier last changed the VirtualCluster. The applier writes a
 * source's status once, at the end of each run, so a spec change of a run still going is not settled. The times are in
 * seconds: a run whose apply falls in the same second as the previous run's status write is taken for settled, and its
 * snapshot names the previous revision (the one at or before which `vc restore --to-revision` looks).
 */
async function gitRevisionOf(
  meta: KubeClient,
  vc: VirtualCluster,
): Promise<{ applied: string; settled: boolean } | undefined> {
  const label = vc.metadata?.labels?.[LABEL.gitSource];
  if (!label) return undefined;
  type Status = { lastAppliedRevision?: string; lastAttemptedRevision?: string };
  const sources = await meta.list<KubeObject & { status?: Status }>(GITSOURCES).catch(() => undefined);
  const src = sources?.items.find((g) => `${g.metadata?.namespace}.${g.metadata?.name}` === label);
  const applied = src?.status?.lastAppliedRevision;
  if (!applied) return undefined;
  const statusAt = fieldsTime(src, (e) => e.subresource === 'status');
  const specAt = fieldsTime(vc, (e) => e.manager === IDENTITY.gitops && e.operation === 'Apply');
  const after = statusAt !== undefined && (specAt === undefined || statusAt >= specAt);
  return { applied, settled: src.status?.lastAttemptedRevision === applied && after };
}

/**
 * catalogObject is the catalog ConfigMap of a tenant's snapshots. deploy/policy/manager-scope.yaml lets the manager
 * write it beside the VirtualCluster by its name and managed-by label (it has no owner, to outlive the tenant).
 */
export function catalogObject(vc: { namespace: string; name: string }, metas: readonly SnapshotMeta[]): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: catalogName(vc.name),
      namespace: vc.namespace,
      labels: { [LABEL.managedBy]: IDENTITY.manager },
    },
    data: { [CATALOG_KEY]: JSON.stringify(metas) },
  } as KubeObject;
}

/** writeCatalog puts the store's list of the tenant's snapshots into its catalog ConfigMap, and returns it. */
async function writeCatalog(
  meta: KubeClient,
  vc: Pick<VirtualCluster, 'metadata'>,
  store: BackupStore,
): Promise<SnapshotMeta[]> {
  const m = vc.metadata!;
  const tenant = { namespace: m.namespace!, name: m.name! };
  const metas: SnapshotMeta[] = await store.list(tenant);
  await meta.apply(R.configmaps, catalogObject(tenant, metas), IDENTITY.manager);
  return metas;
}

const GITSOURCES = {
  group: 'tenancy.x-k8s.io',
  version: 'v1alpha1',
  resource: 'gitsources',
  kind: 'GitSource',
  namespaced: true,
} as const;

/**
 * BackupController answers the backup requests written on VirtualClusters (core/backup/requests.ts: create, delete,
 * restore) with the tenant's provisioner and the platform's store, keeps the catalog ConfigMap next to each
 * VirtualCluster in line with the store, and writes the answer, an event and the catalog once per request. It is
 * level-triggered: a request whose token the answer already names is done, so a second run changes nothing.
 */
export class BackupController {
  private readonly informer: SharedInformer<VirtualCluster>;
  private readonly policies: SharedInformer<TenantPolicy>;
  /** the store's snapshots of each tenant (namespace/name) as last listed or written by this controller */
  private readonly catalogs = new Map<string, SnapshotMeta[]>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private readonly queue = new WorkQueue({ metrics: queueMetrics('backups') });
  private readonly runner: Runner;
  private readonly events: EventRecorder;
  private readonly defaultProvisioner: string | undefined;

  constructor(private readonly o: BackupControllerOptions) {
    this.defaultProvisioner = defaultProvisioner(
      o.defaultProvisioner,
      Object.keys(o.provisioners).filter((k) => o.provisioners[k]),
    );
    const informers = o.informers ?? new InformerFactory(o.meta, 'backups');
    this.informer = informers.informer<VirtualCluster>({ resource: R.virtualclusters });
    this.policies = informers.informer<TenantPolicy>({ resource: R.tenantpolicies });
    // Every VirtualCluster: a request, a schedule, a revision or a retained record may concern it.
    const enqueue = (vc: KubeObject) => this.queue.add(objectKey(vc));
    this.informer.addHandler({ onAdd: enqueue, onUpdate: (_a, b) => enqueue(b) });
    const all = () => this.informer.list().forEach(enqueue);
    this.policies.addHandler({ onAdd: all, onUpdate: all, onDelete: all });
    this.runner = new Runner({
      name: 'backups',
      queue: this.queue,
      concurrency: 2,
      reconciler: { reconcile: (k) => this.reconcile(k) },
    });
    this.events = new EventRecorder({
      client: o.meta,
      component: IDENTITY.manager,
      apiVersion: VC_API_VERSION,
      kind: 'VirtualCluster',
      log,
    });
  }

  /** start syncs the cache and starts the workers. */
  async start(): Promise<void> {
    // A store that can check itself (an object store: bucket and key pair) says at start what is wrong; the tenants
    // run on either way, and each request is answered with the same error until the setting is fixed.
    const check = (this.o.store as { check?: () => Promise<void> } | undefined)?.check;
    if (check)
      await check
        .call(this.o.store)
        .catch((e: unknown) => log.error({ err: e }, `backup store unusable: ${(e as Error).message}`));
    this.informer.start();
    this.policies.start();
    await Promise.all([this.informer.waitForSync(), this.policies.waitForSync()]);
    this.runner.start();
    const every = this.o.sweepMs ?? 60_000;
    const tick = () => {
      this.sweeping = this.sweep()
        .catch((e: unknown) => log.warn({ err: e }, 'retained tenants not looked at'))
        .finally(() => {
          this.sweeping = undefined;
          if (this.sweepTimer) this.sweepTimer = setTimeout(tick, every);
        });
    };
    this.sweepTimer = setTimeout(tick, every);
  }

  /** stop stops the sweep, the workers and the informers. */
  async stop(): Promise<void> {
    clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
    await this.sweeping;
    await this.runner.stop();
    await this.informer.stop();
    await this.policies.stop();
  }

  /**
   * sweep looks at every tenant deleted under Retain: past its time its deletion snapshot and record go for good; a
   * VirtualCluster made again under its name is queued, and its reconcile brings the data back.
   */
  private async sweep(): Promise<void> {
    const store = this.o.store;
    for (const t of await listRetained(this.o.meta)) {
      const current = this.informer.get(`${t.namespace}/${t.name}`);
      const fate = retainedFate(
        t.record,
        new Date(),
        current?.metadata?.uid ? { uid: current.metadata.uid } : undefined,
      );
      if (fate === 'restore') this.queue.add(`${t.namespace}/${t.name}`);
      if (fate !== 'expire') continue;
      if (store) {
        const tenant = { namespace: t.namespace, name: t.name };
        if ((await store.list(tenant)).some((s) => s.id === t.record.snapshot))
          await store.delete(tenant, t.record.snapshot);
        this.catalogs.set(`${t.namespace}/${t.name}`, await writeCatalog(this.o.meta, { metadata: tenant }, store));
      }
      await dropRetained(this.o.meta, t.namespace, t.name, t.record.uid);
      log.info({ vc: `${t.namespace}/${t.name}`, uid: t.record.uid }, 'retained tenant data removed after its grace');
    }
  }

  /** snapshotterOf is the provisioner of a VirtualCluster when it can snapshot, or why it cannot. */
  private snapshotterOf(vc: VirtualCluster): Snapshotter | string {
    const type = vc.spec?.provisioner?.type ?? this.defaultProvisioner;
    const p = type ? this.o.provisioners[type] : undefined;
    if (!p) return `no provisioner ${type ?? '(none named)'} in this manager`;
    return isSnapshotter(p) ? p : `the ${type} provisioner cannot take or restore etcd snapshots yet`;
  }

  private async reconcile(key: string): Promise<Result> {
    const vc = this.informer.get(key);
    if (!vc || vc.metadata?.deletionTimestamp) return;
    const action = pendingAction(vc.metadata?.annotations);
    if (action === undefined) return this.automatic(vc);
    const token = requestToken(vc.metadata?.annotations);
    if (typeof action === 'string') return this.answer(vc, { token, ok: false, message: action });
    if (vc.status?.phase !== 'Running') return { requeueAfter: NOT_RUNNING_RECHECK_MS };
    const store = this.o.store;
    if (!store) return this.answer(vc, { token, ok: false, message: NO_STORE });
    const s = this.snapshotterOf(vc);
    if (typeof s === 'string') return this.answer(vc, { token, ok: false, message: s });
    let result: Omit<BackupResult, 'at'>;
    try {
      result = { token, ok: true, ...(await this.act(vc, s, store, action)) };
    } catch (e) {
      result = { token, ok: false, message: e instanceof Error ? e.message : String(e) };
    }
    this.catalogs.set(key, await writeCatalog(this.o.meta, vc, store));
    return this.answer(vc, result);
  }

  /**
   * automatic is what a Running tenant gets without asking: the data of its deleted predecessor under the same name
   * when that was retained, then a snapshot per changing git revision and per schedule (core/lifecycle/backuppolicy.ts).
   */
  private async automatic(vc: VirtualCluster): Promise<Result> {
    const store = this.o.store;
    if (vc.status?.phase !== 'Running' || !store) return;
    const s = this.snapshotterOf(vc);
    if (typeof s === 'string') return;
    const m = vc.metadata!;
    const key = objectKey(vc);
    const retained = await readRetained(this.o.meta, m.namespace!, m.name!);
    if (retained && retainedFate(retained.record, new Date(), { uid: m.uid! }) === 'restore') {
      const root = rootNamespace(m.namespace!, m.name!, m.uid!);
      const tenant = { namespace: m.namespace!, name: m.name! };
      try {
        await assertRestorable(store, tenant, retained.record.snapshot, vc);
        await restoreTenant(s, store, { vc, root, id: retained.record.snapshot, from: tenant });
      } catch (e) {
        const msg = `the retained data of ${key} (snapshot ${retained.record.snapshot}) did not come back: ${(e as Error).message}`;
        await this.events.record(vc, 'Warning', 'RetainedRestoreFailed', msg);
        return { requeueAfter: 30_000 };
      }
      await dropRetained(this.o.meta, m.namespace!, m.name!, retained.record.uid);
      const msg = `made again within its grace: restored from snapshot ${retained.record.snapshot} of the deleted one`;
      await this.events.record(vc, 'Normal', 'RetainedRestored', msg);
      log.info({ vc: key, snapshot: retained.record.snapshot }, msg);
    }
    const settings = await settingsFor(this.o, vc, this.policies.list());
    if (settings.scheduleError)
      await this.events.record(
        vc,
        'Warning',
        'BackupScheduleInvalid',
        `no scheduled snapshots: ${settings.scheduleError}`,
      );
    let catalog = this.catalogs.get(key);
    if (!catalog) this.catalogs.set(key, (catalog = await store.list({ namespace: m.namespace!, name: m.name! })));
    const revision = settings.onRevision ? await gitRevisionOf(this.o.meta, vc) : undefined;
    const d = nextAutomatic({
      now: new Date(),
      uid: m.uid!,
      createdAt: new Date(m.creationTimestamp ?? Date.now()),
      spec: vc.spec,
      ...(revision?.settled && { appliedRevision: revision.applied }),
      catalog,
      settings,
    });
    if (d.take) {
      const { meta, removed } = await takeSnapshot(this.o, vc, s, store, d.take, settings.retention);
      this.catalogs.set(key, await writeCatalog(this.o.meta, vc, store));
      const dropped = removed.length ? `; retention removed ${removed.join(', ')}` : '';
      const at = meta.gitRevision ? ` at revision ${meta.gitRevision}` : '';
      await this.events.record(vc, 'Normal', 'SnapshotTaken', `${d.take} snapshot ${meta.id}${at}${dropped}`);
      log.info({ vc: key, snapshot: meta.id, reason: d.take }, 'automatic snapshot taken');
    }
    // A revision still being applied gives no event here when its run ends: look again shortly.
    const unsettled = (revision && !revision.settled) || d.awaitingRevision;
    const recheck = unsettled ? Math.min(d.recheckMs ?? UNSETTLED_RECHECK_MS, UNSETTLED_RECHECK_MS) : d.recheckMs;
    return recheck !== undefined ? { requeueAfter: recheck } : undefined;
  }

  /** act does what the request asks and returns the message and snapshot of the answer. */
  private async act(
    vc: VirtualCluster,
    s: Snapshotter,
    store: BackupStore,
    a: BackupAction,
  ): Promise<{ message: string; snapshot?: string }> {
    const m = vc.metadata!;
    const tenant = { namespace: m.namespace!, name: m.name! };
    if (a.action === 'create') {
      const { retention } = await settingsFor(this.o, vc, this.policies.list());
      const { meta, removed } = await takeSnapshot(this.o, vc, s, store, 'manual', retention);
      const dropped = removed.length ? `; retention removed ${removed.join(', ')}` : '';
      return { message: `snapshot ${meta.id} taken (${meta.sizeBytes} bytes)${dropped}`, snapshot: meta.id };
    }
    if (a.action === 'delete') {
      const have = await store.list(tenant);
      if (!have.some((x) => x.id === a.snapshot))
        throw new Error(`snapshot ${a.snapshot} of ${tenant.namespace}/${tenant.name} is not in ${store.describe}`);
      await store.delete(tenant, a.snapshot!);
      return { message: `snapshot ${a.snapshot} deleted`, snapshot: a.snapshot! };
    }
    const from = { namespace: tenant.namespace, name: a.from ?? tenant.name };
    const root = rootNamespace(m.namespace!, m.name!, m.uid!);
    await assertRestorable(store, from, a.snapshot!, vc);
    const meta = await restoreTenant(s, store, { vc, root, id: a.snapshot!, from });
    log.info({ vc: objectKey(vc), snapshot: meta.id, from: `${from.namespace}/${from.name}` }, 'tenant restored');
    return { message: `restored from snapshot ${meta.id} of ${from.namespace}/${from.name}`, snapshot: meta.id };
  }

  /** answer records the result on the VirtualCluster (guarded by its uid) and as an event. */
  private async answer(vc: VirtualCluster, r: Omit<BackupResult, 'at'>): Promise<Result> {
    const m = vc.metadata!;
    const value = JSON.stringify({ ...r, at: new Date().toISOString() } satisfies BackupResult);
    await this.o.meta.patch(
      R.virtualclusters,
      m.namespace!,
      m.name!,
      { metadata: { uid: m.uid, annotations: { [BACKUP_RESULT_ANNOTATION]: value } } },
      'merge',
      { fieldManager: IDENTITY.manager },
    );
    await this.events.record(
      vc,
      r.ok ? 'Normal' : 'Warning',
      r.ok ? 'BackupRequestDone' : 'BackupRequestFailed',
      r.message,
    );
    if (!r.ok) log.warn({ vc: objectKey(vc), request: m.annotations?.[BACKUP_REQUEST_ANNOTATION] }, r.message);
  }
}

/**
 * assertRestorable throws, before anything is stopped, when the snapshot's Kubernetes version cannot go into the
 * tenant as it runs now (restoreRefusal); a snapshot the store does not list is left to the restore to report.
 */
async function assertRestorable(
  store: BackupStore,
  from: { namespace: string; name: string },
  id: string,
  vc: VirtualCluster,
): Promise<void> {
  const meta = (await store.list(from)).find((x) => x.id === id);
  const refusal = meta && restoreRefusal(meta, kubernetesVersionOf(vc));
  if (refusal) throw new Error(refusal);
}

/** kubernetesVersionOf is the version the tenant's apiserver last reported to the health monitor. */
function kubernetesVersionOf(vc: VirtualCluster): string | undefined {
  return vc.status?.components?.find((c) => c.name === 'kube-apiserver')?.version;
}
