import type { OwnStatus } from '../controller/predicates.ts';
import { sameJSON } from '../controller/status.ts';
import { statusOnly } from '../controller/predicates.ts';
import type { KubeObject } from '../kube/client.ts';
import type { InformerFactory, SharedInformer } from '../kube/factory.ts';
import { objectKey } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import {
  nodeAddressesChanged,
  readsNodeAddresses,
  type NodeWithAddresses,
  type Provisioner,
} from '../provisioners/provisioner.ts';
import type { TenantPolicy } from '../tenancy/policy.ts';
import type { ClusterVersionSpec } from '../api/generated.ts';
import type { VirtualCluster } from '../api/virtualcluster.ts';

/** ClusterVersion is a ClusterVersion object as the controller's cache holds it. */
export type ClusterVersion = KubeObject & { spec?: ClusterVersionSpec };

/** LifecycleWatches are the informers the VirtualCluster controller reads, from the manager's shared factory. */
export interface LifecycleWatches {
  virtualClusters: SharedInformer<VirtualCluster>;
  policies: SharedInformer<TenantPolicy>;
  clusterVersions: SharedInformer<ClusterVersion>;
  /** the namespaces of the meta cluster: their labels can grant a policy (spec.grants.subjects selector) */
  namespaces: SharedInformer<KubeObject>;
  /** the Nodes, watched while a provisioner renders from their addresses (readsNodeAddresses) */
  nodes?: SharedInformer<KubeObject & NodeWithAddresses>;
}

/** WatchTargets are what the watches' handlers map an event to: the keys of the VirtualClusters it concerns. */
export interface WatchTargets {
  enqueue: (key: string) => void;
  /** the status the controller last wrote per key: its echo is no reason to reconcile */
  ownStatus: OwnStatus;
  provisioners: Partial<Record<string, Provisioner>>;
  /** the type of the provisioner serving a VirtualCluster */
  provisionerOf: (vc: VirtualCluster) => string | undefined;
}

/**
 * lifecycleWatches takes the controller's informers from the shared factory and gives each handlers that only
 * enqueue the keys of the VirtualClusters an event concerns: the VirtualCluster itself (not the echo of the
 * controller's own status write), every user of a TenantPolicy or ClusterVersion that changed, every VirtualCluster
 * of a namespace whose labels changed (a selector grant given or taken back), and, when some
 * provisioner renders from the Nodes' addresses, every tenant of such a provisioner when a Node joins, leaves or
 * changes its addresses.
 */
export function lifecycleWatches(informers: InformerFactory, t: WatchTargets): LifecycleWatches {
  const virtualClusters = informers.informer<VirtualCluster>({ resource: R.virtualclusters });
  const enqueue = (vc: KubeObject) => t.enqueue(objectKey(vc));
  // The echo of the controller's own status write decides nothing: what the author or a deletion changed runs
  // the steps again, and so does a status someone else wrote (the controller puts its own answer back).
  virtualClusters.addHandler({
    onAdd: enqueue,
    onUpdate: (a, b) => {
      if (!statusOnly(a, b) || !t.ownStatus.isOwn(objectKey(b), b.status)) enqueue(b);
    },
    onDelete: enqueue,
  });
  const policies = informers.informer<TenantPolicy>({ resource: R.tenantpolicies });
  const requeueUsers = (p: KubeObject) => {
    for (const vc of virtualClusters.list())
      if (!vc.spec?.policyName || vc.spec.policyName === p.metadata?.name) enqueue(vc);
  };
  policies.addHandler({ onAdd: requeueUsers, onUpdate: (_a, b) => requeueUsers(b), onDelete: requeueUsers });
  // A ClusterVersion edit reaches every tenant that names it, through the same roll (held back by maxUnavailable).
  const clusterVersions = informers.informer<ClusterVersion>({ resource: R.clusterversions });
  const cvUsers = (cv: KubeObject) =>
    virtualClusters.list().forEach((vc) => vc.spec?.clusterVersionName === cv.metadata?.name && enqueue(vc));
  clusterVersions.addHandler({ onAdd: cvUsers, onUpdate: (_a, b) => cvUsers(b), onDelete: cvUsers });
  // A grant by namespace labels is taken back (or given) by relabelling the namespace: its tenants are judged again
  // at once, not at their next change. A namespace exists before its VirtualClusters and goes after them.
  const namespaces = informers.informer<KubeObject>({ resource: R.namespaces });
  namespaces.addHandler({
    onUpdate: (a, b) => {
      if (sameJSON(a.metadata?.labels ?? {}, b.metadata?.labels ?? {})) return;
      for (const vc of virtualClusters.list()) if (vc.metadata?.namespace === b.metadata?.name) enqueue(vc);
    },
  });
  // A provisioner that renders from the Nodes' addresses (the native apiserver egress leaves them out) sees a Node
  // that joins, leaves or changes its addresses at once, not at its tenants' next change: their objects render again.
  const readers = Object.keys(t.provisioners).filter((k) => readsNodeAddresses(t.provisioners[k]));
  if (readers.length === 0) return { virtualClusters, policies, clusterVersions, namespaces };
  const nodes = informers.informer<KubeObject & NodeWithAddresses>({ resource: R.nodes });
  const nodeUsers = () =>
    virtualClusters.list().forEach((vc) => readers.includes(t.provisionerOf(vc) ?? '') && enqueue(vc));
  nodes.addHandler({
    onAdd: nodeUsers,
    onUpdate: (a, b) => nodeAddressesChanged(a, b) && nodeUsers(),
    onDelete: nodeUsers,
  });
  return { virtualClusters, policies, clusterVersions, namespaces, nodes };
}
