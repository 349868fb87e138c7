import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { LocalSuperCluster } from '../../core/dev/local/supercluster.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { startManager, type Manager } from '../../core/programs/manager/manager.ts';
import { LABEL, rootNamespace } from '../../core/names/names.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

interface Pod extends KubeObject {
  status?: { phase?: string };
}

describe('manager with two super clusters, one syncer each', () => {
  let one: TestSuper;
  let two: LocalSuperCluster;
  let twoClient: KubeClient;
  let dir: string;
  let manager: Manager;
  let x: KubeClient;
  let y: KubeClient;

  beforeAll(async () => {
    one = await startTestSuper({ nodes: 1 });
    dir = mkdtempSync(join(tmpdir(), 'vc-manager-'));
    two = await LocalSuperCluster.start({ stateDir: join(dir, 'super-two'), nodes: 1, name: 'super2' });
    twoClient = await two.cluster.client();
    const [cx, cy] = await Promise.all([
      one.sc.addControlPlane('tenant-x', { controllers: TENANT_CONTROLLERS }),
      one.sc.addControlPlane('tenant-y', { controllers: TENANT_CONTROLLERS }),
    ]);
    x = await cx.client();
    y = await cy.client();
    const file = join(dir, 'manager.yaml');
    writeFileSync(
      file,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [
          { name: 'one', kubeconfig: one.sc.kubeconfigPath },
          { name: 'two', kubeconfig: two.kubeconfigPath },
        ],
        syncer: { workers: 4, patrolIntervalSeconds: 0 },
        tenants: [
          {
            name: 'x',
            namespace: 'team-x',
            uid: 'uid-x',
            kubeconfig: cx.kubeconfigPath,
            superCluster: 'one',
            weight: 2,
          },
          { name: 'y', namespace: 'team-y', uid: 'uid-y', kubeconfig: cy.kubeconfigPath, superCluster: 'two' },
        ],
      }),
    );
    manager = await startManager(loadManagerConfig(file), file);
  });

  afterAll(async () => {
    await manager?.stop();
    await two?.stop();
    await one?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const runPod = async (c: KubeClient, name: string) => {
    // A fresh control plane's controller-manager creates the default ServiceAccount a moment after start.
    await eventually(() => c.get(R.serviceaccounts, 'default', 'default'), 30_000);
    await c.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'nginx' }] },
    });
    await eventually(
      async () => expect((await c.get<Pod>(R.pods, 'default', name)).status?.phase).toBe('Running'),
      90_000,
    );
  };

  it("runs each tenant's Pods only in its own super cluster", async () => {
    await Promise.all([runPod(x, 'px'), runPod(y, 'py')]);
    const rootX = rootNamespace('team-x', 'x', 'uid-x');
    const rootY = rootNamespace('team-y', 'y', 'uid-y');
    const inOne = (await one.client.list(R.pods, { labelSelector: LABEL.managedBy })).items.map(
      (p) => p.metadata?.namespace,
    );
    const inTwo = (await twoClient.list(R.pods, { labelSelector: LABEL.managedBy })).items.map(
      (p) => p.metadata?.namespace,
    );
    expect(inOne).toEqual([`${rootX}-default`]);
    expect(inTwo).toEqual([`${rootY}-default`]);
  });

  it('serves per-tenant, per-plugin metrics and readiness', async () => {
    const base = `http://127.0.0.1:${manager.opsPort}`;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const text = await (await fetch(`${base}/metrics`)).text();
    const rootX = rootNamespace('team-x', 'x', 'uid-x');
    expect(text).toMatch(
      new RegExp(`vc_syncer_sync_duration_seconds_count\\{tenant="${rootX}",plugin="pods"\\} [1-9]`),
    );
    expect(text).toMatch(
      new RegExp(
        `vc_syncer_writes_total\\{tenant="${rootX}",plugin="pods",op="createSuper",side="super",verb="create",resource="pods"\\} 1`,
      ),
    );
    expect(text).toMatch(/vc_syncer_queue_depth\{tenant="[^"]+"\} \d+/);
  });
});
