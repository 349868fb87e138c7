import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import type { KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { LocalSuperCluster } from '../local/supercluster.ts';
import { waitFor } from '../local/process.ts';
import type { ManagerConfig } from '../manager/config.ts';
import { startManager, type Manager } from '../manager/manager.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Embedded is the whole system on this machine: the local super cluster and a manager serving it. */
export interface Embedded {
  superCluster: LocalSuperCluster;
  manager: Manager;
  configPath: string;
  stop(): Promise<void>;
}

/** applyCRDs server-side-applies every CRD under deploy/crds and waits until the VirtualCluster API answers. */
export async function applyCRDs(sc: LocalSuperCluster): Promise<void> {
  const c = await sc.cluster.client();
  const dir = join(repoRoot, 'deploy/crds');
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.yaml'))) {
    for (const d of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) await c.apply(R.crds, d.toJS() as KubeObject, 'vc-up');
  }
  await waitFor('the VirtualCluster API', async () => !!(await c.list(R.virtualclusters)), { timeoutMs: 30_000 });
}

/**
 * startEmbedded starts (or restarts, reusing its state) the local super cluster in stateDir, installs the CRDs and
 * runs a manager with leader election, the VirtualCluster controller (local provisioner sharing the super's etcd)
 * and the syncer. The manager configuration it uses is written to `<stateDir>/manager.yaml`.
 */
export async function startEmbedded(o: { stateDir: string; nodes?: number; onStep?: (s: string) => void }): Promise<Embedded> {
  const step = o.onStep ?? (() => {});
  step('starting the super cluster (etcd, kube-apiserver, controller-manager, scheduler, kwok nodes)');
  const sc = await LocalSuperCluster.start({ stateDir: o.stateDir, nodes: o.nodes ?? 3, restart: true });
  try {
    step('installing the CRDs');
    await applyCRDs(sc);
    const cfg: ManagerConfig = {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'ManagerConfiguration',
      superClusters: [{ name: 'default', kubeconfig: sc.kubeconfigPath }],
      leaderElection: { enabled: true, namespace: 'kube-system', name: 'vc-manager', leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 2 },
      virtualClusters: { enabled: true, local: { stateDir: join(o.stateDir, 'tenants'), etcdEndpoint: sc.etcd.endpoint } },
      syncer: { workers: 8, patrolIntervalSeconds: 60 },
    };
    const configPath = join(o.stateDir, 'manager.yaml');
    writeFileSync(configPath, stringify(cfg));
    step('starting the manager (leader election, VirtualCluster controller, syncer)');
    const manager = await startManager(cfg, configPath);
    await waitFor('the manager to lead', async () => manager.isLeader(), { timeoutMs: 60_000 });
    return {
      superCluster: sc,
      manager,
      configPath,
      async stop() {
        await manager.stop();
        await sc.stop();
      },
    };
  } catch (e) {
    await sc.stop();
    throw e;
  }
}
