/**
 * A tenant's own usage on the real node (issue 35 §4): metrics-server serves the tenant's metrics.k8s.io from the
 * vn-agent's /metrics/resource, `kubectl top` shows the tenant its own Pods under its own names and a
 * HorizontalPodAutoscaler scales a Deployment by CPU. A second tenant burns CPU on the same node and never shows.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject, Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { startTenantMetricsServer, type TenantMetricsServer } from '../../core/dev/local/metricsserver.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { fingerprintSha256 } from '../../core/pki/pki.ts';
import { embeddedPolicy, startNodesAgent } from '../../core/dev/embedded/embedded.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { checkPolicies } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { NODE_IMAGES } from '../../core/toolchain/node.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import type { VnAgent } from '../../core/vnagent/agent.ts';
import { StaticTenantDirectory } from '../../core/vnagent/testing.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, realNodeSkipReason, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';

const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`tenantmetrics.it.test.ts skipped: ${skip}\n`);

const HPAS: Resource = {
  group: 'autoscaling',
  version: 'v2',
  resource: 'horizontalpodautoscalers',
  kind: 'HorizontalPodAutoscaler',
  namespaced: true,
};

interface Hpa extends KubeObject {
  status?: {
    currentReplicas?: number;
    desiredReplicas?: number;
    currentMetrics?: Array<{ resource?: { name: string; current?: { averageUtilization?: number } } }>;
    conditions?: Array<{ type: string; status: string; reason?: string }>;
  };
}

/** kubectl runs the real kubectl against a tenant's apiserver to its end (killed after 30 s). */
async function kubectl(cp: LocalControlPlane, args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(binaryPath('kubectl'), ['--kubeconfig', cp.kubeconfigPath, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const [code] = (await once(child, 'close')) as [number | null];
  clearTimeout(timer);
  return { code, out };
}

/**
 * burner is a container spinning a shell loop, held to 40 millicores by its limit (the host is shared) against a
 * 20 millicore request: its CPU use is far above half its request, so an HPA at 50% scales it up.
 */
const burner = {
  name: 'burn',
  image: NODE_IMAGES.busybox,
  imagePullPolicy: 'Never',
  command: ['sh', '-c', 'while :; do :; done'],
  resources: { requests: { cpu: '20m', memory: '16Mi' }, limits: { cpu: '40m', memory: '32Mi' } },
};

const onRealNode = {
  nodeSelector: { [REAL_NODE_LABEL]: 'true' },
  tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
  terminationGracePeriodSeconds: 1,
};

describe.skipIf(!!skip)("a tenant's kubectl top and HPA on the real node, through the vn-agent", () => {
  let t: TestSuper;
  let cpA: LocalControlPlane;
  let cpB: LocalControlPlane;
  let a: KubeClient;
  let b: KubeClient;
  let agent: VnAgent;
  let syncer: Syncer;
  let ms: TenantMetricsServer;

  beforeAll(
    async () => {
      t = await startTestSuper({ nodes: 1, realNodes: 1 });
      const extra = {
        // the vn-agent's serving certificate is verified; aggregated APIs go to the Service's endpoints, as the
        // local provisioner starts tenants
        'kubelet-certificate-authority': join(t.sc.cluster.dir, 'pki/ca.crt'),
        'enable-aggregator-routing': 'true',
      };
      [cpA, cpB] = await Promise.all(
        ['tenant-a', 'tenant-b'].map((n) =>
          t.sc.addControlPlane(n, { controllers: TENANT_CONTROLLERS, apiserverExtraArgs: extra }),
        ),
      );
      [a, b] = await Promise.all([cpA.client(), cpB.client()]);
      const directory = new StaticTenantDirectory();
      agent = await startNodesAgent(t.sc, { port: 0, directory, handshakeTimeoutMs: 10_000 });
      const admitted = checkPolicies({ spec: { provisioner: { type: 'local' } } }, [embeddedPolicy()]);
      if (!('effective' in admitted)) throw new Error(`embedded policy refused: ${JSON.stringify(admitted)}`);
      const tenants = [
        [cpA, 'team-a', 'a', '11111111-aaaa-4aaa-8aaa-0000000000e1'],
        [cpB, 'team-b', 'b', '22222222-bbbb-4bbb-8bbb-0000000000e2'],
      ] as const;
      const registry = new MutableTenantRegistry(
        tenants.map(([cp, ns, name, uid]) => {
          const x = tenantFor(cp, ns, name, uid, {
            pluginConfig: { nodes: { vnAgent: { host: '127.0.0.1', port: agent.port } } },
            pods: admitted.effective.pods,
          });
          directory.upsert({
            key: x.key,
            vcName: x.vcName,
            vcNamespace: x.vcNamespace,
            caPem: cp.caPem,
            fingerprint: fingerprintSha256(readFileSync(join(cp.dir, 'pki/kubelet-client.crt'), 'utf8')),
          });
          return x;
        }),
      );
      syncer = new Syncer({
        superClient: t.client,
        host: await PluginHost.load({ process: 'manager', builtins: builtinPlugins }),
        registry,
        patrolIntervalMs: 0,
        workers: 8,
      });
      await syncer.start();
      await Promise.all([a, b].map((c) => eventually(() => c.get(R.serviceaccounts, 'default', 'default'), 60_000)));
      await a.create(R.deployments, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'burn', namespace: 'default' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'burn' } },
          template: { metadata: { labels: { app: 'burn' } }, spec: { ...onRealNode, containers: [burner] } },
        },
      });
      await b.create(R.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'spin-of-b', namespace: 'default' },
        spec: { ...onRealNode, containers: [burner] },
      });
      await Promise.all(
        [a, b].map((c) =>
          eventually(
            async () => {
              const pods = (
                await c.list<KubeObject & { status?: { phase?: string } }>(R.pods, { namespace: 'default' })
              ).items;
              expect(pods.map((p) => p.status?.phase)).toEqual(['Running']);
            },
            120_000,
            500,
          ),
        ),
      );
      ms = await startTenantMetricsServer({
        dir: cpA.dir,
        kubeconfigPath: cpA.kubeconfigPath,
        client: a,
        kubeletCaFile: join(t.sc.cluster.dir, 'pki/ca.crt'),
      });
    },
    30 * 60_000 + 300_000,
  );

  afterAll(async () => {
    await ms?.stop();
    await syncer?.stop();
    await agent?.stop();
    await t?.stop();
  });

  it("kubectl top pods shows the tenant its own Pod under its own names, with CPU in use; the other tenant's is absent", async () => {
    const top = await eventually(
      async () => {
        const r = await kubectl(cpA, ['top', 'pods', '-A', '--no-headers']);
        expect(r.code, r.out).toBe(0);
        const rows = r.out
          .trim()
          .split('\n')
          .map((l) => l.trim().split(/\s+/));
        expect(rows.length).toBeGreaterThan(0);
        return rows;
      },
      120_000,
      2000,
    );
    // NAMESPACE NAME CPU MEMORY: the tenant's own namespace and Pod name, never the super ones
    expect(top.map((r) => r[0])).toEqual(['default']);
    expect(top[0]![1]).toMatch(/^burn-/);
    expect(Number(top[0]![2]!.replace(/m$/, ''))).toBeGreaterThan(0);
    expect(top.flat().join(' ')).not.toContain('spin-of-b');
    // the raw API as the HPA controller reads it: only tenant A's Pods, by their tenant names
    const raw = JSON.parse((await kubectl(cpA, ['get', '--raw', '/apis/metrics.k8s.io/v1beta1/pods'])).out) as {
      items: Array<{ metadata: { namespace: string; name: string } }>;
    };
    expect(
      raw.items.map((p) => `${p.metadata.namespace}/${p.metadata.name.replace(/-[a-z0-9]+-[a-z0-9]+$/, '')}`),
    ).toEqual(['default/burn']);
  }, 150_000);

  it("kubectl top nodes shows the vNode with the tenant's own use, not the machine's", async () => {
    const r = await eventually(
      async () => {
        const x = await kubectl(cpA, ['top', 'nodes', '--no-headers']);
        expect(x.code, x.out).toBe(0);
        // a first sample can read 0m before the burner's use is in metrics-server's window
        expect(Number(x.out.trim().split('\n')[0]!.split(/\s+/)[1]!.replace(/m$/, '')), x.out).toBeGreaterThan(0);
        return x.out.trim().split('\n');
      },
      60_000,
      2000,
    );
    const nodes = (await a.list(R.nodes)).items.map((n) => n.metadata!.name);
    expect(r.map((l) => l.split(/\s+/)[0])).toEqual(nodes);
    // scaled to the tenant: one burner held to 40m, so the node's CPU is far below a whole core
    const cpu = Number(r[0]!.split(/\s+/)[1]!.replace(/m$/, ''));
    expect(cpu).toBeGreaterThan(0);
    expect(cpu).toBeLessThan(200);
  }, 90_000);

  it('a HorizontalPodAutoscaler scales the Deployment by CPU, from one replica to two', async () => {
    await a.create(HPAS, {
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'burn', namespace: 'default' },
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'burn' },
        minReplicas: 1,
        maxReplicas: 2,
        metrics: [
          { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } },
        ],
      },
    });
    const hpa = await eventually(
      async () => {
        const h = await a.get<Hpa>(HPAS, 'default', 'burn');
        expect(h.status?.desiredReplicas).toBe(2);
        return h;
      },
      180_000,
      2000,
    );
    expect(hpa.status?.conditions?.find((c) => c.type === 'ScalingActive')?.status).toBe('True');
    expect(hpa.status?.currentMetrics?.[0]?.resource?.current?.averageUtilization).toBeGreaterThan(50);
    await eventually(
      async () => {
        const d = await a.get<KubeObject & { spec: { replicas: number } }>(R.deployments, 'default', 'burn');
        expect(d.spec.replicas).toBe(2);
      },
      30_000,
      1000,
    );
  }, 240_000);
});
