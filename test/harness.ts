import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalSuperCluster, type SuperClusterOptions } from '../core/local/supercluster.ts';
import type { KubeClient } from '../core/kube/client.ts';
import type { LocalControlPlane } from '../core/local/controlplane.ts';
import { tenantFrom, type Tenant } from '../core/tenancy/tenant.ts';
import { ensureToolchain } from '../core/toolchain/toolchain.ts';

/** TestSuper is a running local super cluster for one test file, with its admin client. */
export interface TestSuper {
  sc: LocalSuperCluster;
  client: KubeClient;
  stateDir: string;
  /** stop stops every process and removes the state directory (kept when KEEP_STATE is set). */
  stop(): Promise<void>;
}

/**
 * startTestSuper starts a real local super cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
 * kwok) in a fresh temporary directory, with the same code the embedded default uses.
 */
export async function startTestSuper(o: Partial<SuperClusterOptions> = {}): Promise<TestSuper> {
  await ensureToolchain();
  const stateDir = mkdtempSync(join(tmpdir(), 'vc-test-'));
  const sc = await LocalSuperCluster.start({ nodes: 2, ...o, stateDir });
  const client = await sc.cluster.client();
  return {
    sc,
    client,
    stateDir,
    async stop() {
      await sc.stop();
      if (!process.env.KEEP_STATE) rmSync(stateDir, { recursive: true, force: true });
    },
  };
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
