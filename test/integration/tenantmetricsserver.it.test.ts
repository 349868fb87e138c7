/**
 * The local provisioner's metrics-server (LocalProvisionerOptions.metricsServer, on in `vc up` with a real node): a
 * tenant it starts gets metrics-server beside its control plane, registered as the tenant's metrics.k8s.io, and
 * deleting the tenant stops it. kwok's nodes report no usage, so this shows the wiring; the README walkthrough
 * (test/realnode/walkthrough.it.test.ts) shows `kubectl top pods` on the real node through `vc up`.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { APISERVICES, hostAddress, METRICS_API } from '../../core/dev/local/metricsserver.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { rootNamespace } from '../../core/names/names.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { ensureMetricsServer } from '../../core/toolchain/metricsserver.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const exec = promisify(execFile);

/** listening says whether something accepts connections at host:port. */
const listening = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, host)
      .once('connect', () => {
        s.destroy();
        resolve(true);
      })
      .once('error', () => resolve(false));
  });

describe("the local provisioner's metrics-server for each tenant", () => {
  let t: TestSuper;
  let stateDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;

  beforeAll(async () => {
    await ensureMetricsServer();
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'metrics', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: { provisioners: { allowed: ['local'] } },
        },
        'test',
      ),
    );
    stateDir = mkdtempSync(join(tmpdir(), 'vc-tenant-metrics-'));
    local = new LocalProvisioner(stateDir, t.sc.etcd, {
      metricsServer: true,
      kubeletCAFile: join(t.sc.cluster.dir, 'pki/ca.crt'),
    });
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants: new MutableTenantRegistry(),
      health: false,
    });
    await controller.start();
  }, 20 * 60_000);

  afterAll(async () => {
    await controller?.stop();
    await local?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it("serves the tenant's metrics.k8s.io from a metrics-server that goes with the tenant", async () => {
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'measured', namespace: 'default' },
      spec: { provisioner: { type: 'local' } },
    });
    const vc = await eventually(async () => {
      const x = await t.client.get<VirtualCluster>(R.virtualclusters, 'default', 'measured');
      expect(x.status?.phase, x.status?.message).toBe('Running');
      return x;
    }, 120_000);
    const root = rootNamespace('default', 'measured', vc.metadata!.uid!);
    const cp = local.controlPlane(root)!;
    const tenant = await cp.client();
    try {
      const apiService = await eventually(async () => {
        const s = await tenant.get<KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }>(
          APISERVICES,
          undefined,
          METRICS_API,
        );
        expect(s.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');
        return s;
      }, 120_000);
      expect(apiService.metadata?.name).toBe(METRICS_API);
      // what kubectl top reads, answered by metrics-server through the tenant's apiserver
      const list = await eventually(async () => {
        const r = await exec(binaryPath('kubectl'), [
          '--kubeconfig',
          cp.kubeconfigPath,
          'get',
          '--raw',
          '/apis/metrics.k8s.io/v1beta1/namespaces/default/pods',
        ]);
        return JSON.parse(r.stdout) as { kind: string; items: unknown[] };
      }, 120_000);
      expect(list.kind).toBe('PodMetricsList');
    } finally {
      tenant.close();
    }

    const port = Number(readFileSync(join(stateDir, root, 'metrics-server-port'), 'utf8'));
    expect(await listening(hostAddress(), port)).toBe(true);
    await t.client.delete(R.virtualclusters, 'default', 'measured');
    await eventually(
      async () => expect(await t.client.getOrNull(R.virtualclusters, 'default', 'measured')).toBeNull(),
      120_000,
    );
    await eventually(async () => expect(await listening(hostAddress(), port)).toBe(false), 30_000);
  });
});
