import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { KubeClient, KubeObject, Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';

/**
 * The contrib plugins (plugins/contrib/*: packages written against the SDK as a third party writes one, loaded by
 * path as thirdParty plugins) on real apiservers: PodDisruptionBudgets reach the super cluster, whose disruption
 * controller writes their status, which the tenant sees; VolumeSnapshots (with the snapshot CRDs from
 * test/fixtures/snapshot-crds.yaml in both clusters) reach it too and their progress comes back; what each refuses
 * gets a Warning on the tenant object and no super copy.
 */

const contrib = join(import.meta.dirname, '../../plugins/contrib');
const pdbs: Resource = {
  group: 'policy',
  version: 'v1',
  resource: 'poddisruptionbudgets',
  kind: 'PodDisruptionBudget',
  namespaced: true,
};
const snapshots: Resource = {
  group: 'snapshot.storage.k8s.io',
  version: 'v1',
  resource: 'volumesnapshots',
  kind: 'VolumeSnapshot',
  namespaced: true,
};

interface WithStatus extends KubeObject {
  status?: Record<string, unknown>;
}

const snapshotCRDs = (): KubeObject[] =>
  parseAllDocuments(readFileSync(join(import.meta.dirname, '../fixtures/snapshot-crds.yaml'), 'utf8')).map(
    (d) => d.toJS() as KubeObject,
  );

async function installCRDs(c: KubeClient): Promise<void> {
  for (const crd of snapshotCRDs()) await c.create(R.crds, crd);
  await eventually(async () => {
    for (const crd of snapshotCRDs()) {
      const got = await c.get<WithStatus>(R.crds, undefined, crd.metadata!.name!);
      const conditions = (got.status?.conditions ?? []) as Array<{ type: string; status: string }>;
      expect(conditions.find((x) => x.type === 'Established')?.status).toBe('True');
    }
  });
}

describe('contrib plugins (PodDisruptionBudgets, VolumeSnapshots) on a real super cluster and tenant', () => {
  let t: TestSuper;
  let a: KubeClient;
  let tenant: Tenant;
  let syncer: Syncer;
  let sns: string;

  const warnings = async (reason: string) =>
    (await a.list(R.events, { namespace: 'data' })).items.filter((e) => e.reason === reason);

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    const cp = await t.sc.addControlPlane('tenant-c', { controllers: 'namespace,garbagecollector' });
    a = await cp.client();
    tenant = tenantFor(cp, 'team-c', 'c', '44444444-dddd-4ddd-8ddd-000000000004');
    await Promise.all([installCRDs(a), installCRDs(t.client)]);
    const host = await PluginHost.load({
      process: 'manager',
      builtins: builtinPlugins,
      thirdParty: [join(contrib, 'poddisruptionbudgets/src/index.ts'), join(contrib, 'volumesnapshots/src/index.ts')],
    });
    expect(host.failures).toEqual([]);
    expect(host.names()).toEqual(expect.arrayContaining(['poddisruptionbudgets', 'volumesnapshots']));
    syncer = new Syncer({
      superClient: t.client,
      host,
      registry: new MutableTenantRegistry([tenant]),
      patrolIntervalMs: 0,
      workers: 2,
    });
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenant.key)).toBe(true));
    await a.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'data' } });
    sns = superNamespace(tenant.key, 'data');
  });

  afterAll(async () => {
    await syncer?.stop();
    await t?.stop();
  });

  it('a PodDisruptionBudget is enforced by the super cluster, its status comes back, a blocking one is refused', async () => {
    await a.create(pdbs, {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'web', namespace: 'data' },
      spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } },
    });
    const copy = await eventually(() => t.client.get<WithStatus>(pdbs, sns, 'web'));
    expect(copy.spec).toMatchObject({ maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } });
    // The super cluster's disruption controller observed it (no Pods yet); the tenant reads its own generation.
    await eventually(async () =>
      expect((await a.get<WithStatus>(pdbs, 'data', 'web')).status).toMatchObject({
        observedGeneration: 1,
        expectedPods: 0,
      }),
    );

    await a.create(pdbs, {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'frozen', namespace: 'data' },
      spec: { maxUnavailable: 0, selector: { matchLabels: { app: 'web' } } },
    });
    await eventually(async () => expect(await warnings('BlocksEviction')).not.toEqual([]));
    expect(await t.client.getOrNull(pdbs, sns, 'frozen')).toBeNull();

    await a.delete(pdbs, 'data', 'web');
    await eventually(async () => expect(await t.client.getOrNull(pdbs, sns, 'web')).toBeNull());
  });

  it("a VolumeSnapshot of the tenant's claim reaches the super cluster, its progress comes back, a pre-provisioned one is refused", async () => {
    await a.create(snapshots, {
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshot',
      metadata: { name: 'db-1', namespace: 'data' },
      spec: { source: { persistentVolumeClaimName: 'db' }, volumeSnapshotClassName: 'csi-snap' },
    });
    const copy = await eventually(() => t.client.get<WithStatus>(snapshots, sns, 'db-1'));
    expect(copy.spec).toEqual({ source: { persistentVolumeClaimName: 'db' }, volumeSnapshotClassName: 'csi-snap' });

    // What the super cluster's snapshot controller writes once the CSI driver cut the snapshot.
    await t.client.patch(
      snapshots,
      sns,
      'db-1',
      {
        status: {
          boundVolumeSnapshotContentName: 'snapcontent-0001',
          creationTime: '2026-11-29T10:00:00Z',
          readyToUse: true,
          restoreSize: '1Gi',
        },
      },
      'merge',
      { subresource: 'status' },
    );
    await eventually(async () =>
      expect((await a.get<WithStatus>(snapshots, 'data', 'db-1')).status).toEqual({
        creationTime: '2026-11-29T10:00:00Z',
        readyToUse: true,
        restoreSize: '1Gi',
      }),
    );

    await a.create(snapshots, {
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshot',
      metadata: { name: 'stolen', namespace: 'data' },
      spec: { source: { volumeSnapshotContentName: 'snapcontent-0001' } },
    });
    await eventually(async () => expect(await warnings('PreProvisionedSnapshot')).not.toEqual([]));
    expect(await t.client.getOrNull(snapshots, sns, 'stolen')).toBeNull();

    await a.delete(snapshots, 'data', 'db-1');
    await eventually(async () => expect(await t.client.getOrNull(snapshots, sns, 'db-1')).toBeNull());
  });
});
