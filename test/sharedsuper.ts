import { basename, join } from 'node:path';
import { inject } from 'vitest';
import { KubeClient } from '../core/kube/client.ts';
import { LocalEtcd, type EtcdEndpoint } from '../core/dev/local/etcd.ts';
import { LocalControlPlane, type ControlPlaneOptions, type Ports } from '../core/dev/local/controlplane.ts';
import { startTestSuper } from './harness.ts';
import { removeStateDir, stateDir as makeStateDir } from './statedirs.ts';

/**
 * One super cluster for many integration files. Starting a super cluster (etcd, kube-apiserver, controller manager,
 * scheduler, kwok) costs each file several seconds and CPU the files beside it wait for; a file whose tests touch only
 * namespaced objects of its own tenants gets the run's shared one instead (test/sharedsuper-setup.ts starts it before
 * the first file and stops it after the last). Such a file:
 *   - gives its tenants names no other file uses (the super namespaces, labels and syncer keys derive from them);
 *   - writes no cluster-scoped super object (CRDs, TenantPolicies, RuntimeClasses, Nodes, RBAC) and counts nothing
 *     cluster-wide that other files' tenants also make (list by its tenant's label or namespace instead);
 *   - changes none of the super cluster's processes or its kwok nodes.
 * Files that need any of that keep a super cluster of their own (startTestSuper).
 */

/** SharedSuperInfo is what the global setup hands to the test files: where the shared super cluster is. */
export interface SharedSuperInfo {
  kubeconfigPath: string;
  etcdEndpoint: string;
  /** its components' loopback ports */
  ports: Ports;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** the run's shared super cluster (test/sharedsuper-setup.ts); absent in a project without that setup */
    sharedSuper?: SharedSuperInfo;
  }
}

/** SHARED_SUPER_NODES is how many kwok nodes the shared super cluster has (nodeshare spreads Pods over two). */
export const SHARED_SUPER_NODES = 2;

/** AddControlPlaneOptions are LocalSuperCluster.addControlPlane's. */
export type AddControlPlaneOptions = Partial<Omit<ControlPlaneOptions, 'name' | 'etcd'>> & { ownEtcd?: boolean };

/** SharedTestSuper is a file's share of a super cluster: its admin client and the control planes the file adds. */
export interface SharedTestSuper {
  /** admin client of the super cluster */
  client: KubeClient;
  /** this file's own state directory (its control planes) */
  stateDir: string;
  /** true when this is the run's shared super cluster; false when the file started one of its own (no shared one) */
  shared: boolean;
  sc: {
    kubeconfigPath: string;
    etcd: EtcdEndpoint;
    /** the super cluster's own control plane: where its components listen */
    cluster: { ports: Ports };
    /**
     * addControlPlane starts a tenant control plane as LocalSuperCluster.addControlPlane does, on the super cluster's
     * etcd under a prefix of this file's own (or on an etcd of its own with ownEtcd); stop stops it
     */
    addControlPlane(name: string, o?: AddControlPlaneOptions): Promise<LocalControlPlane>;
  };
  /** stop stops this file's control planes and removes its state directory; the shared super cluster keeps running */
  stop(): Promise<void>;
}

/**
 * sharedTestSuper gives a file the run's shared super cluster, or, where no global setup provided one (the real-node
 * project, a run with VC_TEST_SHARED_SUPER=0), a super cluster of its own with SHARED_SUPER_NODES kwok nodes.
 */
export async function sharedTestSuper(): Promise<SharedTestSuper> {
  const info = inject('sharedSuper');
  if (!info) {
    const t = await startTestSuper({ nodes: SHARED_SUPER_NODES });
    return { client: t.client, stateDir: t.stateDir, shared: false, sc: t.sc, stop: () => t.stop() };
  }
  const dir = makeStateDir('vc-test-shared-');
  // The etcd prefix of this file's control planes: unique among the files on the shared etcd, as the directory is.
  const prefix = basename(dir);
  const etcd: EtcdEndpoint = { endpoint: info.etcdEndpoint };
  const client = await KubeClient.fromFile(info.kubeconfigPath);
  const planes: LocalControlPlane[] = [];
  const etcds: LocalEtcd[] = [];
  const keep = !!process.env.KEEP_STATE;
  return {
    client,
    stateDir: dir,
    shared: true,
    sc: {
      kubeconfigPath: info.kubeconfigPath,
      etcd,
      cluster: { ports: info.ports },
      async addControlPlane(name, o = {}) {
        const { ownEtcd, ...opts } = o;
        const cpDir = join(dir, 'clusters', name);
        const own = ownEtcd ? await LocalEtcd.start({ dir: join(cpDir, 'etcd'), name: `${name}/etcd` }) : undefined;
        if (own) etcds.push(own);
        const cp = await LocalControlPlane.start({
          etcdPrefix: `/${prefix}/${name}`,
          ...opts,
          dir: cpDir,
          name,
          etcd: own ?? etcd,
        });
        planes.push(cp);
        return cp;
      },
    },
    async stop() {
      client.close();
      for (const cp of planes.splice(0).reverse()) await cp.stop({ discard: !keep });
      for (const e of etcds.splice(0)) await e.stop({ discard: !keep });
      if (!keep) removeStateDir(dir);
    },
  };
}
