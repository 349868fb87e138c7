import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { MANAGER_KUBECONFIG_KEY } from '../../core/lifecycle/kubeconfigsecret.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { rootNamespace } from '../../core/names/names.ts';
import { startEmbedded, type Embedded } from '../../core/dev/embedded/embedded.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, realNodeSkipReason } from '../harness.ts';

const exec = promisify(execFile);
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`expose.it.test.ts skipped: ${skip}\n`);

const serverOf = (kubeconfig: string): string =>
  (parse(kubeconfig) as { clusters: Array<{ cluster: { server: string } }> }).clusters[0]!.cluster.server;

/**
 * A native tenant with `spec.apiServer.expose.type: NodePort` on the real node of the local super cluster (no load
 * balancer provider here): its apiserver Service gets a node port, and the kubeconfig in its Secret names the real
 * node's address at that port, which kubectl on this host reaches through kube-proxy with the tenant's own CA.
 */
describe.skipIf(!!skip)('a native tenant reached through a NodePort on the real node', () => {
  let dir: string;
  let e: Embedded | undefined;
  let c: KubeClient;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-expose-'));
    e = await startEmbedded({ stateDir: join(dir, 'state'), nodes: 1, realNodes: 1, realNodeLockWaitMs: 30 * 60_000 });
    c = await e.superCluster.cluster.client();
    await c.create(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'exposed' },
      spec: {
        grants: { subjects: [{ kind: 'Namespace', name: 'default' }] },
        controlPlane: { expose: { allowedTypes: ['NodePort'] } },
        pods: {
          forced: {
            nodeSelector: { [REAL_NODE_LABEL]: 'true' },
            tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
          },
        },
      },
    });
  }, 600_000);

  afterAll(async () => {
    await e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('writes a kubeconfig for <node address>:<nodePort> that kubectl uses from this host', async () => {
    const created = await c.create<VirtualCluster>(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'edge', namespace: 'default' },
      spec: { provisioner: { type: 'native' }, policyName: 'exposed', apiServer: { expose: { type: 'NodePort' } } },
    });
    const started = Date.now();
    const vc = await eventually(
      async () => {
        const v = await c.get<VirtualCluster>(R.virtualclusters, 'default', 'edge');
        expect(v.status?.phase, v.status?.message).toBe('Running');
        return v;
      },
      240_000,
      500,
    );
    const root = rootNamespace('default', 'edge', created.metadata!.uid!);
    const svc = await c.get<KubeObject & { spec: { type: string; ports: Array<{ nodePort?: number }> } }>(
      R.services,
      root,
      'apiserver',
    );
    expect(svc.spec.type).toBe('NodePort');
    const nodePort = svc.spec.ports[0]!.nodePort!;
    expect(nodePort).toBeGreaterThanOrEqual(30000);
    const nodeIP = e!.superCluster.realNodes[0]!.nodeIP;
    const server = `https://${nodeIP}:${nodePort}`;
    expect(vc.status?.conditions?.find((x) => x.type === 'Exposed')).toMatchObject({
      status: 'True',
      reason: 'NodePort',
      message: `reached from outside the super cluster at ${server}`,
    });

    const secret = await c.get<KubeObject & { data: Record<string, string> }>(R.secrets, 'default', 'edge-kubeconfig');
    const people = Buffer.from(secret.data.kubeconfig!, 'base64').toString('utf8');
    const manager = Buffer.from(secret.data[MANAGER_KUBECONFIG_KEY]!, 'base64').toString('utf8');
    expect(serverOf(people)).toBe(server);
    expect(serverOf(manager)).not.toBe(server);

    const file = join(dir, 'edge.kubeconfig');
    writeFileSync(file, people, { mode: 0o600 });
    const out = await eventually(
      async () =>
        (
          await exec(binaryPath('kubectl'), ['--kubeconfig', file, 'get', 'namespaces', '-o', 'name'], {
            timeout: 30_000,
          })
        ).stdout,
      60_000,
      1000,
    );
    expect(out.split('\n')).toEqual(expect.arrayContaining(['namespace/default', 'namespace/kube-system']));
    process.stdout.write(
      `NodePort tenant: Running ${Date.now() - started} ms after create; kubectl through ${server}\n`,
    );

    await c.delete(R.virtualclusters, 'default', 'edge');
    await eventually(
      async () => expect(await c.getOrNull(R.virtualclusters, 'default', 'edge')).toBeNull(),
      120_000,
      500,
    );
    expect(await c.getOrNull(R.namespaces, undefined, root)).toBeNull();
  });
});
