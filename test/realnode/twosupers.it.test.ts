/**
 * The seed's demo under `vc up --super-clusters 2 --meta --real-node-super r1,r2` (issue 39): the meta cluster apart,
 * r1 and r2 each with one real node of this host as its only node, each node in a network namespace of its own
 * (core/dev/local/nodenetns.ts). The seed's experiment as written (slice annotation and ResourceQuota on the tenant's
 * `default` namespace, Deployment test-1 with dnsPolicy ClusterFirst scaled from one replica to two) spreads its Pods
 * over r1 and r2; both run as containers and each resolves, through the copy of its tenant's DNS on its own super
 * cluster's node, a tenant Service by name to its own super cluster's copy of it. A Service whose namespace is only on
 * r2 resolves on r2 and gets the documented `.invalid` answer on r1 at once; one of the spread namespace whose only Pod
 * is on r2 answers through r2's copy on r2, and on r1 resolves to r1's copy, which refuses a connection at once. Drained from r2, both Pods run and
 * resolve on r1 and the tenant's DNS copy leaves r2; undrained and rebalanced, one comes back to r2 with a DNS copy
 * started there again and resolves there. Stopping leaves no namespace and no uplink on the host.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { startEmbedded, type Embedded } from '../../core/dev/embedded/embedded.ts';
import { nodeNetnsNames, netnsPath } from '../../core/dev/local/nodenetns.ts';
import { superNamespace } from '../../core/names/names.ts';
import { SUPER_CLUSTER } from '../../core/scheduler/annotations.ts';
import { NODE_IMAGES } from '../../core/toolchain/node.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, realNodeSkipReason } from '../harness.ts';
import { namespaceOnlyOn, runningTenant, SEED_DEMO, seedDemo } from '../tenants.ts';

const execP = promisify(execFile);
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`twosupers.it.test.ts skipped: ${skip}\n`);

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
const NS = SEED_DEMO.namespace;
const WEB = `web.${NS}.svc.cluster.local`;

describe.skipIf(!!skip)('the seed demo with the meta cluster apart and a real node on each of r1 and r2', () => {
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

  /** dnsState is what a failed lookup on super cluster sc is reported with: the tenant DNS copy's Pods, slices, logs. */
  const dnsState = async (sc: string) => {
    const ns = superNamespace(tenantKey, 'kube-system');
    const k = (...args: string[]) =>
      execP(binaryPath('kubectl'), ['--kubeconfig', kubeconfigOf(sc), '-n', ns, ...args], { timeout: 30_000 }).then(
        (r) => r.stdout,
        (err: unknown) => String(err),
      );
    const logs = await k('logs', '-l', 'k8s-app=kube-dns', '--tail', '15');
    return `${await k('get', 'pods,endpointslices', '-o', 'wide')}\n${logs}`;
  };
  /** lookedUp resolves name in a Pod on sc until the answer contains want; a failure names the DNS copy's state. */
  const lookedUp = async (sc: string, pod: string, name: string, want: string) => {
    try {
      return await eventually(async () => {
        const r = await inPod(sc, NS, pod, 'timeout', '5', 'nslookup', name);
        expect(r.out).toContain(want);
        return r;
      }, 120_000);
    } catch (err) {
      throw new Error(`${String(err)}\ntenant DNS on ${sc}:\n${await dnsState(sc)}`);
    }
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-twosupers-'));
    e = await startEmbedded({
      stateDir: join(dir, 'state'),
      nodes: 1,
      realNodes: 1,
      superClusters: 2,
      meta: true,
      realNodeSupers: ['r1', 'r2'],
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
    e = undefined as unknown as Embedded;
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 300_000);

  it('both Pods of the demo run as containers, one on each super cluster, each pointed at its own super DNS', async () => {
    // the seed's image is pulled from Docker Hub; the node has the toolchain's busybox, and no registry access
    await seedDemo(dev, { r1: 1, r2: 1 }, { image: NODE_IMAGES.busybox, pod: { terminationGracePeriodSeconds: 1 } });
    const pods = await eventually(async () => {
      const items = (await dev.list<P>(R.pods, { namespace: NS, labelSelector: SEED_DEMO.selector })).items;
      expect(items.map((p) => p.metadata?.annotations?.[SUPER_CLUSTER]).sort()).toEqual(['r1', 'r2']);
      expect(items.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
      return items;
    }, 300_000);
    const on = (sc: string) => pods.find((p) => p.metadata!.annotations![SUPER_CLUSTER] === sc)!;
    expect(on('r1').spec?.nodeName).toBe('r1.r1-real-0');
    expect(on('r2').spec?.nodeName).toBe('r2.r2-real-0');
    for (const sc of ['r1', 'r2']) {
      const client = await KubeClient.fromFile(kubeconfigOf(sc));
      try {
        const dns = await client.get<S>(R.services, superNamespace(tenantKey, 'kube-system'), 'kube-dns');
        const copy = await client.get<P>(R.pods, superNamespace(tenantKey, NS), on(sc).metadata!.name!);
        expect(copy.spec?.dnsConfig?.nameservers?.[0]).toBe(dns.spec?.clusterIP);
      } finally {
        client.close();
      }
    }
    // The meta cluster runs none of it.
    expect((await meta.list(R.pods)).items).toEqual([]);
  });

  it("each Pod resolves its tenant's Service to its own super's copy; one only on r2 is .invalid on r1", async () => {
    const pods = (await dev.list<P>(R.pods, { namespace: NS, labelSelector: SEED_DEMO.selector })).items;
    const podOn = (sc: string) => pods.find((p) => p.metadata!.annotations![SUPER_CLUSTER] === sc)!.metadata!.name!;
    await dev.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: NS },
      spec: { selector: { app: SEED_DEMO.deployment }, ports: [{ port: 80 }] },
    });
    const far = await namespaceOnlyOn(dev, 'r2');
    await dev.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'away', namespace: far },
      spec: { ports: [{ port: 80 }] },
    });
    const ipOn = (ns: string, name: string, sc: string) =>
      eventually(async () => {
        const ip = (await dev.get(R.services, ns, name)).metadata?.annotations?.[`${CLUSTER_IP}${sc}`];
        expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        return ip!;
      }, 60_000);
    // CoreDNS caches an answer up to 30 s: the name resolves once the syncer recorded the IP and the cache expired.
    for (const sc of ['r1', 'r2']) {
      const ip = await ipOn(NS, 'web', sc);
      await lookedUp(sc, podOn(sc), WEB, ip);
    }
    const awayIP = await ipOn(far, 'away', 'r2');
    await lookedUp('r2', podOn('r2'), `away.${far}.svc.cluster.local`, awayIP);
    const away = await lookedUp(
      'r1',
      podOn('r1'),
      `away.${far}.svc.cluster.local`,
      `away.${far}.not-on-super-cluster-r1.invalid`,
    );
    // answered, not timed out (busybox's timeout exits 124 when nslookup hangs)
    expect(away.code).not.toBe(124);
  });

  it('a Service of the spread namespace whose only Pod is on r2 answers on r2 and is refused at once on r1', async () => {
    const pods = (await dev.list<P>(R.pods, { namespace: NS, labelSelector: SEED_DEMO.selector })).items;
    const podOn = (sc: string) => pods.find((p) => p.metadata!.annotations![SUPER_CLUSTER] === sc)!.metadata!.name!;
    // The tenant labels its Pod on r2 (labels follow it down) and serves /etc there with busybox httpd on 8080.
    await dev.patch(R.pods, NS, podOn('r2'), { metadata: { labels: { lone: 'yes' } } }, 'merge');
    await dev.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'lone', namespace: NS },
      spec: { selector: { lone: 'yes' }, ports: [{ port: 80, targetPort: 8080 }] },
    });
    const httpd = await inPod('r2', NS, podOn('r2'), 'httpd', '-p', '8080', '-h', '/etc');
    expect(httpd).toEqual({ out: '', code: 0 });
    const name = `lone.${NS}.svc.cluster.local`;
    const ipOf = (sc: string) =>
      eventually(async () => {
        const v = (await dev.get(R.services, NS, 'lone')).metadata?.annotations?.[`${CLUSTER_IP}${sc}`];
        expect(v).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        return v!;
      }, 60_000);
    // busybox wget by name, bounded by timeout (this build's wget -T crashes)
    const get = (sc: string) =>
      inPod(sc, NS, podOn(sc), 'timeout', '20', 'wget', '-q', '-O', '-', `http://${name}/hostname`);
    // On r2 the name is r2's copy of lone, whose endpoint is the Pod there: it answers with its hostname.
    const onR2 = await ipOf('r2');
    await lookedUp('r2', podOn('r2'), name, onR2);
    await eventually(async () => {
      expect(await get('r2')).toEqual({ out: `${podOn('r2')}\n`, code: 0 });
    }, 120_000);
    // On r1 the name resolves to r1's copy (the namespace is placed there too), which has no endpoint on r1: the
    // connection is refused at once by r1's kube-proxy, not left to hang; r2's Pod is not reached from r1.
    const onR1 = await ipOf('r1');
    await lookedUp('r1', podOn('r1'), name, onR1);
    await eventually(async () => {
      const far = await get('r1');
      expect(far.code).not.toBe(0);
      expect(far.out).toMatch(/refused/i);
    }, 60_000);
  });

  it("drained from r2, the demo's Pod comes back on r1's real node and resolves the tenant's Services there", async () => {
    const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');
    await execP(
      process.execPath,
      [vcBin, 'superclusters', 'drain', 'r2', '--kubeconfig', e.superCluster.kubeconfigPath],
      {
        timeout: 60_000,
      },
    );
    const moved = await eventually(async () => {
      const items = (await dev.list<P>(R.pods, { namespace: NS, labelSelector: SEED_DEMO.selector })).items;
      expect(items.map((p) => p.metadata?.annotations?.[SUPER_CLUSTER])).toEqual(['r1', 'r1']);
      expect(items.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
      return items;
    }, 300_000);
    const ip = (await dev.get(R.services, NS, 'web')).metadata?.annotations?.[`${CLUSTER_IP}r1`];
    expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    for (const p of moved) await lookedUp('r1', p.metadata!.name!, WEB, ip!);
    // The tenant has left r2 (every slice moved, no Pod of it left there): its DNS copy there goes, namespace and all.
    const r2 = await KubeClient.fromFile(kubeconfigOf('r2'));
    try {
      await eventually(async () => {
        expect(await r2.getOrNull(R.namespaces, undefined, superNamespace(tenantKey, 'kube-system'))).toBeNull();
      }, 120_000);
      expect((await r2.list(R.pods)).items.filter((p) => p.metadata!.namespace!.startsWith(`${tenantKey}-`))).toEqual(
        [],
      );
    } finally {
      r2.close();
    }
  });

  it("undrained and rebalanced, a demo slice goes back to r2: the Pod recreated there resolves the tenant's Service on r2", async () => {
    const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');
    const vc = (...args: string[]) =>
      execP(process.execPath, [vcBin, 'superclusters', ...args, '--kubeconfig', e.superCluster.kubeconfigPath], {
        timeout: 90_000,
      });
    await vc('undrain', 'r2');
    // The demo's two slices are on r1 with the far-* namespaces' ones: the first move is one of default's (the
    // namespace with the most slices there), once the scheduler sees r2 ready again. A dry run moves nothing.
    const planned = await eventually(async () => {
      const r = await vc('rebalance', '--dry-run', '--max-moves', '1');
      expect(r.stdout).toMatch(new RegExp(`\\n${tenantKey}\\s+${NS}\\s+r1 -> r2\\n`));
      return r.stdout;
    }, 60_000);
    expect(planned).toMatch(/^dry run \(spread\): 1 slice move\(s\) planned, nothing changed/);
    const done = await vc('rebalance', '--max-moves', '1');
    expect(done.stdout).toMatch(/^rebalanced \(spread\): 1 slice move\(s\)/);
    expect(done.stdout).toMatch(new RegExp(`\\n${tenantKey}\\s+${NS}\\s+r1 -> r2\\n`));
    // The newer of the demo's Pods on r1 no longer fits its one slice left there: evicted, it comes back on r2's node.
    const back = await eventually(async () => {
      const items = (await dev.list<P>(R.pods, { namespace: NS, labelSelector: SEED_DEMO.selector })).items;
      expect(items.map((p) => p.metadata?.annotations?.[SUPER_CLUSTER]).sort()).toEqual(['r1', 'r2']);
      expect(items.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
      return items;
    }, 300_000);
    const onR2 = back.find((p) => p.metadata!.annotations![SUPER_CLUSTER] === 'r2')!;
    expect(onR2.spec?.nodeName).toBe('r2.r2-real-0');
    const r2 = await KubeClient.fromFile(kubeconfigOf('r2'));
    try {
      // It asks the copy of the tenant's DNS on r2 (started there again), which answers r2's copy of the Service.
      const dns = await eventually(
        () => r2.get<S>(R.services, superNamespace(tenantKey, 'kube-system'), 'kube-dns'),
        60_000,
      );
      const copy = await r2.get<P>(R.pods, superNamespace(tenantKey, NS), onR2.metadata!.name!);
      expect(copy.spec?.dnsConfig?.nameservers?.[0]).toBe(dns.spec?.clusterIP);
      const web = await eventually(async () => {
        const ip = (await r2.get<S>(R.services, superNamespace(tenantKey, NS), 'web')).spec?.clusterIP;
        expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        return ip!;
      }, 60_000);
      await lookedUp('r2', onR2.metadata!.name!, WEB, web);
    } finally {
      r2.close();
    }
  });

  it("stopping removes both nodes' network namespaces and uplinks from the host", async () => {
    const names = ['r1', 'r2'].map((sc) => nodeNetnsNames(join(dir, 'state', 'nodes', `${sc}-real-0`)));
    for (const n of names) {
      expect(existsSync(netnsPath(n.netns))).toBe(true);
      expect(existsSync(`/sys/class/net/${n.hostLink}`)).toBe(true);
    }
    await e.stop();
    e = undefined as unknown as Embedded;
    for (const n of names) {
      expect(existsSync(netnsPath(n.netns))).toBe(false);
      expect(existsSync(`/sys/class/net/${n.hostLink}`)).toBe(false);
    }
  });
});
