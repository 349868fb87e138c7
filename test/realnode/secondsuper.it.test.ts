/**
 * Several super clusters with the real node on the second (issue 14): `vc up --super-clusters 2 --real-node-super r2`
 * as startEmbedded runs it. A tenant's sliced namespace puts one Pod on r2, where it runs as a real container on r2's
 * real node; the tenant's kubectl logs and exec reach it through its apiserver, its vNode and r2's own vn-agent.
 * Hostile: another tenant's Pod on the same node cannot be reached with this tenant's credentials.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { superNamespace } from '../../core/names/names.ts';
import { startEmbedded, type Embedded } from '../../core/dev/embedded/embedded.ts';
import { PLACEMENTS, SUPER_CLUSTER } from '../../core/scheduler/annotations.ts';
import { NODE_IMAGES } from '../../core/toolchain/node.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, realNodeSkipReason } from '../harness.ts';
import { runningTenant, slicedNamespace } from '../tenants.ts';
import { Attempts } from '../security/attempts.ts';

const execP = promisify(execFile);
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`secondsuper.it.test.ts skipped: ${skip}\n`);

type Pod = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string } };

/** PRINTED is what the Pod on r2 writes before it sleeps. */
const PRINTED = 'hello from r2\n';

/** onRealNode runs one busybox container on the real node, without tenant DNS (the Pod may be away from its home). */
const onRealNode = (command: string) => ({
  nodeSelector: { [REAL_NODE_LABEL]: 'true' },
  tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
  dnsPolicy: 'Default',
  terminationGracePeriodSeconds: 1,
  containers: [
    {
      name: 'c',
      image: NODE_IMAGES.busybox,
      imagePullPolicy: 'Never',
      command: ['sh', '-c', command],
      resources: { requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '100m', memory: '100Mi' } },
    },
  ],
});

/**
 * LOCK_WAIT_MS is how long the start waits for other real nodes of this host to stop; its hook allows that and the
 * start's own ten minutes, so a start that waited is not cut off halfway (which would leave its node behind).
 */
const LOCK_WAIT_MS = 40 * 60_000;

describe.skipIf(!!skip)('the real node on the second super cluster, reached through its own vn-agent', () => {
  const attempts = new Attempts();
  let dir: string;
  let e: Embedded;
  let meta: KubeClient;
  let r2: KubeClient;
  const tenants: Record<string, { client: KubeClient; kubeconfig: string; key: string }> = {};

  /** tenant waits for a VirtualCluster to run and returns its client, kubeconfig file and super namespace root. */
  const tenant = async (name: string) => {
    const { root: key, kubeconfig: text } = await runningTenant(meta, name, 180_000);
    const kubeconfig = join(dir, `${name}.kubeconfig`);
    writeFileSync(kubeconfig, text, { mode: 0o600 });
    tenants[name] = { client: await KubeClient.fromString(text, `${name} kubeconfig`), kubeconfig, key };
    return tenants[name];
  };

  const kubectl = async (name: string, args: string[]) => {
    try {
      const r = await execP(binaryPath('kubectl'), ['--kubeconfig', tenants[name]!.kubeconfig, ...args], {
        timeout: 30_000,
      });
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (err) {
      const x = err as { code?: number; stdout?: string; stderr?: string };
      return { code: x.code ?? 1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
    }
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-secondsuper-'));
    e = await startEmbedded({
      stateDir: join(dir, 'state'),
      nodes: 1,
      realNodes: 1,
      superClusters: 2,
      realNodeSuper: 'r2',
      realNodeLockWaitMs: LOCK_WAIT_MS,
    });
    meta = await e.superCluster.cluster.client();
    r2 = await KubeClient.fromFile(e.superClusters.find((s) => s.name === 'r2')!.kubeconfigPath);
    // B lives on r2 whole; A (dev, of the tenant repository) wherever the scheduler put it.
    await meta.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'other', namespace: 'default' },
      spec: { provisioner: { type: 'local' }, superCluster: 'r2' },
    });
    await tenant('dev');
    await tenant('other');
  }, LOCK_WAIT_MS + 600_000);

  afterAll(async () => {
    for (const t of Object.values(tenants)) t.client.close();
    r2?.close();
    meta?.close();
    await e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    attempts.report('tenant Pods on the second super cluster');
  }, 180_000);

  it('the real node is registered with r2 only, and r1 has none', async () => {
    expect(e.superCluster.realNodes.map((n) => n.name)).toEqual(['r2-real-0']);
    const r1Nodes = (await meta.list(R.nodes)).items.map((n) => n.metadata!.name!);
    expect(r1Nodes.some((n) => n.includes('real'))).toBe(false);
    await eventually(async () => {
      const n = await r2.get<KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }>(
        R.nodes,
        undefined,
        'r2-real-0',
      );
      expect(n.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    }, 120_000);
  });

  it("a sliced namespace's Pod on r2 runs on r2's real node; kubectl logs and exec reach it", async () => {
    const dev = tenants.dev!.client;
    await slicedNamespace(dev, 'sliced', { r1: 1, r2: 1 });
    // Two Pods of one slice each: one goes to each super cluster; r1 has no real node, so its Pod stays Pending.
    for (const name of ['p1', 'p2'])
      await eventually(
        () =>
          dev.create(R.pods, {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name, namespace: 'sliced' },
            spec: onRealNode(`printf '${PRINTED.replace('\n', '\\n')}'; exec sleep 3600`),
          }),
        30_000,
      );
    const onR2 = await eventually(async () => {
      const pods = (await dev.list<Pod>(R.pods, { namespace: 'sliced' })).items;
      const where = Object.fromEntries(pods.map((p) => [p.metadata!.name!, p.metadata?.annotations?.[SUPER_CLUSTER]]));
      expect(Object.values(where).sort()).toEqual(['r1', 'r2']);
      return Object.keys(where).find((n) => where[n] === 'r2')!;
    }, 60_000);
    const home = (await dev.get(R.namespaces, undefined, 'kube-system')).metadata?.annotations?.[PLACEMENTS];
    process.stdout.write(`dev's home namespaces are placed ${home}; ${onR2} runs on r2\n`);
    await eventually(async () => {
      const p = await dev.get<Pod>(R.pods, 'sliced', onR2);
      expect(p.status?.phase).toBe('Running');
      expect(p.spec?.nodeName).toBe('r2.r2-real-0');
    }, 120_000);
    const superPod = await r2.get<Pod>(R.pods, superNamespace(tenants.dev!.key, 'sliced'), onR2);
    expect(superPod.spec?.nodeName).toBe('r2-real-0');

    await eventually(async () => {
      const r = await kubectl('dev', ['logs', '-n', 'sliced', onR2]);
      expect(r).toMatchObject({ code: 0, stdout: PRINTED });
    }, 30_000);
    expect(await kubectl('dev', ['exec', '-n', 'sliced', onR2, '--', 'hostname'])).toMatchObject({
      code: 0,
      stdout: `${onR2}\n`,
    });
  });

  it("another tenant's Pod on r2's real node cannot be reached with dev's credentials", async () => {
    const other = tenants.other!;
    await eventually(() => other.client.get(R.serviceaccounts, 'default', 'default'), 60_000);
    await other.client.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'ticker', namespace: 'default' },
      spec: onRealNode('echo secret of other; exec sleep 3600'),
    });
    await eventually(async () => {
      const p = await other.client.get<Pod>(R.pods, 'default', 'ticker');
      expect(p.status?.phase).toBe('Running');
      expect(p.spec?.nodeName).toBe('r2.r2-real-0');
    }, 120_000);
    const otherNs = superNamespace(other.key, 'default');
    const refused = async (args: string[]) => {
      const r = await kubectl('dev', args);
      expect(r.code).not.toBe(0);
      expect(r.stdout).not.toContain('secret of other');
      expect(r.stdout).not.toContain('ticker');
      return r.stderr.trim();
    };
    await attempts.attempt("dev: kubectl logs of other's Pod by its tenant name", () =>
      refused(['logs', '-n', 'default', 'ticker']),
    );
    await attempts.attempt("dev: kubectl logs of other's Pod by its super namespace", () =>
      refused(['logs', '-n', otherNs, 'ticker']),
    );
    await attempts.attempt("dev: kubectl exec into other's Pod by its tenant name", () =>
      refused(['exec', '-n', 'default', 'ticker', '--', 'hostname']),
    );
    await attempts.attempt("dev: kubectl exec into other's Pod by its super namespace", () =>
      refused(['exec', '-n', otherNs, 'ticker', '--', 'hostname']),
    );
    // the refusals are about who asks: other's own credentials read its log
    expect((await kubectl('other', ['logs', 'ticker'])).stdout).toBe('secret of other\n');
  });
});
