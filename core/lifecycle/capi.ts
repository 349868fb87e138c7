import { EventRecorder } from '../controller/events.ts';
import { queueMetrics } from '../controller/metrics.ts';
import { Runner, type Result } from '../controller/runner.ts';
import { sameJSON } from '../controller/status.ts';
import { isNotFound, type KubeClient, type KubeObject } from '../kube/client.ts';
import { InformerFactory, type SharedInformer } from '../kube/factory.ts';
import { objectKey } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { PREFIX } from '../names/names.ts';
import { WorkQueue } from '../queue/workqueue.ts';
import { kubeconfigSecretName, type VirtualCluster } from '../api/virtualcluster.ts';
import type { VirtualClusterInfraClusterStatus } from '../api/generated.ts';
import {
  CAPI_FIELD_MANAGER,
  CAPI_REASONS,
  clusterNameOf,
  CONTROL_PLANE_API_VERSION,
  controlledBy,
  controlPlaneStatus,
  desiredVirtualCluster,
  isRefusal,
  pausedCondition,
  pausedStatus,
  withCondition,
  type ClusterVersionObject,
  type Endpoint,
  type Refusal,
  type VirtualClusterControlPlane,
} from './capidecisions.ts';
import { serverOf } from './kubeconfigsecret.ts';
import { resolvePolicy, type TenantPolicy } from '../tenancy/policy.ts';

const log = childLogger({ controller: 'capi' });

/** CAPI_FINALIZER keeps a VirtualClusterControlPlane until the VirtualCluster it made is gone. */
export const CAPI_FINALIZER = `${PREFIX}/capi-control-plane`;

/** DELETE_RECHECK_MS is how soon a deletion waiting for its VirtualCluster to go is looked at again. */
const DELETE_RECHECK_MS = 1000;

/** CapiOptions configure the Cluster API provider controllers. */
export interface CapiOptions {
  meta: KubeClient;
  informers?: InformerFactory;
  workers?: number;
}

type InfraCluster = KubeObject & { status?: VirtualClusterInfraClusterStatus };
/** CapiCluster is what the provider reads of a Cluster API Cluster: whether it is paused, and what it references. */
type CapiCluster = KubeObject & {
  spec?: { paused?: boolean; controlPlaneRef?: { name?: string }; infrastructureRef?: { name?: string } };
};

/**
 * CapiProvider is this project's Cluster API control-plane and infrastructure provider. A VirtualClusterControlPlane
 * that Cluster API has given a Cluster becomes a VirtualCluster of the Cluster's name that it controls; the
 * VirtualCluster controller does the rest (policy, provisioning, rollouts, deletion), and this controller only
 * mirrors that VirtualCluster's state into the contract's fields, the endpoint into spec.controlPlaneEndpoint, and
 * bad input (a version no ClusterVersion offers, a spec the VirtualCluster schema refuses) into the Available
 * condition, which Cluster API shows on the Cluster. A VirtualClusterInfraCluster is provisioned at once: the
 * super cluster is the infrastructure. Cluster API's pause (the Cluster's spec.paused, or the paused annotation on the
 * object) stops both: only the Paused condition is written until it is lifted.
 */
export class CapiProvider {
  private readonly controlPlanes: SharedInformer<VirtualClusterControlPlane>;
  private readonly infraClusters: SharedInformer<InfraCluster>;
  private readonly virtualClusters: SharedInformer<VirtualCluster>;
  private readonly clusterVersions: SharedInformer<ClusterVersionObject>;
  private readonly policies: SharedInformer<TenantPolicy>;
  private readonly clusters: SharedInformer<CapiCluster>;
  private readonly cpQueue = new WorkQueue({ metrics: queueMetrics('capi-controlplane') });
  private readonly infraQueue = new WorkQueue({ metrics: queueMetrics('capi-infracluster') });
  private readonly runners: Runner[];
  private readonly events: EventRecorder;

  constructor(private readonly o: CapiOptions) {
    const informers = o.informers ?? new InformerFactory(o.meta, 'capi');
    this.controlPlanes = informers.informer({ resource: R.virtualclustercontrolplanes });
    this.infraClusters = informers.informer({ resource: R.virtualclusterinfraclusters });
    this.virtualClusters = informers.informer({ resource: R.virtualclusters });
    this.clusterVersions = informers.informer({ resource: R.clusterversions });
    this.policies = informers.informer({ resource: R.tenantpolicies });
    this.clusters = informers.informer({ resource: R.capiclusters });
    const cp = (o: KubeObject) => this.cpQueue.add(objectKey(o));
    this.controlPlanes.addHandler({ onAdd: cp, onUpdate: (_a, b) => cp(b), onDelete: cp });
    const infra = (o: KubeObject) => this.infraQueue.add(objectKey(o));
    this.infraClusters.addHandler({ onAdd: infra, onUpdate: (_a, b) => infra(b), onDelete: infra });
    // A VirtualCluster event wakes the control plane that controls it.
    const owner = (vc: KubeObject) => {
      const ref = vc.metadata?.ownerReferences?.find(
        (r) => r.controller === true && r.kind === 'VirtualClusterControlPlane',
      );
      if (typeof ref?.name === 'string') this.cpQueue.add(`${vc.metadata!.namespace}/${ref.name}`);
    };
    this.virtualClusters.addHandler({ onAdd: owner, onUpdate: (_a, b) => owner(b), onDelete: owner });
    // A ClusterVersion that appears or changes may settle a control plane's spec.version.
    const all = () => this.controlPlanes.list().forEach(cp);
    this.clusterVersions.addHandler({ onAdd: all, onUpdate: all, onDelete: all });
    // So may a TenantPolicy, whose grants decide which ClusterVersions may be picked.
    this.policies.addHandler({ onAdd: all, onUpdate: all, onDelete: all });
    // A Cluster that is paused or unpaused wakes the objects it references.
    const refs = (c: CapiCluster) => {
      const ns = c.metadata?.namespace;
      if (c.spec?.controlPlaneRef?.name) this.cpQueue.add(`${ns}/${c.spec.controlPlaneRef.name}`);
      if (c.spec?.infrastructureRef?.name) this.infraQueue.add(`${ns}/${c.spec.infrastructureRef.name}`);
    };
    this.clusters.addHandler({ onAdd: refs, onUpdate: (_a, b) => refs(b), onDelete: refs });
    this.runners = [
      new Runner({
        name: 'capi-controlplane',
        queue: this.cpQueue,
        concurrency: o.workers ?? 2,
        reconciler: { reconcile: (k) => this.reconcileControlPlane(k) },
      }),
      new Runner({
        name: 'capi-infracluster',
        queue: this.infraQueue,
        reconciler: { reconcile: (k) => this.reconcileInfraCluster(k) },
      }),
    ];
    this.events = new EventRecorder({
      client: o.meta,
      component: CAPI_FIELD_MANAGER,
      apiVersion: CONTROL_PLANE_API_VERSION,
      kind: 'VirtualClusterControlPlane',
      log,
    });
  }

  /** start syncs the caches and starts the workers. */
  async start(): Promise<void> {
    const all = [
      this.controlPlanes,
      this.infraClusters,
      this.virtualClusters,
      this.clusterVersions,
      this.policies,
      this.clusters,
    ];
    for (const i of all) i.start();
    await Promise.all(all.map((i) => i.waitForSync()));
    for (const r of this.runners) r.start();
  }

  /** stop stops the workers and the informers; the VirtualClusters made stay. */
  async stop(): Promise<void> {
    for (const r of this.runners) await r.stop();
    for (const i of [
      this.controlPlanes,
      this.infraClusters,
      this.virtualClusters,
      this.clusterVersions,
      this.policies,
      this.clusters,
    ])
      await i.stop();
  }

  /**
   * paused is Cluster API's Paused condition of a provider object: True while its Cluster (named by the label Cluster
   * API sets) has spec.paused or the object has the paused annotation.
   */
  private paused(o: KubeObject): ReturnType<typeof pausedCondition> {
    const name = clusterNameOf(o);
    const cluster = name ? this.clusters.get(`${o.metadata!.namespace}/${name}`) : undefined;
    return pausedCondition(cluster?.spec?.paused === true, o);
  }

  private async reconcileControlPlane(key: string): Promise<Result> {
    const cp = this.controlPlanes.get(key);
    if (!cp) return;
    // While paused nothing is changed, not even a deletion goes on: only the Paused condition says so.
    const paused = this.paused(cp);
    if (paused.status === 'True') return this.patchStatus(cp, pausedStatus(cp, paused));
    if (cp.metadata?.deletionTimestamp) return this.deleteControlPlane(cp);
    const cluster = clusterNameOf(cp);
    if (!cluster) {
      // Cluster API labels (and owns) a control plane once a Cluster names it; until then there is nothing to make.
      await this.writeStatus(cp, undefined, {
        reason: CAPI_REASONS.waitingForCluster,
        message: 'no Cluster names this control plane in spec.controlPlaneRef yet',
      });
      return;
    }
    if (!cp.metadata?.finalizers?.includes(CAPI_FINALIZER)) {
      await this.o.meta.patch(
        R.virtualclustercontrolplanes,
        cp.metadata!.namespace,
        cp.metadata!.name!,
        {
          metadata: {
            resourceVersion: cp.metadata!.resourceVersion,
            finalizers: [...(cp.metadata?.finalizers ?? []), CAPI_FINALIZER],
          },
        },
        'merge',
      );
      return; // the update brings the key back
    }
    const vcKey = `${cp.metadata!.namespace}/${cluster}`;
    const existing = this.virtualClusters.get(vcKey);
    if (existing && !controlledBy(existing, cp.metadata?.uid)) {
      return this.writeStatus(cp, undefined, {
        reason: CAPI_REASONS.notOwned,
        message: `VirtualCluster ${vcKey} exists and is not this control plane's; it is left alone`,
      });
    }
    // The ClusterVersion is picked among those granted by the policy the VirtualCluster will resolve to; the rest of
    // the grants (the policy's subjects, super clusters, import Secrets) are the VirtualCluster controller's and
    // admission's to check on the VirtualCluster itself.
    const resolved = resolvePolicy({ spec: cp.spec.virtualCluster ?? {} }, this.policies.list());
    const desired =
      'error' in resolved
        ? { reason: CAPI_REASONS.policyViolation, message: `spec.virtualCluster.policyName: ${resolved.error.message}` }
        : desiredVirtualCluster(cp, cluster, this.clusterVersions.list(), {
            ...(resolved.policy?.metadata?.name && { policy: resolved.policy.metadata.name }),
            clusterVersions: resolved.policy?.spec?.grants?.clusterVersions ?? [],
          });
    if (isRefusal(desired)) {
      const said = cp.status?.conditions?.find((c) => c.type === 'Available');
      if (said?.reason !== desired.reason || !said.message?.startsWith(desired.message))
        await this.events.record(cp, 'Warning', desired.reason, desired.message);
      return this.writeStatus(cp, existing, desired);
    }
    const vc = await this.applyVirtualCluster(desired, existing);
    const endpoint = await this.endpointOf(vc);
    if (endpoint && !sameJSON(cp.spec.controlPlaneEndpoint ?? null, endpoint)) {
      await this.o.meta.patch(
        R.virtualclustercontrolplanes,
        cp.metadata!.namespace,
        cp.metadata!.name!,
        { spec: { controlPlaneEndpoint: endpoint } },
        'merge',
        { fieldManager: CAPI_FIELD_MANAGER },
      );
    }
    return this.writeStatus(cp, vc);
  }

  /**
   * applyVirtualCluster server-side-applies the VirtualCluster (the fields this provider owns: labels, owner, spec;
   * a field dropped from spec.virtualCluster is dropped from it), with the cached resourceVersion as precondition
   * when it exists. An apply that changes nothing changes no resourceVersion and wakes nobody.
   */
  private applyVirtualCluster(desired: VirtualCluster, existing: VirtualCluster | undefined): Promise<VirtualCluster> {
    const body = existing
      ? { ...desired, metadata: { ...desired.metadata, resourceVersion: existing.metadata!.resourceVersion } }
      : desired;
    return this.o.meta.apply<VirtualCluster>(R.virtualclusters, body, CAPI_FIELD_MANAGER);
  }

  /** endpointOf reads the apiserver the VirtualCluster's kubeconfig Secret names (what clients dial). */
  private async endpointOf(vc: VirtualCluster): Promise<Endpoint | undefined> {
    if (!vc.status?.kubeconfigSecretName) return undefined;
    const s = await this.o.meta.getOrNull(R.secrets, vc.metadata!.namespace, kubeconfigSecretName(vc.metadata!.name!));
    const data = (s as { data?: Record<string, string> } | null)?.data?.kubeconfig;
    if (!data) return undefined;
    return serverOf(Buffer.from(data, 'base64').toString('utf8'));
  }

  private async writeStatus(cp: VirtualClusterControlPlane, vc: VirtualCluster | undefined, refusal?: Refusal) {
    const cvName = vc?.spec?.clusterVersionName;
    const vcVersion = cvName ? this.clusterVersions.get(cvName)?.spec?.kubernetesVersion : undefined;
    const status = controlPlaneStatus({
      cp,
      ...(vc && { vc }),
      ...(vcVersion && { vcVersion }),
      ...(refusal && { refusal }),
    });
    return this.patchStatus(cp, status);
  }

  private async patchStatus(cp: VirtualClusterControlPlane, status: VirtualClusterControlPlane['status']) {
    if (sameJSON(cp.status ?? {}, status)) return;
    try {
      await this.o.meta.patch(
        R.virtualclustercontrolplanes,
        cp.metadata!.namespace,
        cp.metadata!.name!,
        { status },
        'merge',
        { subresource: 'status', fieldManager: CAPI_FIELD_MANAGER },
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  /**
   * deleteControlPlane deletes the VirtualCluster this control plane controls, waits for the VirtualCluster
   * controller to remove it (and with it the tenant's control plane, namespaces and kubeconfig Secret), then lets the
   * control plane go, so that Cluster API sees the Cluster deleted only once the tenant is.
   */
  private async deleteControlPlane(cp: VirtualClusterControlPlane): Promise<Result> {
    if (!cp.metadata?.finalizers?.includes(CAPI_FINALIZER)) return;
    const cluster = clusterNameOf(cp);
    const vc = cluster ? this.virtualClusters.get(`${cp.metadata.namespace}/${cluster}`) : undefined;
    if (vc && controlledBy(vc, cp.metadata.uid)) {
      if (!vc.metadata?.deletionTimestamp)
        await this.o.meta.delete(R.virtualclusters, vc.metadata!.namespace, vc.metadata!.name!, {
          uid: vc.metadata!.uid!,
        });
      return { requeueAfter: DELETE_RECHECK_MS };
    }
    await this.o.meta.patch(
      R.virtualclustercontrolplanes,
      cp.metadata.namespace,
      cp.metadata.name!,
      {
        metadata: {
          resourceVersion: cp.metadata.resourceVersion,
          finalizers: cp.metadata.finalizers.filter((f) => f !== CAPI_FINALIZER),
        },
      },
      'merge',
    );
    log.info({ key: objectKey(cp) }, 'VirtualCluster gone; control plane released');
  }

  private async reconcileInfraCluster(key: string): Promise<Result> {
    const ic = this.infraClusters.get(key);
    if (!ic || ic.metadata?.deletionTimestamp) return;
    const paused = this.paused(ic);
    const generation = ic.metadata?.generation;
    const status: VirtualClusterInfraClusterStatus =
      paused.status === 'True'
        ? { ...ic.status, conditions: withCondition(ic.status?.conditions, paused, generation) }
        : {
            initialization: { provisioned: true },
            ready: true,
            conditions: withCondition(
              withCondition(
                ic.status?.conditions?.filter((c) => c.type === 'Ready' || c.type === 'Paused'),
                {
                  type: 'Ready',
                  status: 'True',
                  reason: 'Provisioned',
                  message: 'the super cluster is the infrastructure',
                },
                generation,
              ),
              paused,
              generation,
            ),
          };
    if (sameJSON(ic.status ?? {}, status)) return;
    try {
      await this.o.meta.patch(
        R.virtualclusterinfraclusters,
        ic.metadata!.namespace,
        ic.metadata!.name!,
        { status },
        'merge',
        { subresource: 'status', fieldManager: CAPI_FIELD_MANAGER },
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}
