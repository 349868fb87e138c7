/**
 * The seed's demo under `vc up --super-clusters 2 --meta` with the real node on r1 (issue 39): the meta cluster apart,
 * r1 whose only node is this host's real node, r2 of kwok nodes. The tenant's sliced namespace spreads a two-replica
 * Deployment with the default dnsPolicy over r1 and r2; the Pod on r1 runs as a container and resolves, through the
 * copy of its tenant's DNS running on r1's real node, a tenant Service by name to r1's copy of it, and a Service whose
 * namespace is only on r2 to the documented `.invalid` answer at once. The Pod on r2 runs on a kwok node (one host has
 * one set of real nodes), pointed at the tenant's DNS copy on r2.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { startEmbedded, type Embedded } from '../../core/dev/embedded/embedded.ts';
import { superNamespace } from '../../core/names/names.ts';
import { SUPER_CLUSTER } from '../../core/scheduler/annotations.ts';
import { NODE_IMAGES } from '../../core/toolchain/node.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, realNodeSkipReason } from '../harness.ts';
import { demoDeployment, namespaceOnlyOn, runningTenant, slicedNamespace } from '../tenants.ts';

const execP = promisify(execFile);
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`metademo.it.test.ts skipped: ${skip}\n`);

type P = KubeObject & {
  status?: { phase?: string };
  spec?: { nodeName?: string; dnsConfig?: { nameservers?: string[] } };
};
type S = KubeObject & { spec?: { clusterIP?: string } };

const CLUSTER_IP = 'transparency.tenancy.x-k8s.io/clusterIP.';
/**
 * LOCK_WAIT_MS is how long the start waits for other real nodes of this host to stop; the start's own time comes on
 * top of it, so a start that waited is never cut short by the hook's timeout (which would leave its node behind).
 */
const LOCK_WAIT_MS = 20 * 60_000;

describe.skipIf(!!skip)('the seed demo with the meta cluster apart and the real node on r1', () => {
  let dir: string;
  let e: Embedded;
  let meta: KubeClient;
  let dev: KubeClient;
  let tenantKey: string;

  const kubeconfigOf = (sc: string) => e.superClusters.find((s) => s.name === sc)!.kubeconfigPath;
  /** inPod runs a command in the super copy of a tenant Pod on super cluster sc: its output and exit code. */
  const inPod = async (sc: string, ns: string, pod: string, ...cmd: string[]) => {
    const args = ['--kubeconfig', kubeconfigOf(sc), 'exec', '-n', superNamespace(tenantKey, ns), pod, '--', ...cmd];
    try {
      const r = await execP(binaryPath('kubectl'), args, { timeout: 30_000 });
      return { out: r.stdout, code: 0 };
    } catch (err) {
      const x = err as { stdout?: string; stderr?: string; code?: number };
      return { out: `${x.stdout ?? ''}${x.stderr ?? ''}`, code: x.code ?? -1 };
    }
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-metademo-'));
    e = await startEmbedded({
      stateDir: join(dir, 'state'),
      nodes: 1,
      realNodes: 1,
      superClusters: 2,
      meta: true,
      realNodeSuper: 'r1',
      realNodeLockWaitMs: LOCK_WAIT_MS,
    });
    meta = await e.superCluster.cluster.client();
    dev = await KubeClient.fromString((await runningTenant(meta, 'dev')).kubeconfig, 'dev kubeconfig');
    tenantKey = (await meta.get<VirtualCluster>(R.virtualclusters, 'default', 'dev')).status!.clusterNamespace!;
  }, LOCK_WAIT_MS + 900_000);

  afterAll(async () => {
    dev?.close();
    meta?.close();
    await e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 300_000);

  it('both Pods of the demo run, on r1 as a container of the real node, each pointed at its own super DNS', async () => {
    await slicedNamespace(dev, 'demo', { r1: 1, r2: 1 });
    await demoDeployment(dev, 'demo', {
      pod: { terminationGracePeriodSeconds: 1 },
      container: { image: NODE_IMAGES.busybox, command: ['sleep', '3600'] },
    });
    const pods = await eventually(async () => {
      const items = (await dev.list<P>(R.pods, { namespace: 'demo', labelSelector: 'app=web' })).items;
      expect(items.map((p) => p.metadata?.annotations?.[SUPER_CLUSTER]).sort()).toEqual(['r1', 'r2']);
      expect(items.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
      return items;
    }, 300_000);
    const on = (sc: string) => pods.find((p) => p.metadata!.annotations![SUPER_CLUSTER] === sc)!;
    expect(on('r1').spec?.nodeName).toBe('r1.r1-real-0');
    expect(on('r2').spec?.nodeName).toBe('r2.r2-node-0');
    for (const sc of ['r1', 'r2']) {
      const client = await KubeClient.fromFile(kubeconfigOf(sc));
      try {
        const dns = await client.get<S>(R.services, superNamespace(tenantKey, 'kube-system'), 'kube-dns');
        const copy = await client.get<P>(R.pods, superNamespace(tenantKey, 'demo'), on(sc).metadata!.name!);
        expect(copy.spec?.dnsConfig?.nameservers?.[0]).toBe(dns.spec?.clusterIP);
      } finally {
        client.close();
      }
    }
    // The meta cluster runs none of it.
    expect((await meta.list(R.pods)).items).toEqual([]);
  });

  it("the Pod on r1 resolves its tenant's Service to r1's copy, and one only on r2 to the .invalid answer", async () => {
    const pod = (await dev.list<P>(R.pods, { namespace: 'demo', labelSelector: 'app=web' })).items.find(
      (p) => p.metadata!.annotations![SUPER_CLUSTER] === 'r1',
    )!.metadata!.name!;
    await dev.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'demo' },
      spec: { selector: { app: 'web' }, ports: [{ port: 80 }] },
    });
    const far = await namespaceOnlyOn(dev, 'r2');
    await dev.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'away', namespace: far },
      spec: { ports: [{ port: 80 }] },
    });
    const r1IP = await eventually(async () => {
      const ip = (await dev.get(R.services, 'demo', 'web')).metadata?.annotations?.[`${CLUSTER_IP}r1`];
      expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      return ip!;
    }, 60_000);
    // CoreDNS caches an answer up to 30 s: the name resolves once the syncer recorded r1's IP and the cache expired.
    await eventually(async () => {
      const r = await inPod('r1', 'demo', pod, 'timeout', '5', 'nslookup', 'web.demo.svc.cluster.local');
      expect(r.out).toContain(r1IP);
    }, 120_000);
    const away = await eventually(async () => {
      const r = await inPod('r1', 'demo', pod, 'timeout', '5', 'nslookup', `away.${far}.svc.cluster.local`);
      expect(r.out).toContain(`away.${far}.not-on-super-cluster-r1.invalid`);
      return r;
    }, 120_000);
    // answered, not timed out (busybox's timeout exits 124 when nslookup hangs)
    expect(away.code).not.toBe(124);
  });
});
