import { Gauge } from 'prom-client';
import { formatErrors, validate } from '../../schemas/validate.ts';
import { EventRecorder } from '../controller/events.ts';
import { queueMetrics } from '../controller/metrics.ts';
import { Runner, type Result } from '../controller/runner.ts';
import { setCondition, StatusWriter, type ConditionInput } from '../controller/status.ts';
import { KubeClient, type KubeObject, type Resource } from '../kube/client.ts';
import { Informer, objectKey } from '../kube/informer.ts';
import { KubeconfigError } from '../kube/kubeconfig.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { registry as metricsRegistry } from '../metrics/registry.ts';
import { ANN, IDENTITY, LABEL, provenanceOf, rootNamespace, VC_FINALIZER } from '../names/names.ts';
import { ProvisionRefused, type Provisioned, type Provisioner } from '../provisioners/provisioner.ts';
import { WorkQueue } from '../queue/workqueue.ts';
import { defaultProvisioner, TENANT_DEFAULTS } from '../tenancy/defaults.ts';
import { rootNamespaceObject } from '../tenancy/namespace.ts';
import {
  checkPolicies,
  formatViolations,
  type EffectiveSettings,
  type ManagerDefaults,
  type TenantPolicy,
} from '../tenancy/policy.ts';
import { tenantFrom, type MutableTenantRegistry, type Tenant } from '../tenancy/tenant.ts';
import { caFromKubeconfig } from '../pki/kubeconfig.ts';
import { ensureTenantDns } from './tenantdns.ts';
import {
  kubeconfigSecretName,
  TENANT_CA_KEY,
  tenantCAConfigMapName,
  type Phase,
  type ProvisionerType,
  type VirtualCluster,
  type VirtualClusterStatus,
} from '../api/virtualcluster.ts';
import { exposedCondition, kubeconfigSecretData } from './kubeconfigsecret.ts';

const log = childLogger({ controller: 'virtualcluster' });
/** EXPOSE_RECHECK_MS is how soon a Running tenant whose exposed address is still awaited is reconciled again. */
const EXPOSE_RECHECK_MS = 10_000;
const VC_API_VERSION = 'tenancy.x-k8s.io/v1alpha1';

const liveControllers = new Set<VirtualClusterController>();
new Gauge({
  name: 'vc_virtualclusters',
  help: 'VirtualClusters by phase.',
  labelNames: ['phase'],
  registers: [metricsRegistry],
  collect() {
    this.reset();
    for (const c of liveControllers) for (const [phase, n] of c.phaseCounts()) this.set({ phase }, n);
  },
});

/** LifecycleOptions configure the VirtualCluster controller. */
export interface LifecycleOptions {
  /** the meta cluster, where VirtualCluster objects and kubeconfig Secrets live */
  meta: KubeClient;
  /** the super cluster, where root and prefixed namespaces live (often the meta cluster itself) */
  superClient: KubeClient;
  provisioners: Partial<Record<string, Provisioner>>;
  /** where Running tenants are handed to the syncer */
  tenants: MutableTenantRegistry;
  workers?: number;
  /** plugin settings every tenant gets; a TenantPolicy's settings go over them and a VirtualCluster may only add keys */
  defaultPluginConfig?: Record<string, unknown>;
  /** platform-wide forced Pod placement and label allow-lists (the manager's tenantDefaults), under each policy */
  tenantDefaults?: Omit<ManagerDefaults, 'pluginConfig'>;
  /** serve only VirtualClusters whose spec.superCluster is this name (or unset) */
  superCluster?: string;
  /**
   * checkSuperCluster tells whether spec.superCluster names a super cluster this manager serves: true, or why not.
   * Absent, any name is accepted.
   */
  checkSuperCluster?: (name: string) => true | string;
  /** checks spec.pluginConfig against the loaded plugins' config schemas (PluginHost.validatePluginConfig) */
  validatePluginConfig?: (pluginConfig: Record<string, unknown> | undefined) => string[];
  /**
   * tenantDns gives every Running tenant a DNS server of its own (core/lifecycle/tenantdns.ts: CoreDNS and the
   * kube-dns Service in its kube-system, created when missing); the image defaults to the node toolchain's
   */
  tenantDns?: { image?: string };
  /**
   * the provisioner of a VirtualCluster that names none (the manager's virtualClusters.defaultProvisioner); absent,
   * the one defaultProvisioner (core/tenancy/defaults.ts) picks among `provisioners`
   */
  defaultProvisioner?: ProvisionerType;
}

/**
 * VirtualClusterController turns VirtualCluster objects into tenant control planes. It is level-triggered: it reads
 * the object from the cache, validates it against the schema and its TenantPolicy, asks the provisioner for the
 * control plane with the effective settings, writes the admin kubeconfig Secret and the status, and hands Running
 * tenants to the syncer. A spec its policy refuses gets an Error condition (reason PolicyViolation) and a Warning
 * event; a tenant already Running keeps running on its last accepted settings. A finalizer makes deletion remove
 * the control plane, its data, the root namespace and every prefixed namespace in the super cluster first.
 */
export class VirtualClusterController {
  private readonly informer: Informer<VirtualCluster>;
  private readonly policies: Informer<TenantPolicy>;
  /** the effective settings each key's control plane last started with, kept while a refused edit waits */
  private readonly accepted = new Map<string, EffectiveSettings>();
  private readonly queue = new WorkQueue({ metrics: queueMetrics('virtualcluster') });
  private readonly runner: Runner;
  private readonly roots = new Map<string, string>();
  private readonly status: StatusWriter<VirtualClusterStatus>;
  private readonly events: EventRecorder;
  /** what a VirtualCluster naming no provisioner gets; undefined when this manager offers no default */
  private readonly defaultProvisioner: ProvisionerType | undefined;

  constructor(private readonly o: LifecycleOptions) {
    this.defaultProvisioner = defaultProvisioner(
      o.defaultProvisioner,
      Object.keys(o.provisioners).filter((k) => o.provisioners[k]),
    );
    this.informer = new Informer<VirtualCluster>({
      client: o.meta,
      resource: R.virtualclusters,
      name: 'virtualclusters',
    });
    const enqueue = (vc: KubeObject) => this.queue.add(objectKey(vc));
    this.informer.addHandler({ onAdd: enqueue, onUpdate: (_a, b) => enqueue(b), onDelete: enqueue });
    this.policies = new Informer<TenantPolicy>({ client: o.meta, resource: R.tenantpolicies, name: 'tenantpolicies' });
    const requeueUsers = (p: KubeObject) => {
      for (const vc of this.informer.list())
        if (!vc.spec?.policyName || vc.spec.policyName === p.metadata?.name) enqueue(vc);
    };
    this.policies.addHandler({ onAdd: requeueUsers, onUpdate: (_a, b) => requeueUsers(b), onDelete: requeueUsers });
    this.runner = new Runner({
      name: 'virtualcluster',
      queue: this.queue,
      concurrency: o.workers ?? 4,
      reconciler: { reconcile: (k) => this.reconcile(k) },
    });
    this.status = new StatusWriter({ client: o.meta, resource: R.virtualclusters, fieldManager: IDENTITY.manager });
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
    liveControllers.add(this);
    this.policies.start();
    this.informer.start();
    await Promise.all([this.policies.waitForSync(), this.informer.waitForSync()]);
    this.runner.start();
  }

  /** stop stops the workers and the informer (control planes keep running until their provisioner stops them). */
  async stop(): Promise<void> {
    liveControllers.delete(this);
    await this.runner.stop();
    await this.informer.stop();
    await this.policies.stop();
  }

  /** phaseCounts counts cached VirtualClusters by phase. */
  phaseCounts(): Array<[string, number]> {
    const m = new Map<string, number>();
    for (const vc of this.informer.list())
      m.set(vc.status?.phase ?? 'Pending', (m.get(vc.status?.phase ?? 'Pending') ?? 0) + 1);
    return [...m];
  }

  /**
   * reconcile works on the cached VirtualCluster without changing it: each status write returns the copy that the
   * rest of the reconcile reads.
   */
  private async reconcile(key: string): Promise<Result> {
    let vc = this.informer.get(key);
    if (!vc) {
      const root = this.roots.get(key);
      if (root) this.o.tenants.remove(root);
      this.roots.delete(key);
      this.accepted.delete(key);
      return;
    }
    if (this.o.superCluster && vc.spec?.superCluster && vc.spec.superCluster !== this.o.superCluster) return;
    const m = vc.metadata!;
    // Identity comes from metadata: status.clusterNamespace is an output, and whoever writes status must not be able
    // to point the provisioner, the syncer or clean-up at another tenant's or the super cluster's namespaces.
    const root = rootNamespace(m.namespace!, m.name!, m.uid!);
    this.roots.set(key, root);
    if (m.deletionTimestamp) return this.finalize(vc, root);

    const errors = validate('virtualCluster', vc);
    const pluginErrors = errors.length ? [] : (this.o.validatePluginConfig?.(vc.spec?.pluginConfig) ?? []);
    if (errors.length || pluginErrors.length) {
      this.o.tenants.remove(root);
      const message = errors.length
        ? formatErrors(`VirtualCluster ${key}`, errors)
        : pluginErrors.map((e) => `VirtualCluster ${key}: ${e}`).join('\n');
      await this.setStatus(
        vc,
        { phase: 'Error', reason: 'InvalidSpec', message },
        ready('False', 'InvalidSpec', message),
      );
      await this.events.record(vc, 'Warning', 'InvalidSpec', message);
      return;
    }
    const pinned = vc.spec?.superCluster;
    const known = pinned === undefined ? true : (this.o.checkSuperCluster?.(pinned) ?? true);
    if (known !== true) {
      // No syncer would serve it: the tenant is not handed on, and the name is looked up again (a super cluster may
      // be registered meanwhile).
      this.o.tenants.remove(root);
      const message = `VirtualCluster ${key}: spec.superCluster ${JSON.stringify(pinned)}: ${known}`;
      const changed = vc.status?.reason !== 'UnknownSuperCluster' || vc.status?.message !== message;
      await this.setStatus(
        vc,
        { phase: 'Error', reason: 'UnknownSuperCluster', message },
        ready('False', 'UnknownSuperCluster', message),
      );
      if (changed) await this.events.record(vc, 'Warning', 'UnknownSuperCluster', message);
      return { requeueAfter: 15_000 };
    }
    const evaluation = this.evaluate(vc);
    if ('refused' in evaluation) return this.refuse(vc, key, evaluation.refused);
    const effective = evaluation.effective;
    if (!m.finalizers?.includes(VC_FINALIZER)) {
      await this.o.meta.patch(
        R.virtualclusters,
        m.namespace,
        m.name!,
        { metadata: { finalizers: [...(m.finalizers ?? []), VC_FINALIZER] } },
        'merge',
        {
          fieldManager: IDENTITY.manager,
        },
      );
    }
    const type = effective.provisioner;
    const provisioner = type && this.o.provisioners[type];
    if (!type || !provisioner) {
      const message = type
        ? `provisioner "${type}" is not available in this manager (spec.provisioner.type)`
        : 'no provisioner named (spec.provisioner.type) and this manager has no default (virtualClusters.defaultProvisioner)';
      await this.setStatus(
        vc,
        { phase: 'Error', reason: 'ProvisionerUnavailable', message },
        ready('False', 'ProvisionerUnavailable', message),
      );
      return;
    }
    const first = vc.status?.phase !== 'Running' && vc.status?.phase !== 'Updating';
    if (first && vc.status?.phase !== 'Provisioning') {
      vc = await this.setStatus(
        vc,
        { phase: 'Provisioning', reason: 'Provisioning', message: `provisioning with ${type}` },
        ready('False', 'Provisioning', 'control plane starting'),
      );
      await this.events.record(
        vc,
        'Normal',
        'Provisioning',
        `provisioning the control plane with the ${type} provisioner`,
      );
    }
    const rootNs = await this.o.superClient.getOrNull(R.namespaces, undefined, root);
    const rootRefusal = rootNs && notOwnedRoot(rootNs, m.uid!);
    if (rootRefusal) return this.refuseNotOwned(vc, rootRefusal);
    // A kubeconfig Secret or tenant-CA ConfigMap of that name that is not ours would refuse the tenant once it runs:
    // refuse before starting a control plane for it (the writes check again, for one made in the meantime).
    const metaRefusal = await this.foreignMetaObject(vc);
    if (metaRefusal) return this.refuseNotOwned(vc, metaRefusal);
    if (rootNs)
      await this.o.superClient.apply(R.namespaces, guarded(rootNamespaceObject(m, root), rootNs), IDENTITY.manager);
    else
      await this.o.superClient.create(R.namespaces, rootNamespaceObject(m, root), { fieldManager: IDENTITY.manager });
    let state;
    try {
      state = await provisioner.ensure(withEffective(vc, effective, type), root, {
        etcdBytes: effective.quota.etcdBytes,
      });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      const reason = e instanceof KubeconfigError || e instanceof ProvisionRefused ? e.reason : 'ProvisionFailed';
      await this.setStatus(vc, { phase: 'Error', reason, message }, ready('False', reason, message));
      await this.events.record(vc, 'Warning', reason, message);
      // A refused kubeconfig stays refused until someone changes the Secret: look again later, without retry storms.
      if (e instanceof KubeconfigError || e instanceof ProvisionRefused) return { requeueAfter: 30_000 };
      throw e;
    }
    if (!state.ready) {
      const message = `waiting for ${state.waitingFor}`;
      await this.setStatus(
        vc,
        { phase: 'Provisioning', reason: 'Waiting', message },
        ready('False', 'Waiting', message),
      );
      return { requeueAfter: 2000 };
    }
    const written = await this.writeKubeconfig(vc, state.result);
    if (typeof written !== 'string') return this.refuseNotOwned(vc, written.refused);
    const secretName = written;
    const caRefused = await this.writeTenantCA(vc, state.result);
    if (caRefused) return this.refuseNotOwned(vc, caRefused);
    const endpoint = state.result.apiserverEndpoint;
    const access = state.result.externalAccess;
    // The syncer serves the tenant before Running is announced: a user (or test) who sees Running finds its Pods
    // synced. Handing the same tenant over again on a retried status write changes nothing.
    this.o.tenants.upsert(this.tenantOf(vc, root, state.result, effective));
    await this.setStatus(
      vc,
      {
        phase: 'Running',
        reason: 'Running',
        message: state.rolled ? 'control plane rolled to the new spec' : 'control plane is serving',
        clusterNamespace: root,
        kubeconfigSecretName: secretName,
        kubeletClientCertFingerprint: state.result.kubeletClientCertFingerprint,
        apiserverEndpoint: endpoint ? `https://${endpoint.host}:${endpoint.port}` : undefined,
      },
      ready('True', 'Running', 'control plane is serving'),
      policyAccepted(effective),
      ...(access ? [exposedCondition(access, state.result.kubeconfig)] : []),
    );
    this.accepted.set(key, effective);
    if (first || state.rolled) {
      await this.events.record(
        vc,
        'Normal',
        state.rolled ? 'Updated' : 'Running',
        state.rolled ? 'control plane rolled to the new spec' : 'control plane is serving',
      );
    }
    const dns = this.o.tenantDns ? await this.ensureDns(vc, state.result) : undefined;
    // An exposed address still awaited (a load balancer's) is looked at again: nothing else wakes this key for it.
    if (access?.waiting) return { requeueAfter: Math.min(dns?.requeueAfter ?? EXPOSE_RECHECK_MS, EXPOSE_RECHECK_MS) };
    return dns;
  }

  /** ensureDns creates the tenant's missing DNS objects; a failure is logged and retried, the tenant keeps running. */
  private async ensureDns(vc: VirtualCluster, p: Provisioned): Promise<Result> {
    let tenant: KubeClient | undefined;
    try {
      tenant = await KubeClient.fromString(p.kubeconfig, `the kubeconfig of VirtualCluster ${objectKey(vc)}`);
      const created = await ensureTenantDns(tenant, {
        clusterDomain: vc.spec?.clusterDomain ?? TENANT_DEFAULTS.clusterDomain,
        image: this.o.tenantDns?.image,
        ...(p.dnsApiEndpoint && { apiserver: p.dnsApiEndpoint }),
      });
      if (created.length) log.info({ vc: objectKey(vc), created }, 'tenant DNS created');
      return;
    } catch (e) {
      log.warn({ vc: objectKey(vc), err: e instanceof Error ? e.message : String(e) }, 'tenant DNS not created yet');
      return { requeueAfter: 5000 };
    } finally {
      tenant?.close();
    }
  }

  /** evaluate resolves the VirtualCluster's TenantPolicy and checks the spec against it. */
  private evaluate(vc: VirtualCluster): { effective: EffectiveSettings } | { refused: string } {
    const r = checkPolicies(vc, this.policies.list(), {
      ...this.o.tenantDefaults,
      pluginConfig: this.o.defaultPluginConfig,
      provisioner: this.defaultProvisioner,
    });
    return 'effective' in r ? r : { refused: formatViolations(`VirtualCluster ${objectKey(vc)}`, r.violations) };
  }

  /**
   * refuse records that the policy refuses the spec: an Error phase and condition on a tenant that does not run, or,
   * on one that runs, a PolicyAccepted=False condition while it keeps its last accepted settings (nothing is torn
   * down because of an edit). Either way a Warning event. A policy change requeues the VirtualCluster.
   */
  private async refuse(vc: VirtualCluster, key: string, message: string): Promise<Result> {
    const last = this.accepted.get(key);
    const phase = vc.status?.phase;
    if (last && (phase === 'Running' || phase === 'Updating')) {
      const kept = `spec refused; the control plane keeps running on its last accepted settings (policy ${JSON.stringify(last.policyName)}):\n${message}`;
      const changed = vc.status?.reason !== 'PolicyViolation' || vc.status?.message !== kept;
      await this.setStatus(
        vc,
        { reason: 'PolicyViolation', message: kept },
        ready('True', 'Running', 'control plane is serving'),
        { type: 'PolicyAccepted', status: 'False', reason: 'PolicyViolation', message },
      );
      if (changed) await this.events.record(vc, 'Warning', 'PolicyViolation', message);
      return;
    }
    const root = this.roots.get(key);
    if (root) this.o.tenants.remove(root);
    const changed = vc.status?.reason !== 'PolicyViolation' || vc.status?.message !== message;
    await this.setStatus(
      vc,
      { phase: 'Error', reason: 'PolicyViolation', message },
      ready('False', 'PolicyViolation', message),
      { type: 'PolicyAccepted', status: 'False', reason: 'PolicyViolation', message },
    );
    if (changed) await this.events.record(vc, 'Warning', 'PolicyViolation', message);
    return;
  }

  private tenantOf(vc: VirtualCluster, root: string, p: Provisioned, e: EffectiveSettings): Tenant {
    return tenantOfVirtualCluster(vc, root, p, e);
  }

  /**
   * writeKubeconfig writes the admin kubeconfig Secret. It never takes over a Secret it did not write: an existing one
   * without the manager's label and this VirtualCluster as controlling owner is refused (returned, for a NotOwned
   * condition). A missing one is created (so a Secret made in the meantime fails the create instead of being
   * adopted), and an owned one is applied with its resourceVersion as a precondition.
   */
  private async writeKubeconfig(vc: VirtualCluster, p: Provisioned): Promise<string | { refused: string }> {
    const m = vc.metadata!;
    const name = kubeconfigSecretName(m.name!);
    const desired: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        namespace: m.namespace,
        labels: { [LABEL.managedBy]: IDENTITY.manager },
        ownerReferences: [
          { apiVersion: VC_API_VERSION, kind: 'VirtualCluster', name: m.name, uid: m.uid, controller: true },
        ],
      },
      type: 'Opaque',
      data: kubeconfigSecretData(p),
    };
    const refused = await this.writeOwned(R.secrets, desired, m.uid!);
    return refused ? { refused } : name;
  }

  /**
   * writeOwned writes an object of the meta cluster that belongs to the VirtualCluster with uid `vcUid`: created when
   * missing (so one made in the meantime fails the create instead of being adopted), applied with the checked
   * resourceVersion as precondition when it carries the manager's label and the VirtualCluster as controlling owner,
   * and otherwise left alone: the reason is returned, for a NotOwned condition.
   */
  private async writeOwned(r: Resource, desired: KubeObject, vcUid: string): Promise<string | undefined> {
    const md = desired.metadata!;
    const existing = await this.o.meta.getOrNull(r, md.namespace, md.name!);
    if (!existing) {
      await this.o.meta.create(r, desired, { fieldManager: IDENTITY.manager });
      return undefined;
    }
    const refusal = notOwnedObject(r.kind, existing, vcUid);
    if (refusal) return refusal;
    await this.o.meta.apply(r, guarded(desired, existing), IDENTITY.manager);
    return undefined;
  }

  /** foreignMetaObject is the refusal for an existing kubeconfig Secret or tenant-CA ConfigMap not this VirtualCluster's. */
  private async foreignMetaObject(vc: VirtualCluster): Promise<string | undefined> {
    const m = vc.metadata!;
    for (const [r, name] of [
      [R.secrets, kubeconfigSecretName(m.name!)],
      [R.configmaps, tenantCAConfigMapName(m.name!)],
    ] as const) {
      const existing = await this.o.meta.getOrNull(r, m.namespace, name);
      const refusal = existing && notOwnedObject(r.kind, existing, m.uid!);
      if (refusal) return refusal;
    }
    return undefined;
  }

  /** deleteOwned deletes an object of the meta cluster only when it is the VirtualCluster's (uid precondition). */
  private async deleteOwned(r: Resource, namespace: string, name: string, vcUid: string): Promise<void> {
    const o = await this.o.meta.getOrNull(r, namespace, name);
    if (o && !notOwnedObject(r.kind, o, vcUid)) await this.o.meta.delete(r, namespace, name, { uid: o.metadata!.uid });
  }

  /**
   * writeTenantCA publishes the tenant CA certificate, public data, for the vn-agent (which reads no Secret). The
   * agent trusts it only with this managed-by label and this VirtualCluster as controller owner; see
   * core/vnagent/directory.ts for why it is not in status. Like the kubeconfig Secret, it is never taken over: an
   * existing ConfigMap that is not this VirtualCluster's is returned as a refusal.
   */
  private async writeTenantCA(vc: VirtualCluster, p: Provisioned): Promise<string | undefined> {
    const m = vc.metadata!;
    let caPem: string;
    try {
      caPem = caFromKubeconfig(p.kubeconfig);
    } catch (e) {
      // As before, such a tenant is simply not served by the vn-agent; its control plane still runs.
      log.warn(
        { vc: objectKey(vc), err: e instanceof Error ? e.message : String(e) },
        'no tenant CA to publish for the vn-agent',
      );
      return undefined;
    }
    return this.writeOwned(
      R.configmaps,
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: tenantCAConfigMapName(m.name!),
          namespace: m.namespace,
          labels: { [LABEL.managedBy]: IDENTITY.manager },
          ownerReferences: [
            { apiVersion: VC_API_VERSION, kind: 'VirtualCluster', name: m.name, uid: m.uid, controller: true },
          ],
        },
        data: { [TENANT_CA_KEY]: caPem },
      },
      m.uid!,
    );
  }

  /** refuseNotOwned reports that an object the VirtualCluster needs exists and is not the manager's, and waits. */
  private async refuseNotOwned(vc: VirtualCluster, message: string): Promise<Result> {
    this.o.tenants.remove(rootNamespace(vc.metadata!.namespace!, vc.metadata!.name!, vc.metadata!.uid!));
    await this.setStatus(vc, { phase: 'Error', reason: 'NotOwned', message }, ready('False', 'NotOwned', message));
    await this.events.record(vc, 'Warning', 'NotOwned', message);
    return { requeueAfter: 30_000 };
  }

  /** finalize deletes everything the VirtualCluster owns, waiting for the super namespaces to go, then the finalizer. */
  private async finalize(vc: VirtualCluster, root: string): Promise<Result> {
    const m = vc.metadata!;
    if (!m.finalizers?.includes(VC_FINALIZER)) return;
    this.o.tenants.remove(root);
    if (vc.status?.phase !== 'Deleting') {
      await this.setStatus(
        vc,
        { phase: 'Deleting', reason: 'Deleting', message: 'removing the control plane and super namespaces' },
        ready('False', 'Deleting', 'deleting'),
      );
    }
    // The provisioner that made the control plane, not one a refused edit names since.
    const type = this.accepted.get(objectKey(vc))?.provisioner ?? vc.spec?.provisioner?.type ?? this.defaultProvisioner;
    // A root namespace that is not this VirtualCluster's was never provisioned into: nothing in it is deleted.
    const rootNs = await this.o.superClient.getOrNull(R.namespaces, undefined, root);
    const removing =
      !rootNs || !notOwnedRoot(rootNs, m.uid!)
        ? await (type && this.o.provisioners[type])?.remove(vc, root)
        : undefined;
    const labelled = await this.o.superClient.list(R.namespaces, { labelSelector: `${LABEL.cluster}=${root}` });
    const remaining = labelled.items.filter((n) => ownedNamespace(n, root, m.uid!));
    if (remaining.length) {
      for (const n of remaining) {
        if (!n.metadata?.deletionTimestamp)
          await this.o.superClient.delete(R.namespaces, undefined, n.metadata!.name!, { uid: n.metadata!.uid });
      }
      return { requeueAfter: 1000 };
    }
    if (removing) {
      log.debug({ vc: objectKey(vc), tenant: root }, `deleting: waiting for ${removing.waitingFor}`);
      return { requeueAfter: 1000 };
    }
    await this.deleteOwned(R.secrets, m.namespace!, kubeconfigSecretName(m.name!), m.uid!);
    await this.deleteOwned(R.configmaps, m.namespace!, tenantCAConfigMapName(m.name!), m.uid!);
    await this.o.meta.patch(
      R.virtualclusters,
      m.namespace,
      m.name!,
      [
        { op: 'test', path: '/metadata/finalizers', value: m.finalizers },
        { op: 'replace', path: '/metadata/finalizers', value: m.finalizers.filter((f) => f !== VC_FINALIZER) },
      ],
      'json',
      { fieldManager: IDENTITY.manager },
    );
    log.info({ vc: objectKey(vc), tenant: root }, 'VirtualCluster deleted');
    return;
  }

  /** setStatus merges s and the conditions into vc's status and writes it when it changed; vc itself is not changed. */
  private setStatus(vc: VirtualCluster, s: VirtualClusterStatus, ...cs: ConditionInput[]): Promise<VirtualCluster> {
    const old = vc.status ?? {};
    const generation = vc.metadata?.generation;
    let conditions = old.conditions;
    for (const c of cs) conditions = setCondition(conditions, { ...c, observedGeneration: generation });
    return this.status.write(vc, { ...old, ...s, conditions, observedGeneration: generation });
  }
}

/**
 * notOwnedRoot says why an existing namespace named like a VirtualCluster's root is not that VirtualCluster's, or
 * returns undefined when it is: the manager's managed-by label and the VirtualCluster's uid annotation.
 */
function notOwnedRoot(ns: KubeObject, vcUid: string): string | undefined {
  const md = ns.metadata ?? {};
  if (md.labels?.[LABEL.managedBy] === IDENTITY.manager && md.annotations?.[ANN.vcUid] === vcUid) return undefined;
  return (
    `super namespace ${md.name} exists and is not this VirtualCluster's (it lacks the ` +
    `${LABEL.managedBy}=${IDENTITY.manager} label or its ${ANN.vcUid} annotation is not ${vcUid}); the ` +
    `manager does not take it over`
  );
}

/**
 * notOwnedObject says why an existing object the manager writes for a VirtualCluster (its kubeconfig Secret, its
 * tenant CA ConfigMap) is not that VirtualCluster's, or returns undefined when it is: the manager's managed-by label
 * and the VirtualCluster (by uid) as its controlling owner.
 */
function notOwnedObject(kind: string, o: KubeObject, vcUid: string): string | undefined {
  const md = o.metadata ?? {};
  const controller = md.ownerReferences?.find((r) => r.controller === true);
  if (md.labels?.[LABEL.managedBy] === IDENTITY.manager && controller?.uid === vcUid) return undefined;
  return (
    `${kind} ${md.namespace}/${md.name} exists and was not written by the manager for this VirtualCluster ` +
    `(it lacks the ${LABEL.managedBy}=${IDENTITY.manager} label or this VirtualCluster as controlling ` +
    `owner); the manager does not take it over: delete or rename it`
  );
}

/**
 * ownedNamespace reports whether clean-up of the VirtualCluster whose root is `root` may delete a super namespace: its
 * root, when it carries the VirtualCluster's uid, or a namespace the syncer wrote for this tenant (provenance).
 */
function ownedNamespace(ns: KubeObject, root: string, vcUid: string): boolean {
  const md = ns.metadata ?? {};
  if (md.name === root) return !notOwnedRoot(ns, vcUid);
  return provenanceOf(ns)?.cluster === root;
}

/** guarded adds the resourceVersion of the object that was checked to an apply, so a swap in between conflicts. */
function guarded(desired: KubeObject, checked: KubeObject | null): KubeObject {
  const rv = checked?.metadata?.resourceVersion;
  return rv ? { ...desired, metadata: { ...desired.metadata, resourceVersion: rv } } : desired;
}

function ready(status: ConditionInput['status'], reason: string, message: string): ConditionInput {
  return { type: 'Ready', status, reason, message };
}

function policyAccepted(e: EffectiveSettings): ConditionInput {
  return {
    type: 'PolicyAccepted',
    status: 'True',
    reason: 'Accepted',
    message: `within policy ${JSON.stringify(e.policyName)}`,
  };
}

/**
 * withEffective is the VirtualCluster as the provisioner must see it: the spec's flags, weight, level and plugins
 * replaced by what the policy grants, so that nothing the policy refused reaches a command line, and the provisioner
 * `type` that runs it (the manager's default where the spec names none).
 */
function withEffective(vc: VirtualCluster, e: EffectiveSettings, type: ProvisionerType): VirtualCluster {
  return {
    ...vc,
    spec: {
      ...vc.spec,
      provisioner: { ...vc.spec.provisioner, type },
      // expose passed the policy with the rest; the provisioner reads it from here
      apiServer: { ...vc.spec.apiServer, extraArgs: e.apiServerArgs },
      controllerManager: { extraArgs: e.controllerManagerArgs },
      weight: e.weight,
      podSecurityLevel: e.podSecurityLevel,
      plugins: e.plugins,
      pluginConfig: e.pluginConfig,
    },
  };
}

/** Phase is re-exported for callers that only need the controller module. */
export type { Phase };

/**
 * tenantOfVirtualCluster is the syncer tenant of a Running VirtualCluster: its identity from metadata, its settings from
 * the spec under the effective policy, its credentials from the provisioner (or the kubeconfig Secret the manager
 * wrote). The manager's controller and a separate syncer process (MetaTenantRegistry) build tenants the same way.
 */
export function tenantOfVirtualCluster(
  vc: VirtualCluster,
  root: string,
  p: Pick<Provisioned, 'kubeconfig' | 'apiserverEndpoint' | 'dnsApiEndpoint'>,
  e: EffectiveSettings,
): Tenant {
  const m = vc.metadata!;
  return tenantFrom({
    key: root,
    vcName: m.name!,
    vcNamespace: m.namespace!,
    vcUid: m.uid!,
    kubeconfig: p.kubeconfig,
    apiserverEndpoint: p.apiserverEndpoint,
    dnsApiEndpoint: p.dnsApiEndpoint,
    settings: {
      ...vc.spec,
      weight: e.weight,
      podSecurityLevel: e.podSecurityLevel,
      plugins: e.plugins,
      pluginConfig: e.pluginConfig,
      pods: e.pods,
      runtimeClasses: e.runtimeClasses,
      nodes: e.nodes,
      copiedMetadata: e.copiedMetadata,
      network: e.network,
      services: e.services,
      ingresses: e.ingresses,
      endpoints: e.endpoints,
      quota: { resourceQuota: e.quota.resourceQuota, limitRange: e.quota.limitRange, objects: e.quota.objects },
      podCreateRate: e.podCreateRate,
    },
  });
}
