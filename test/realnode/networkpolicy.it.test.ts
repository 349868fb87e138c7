/**
 * NetworkPolicy enforcement on the real node (issue 13): kube-router in firewall-only mode turns the super cluster's
 * NetworkPolicies into iptables rules and ipsets. The super namespaces of two tenants get what the syncer writes there
 * (their tenant key label and the workload boundary's `vc-tenant-isolation` policy, from the networkpolicies plugin),
 * and packets decide: before the policies B's Pod and a platform Pod reach A's server (so a refusal later is the
 * policy's doing); with them neither can, while A's Pod in another of A's namespaces still can; a tenant policy of A
 * opening its server to every source (as the networkpolicies plugin syncs it unchanged) lets the platform Pod in, but
 * not B's, whose own boundary keeps its egress off super-internal addresses. Each holds through A's Service's ClusterIP
 * too (kube-proxy's DNAT comes before kube-router's decision). Stopping removes kube-router's chains
 * and ipsets with the rest.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { LABEL } from '../../core/names/names.ts';
import { hostSnapshot, snapshotDiff, type HostSnapshot } from '../../core/dev/local/testing.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { NODE_IMAGES, nodeToolchainDir } from '../../core/toolchain/node.ts';
import { kubeRouterPath } from '../../core/toolchain/netpol.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { isolationPolicy } from '@virtualcluster-ts/plugin-sdk/network';
import { Attempts } from '../security/attempts.ts';
import { eventually, realNodeSkipReason, startTestSuper, type TestSuper } from '../harness.ts';

const exec = promisify(execFile);
const realSkip = await realNodeSkipReason();
const skip = realSkip ?? (kubeRouterPath() ? undefined : 'kube-router is not built (npx vc toolchain build --node)');
if (skip) process.stdout.write(`networkpolicy.it.test.ts skipped: ${skip}\n`);

interface Pod extends KubeObject {
  status?: { phase?: string; podIP?: string };
}

const KEY_A = 'team-a-a-1a2b3c';
const KEY_B = 'team-b-b-4d5e6f';

function pod(namespace: string, name: string, labels: Record<string, string>, container: object): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels },
    spec: {
      nodeSelector: { [REAL_NODE_LABEL]: 'true' },
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'c', imagePullPolicy: 'Never', ...container }],
    },
  } as Pod;
}

describe.skipIf(!!skip)('NetworkPolicies enforced on the real node by kube-router', () => {
  const attempts = new Attempts();
  let t: TestSuper | undefined;
  let before: HostSnapshot;
  let serverIP = '';
  let serviceIP = '';
  /** the server by Pod IP, and through its Service's ClusterIP (kube-proxy's DNAT before the policy decides) */
  const direct = () => `${serverIP}:8080`;
  const viaService = () => `${serviceIP}:80`;
  const binDir = join(nodeToolchainDir(), 'bin');
  /** fetch asks the server for its name from a client Pod; it resolves to the answer or to 'refused'. */
  const fetch = async (ns: string, client: string, target = direct()): Promise<string> => {
    const args = ['--kubeconfig', t!.sc.kubeconfigPath, 'exec', '-n', ns, client, '--'];
    const wget = ['busybox', 'timeout', '3', 'wget', '-q', '-O-', `http://${target}/hostname`];
    return exec(binaryPath('kubectl'), [...args, ...wget], { timeout: 30_000 }).then(
      (r) => r.stdout,
      (e: { stderr?: string; message: string }) => {
        // only wget's own failures are refusals: 1 (connection refused or reset), 143 (killed by timeout); a crashing
        // client or a kubectl error is not
        const code = /command terminated with exit code (\d+)/.exec(e.stderr ?? '')?.[1];
        if (code === '1' || code === '143') return 'refused';
        throw new Error(`fetch from ${ns}/${client} to ${target} failed, not refused: ${e.stderr ?? e.message}`);
      },
    );
  };

  beforeAll(async () => {
    before = await hostSnapshot(binDir);
    t = await startTestSuper({ nodes: 1, realNodes: 1 });
    expect(t.sc.realNodes[0]!.kubeRouter?.pid).toBeTruthy();
    const c = t.client;
    for (const [ns, key] of [
      ['a-web', KEY_A],
      ['a-other', KEY_A],
      ['b-app', KEY_B],
      ['platform', ''],
    ] as const)
      await c.create(R.namespaces, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns, labels: key ? { [LABEL.cluster]: key } : {} },
      });
    for (const ns of ['a-web', 'a-other', 'b-app', 'platform'])
      await eventually(() => c.get(R.serviceaccounts, ns, 'default'), 30_000);
    await c.create(
      R.pods,
      pod('a-web', 'web', { app: 'web' }, { image: NODE_IMAGES.agnhost, args: ['netexec', '--http-port=8080'] }),
    );
    const svc = await c.create<KubeObject & { spec?: { clusterIP?: string } }>(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'a-web' },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    });
    serviceIP = svc.spec!.clusterIP!;
    for (const ns of ['a-other', 'b-app', 'platform'])
      await c.create(R.pods, pod(ns, 'client', {}, { image: NODE_IMAGES.busybox, command: ['sleep', '3600'] }));
    for (const [ns, name] of [
      ['a-web', 'web'],
      ['a-other', 'client'],
      ['b-app', 'client'],
      ['platform', 'client'],
    ] as const) {
      const p = await eventually(async () => {
        const x = await c.get<Pod>(R.pods, ns, name);
        expect(x.status?.phase).toBe('Running');
        return x;
      }, 90_000);
      if (name === 'web') serverIP = p.status!.podIP!;
    }
  }, 600_000);

  afterAll(async () => {
    attempts.report('network policies on a real node');
    await t?.stop();
  });

  it('without policies every Pod reaches the server (the refusals below are the policies)', async () => {
    await eventually(async () => expect(await fetch('b-app', 'client')).toBe('web'), 30_000, 500);
    expect(await fetch('platform', 'client')).toBe('web');
    expect(await fetch('a-other', 'client')).toBe('web');
    // kube-proxy has programmed the Service once its endpoint is ready
    await eventually(async () => expect(await fetch('b-app', 'client', viaService())).toBe('web'), 30_000, 500);
    expect(await fetch('a-other', 'client', viaService())).toBe('web');
  });

  it("with the workload boundary's isolation policies, B cannot reach A's Pod and A's other namespace can", async () => {
    const c = t!.client;
    for (const [ns, key] of [
      ['a-web', KEY_A],
      ['a-other', KEY_A],
      ['b-app', KEY_B],
    ] as const)
      await c.create(R.networkpolicies, {
        ...isolationPolicy({ key }),
        metadata: { name: 'vc-tenant-isolation', namespace: ns },
      });
    const started = Date.now();
    await attempts.attempt("tenant B's Pod fetches tenant A's server by Pod IP", async () => {
      await eventually(async () => expect(await fetch('b-app', 'client')).toBe('refused'), 60_000, 500);
      process.stdout.write(`kube-router: isolation enforced ${Date.now() - started} ms after the policies\n`);
      // still refused a while later: not a one-off timeout
      for (let i = 0; i < 3; i++) expect(await fetch('b-app', 'client')).toBe('refused');
      return 'refused';
    });
    expect(await fetch('platform', 'client')).toBe('refused');
    expect(await fetch('a-other', 'client')).toBe('web');
  });

  it("through A's Service's ClusterIP the same holds: A's other namespace gets in, B and the platform do not", async () => {
    expect(await fetch('a-other', 'client', viaService())).toBe('web');
    await attempts.attempt("tenant B's Pod fetches tenant A's server through its Service's ClusterIP", async () => {
      expect(await fetch('b-app', 'client', viaService())).toBe('refused');
      return 'refused';
    });
    expect(await fetch('platform', 'client', viaService())).toBe('refused');
  });

  it("a tenant policy opening A's server to every source lets the platform in, not tenant B", async () => {
    await t!.client.create(R.networkpolicies, {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'web-public', namespace: 'a-web' },
      spec: { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress'], ingress: [{}] },
    });
    await eventually(async () => expect(await fetch('platform', 'client')).toBe('web'), 60_000, 500);
    await attempts.attempt("tenant B's Pod fetches A's server once A opened its ingress to everyone", async () => {
      expect(await fetch('b-app', 'client')).toBe('refused');
      expect(await fetch('b-app', 'client', viaService())).toBe('refused');
      return 'refused';
    });
  });

  it("stopping removes kube-router's chains and ipsets with the rest of the node", async () => {
    await t!.stop();
    t = undefined;
    expect(snapshotDiff(before, await hostSnapshot(binDir))).toEqual({});
  });
});
