import { inject } from 'vitest';
import { KubeClient, type KubeObject, type Resource } from '../core/kube/client.ts';
import { R } from '../core/kube/resources.ts';
import type { EtcdEndpoint } from '../core/dev/local/etcd.ts';
import type { LocalControlPlane } from '../core/dev/local/controlplane.ts';
import type { RealNode } from '../core/dev/local/realnode.ts';
import { eventually, startTestSuper } from './harness.ts';
import { filePlanes, type AddControlPlaneOptions } from './sharedsuper.ts';
import { removeStateDir, stateDir as makeStateDir } from './statedirs.ts';

/**
 * One real node for many real-node files. A super cluster with a real node (containerd, kubelet, kube-proxy,
 * kube-router) costs a file 11-24 s of wall and about 13 CPU-s to start; a file that only runs Pods on the node in
 * namespaces of its own gets the run's shared one instead (test/sharedrealnode-setup.ts starts it before the first
 * real-node file and stops it after the last, checking that the host is as before). Such a file:
 *   - creates its super objects in namespaces of its own (no other file uses the names), or as cluster-scoped
 *     RuntimeClasses, StorageClasses or PersistentVolumes: its stop removes all of these and waits until the node ran
 *     its Pods down, so the next file finds the node as this one found it;
 *   - changes none of the node's processes, its configuration or the super cluster's;
 *   - checks what it left on the host against a snapshot taken before it asked for the node (stop comes first).
 * Files that stop, restart or configure the node (registries, a second super, `vc up`) keep one of their own.
 * Real-node files run one at a time (vitest.config.ts), so no two files share the node at once.
 */

/** RealNodeInfo is what a file may know of the shared real node (RealNode's fields the files read). */
export interface RealNodeInfo {
  name: string;
  nodeIP: string;
  kubeletURL: string;
  cfg: { network: string; podCidr: string; kubeletPort: number; runsc: boolean };
  /** kube-router's process, when the node runs one */
  kubeRouter?: { pid: number };
}

/** SharedRealNodeInfo is what the global setup hands to the files: where the shared super cluster and node are. */
export interface SharedRealNodeInfo {
  kubeconfigPath: string;
  etcdEndpoint: string;
  cluster: { server: string; caPem: string; dir: string; kubeconfigPath: string };
  node: RealNodeInfo;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** the run's shared super cluster with a real node (test/sharedrealnode-setup.ts); absent without that setup */
    sharedRealNode?: SharedRealNodeInfo;
  }
}

/** realNodeInfo is a RealNode as a file sees it. */
export function realNodeInfo(n: RealNode): RealNodeInfo {
  const { network, podCidr, kubeletPort, runsc } = n.cfg;
  const pid = n.kubeRouter?.pid;
  return {
    name: n.name,
    nodeIP: n.nodeIP,
    kubeletURL: n.kubeletURL,
    cfg: { network, podCidr, kubeletPort, runsc },
    ...(pid ? { kubeRouter: { pid } } : {}),
  };
}

/** RealNodeShare is a file's share of a super cluster with one real node. */
export interface RealNodeShare {
  /** admin client of the super cluster */
  client: KubeClient;
  /** this file's own state directory */
  stateDir: string;
  /** true when this is the run's shared node; false when the file started a super cluster and node of its own */
  shared: boolean;
  sc: {
    kubeconfigPath: string;
    etcd: EtcdEndpoint;
    cluster: SharedRealNodeInfo['cluster'];
    /** the one real node */
    realNodes: [RealNodeInfo];
    /** addControlPlane starts a tenant control plane on the super cluster's etcd (as sharedTestSuper's does) */
    addControlPlane(name: string, o?: AddControlPlaneOptions): Promise<LocalControlPlane>;
  };
  /**
   * stop: on a node of its own, stops everything; on the shared node, stops this file's control planes, removes the
   * super objects it made (namespaces and their Pods, Pods in namespaces that were there, RuntimeClasses,
   * StorageClasses, PersistentVolumes) and waits until they are gone, so the node runs none of its Pods
   */
  stop(): Promise<void>;
}

/**
 * sharedRealNodeSuper gives a file the run's shared super cluster with a real node, or, where no global setup
 * provided one (a run with VC_TEST_SHARED_REAL_NODE=0), a super cluster with one simulated and one real node of its
 * own, as startTestSuper({ nodes: 1, realNodes: 1 }) starts.
 */
export async function sharedRealNodeSuper(): Promise<RealNodeShare> {
  const info = inject('sharedRealNode');
  if (!info) {
    const t = await startTestSuper({ nodes: 1, realNodes: 1 });
    const cp = t.sc.cluster;
    return {
      client: t.client,
      stateDir: t.stateDir,
      shared: false,
      sc: {
        kubeconfigPath: t.sc.kubeconfigPath,
        etcd: t.sc.etcd,
        cluster: { server: cp.server, caPem: cp.caPem, dir: cp.dir, kubeconfigPath: cp.kubeconfigPath },
        realNodes: [realNodeInfo(t.sc.realNodes[0]!)],
        addControlPlane: (name, o) => t.sc.addControlPlane(name, o),
      },
      stop: () => t.stop(),
    };
  }
  const dir = makeStateDir('vc-test-sharednode-');
  const client = await KubeClient.fromFile(info.kubeconfigPath);
  const before = await superObjects(client);
  const planes = filePlanes(dir, { endpoint: info.etcdEndpoint });
  return {
    client,
    stateDir: dir,
    shared: true,
    sc: {
      kubeconfigPath: info.kubeconfigPath,
      etcd: planes.etcd,
      cluster: info.cluster,
      realNodes: [info.node],
      addControlPlane: planes.add,
    },
    async stop() {
      try {
        await planes.stop();
        await removeAdded(client, before);
      } finally {
        client.close();
        if (!process.env.KEEP_STATE) removeStateDir(dir);
      }
    },
  };
}

/** CLUSTER_KINDS are the cluster-scoped kinds a file sharing the node may create; its stop removes them. */
const CLUSTER_KINDS: Resource[] = [R.runtimeclasses, R.storageclasses, R.persistentvolumes];

/** SuperObjects names the objects of the super cluster a share's stop compares with: "namespace/name" per kind. */
type SuperObjects = Map<Resource, Set<string>>;

async function superObjects(client: KubeClient): Promise<SuperObjects> {
  const out: SuperObjects = new Map();
  for (const r of [R.namespaces, R.pods, ...CLUSTER_KINDS])
    out.set(r, new Set((await client.listAll(r)).items.map(key)));
  return out;
}

const key = (o: KubeObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/**
 * removeAdded deletes what was made in the super cluster since `before` and waits until it is gone: Pods first, with
 * a grace period of one second (the next file should not wait out a sleeping container's 30; the API object goes
 * only once the kubelet reports the containers stopped, so a Pod gone from the list no longer runs on the node),
 * then namespaces, then the cluster-scoped kinds.
 */
async function removeAdded(client: KubeClient, before: SuperObjects): Promise<void> {
  const added = async (r: Resource) => (await client.listAll(r)).items.filter((o) => !before.get(r)!.has(key(o)));
  for (const p of await added(R.pods))
    await client.delete(R.pods, p.metadata!.namespace, p.metadata!.name!, { gracePeriodSeconds: 1 });
  for (const r of [R.namespaces, ...CLUSTER_KINDS])
    for (const o of await added(r)) await client.delete(r, undefined, o.metadata!.name!);
  await eventually(
    async () => {
      for (const r of [R.pods, R.namespaces, ...CLUSTER_KINDS]) {
        const left = (await added(r)).map(key);
        if (left.length) throw new Error(`the shared node's super cluster still has ${r.resource}: ${left.join(', ')}`);
      }
    },
    180_000,
    500,
  );
}
