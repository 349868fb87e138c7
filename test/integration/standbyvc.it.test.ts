import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { LABEL, rootNamespace, superNamespace } from '../../core/names/names.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { PLUGIN_DEFAULTS_CONFIGMAP } from '../../core/tenancy/plugindefaults.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { killManager, type ManagerProc, ManagerSpawner, nonZero, scrape, sum } from '../managerproc.ts';
import { removeStateDir, stateDir } from '../statedirs.ts';

/**
 * A manager replica that has never led, with its tenants as VirtualClusters: their tenant control planes are handed
 * to the syncers by the VirtualCluster controller, which runs only in the leader. The standby reads them from the meta
 * cluster instead (as `vc syncer` does), so its caches follow them while it stands by; after a kill -9 of the leader
 * it serves them over the warm caches and writes nothing for Pods that did not change. Separate `vc manager`
 * processes, a real super cluster and tenant apiservers (import provisioner).
 */

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string };
}

const PODS = 5;
const spawner = new ManagerSpawner();

describe('a standby manager warms the VirtualClusters its leader serves', () => {
  let t: TestSuper;
  let dir: string;
  let config: string;
  let cp: LocalControlPlane;
  let tenant: KubeClient;
  let key = '';

  const start = async (): Promise<ManagerProc> => {
    const m = spawner.spawn({ config, keep: /lead|"level":"(warn|error|fatal)"/, keepLines: 200 });
    await m.ready;
    return m;
  };
  const leading = async (m: ManagerProc) => sum(await scrape(m, 'vc_leader_is_leader')) === 1;
  /** synced lists a manager's vc_syncer_cache_synced samples as `side tenant value` */
  const synced = async (m: ManagerProc) =>
    (await scrape(m, 'vc_syncer_cache_synced')).map((x) => `${x.labels.side} ${x.labels.tenant} ${x.value}`).sort();

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    dir = stateDir('vc-standbyvc-');
    cp = await t.sc.addControlPlane('standbyvc-0', { controllers: TENANT_CONTROLLERS });
    tenant = await cp.client();
    await t.client.apply(
      R.tenantpolicies,
      {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'TenantPolicy',
        metadata: { name: 'standbyvc', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
        spec: {
          provisioners: { allowed: ['import'] },
          grants: { importSecrets: [{ namespace: 'default', name: 'svc-src' }] },
        },
      },
      'test',
    );
    await t.client.create(R.secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'svc-src', namespace: 'default' },
      data: { kubeconfig: Buffer.from(readFileSync(cp.kubeconfigPath, 'utf8')).toString('base64') },
    });
    config = join(dir, 'manager.yaml');
    writeFileSync(
      config,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [{ name: 'one', kubeconfig: t.sc.kubeconfigPath }],
        syncer: { workers: 4, patrolIntervalSeconds: 0 },
        leaderElection: { enabled: true, leaseDurationSeconds: 10, renewDeadlineSeconds: 8, retryPeriodSeconds: 1 },
        virtualClusters: { enabled: true },
      }),
    );
  });

  afterAll(async () => {
    for (const m of spawner.managers)
      if (m.log.length) process.stdout.write(`manager ${m.id} log:\n${m.log.join('\n')}\n`);
    await spawner.stopAll();
    tenant?.close();
    await t?.stop();
    if (dir) removeStateDir(dir);
  });

  it(
    'syncs the caches of a VirtualCluster tenant while standing by, and after a kill -9 of the leader writes nothing for unchanged Pods',
    { timeout: 300_000 },
    async () => {
      const first = await start();
      await eventually(async () => expect(await leading(first)).toBe(true), 60_000);
      await t.client.create(R.virtualclusters, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name: 'svc', namespace: 'default' },
        spec: { provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: 'svc-src' } } } },
      });
      await eventually(async () => {
        const vc = await t.client.get<VirtualCluster>(R.virtualclusters, 'default', 'svc');
        expect(vc.status?.phase).toBe('Running');
        key = rootNamespace('default', 'svc', vc.metadata!.uid!);
      }, 120_000);
      await eventually(() => tenant.get(R.serviceaccounts, 'default', 'default'), 60_000);
      // The leader's term published the layer under every policy for the vn-agents (none configured: {}), in the
      // manager's namespace (made by the manager here: no admission policy keeps it from it).
      const defaults = await t.client.get<KubeObject & { data?: Record<string, string> }>(
        R.configmaps,
        'vc-system',
        PLUGIN_DEFAULTS_CONFIGMAP.name,
      );
      expect(defaults.metadata!.labels![LABEL.managedBy]).toBe('vc-manager');
      expect(JSON.parse(defaults.data![PLUGIN_DEFAULTS_CONFIGMAP.key]!)).toEqual({});
      for (let i = 0; i < PODS; i++)
        await tenant.create(R.pods, {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `p-${i}`, namespace: 'default' },
          spec: { containers: [{ name: 'c', image: 'nginx' }] },
        });
      await eventually(async () => {
        const pods = (await tenant.list<Pod>(R.pods, { namespace: 'default' })).items;
        expect(pods.filter((p) => p.status?.phase === 'Running' && p.spec?.nodeName).length).toBe(PODS);
        const copies = await t.client.list<Pod>(R.pods, { namespace: superNamespace(key, 'default') });
        expect(copies.items.length).toBe(PODS);
      }, 120_000);

      // Started after the tenant: it has never led, so only the meta cluster can tell it about the tenant.
      const second = await start();
      await eventually(async () => {
        expect(await leading(second)).toBe(false);
        expect(await synced(second)).toEqual(['super  1', `tenant ${key} 1`]);
        expect(await nonZero(second, 'vc_syncer_writes_total')).toEqual([]);
      }, 120_000);
      // Whatever the leader still writes about the Pods (copied events, status) is done before the kill.
      await eventually(async () => {
        expect(sum(await scrape(first, 'vc_syncer_queue_depth'))).toBe(0);
        expect(sum(await scrape(first, 'vc_syncer_in_flight'))).toBe(0);
      }, 60_000);
      await new Promise((r) => setTimeout(r, 3000));

      await killManager(first);
      await eventually(async () => expect(await leading(second)).toBe(true), 60_000);
      await eventually(async () => {
        const done = sum(
          (await scrape(second, 'vc_syncer_sync_duration_seconds_count')).filter((x) => x.labels.plugin === 'pods'),
        );
        expect(done).toBeGreaterThanOrEqual(PODS);
        expect(sum(await scrape(second, 'vc_syncer_queue_depth'))).toBe(0);
        expect(sum(await scrape(second, 'vc_syncer_in_flight'))).toBe(0);
      }, 120_000);
      expect(await nonZero(second, 'vc_syncer_writes_total')).toEqual([]);
      // And it serves: a change after the takeover is synced.
      await tenant.create(R.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'after', namespace: 'default' },
        spec: { containers: [{ name: 'c', image: 'nginx' }] },
      });
      await eventually(
        async () => expect(await t.client.getOrNull(R.pods, superNamespace(key, 'default'), 'after')).not.toBeNull(),
        60_000,
      );
      // The leader's controller and the tenant feed it kept from standing by read one shared cache: one watch each
      // of VirtualClusters and TenantPolicies on the meta cluster.
      const watches = async (resource: string) =>
        sum((await scrape(second, 'vc_kube_client_open_watches')).filter((x) => x.labels.resource === resource));
      expect(await watches('virtualclusters')).toBe(1);
      expect(await watches('tenantpolicies')).toBe(1);
    },
  );
});
