// The VirtualCluster controller: its watches (watches.ts), the steps of a reconcile in order over one Pass, run by
// runSteps (steps.ts), and the steps that share its state. Decisions are pure functions in decisions.ts; deletion is
// cleanup.ts, the writes into a tenant's apiserver tenantwrites.ts, the snapshots snapshots.ts.
import { formatErrors, validate } from '../../schemas/validate.ts';
import { EventRecorder } from '../controller/events.ts';
import { queueMetrics } from '../controller/metrics.ts';
import { Runner, type Result } from '../controller/runner.ts';
import { StatusWriter } from '../controller/status.ts';
import type { KubeObject } from '../kube/client.ts';
import { OwnStatus } from '../controller/predicates.ts';
import { InformerFactory, syncedWithin, type SharedInformer } from '../kube/factory.ts';
import { objectKey } from '../kube/informer.ts';
import { KubeconfigError } from '../kube/kubeconfig.ts';
import { R } from '../kube/resources.ts';
import { cacheCondition } from './cachelimit.ts';
import { countVerdict, DEFAULT_MAX_PER_NAMESPACE } from './count.ts';
import { childLogger } from '../log.ts';
import { IDENTITY, rootNamespace, VC_FINALIZER } from '../names/names.ts';
import {
  canPlanRoll,
  ProvisionRefused,
  type NodeWithAddresses,
  type ProvisionLimits,
  type ProvisionState,
} from '../provisioners/provisioner.ts';
import { WorkQueue } from '../queue/workqueue.ts';
import { defaultProvisioner } from '../tenancy/defaults.ts';
import { rootNamespaceObject } from '../tenancy/namespace.ts';
import { judgeTenant, type EffectiveSettings, type TenantPolicy } from '../tenancy/policy.ts';
import { subjectOf, type GrantSubject } from '../tenancy/grants.ts';
import { type ProvisionerType, type VirtualCluster, type VirtualClusterStatus } from '../api/virtualcluster.ts';
import {
  afterDns,
  clusterVersionsUnavailable,
  CONTINUE,
  deleting,
  hasStatus,
  invalidSpec,
  isFirstStart,
  merge,
  nextStatus,
  notOwned,
  policyNotFound,
  policyRefused,
  provisionerUnavailable,
  provisionFailed,
  provisioningStarts,
  running,
  stillStarting,
  unknownSuperCluster,
  type Outcome,
} from './decisions.ts';
import { guarded, MetaObjects, notOwnedRoot, VC_API_VERSION } from './ownership.ts';
import { HealthMonitor } from './healthmonitor.ts';
import { mayRoll, peersOf, rollHeld, rollResult, rollStarts } from './rollout.ts';
import { caRotationCondition, certificatesCondition, DEFAULT_RENEW_FRACTION, renewalRequeue } from './certificates.ts';
import { CertificateExpiries } from './certmetrics.ts';
import { tenantOfVirtualCluster, withEffective } from './tenantof.ts';
import { SleepControl } from './sleepcontrol.ts';
import { runSteps, type Pass, type Step } from './steps.ts';
import { cleanUp, type CleanUpParts } from './cleanup.ts';
import { ensureDns, publishEndpoint } from './tenantwrites.ts';
import type { LifecycleOptions } from './options.ts';
import { lifecycleWatches, type ClusterVersion } from './watches.ts';
import { countInPhaseGauge } from './phases.ts';
import { snapshotBeforeUpgrade } from './snapshots.ts';

const log = childLogger({ controller: 'virtualcluster' });
/** CLUSTER_VERSIONS_START_WAIT_MS bounds how long start waits for the first list of ClusterVersions. */
const CLUSTER_VERSIONS_START_WAIT_MS = 5_000;

export type { LifecycleOptions };

/**
 * VirtualClusterController turns VirtualCluster objects into tenant control planes. It is level-triggered: it reads
 * the object from the cache, validates it against the schema and its TenantPolicy, asks the provisioner for the
 * control plane with the effective settings, writes the admin kubeconfig Secret and the status, and hands Running
 * tenants to the syncer. A spec its policy refuses gets an Error condition (reason PolicyViolation) and a Warning
 * event; a tenant already Running keeps running on its last accepted settings. A finalizer makes deletion remove
 * the control plane, its data, the root namespace and every prefixed namespace in the super cluster first.
 */
export class VirtualClusterController {
  private readonly informer: SharedInformer<VirtualCluster>;
  private readonly policies: SharedInformer<TenantPolicy>;
  private readonly clusterVersions: SharedInformer<ClusterVersion>;
  private readonly namespaces: SharedInformer<KubeObject>; // the meta cluster's: relabelled, grants judged again
  /** the Nodes, watched while a provisioner renders from their addresses (readsNodeAddresses) */
  private readonly nodes?: SharedInformer<KubeObject & NodeWithAddresses>;
  /** the keys whose roll this manager has allowed and not finished: they count against maxUnavailable at once */
  private readonly rolling = new Set<string>();
  /** the certificates each served key's provisioner renews, as it last reported them (the expiry metric) */
  private readonly certificates = new CertificateExpiries();
  /** the effective settings each key's control plane last started with, kept while a refused edit waits */
  private readonly accepted = new Map<string, EffectiveSettings>();
  /** the status last written per key: its echo is no reason to reconcile, another status is */
  private readonly ownStatus = new OwnStatus();
  private readonly queue = new WorkQueue({ metrics: queueMetrics('virtualcluster') });
  private readonly runner: Runner;
  private readonly roots = new Map<string, string>();
  private readonly status: StatusWriter<VirtualClusterStatus>;
  private readonly events: EventRecorder;
  private readonly metaObjects: MetaObjects;
  /** what a deletion reads and writes through (cleanup.ts) */
  private readonly cleanUpParts: CleanUpParts;
  private readonly unwatchCache: (() => void) | undefined;
  /** what a VirtualCluster naming no provisioner gets; undefined when this manager offers no default */
  private readonly defaultProvisioner: ProvisionerType | undefined;
  /** probes served tenants; a changed verdict enqueues the key, and serve turns it into phase and conditions */
  readonly health?: HealthMonitor;
  private readonly sleep: SleepControl;
  /** takes this controller's cache out of the vc_virtualclusters gauge */
  private uncount?: () => void;

  constructor(private readonly o: LifecycleOptions) {
    this.defaultProvisioner = defaultProvisioner(
      o.defaultProvisioner,
      Object.keys(o.provisioners).filter((k) => o.provisioners[k]),
    );
    const informers = o.informers ?? new InformerFactory(o.meta, 'lifecycle');
    if (o.health !== false) this.health = new HealthMonitor({ ...o.health, onChange: (k) => this.queue.add(k) });
    const watches = lifecycleWatches(informers, {
      enqueue: (k) => this.queue.add(k),
      ownStatus: this.ownStatus,
      provisioners: o.provisioners,
      provisionerOf: (vc) => this.provisionerOf(vc),
    });
    this.informer = watches.virtualClusters;
    this.policies = watches.policies;
    this.clusterVersions = watches.clusterVersions;
    this.namespaces = watches.namespaces;
    this.nodes = watches.nodes;
    this.unwatchCache = o.cacheStates?.onChange((t) => this.queue.add(`${t.vcNamespace}/${t.vcName}`));
    this.runner = new Runner({
      name: 'virtualcluster',
      queue: this.queue,
      concurrency: o.workers ?? 4,
      reconciler: { reconcile: (k) => this.reconcile(k) },
    });
    this.metaObjects = new MetaObjects(o.meta);
    this.status = new StatusWriter({ client: o.meta, resource: R.virtualclusters, fieldManager: IDENTITY.manager });
    this.events = new EventRecorder({
      client: o.meta,
      component: IDENTITY.manager,
      apiVersion: VC_API_VERSION,
      kind: 'VirtualCluster',
      log,
    });
    this.cleanUpParts = {
      meta: o.meta,
      superClient: o.superClient,
      metaObjects: this.metaObjects,
      events: this.events,
      provisioners: o.provisioners,
      beforeRemove: o.beforeRemove,
      placementRecords: o.placementRecords,
    };
    this.sleep = new SleepControl({
      meta: o.meta,
      superClient: o.superClient,
      events: this.events,
      provisioners: o.provisioners,
      list: () => this.informer.list(),
      served: (key) => {
        const root = this.roots.get(key);
        const accepted = this.accepted.get(key);
        return root
          ? {
              root,
              provisioner: accepted?.provisioner,
              workloads: accepted?.sleep.workloads,
              maxWakesPerHour: accepted?.sleep.maxWakesPerHour,
            }
          : undefined;
      },
      enqueue: (key) => this.queue.add(key),
      idleCheckMs: o.idleCheckMs,
    });
  }

  /** start syncs the cache and starts the workers. */
  async start(): Promise<void> {
    this.uncount = countInPhaseGauge(() => this.informer.list());
    this.certificates.register();
    this.policies.start();
    this.clusterVersions.start();
    this.namespaces.start();
    this.nodes?.start();
    this.informer.start();
    await Promise.all([this.policies.waitForSync(), this.namespaces.waitForSync(), this.informer.waitForSync()]);
    // A cluster without the ClusterVersion CRD does not stop the manager: tenants that name one wait for it.
    if (!(await syncedWithin(this.clusterVersions, CLUSTER_VERSIONS_START_WAIT_MS)))
      log.error({ resource: R.clusterversions.resource }, 'ClusterVersions cannot be listed: is their CRD installed?');
    this.runner.start();
    this.health?.start();
    this.sleep.start();
  }

  /** stop stops the workers and the informer (control planes keep running until their provisioner stops them). */
  async stop(): Promise<void> {
    this.uncount?.();
    this.sleep.stop();
    this.certificates.unregister();
    await this.health?.stop();
    this.unwatchCache?.();
    await this.runner.stop();
    await this.informer.stop();
    await this.clusterVersions.stop();
    await this.namespaces.stop();
    await this.nodes?.stop();
    await this.policies.stop();
  }

  /** provisionerOf is the type of the provisioner that serves vc: the accepted one, else the one its spec names. */
  private provisionerOf(vc: VirtualCluster): string | undefined {
    return this.accepted.get(objectKey(vc))?.provisioner ?? vc.spec?.provisioner?.type ?? this.defaultProvisioner;
  }

  /**
   * reconcile runs the steps for the key's VirtualCluster in order until one stops, then writes what they decided:
   * one status write and its events at the end whatever happened (a thrown error included), and earlier only where a
   * step publishes progress before a long step. It never changes the cached object: each write returns the copy the
   * later steps read.
   */
  private async reconcile(key: string): Promise<Result> {
    const vc = this.informer.get(key);
    if (!vc) return this.forget(key);
    if (this.o.superCluster && vc.spec?.superCluster && vc.spec.superCluster !== this.o.superCluster) return;
    const m = vc.metadata!;
    // Identity comes from metadata: status.clusterNamespace is an output, and whoever writes status must not be able
    // to point the provisioner, the syncer or clean-up at another tenant's or the super cluster's namespaces.
    const root = rootNamespace(m.namespace!, m.name!, m.uid!);
    this.roots.set(key, root);
    const pass: Pass = { key, vc, root };
    return this.run(pass, m.deletionTimestamp ? this.deleteSteps : this.liveSteps);
  }

  /** liveSteps bring a VirtualCluster that is not being deleted to a Running control plane, in this order. */
  private readonly liveSteps: Step[] = [
    (p) => this.validateSpec(p),
    (p) => this.checkSuperCluster(p),
    (p) => this.checkPolicy(p),
    async (p) => clusterVersionsUnavailable(p.vc, p.key, this.clusterVersions.hasSynced()),
    async (p) => countVerdict(p.vc, this.informer.list(), this.o.maxPerNamespace ?? DEFAULT_MAX_PER_NAMESPACE),
    (p) => this.addFinalizer(p),
    (p) => this.pickProvisioner(p),
    (p) => this.announceProvisioning(p),
    (p) => this.claimRoot(p),
    (p) => this.sleepIfAsked(p),
    (p) => this.announceRoll(p),
    (p) => this.provision(p),
    (p) => this.publishCredentials(p),
    (p) => this.serve(p),
    (p) => this.serveDns(p),
  ];

  /** deleteSteps remove everything a deleted VirtualCluster owns, then its finalizer. */
  private readonly deleteSteps: Step[] = [
    async (p) => (p.vc.metadata!.finalizers?.includes(VC_FINALIZER) ? CONTINUE : { stop: true }),
    async (p) => deleting(p.vc),
    (p) => this.cleanUp(p),
  ];

  /** run runs the steps of a pass (runSteps), releasing the tenant and writing status as they say. */
  private run(p: Pass, steps: Step[]): Promise<Result> {
    return runSteps(p, steps, {
      release: (q) => {
        this.o.tenants.remove(q.root);
        this.health?.unwatch(q.key);
      },
      commit: (q, o) => this.commit(q, o),
    });
  }

  /** commit writes the outcome's status (when it has one) and then records its events. */
  private async commit(p: Pass, o: Outcome): Promise<void> {
    if (hasStatus(o)) {
      p.vc = await this.status.write(p.vc, nextStatus(p.vc, o));
      this.ownStatus.remember(p.key, p.vc.status);
    }
    for (const e of o.events ?? []) await this.events.record(p.vc, e.type, e.reason, e.message);
  }

  /** forget drops what the controller kept for a VirtualCluster that is gone, and its tenant. */
  private forget(key: string): Result {
    const root = this.roots.get(key);
    if (root) this.o.tenants.remove(root);
    this.health?.unwatch(key);
    this.roots.delete(key);
    this.accepted.delete(key);
    this.certificates.delete(key);
    this.ownStatus.forget(key);
    return undefined;
  }

  /** validateSpec checks the object against its schema and the loaded plugins' config schemas. */
  private async validateSpec(p: Pass): Promise<Outcome> {
    const errors = validate('virtualCluster', p.vc);
    const pluginErrors = errors.length ? [] : (this.o.validatePluginConfig?.(p.vc.spec?.pluginConfig) ?? []);
    return invalidSpec(
      p.key,
      errors.length ? formatErrors(`VirtualCluster ${p.key}`, errors) : undefined,
      pluginErrors,
    );
  }

  /** checkSuperCluster checks that spec.superCluster names a super cluster this manager serves. */
  private async checkSuperCluster(p: Pass): Promise<Outcome> {
    const pinned = p.vc.spec?.superCluster;
    return unknownSuperCluster(p.vc, p.key, pinned === undefined ? true : (this.o.checkSuperCluster?.(pinned) ?? true));
  }

  /** checkPolicy: settings under its TenantPolicy, granted for its namespace's labels (cached; relabels requeue). */
  private async checkPolicy(p: Pass): Promise<Outcome> {
    const n = p.vc.metadata!.namespace!;
    const ns = this.namespaces.get(n) ?? (await this.o.meta.getOrNull<KubeObject>(R.namespaces, undefined, n));
    const named = p.vc.spec?.policyName;
    const waiting = policyNotFound(p.vc, p.key, !named || !!this.policies.get(named));
    if (waiting !== CONTINUE) return waiting;
    const evaluation = this.evaluate(p.vc, subjectOf(p.vc, ns?.metadata?.labels ?? {}));
    if ('refused' in evaluation) return policyRefused(p.vc, evaluation.refused, this.accepted.get(p.key));
    p.effective = evaluation.effective;
    p.acceptedPolicy = evaluation.policy;
    return CONTINUE;
  }

  /** addFinalizer puts the manager's finalizer on, so that deletion waits for clean-up. */
  private async addFinalizer(p: Pass): Promise<Outcome> {
    const m = p.vc.metadata!;
    if (!m.finalizers?.includes(VC_FINALIZER)) {
      await this.o.meta.patch(
        R.virtualclusters,
        m.namespace,
        m.name!,
        { metadata: { finalizers: [...(m.finalizers ?? []), VC_FINALIZER] } },
        'merge',
        { fieldManager: IDENTITY.manager },
      );
    }
    return CONTINUE;
  }

  /** pickProvisioner finds the provisioner of the effective settings among this manager's. */
  private async pickProvisioner(p: Pass): Promise<Outcome> {
    p.type = p.effective!.provisioner;
    p.provisioner = p.type && this.o.provisioners[p.type];
    return provisionerUnavailable(p.type, !!p.provisioner);
  }

  /** announceProvisioning publishes a first start before the control plane is asked for. */
  private async announceProvisioning(p: Pass): Promise<Outcome> {
    p.first = isFirstStart(p.vc);
    return provisioningStarts(p.vc, p.type!);
  }

  /**
   * claimRoot refuses a root namespace, kubeconfig Secret or tenant-CA ConfigMap of the tenant's names that is not
   * its own — before a control plane starts for it (the writes check again, for one made in the meantime) — and
   * creates or updates the root namespace.
   */
  private async claimRoot(p: Pass): Promise<Outcome> {
    const m = p.vc.metadata!;
    const rootNs = await this.o.superClient.getOrNull(R.namespaces, undefined, p.root);
    const refusal = (rootNs && notOwnedRoot(rootNs, m.uid!)) || (await this.metaObjects.foreignMetaObject(p.vc));
    if (refusal) return notOwned(refusal);
    const desired = rootNamespaceObject(m, p.root);
    if (rootNs) await this.o.superClient.apply(R.namespaces, guarded(desired, rootNs), IDENTITY.manager);
    else await this.o.superClient.create(R.namespaces, desired, { fieldManager: IDENTITY.manager });
    return CONTINUE;
  }

  /** sleepIfAsked puts the tenant to sleep when asked (SleepControl.ifAsked), and stops the pass there. */
  private sleepIfAsked(p: Pass): Promise<Outcome> {
    return this.sleep.ifAsked(
      p.vc,
      p.root,
      p.provisioner,
      p.type,
      () => withEffective(p.vc, p.effective!, p.type!),
      {
        etcdBytes: p.effective!.quota.etcdBytes,
        controlPlaneCpu: p.effective!.quota.controlPlaneCPU,
        sleepEtcd: p.effective!.sleep.etcd,
      },
      p.effective!.sleep.workloads,
      p.effective!.sleep.maxWakesPerHour,
    );
  }

  /** limits are what the provisioner is given besides the spec: the policy's limits and the ClusterVersion. */
  private limits(p: Pass): ProvisionLimits {
    const cvName = p.vc.spec?.clusterVersionName;
    const clusterVersion = cvName ? this.clusterVersions.get(cvName) : undefined;
    return (p.limits ??= {
      etcdBytes: p.effective!.quota.etcdBytes,
      controlPlaneCpu: p.effective!.quota.controlPlaneCPU,
      importSecrets: p.effective!.importSecrets,
      ...(clusterVersion && { clusterVersion }),
      ...(p.effective!.controlPlaneMaxResources && {
        maxResources: { policyName: p.effective!.policyName, max: p.effective!.controlPlaneMaxResources },
      }),
      beforeUpgrade: (from, to) => snapshotBeforeUpgrade(this.events, this.o.beforeUpgrade, p.vc, from, to),
    });
  }

  /**
   * announceRoll asks a provisioner that can plan its rolls which components the spec restarts. A roll of a tenant
   * that names a ClusterVersion waits while that version's maxUnavailable tenants are rolling or unhealthy; one that
   * may go is counted at once (before its Updating phase is published) and announced.
   */
  private async announceRoll(p: Pass): Promise<Outcome> {
    if (!canPlanRoll(p.provisioner) || isFirstStart(p.vc)) return CONTINUE;
    const vc = withEffective(p.vc, p.effective!, p.type!);
    const plan = await p.provisioner.planRoll(vc, p.root, this.limits(p));
    if (!plan.length) return CONTINUE;
    const cvName = p.vc.spec?.clusterVersionName;
    const max = cvName && this.clusterVersions.get(cvName)?.spec?.rollout?.maxUnavailable;
    const verdict = cvName
      ? mayRoll(p.key, cvName, peersOf(cvName, this.informer.list(), this.rolling), max || 1)
      : true;
    if (verdict !== true) return rollHeld(p.vc, verdict);
    this.rolling.add(p.key);
    return rollStarts(p.vc, plan);
  }

  /** provision asks the provisioner for the control plane with the effective settings. */
  private async provision(p: Pass): Promise<Outcome> {
    const effective = p.effective!;
    let state: ProvisionState;
    try {
      state = await p.provisioner!.ensure(withEffective(p.vc, effective, p.type!), p.root, this.limits(p));
    } catch (e) {
      return provisionFailed(e, e instanceof KubeconfigError || e instanceof ProvisionRefused ? e.reason : undefined);
    } finally {
      this.rolling.delete(p.key);
    }
    if (state.ready) p.state = state;
    return stillStarting(state, p.vc);
  }

  /** publishCredentials writes the admin kubeconfig Secret and the tenant CA ConfigMap. */
  private async publishCredentials(p: Pass): Promise<Outcome> {
    const written = await this.metaObjects.writeKubeconfig(p.vc, p.state!.result);
    if (typeof written !== 'string') return notOwned(written.refused);
    p.secretName = written;
    return notOwned(await this.metaObjects.writeTenantCA(p.vc, p.state!.result));
  }

  /**
   * serve hands the tenant to the syncer and publishes Running. The syncer serves it before Running is announced: a
   * user (or test) who sees Running finds its Pods synced. Handing the same tenant over again changes nothing.
   */
  private async serve(p: Pass): Promise<Outcome> {
    const effective = p.effective!;
    this.o.tenants.upsert(tenantOfVirtualCluster(p.vc, p.root, p.state!.result, effective));
    const target = { key: p.key, root: p.root, vc: p.vc, kubeconfig: p.state!.result.kubeconfig };
    await this.health?.watch({ ...target, provisioner: p.provisioner });
    const state = p.state!;
    if (state.rolled || state.rollFailed) this.health?.reset(p.key);
    const cache = this.o.cacheStates && cacheCondition(this.o.cacheStates.refusal(p.root));
    const serving = running(state, p.root, p.secretName!, effective, p.first!, p.vc, this.health?.take(p.key), cache);
    const roll = rollResult(p.vc, !!state.rolled, state.rollFailed);
    const certs = state.result.certificates;
    if (certs) this.certificates.set(p.key, certs);
    const fraction = state.result.certificateRenewFraction ?? DEFAULT_RENEW_FRACTION;
    const valid = certs && certificatesCondition(certs, new Date(), fraction);
    const rotation = state.result.caRotation && caRotationCondition(state.result.caRotation);
    const conditions = [valid, rotation].filter((c) => !!c);
    const accepted = { acceptedPolicy: p.acceptedPolicy }; // the generation the vn-agent serves plugin config from
    return { ...merge(merge(serving, roll), { conditions, status: accepted }), publish: true };
  }

  /**
   * serveDns remembers the settings the tenant now runs with, points its `default/kubernetes` Service at the address
   * its Pods reach its apiserver at, and ensures its DNS server when configured.
   */
  private async serveDns(p: Pass): Promise<Outcome> {
    this.accepted.set(p.key, p.effective!);
    const endpoint = await publishEndpoint(p.vc, p.state!.result);
    const dns = this.o.tenantDns ? await ensureDns(p.vc, p.state!.result, this.o.tenantDns.image) : undefined;
    const after = afterDns(!!p.state!.result.externalAccess?.waiting, dns ?? endpoint);
    // Renewal happens in the provisioner's ensure: the key comes back when the next certificate is due.
    // Only what the provisioner renews by itself: a CA past its renewal time would bring the key back every second.
    const result = p.state!.result;
    const renewed = (result.certificates ?? []).filter((c) => !c.manual);
    return renewalRequeue(after, renewed, result.certificateRenewFraction ?? DEFAULT_RENEW_FRACTION, new Date());
  }

  /** cleanUp removes everything the VirtualCluster owns (cleanup.ts), with the provisioner that made its control plane. */
  private cleanUp(p: Pass): Promise<Outcome> {
    return cleanUp(this.cleanUpParts, p, this.provisionerOf(p.vc));
  }

  /** evaluate resolves the VirtualCluster's TenantPolicy and checks the spec against it (judgeTenant). */
  private evaluate(vc: VirtualCluster, subject: GrantSubject): ReturnType<typeof judgeTenant> {
    const defaults = { ...this.o.tenantDefaults, pluginConfig: this.o.defaultPluginConfig };
    return judgeTenant(vc, this.policies.list(), { ...defaults, provisioner: this.defaultProvisioner }, subject);
  }
}
