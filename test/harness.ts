import { readFileSync } from 'node:fs';
import { LocalSuperCluster, type SuperClusterOptions } from '../core/dev/local/supercluster.ts';
import type { KubeClient } from '../core/kube/client.ts';
import { APISERVER_READY_MS, type LocalControlPlane } from '../core/dev/local/controlplane.ts';
import { tenantFrom, type Tenant } from '../core/tenancy/tenant.ts';
import { ensureClusterCRD, registerSuperCluster } from '../core/dev/local/registration.ts';
import { ensureToolchain } from '../core/toolchain/toolchain.ts';
import { realNodePreflightHere } from '../core/dev/local/realnode.ts';
import { removeStateDir, stateDir as makeStateDir } from './statedirs.ts';
import { fetchText } from './bench/procstat.ts';

/** TestSuper is a running local super cluster for one test file, with its admin client. */
/**
 * TENANT_START_MS bounds a wait for a tenant to be provisioned and Running: its apiserver's start alone may take
 * APISERVER_READY_MS on a host a whole test run keeps busy, and the start is what such a wait mostly waits for.
 */
export const TENANT_START_MS = APISERVER_READY_MS;

export interface TestSuper {
  sc: LocalSuperCluster;
  client: KubeClient;
  stateDir: string;
  /**
   * supers are the super clusters of a `superClusters: N` start, registered in this (the meta) cluster as `r1`..`rN`
   * (r1 is the meta cluster itself); empty otherwise
   */
  supers: Array<{ name: string; cp: LocalControlPlane }>;
  /**
   * stop stops every process and removes the state directory (kept when KEEP_STATE is set). The control planes are
   * killed, not shut down gracefully, unless the state is kept: nothing reads it afterwards.
   */
  stop(): Promise<void>;
}

/**
 * startTestSuper starts a real local super cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
 * kwok) in a fresh temporary directory, with the same code the embedded default uses. Simulated nodes only unless
 * `realNodes` asks for real ones (check realNodeSkipReason first); stop removes what those left on the host.
 */
export async function startTestSuper(
  o: Partial<SuperClusterOptions> & {
    /**
     * superClusters > 1 starts further super clusters on the same etcd and registers every one, the first included,
     * in the first as a user would (Cluster + `<name>-kubeconfig` Secret + supercluster-info), with admin credentials
     */
    superClusters?: number;
  } = {},
): Promise<TestSuper> {
  await ensureToolchain();
  const stateDir = makeStateDir('vc-test-');
  const { superClusters = 1, ...opts } = o;
  const keep = !!process.env.KEEP_STATE;
  let sc: LocalSuperCluster;
  try {
    // Real-node files of other checkouts may run on this host at the same time: wait for their nodes, not fail.
    sc = await LocalSuperCluster.start({ nodes: 2, realNodeLockWaitMs: 30 * 60_000, ...opts, stateDir });
  } catch (e) {
    if (!keep) removeStateDir(stateDir);
    throw e;
  }
  const stop = async () => {
    await sc.stop({ discard: !keep });
    if (!keep) removeStateDir(stateDir);
  };
  const client = await sc.cluster.client();
  const supers: TestSuper['supers'] = [];
  if (superClusters > 1) {
    try {
      supers.push({ name: 'r1', cp: sc.cluster });
      for (let i = 2; i <= superClusters; i++)
        supers.push({ name: `r${i}`, cp: await sc.addSuperCluster(`r${i}`, { nodes: opts.nodes ?? 2 }) });
      await ensureClusterCRD(client);
      for (const s of supers)
        await registerSuperCluster(client, {
          name: s.name,
          kubeconfig: readFileSync(s.cp.kubeconfigPath, 'utf8'),
          superClient: await s.cp.client(),
        });
    } catch (e) {
      await stop();
      throw e;
    }
  }
  return {
    sc,
    client,
    stateDir,
    supers,
    stop,
  };
}

/**
 * realNodeSkipReason is why this machine cannot run a real node (the preflight's problems, one line), or undefined
 * when it can. Tests that need a real node skip with it.
 */
export async function realNodeSkipReason(): Promise<string | undefined> {
  const p = await realNodePreflightHere();
  return p.ok ? undefined : `real node preflight failed: ${p.problems.join('; ')}`;
}

/** eventually polls fn until it stops throwing (returning its value) or the timeout passes (rethrowing). */
export async function eventually<T>(fn: () => Promise<T> | T, timeoutMs = 60_000, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}

/** tenantFor describes a local control plane as a syncer tenant (defaults of a VirtualCluster, overridable). */
export function tenantFor(
  cp: LocalControlPlane,
  vcNamespace: string,
  vcName: string,
  uid: string,
  extra: Partial<Tenant> = {},
): Tenant {
  return {
    ...tenantFrom({ vcNamespace, vcName, vcUid: uid, kubeconfig: readFileSync(cp.kubeconfigPath, 'utf8') }),
    ...extra,
  };
}

/**
 * apiserverWatches is how many watches of a resource a local apiserver (the super cluster's or a tenant's) holds
 * open right now, from every client: the sum of its `apiserver_longrunning_requests{verb="WATCH", resource}` gauge.
 */
export async function apiserverWatches(cp: LocalControlPlane, resource: string): Promise<number> {
  return (await apiserverWatchCounts(cp)).get(resource) ?? 0;
}

/** apiserverWatchCounts is apiserverWatches of every resource the apiserver has a watch of, by resource. */
export async function apiserverWatchCounts(cp: LocalControlPlane): Promise<Map<string, number>> {
  const text = await fetchText(cp.server, cp.adminToken, '/metrics');
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^apiserver_longrunning_requests\{([^}]*)\} (\S+)$/gm)) {
    const resource = /resource="([^"]*)"/.exec(m[1]!)?.[1];
    if (resource === undefined || !m[1]!.includes('verb="WATCH"')) continue;
    counts.set(resource, (counts.get(resource) ?? 0) + Number(m[2]));
  }
  return counts;
}
