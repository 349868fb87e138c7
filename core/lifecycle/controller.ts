import { Gauge } from 'prom-client';
import { formatErrors, validate } from '../../schemas/validate.ts';
import { Runner, type Result } from '../controller/runner.ts';
import { isNotFound, type KubeClient, type KubeObject } from '../kube/client.ts';
import { recordEvent } from '../kube/events.ts';
import { Informer, objectKey } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { registry as metricsRegistry } from '../metrics/registry.ts';
import { LABEL, MANAGER, rootNamespace } from '../names/names.ts';
import { WorkQueue } from '../queue/workqueue.ts';
import type { MutableTenantRegistry, Tenant } from '../tenancy/tenant.ts';
import type { Provisioned, Provisioner } from './provisioner.ts';
import { DEFAULTS, FINALIZER, kubeconfigSecretName, type Condition, type Phase, type VirtualCluster, type VirtualClusterStatus } from './types.ts';

const log = childLogger({ controller: 'virtualcluster' });
const FIELD_MANAGER = 'vc-manager';

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
  /** plugin settings every tenant gets unless its VirtualCluster sets its own */
  defaultPluginConfig?: Record<string, unknown>;
  /** serve only VirtualClusters whose spec.superCluster is this name (or unset) */
  superCluster?: string;
}

/**
 * VirtualClusterController turns VirtualCluster objects into tenant control planes. It is level-triggered: it reads
 * the object from the cache, validates it against the schema, asks the provisioner for the control plane, writes
 * the admin kubeconfig Secret and the status, and hands Running tenants to the syncer. A finalizer makes deletion
 * remove the control plane, its data, the root namespace and every prefixed namespace in the super cluster first.
 */
export class VirtualClusterController {
  private readonly informer: Informer<VirtualCluster>;
  private readonly queue = new WorkQueue();
  private readonly runner: Runner;
  private readonly roots = new Map<string, string>();

  constructor(private readonly o: LifecycleOptions) {
    this.informer = new Informer<VirtualCluster>({ client: o.meta, resource: R.virtualclusters, name: 'virtualclusters' });
    const enqueue = (vc: KubeObject) => this.queue.add(objectKey(vc));
    this.informer.addHandler({ onAdd: enqueue, onUpdate: (_a, b) => enqueue(b), onDelete: enqueue });
    this.runner = new Runner({ name: 'virtualcluster', queue: this.queue, concurrency: o.workers ?? 4, reconciler: { reconcile: (k) => this.reconcile(k) } });
  }

  /** start syncs the cache and starts the workers. */
  async start(): Promise<void> {
    liveControllers.add(this);
    this.informer.start();
    await this.informer.waitForSync();
    this.runner.start();
  }

  /** stop stops the workers and the informer (control planes keep running until their provisioner stops them). */
  async stop(): Promise<void> {
    liveControllers.delete(this);
    await this.runner.stop();
    await this.informer.stop();
  }

  /** phaseCounts counts cached VirtualClusters by phase. */
  phaseCounts(): Array<[string, number]> {
    const m = new Map<string, number>();
    for (const vc of this.informer.list()) m.set(vc.status?.phase ?? 'Pending', (m.get(vc.status?.phase ?? 'Pending') ?? 0) + 1);
    return [...m];
  }

  private async reconcile(key: string): Promise<Result> {
    const vc = this.informer.get(key);
    if (!vc) {
      const root = this.roots.get(key);
      if (root) this.o.tenants.remove(root);
      this.roots.delete(key);
      return;
    }
    if (this.o.superCluster && vc.spec?.superCluster && vc.spec.superCluster !== this.o.superCluster) return;
    const m = vc.metadata!;
    const root = vc.status?.clusterNamespace || rootNamespace(m.namespace!, m.name!, m.uid!);
    this.roots.set(key, root);
    if (m.deletionTimestamp) return this.finalize(vc, root);

    const errors = validate('virtualCluster', vc);
    if (errors.length) {
      this.o.tenants.remove(root);
      const message = formatErrors(`VirtualCluster ${key}`, errors);
      await this.setStatus(vc, { phase: 'Error', reason: 'InvalidSpec', message }, cond('Ready', 'False', 'InvalidSpec', message, vc));
      await this.event(vc, 'Warning', 'InvalidSpec', message);
      return;
    }
    if (!m.finalizers?.includes(FINALIZER)) {
      await this.o.meta.patch(R.virtualclusters, m.namespace, m.name!, { metadata: { finalizers: [...(m.finalizers ?? []), FINALIZER] } }, 'merge', {
        fieldManager: FIELD_MANAGER,
      });
    }
    const type = vc.spec.provisioner?.type ?? DEFAULTS.provisioner;
    const provisioner = this.o.provisioners[type];
    if (!provisioner) {
      const message = `provisioner "${type}" is not available in this manager (spec.provisioner.type)`;
      await this.setStatus(vc, { phase: 'Error', reason: 'ProvisionerUnavailable', message }, cond('Ready', 'False', 'ProvisionerUnavailable', message, vc));
      return;
    }
    const first = vc.status?.phase !== 'Running' && vc.status?.phase !== 'Updating';
    if (first && vc.status?.phase !== 'Provisioning') {
      await this.setStatus(vc, { phase: 'Provisioning', reason: 'Provisioning', message: `provisioning with ${type}` }, cond('Ready', 'False', 'Provisioning', 'control plane starting', vc));
      await this.event(vc, 'Normal', 'Provisioning', `provisioning the control plane with the ${type} provisioner`);
    }
    await this.ensureRootNamespace(vc, root);
    let state;
    try {
      state = await provisioner.ensure(vc, root);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      await this.setStatus(vc, { phase: 'Error', reason: 'ProvisionFailed', message }, cond('Ready', 'False', 'ProvisionFailed', message, vc));
      await this.event(vc, 'Warning', 'ProvisionFailed', message);
      throw e;
    }
    if (!state.ready) {
      await this.setStatus(vc, { phase: 'Provisioning', reason: 'Waiting', message: `waiting for ${state.waitingFor}` }, cond('Ready', 'False', 'Waiting', `waiting for ${state.waitingFor}`, vc));
      return { requeueAfter: 2000 };
    }
    const secretName = await this.writeKubeconfig(vc, state.result);
    await this.setStatus(
      vc,
      {
        phase: 'Running',
        reason: 'Running',
        message: state.rolled ? 'control plane rolled to the new spec' : 'control plane is serving',
        clusterNamespace: root,
        kubeconfigSecretName: secretName,
        kubeletClientCertFingerprint: state.result.kubeletClientCertFingerprint,
        apiserverEndpoint: state.result.apiserverEndpoint ? `https://${state.result.apiserverEndpoint.host}:${state.result.apiserverEndpoint.port}` : undefined,
      },
      cond('Ready', 'True', 'Running', 'control plane is serving', vc),
    );
    if (first || state.rolled) await this.event(vc, 'Normal', state.rolled ? 'Updated' : 'Running', state.rolled ? 'control plane rolled to the new spec' : 'control plane is serving');
    this.o.tenants.upsert(this.tenantOf(vc, root, state.result));
    return;
  }

  private tenantOf(vc: VirtualCluster, root: string, p: Provisioned): Tenant {
    const s = vc.spec;
    return {
      key: root,
      vcName: vc.metadata!.name!,
      vcNamespace: vc.metadata!.namespace!,
      vcUid: vc.metadata!.uid!,
      kubeconfig: p.kubeconfig,
      weight: s.weight ?? DEFAULTS.weight,
      clusterDomain: s.clusterDomain ?? DEFAULTS.clusterDomain,
      podSecurityLevel: s.podSecurityLevel ?? DEFAULTS.podSecurityLevel,
      opaqueMetaPrefixes: s.opaqueMetaPrefixes ?? [],
      transparentMetaPrefixes: s.transparentMetaPrefixes ?? [],
      plugins: s.plugins,
      pluginConfig: { ...this.o.defaultPluginConfig, ...s.pluginConfig },
      apiserverEndpoint: p.apiserverEndpoint,
    };
  }

  private async ensureRootNamespace(vc: VirtualCluster, root: string): Promise<void> {
    const m = vc.metadata!;
    await this.o.superClient.apply(
      R.namespaces,
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name: root,
          labels: { [LABEL.managedBy]: 'vc-manager', [LABEL.cluster]: root },
          annotations: { 'tenancy.x-k8s.io/vcname': m.name!, 'tenancy.x-k8s.io/vcnamespace': m.namespace!, 'tenancy.x-k8s.io/vcuid': m.uid! },
        },
      },
      FIELD_MANAGER,
    );
  }

  private async writeKubeconfig(vc: VirtualCluster, p: Provisioned): Promise<string> {
    const m = vc.metadata!;
    const name = kubeconfigSecretName(m.name!);
    await this.o.meta.apply(
      R.secrets,
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name,
          namespace: m.namespace,
          labels: { [LABEL.managedBy]: 'vc-manager' },
          ownerReferences: [{ apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster', name: m.name, uid: m.uid, controller: true }],
        },
        type: 'Opaque',
        data: { kubeconfig: Buffer.from(p.kubeconfig).toString('base64') },
      },
      FIELD_MANAGER,
    );
    return name;
  }

  /** finalize deletes everything the VirtualCluster owns, waiting for the super namespaces to go, then the finalizer. */
  private async finalize(vc: VirtualCluster, root: string): Promise<Result> {
    const m = vc.metadata!;
    if (!m.finalizers?.includes(FINALIZER)) return;
    this.o.tenants.remove(root);
    if (vc.status?.phase !== 'Deleting') {
      await this.setStatus(vc, { phase: 'Deleting', reason: 'Deleting', message: 'removing the control plane and super namespaces' }, cond('Ready', 'False', 'Deleting', 'deleting', vc));
    }
    const type = vc.spec?.provisioner?.type ?? DEFAULTS.provisioner;
    await this.o.provisioners[type]?.remove(vc, root);
    const owned = await this.o.superClient.list(R.namespaces, { labelSelector: `${LABEL.cluster}=${root}` });
    const remaining = owned.items.filter((n) => n.metadata?.name === root || n.metadata?.labels?.[LABEL.managedBy] === MANAGER || n.metadata?.labels?.[LABEL.managedBy] === 'vc-manager');
    if (remaining.length) {
      for (const n of remaining) if (!n.metadata?.deletionTimestamp) await this.o.superClient.delete(R.namespaces, undefined, n.metadata!.name!);
      return { requeueAfter: 1000 };
    }
    await this.o.meta.delete(R.secrets, m.namespace, kubeconfigSecretName(m.name!));
    await this.o.meta.patch(
      R.virtualclusters,
      m.namespace,
      m.name!,
      [
        { op: 'test', path: '/metadata/finalizers', value: m.finalizers },
        { op: 'replace', path: '/metadata/finalizers', value: m.finalizers.filter((f) => f !== FINALIZER) },
      ],
      'json',
      { fieldManager: FIELD_MANAGER },
    );
    log.info({ vc: objectKey(vc), tenant: root }, 'VirtualCluster deleted');
    return;
  }

  /** setStatus writes the status when it differs from what is recorded (one patch). */
  private async setStatus(vc: VirtualCluster, s: VirtualClusterStatus, c: Condition): Promise<void> {
    const old = vc.status ?? {};
    const conditions = mergeCondition(old.conditions ?? [], c);
    const next: VirtualClusterStatus = { ...old, ...s, conditions, observedGeneration: vc.metadata?.generation };
    for (const k of Object.keys(next) as Array<keyof VirtualClusterStatus>) if (next[k] === undefined) delete next[k];
    if (JSON.stringify(next) === JSON.stringify(old)) return;
    try {
      await this.o.meta.patch(R.virtualclusters, vc.metadata!.namespace, vc.metadata!.name!, { status: next }, 'merge', {
        subresource: 'status',
        fieldManager: FIELD_MANAGER,
      });
      vc.status = next;
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  private async event(vc: VirtualCluster, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const m = vc.metadata!;
    const target = { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster', name: m.name!, namespace: m.namespace, uid: m.uid };
    const err = await recordEvent(this.o.meta, target, type, reason, message, 'vc-manager');
    if (err) log.warn({ err: err.message }, 'could not record event');
  }

}

function cond(type: string, status: Condition['status'], reason: string, message: string, vc: VirtualCluster): Condition {
  return { type, status, reason, message, lastTransitionTime: new Date().toISOString(), observedGeneration: vc.metadata?.generation };
}

function mergeCondition(list: Condition[], c: Condition): Condition[] {
  const old = list.find((x) => x.type === c.type);
  const keep = old && old.status === c.status ? old.lastTransitionTime : c.lastTransitionTime;
  return [...list.filter((x) => x.type !== c.type), { ...c, lastTransitionTime: keep }];
}

/** Phase is re-exported for callers that only need the controller module. */
export type { Phase };
