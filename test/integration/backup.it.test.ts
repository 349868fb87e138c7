import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { BackupController, snapshotBeforeDeletion } from '../../core/lifecycle/backups.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { DirectoryStore } from '../../core/backup/store.ts';
import { createFromSnapshot, readCatalog, requestBackupAction } from '../../core/programs/cli/backup.ts';
import { rootNamespace } from '../../core/names/names.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const T = { namespace: 'default', name: 'bk' };

/**
 * Backup and restore of a local tenant on real processes: objects are made in the tenant, a snapshot is taken through
 * the manager's request (the path `vc backup create` takes), the objects are deleted, the snapshot is restored, and
 * every object read before is read again, the same. A corrupted snapshot is refused by its checksum and the running
 * tenant is left as it was.
 */
describe('backup and restore of a local tenant', () => {
  let t: TestSuper;
  let stateDir: string;
  let storeDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  let backups: BackupController;

  const getVC = () => t.client.get<VirtualCluster>(R.virtualclusters, T.namespace, T.name);
  const tenant = async (): Promise<KubeClient> => {
    const vc = await getVC();
    const root = rootNamespace(T.namespace, T.name, vc.metadata!.uid!);
    return local.controlPlane(root)!.client();
  };
  /** contents reads what the test wrote into the tenant: every ConfigMap and Secret of namespace "app", by name */
  const contents = async (c: KubeClient) => {
    const out: Record<string, unknown> = {};
    for (const r of [R.configmaps, R.secrets]) {
      const list = await c.list<KubeObject & { data?: Record<string, string> }>(r, { namespace: 'app' });
      for (const o of list.items)
        if (o.metadata?.name?.startsWith('obj-')) out[`${r.resource}/${o.metadata.name}`] = o.data;
    }
    return out;
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'backup', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: { provisioners: { allowed: ['local'] } },
        },
        'test',
      ),
    );
    stateDir = mkdtempSync(join(tmpdir(), 'vc-backup-it-'));
    storeDir = join(stateDir, 'store');
    local = new LocalProvisioner(join(stateDir, 'tenants'), t.sc.etcd);
    const provisioners = { local };
    const backupOptions = {
      meta: t.client,
      provisioners,
      defaultProvisioner: 'local' as const,
      store: new DirectoryStore(storeDir),
      retention: { count: 3 },
    };
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners,
      tenants: new MutableTenantRegistry(),
      health: { intervalMs: 1000, timeoutMs: 1500 },
      beforeRemove: (vc) => snapshotBeforeDeletion(backupOptions, vc),
    });
    backups = new BackupController(backupOptions);
    await controller.start();
    await backups.start();
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: T,
      spec: { provisioner: { type: 'local' } },
    });
    await eventually(async () => expect((await getVC()).status?.phase).toBe('Running'), 120_000);
  }, 240_000);

  afterAll(async () => {
    await backups?.stop();
    await controller?.stop();
    await local?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  let before: Record<string, unknown>;
  let snapshot: string;

  it('backs up through the request the CLI writes, with metadata in the catalog', async () => {
    const c = await tenant();
    await c.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'app' } });
    for (let i = 0; i < 20; i++) {
      await c.create(R.configmaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `obj-${i}`, namespace: 'app' },
        data: { i: String(i), text: 'x'.repeat(i * 10) },
      } as KubeObject);
      await c.create(R.secrets, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `obj-${i}`, namespace: 'app' },
        data: { v: Buffer.from(`secret-${i}`).toString('base64') },
      } as KubeObject);
    }
    before = await contents(c);
    expect(Object.keys(before)).toHaveLength(40);
    const r = await requestBackupAction(t.client, T, { action: 'create' }, 120_000);
    snapshot = r.snapshot!;
    const catalog = await readCatalog(t.client, T);
    expect(catalog.map((e) => e.id)).toEqual([snapshot]);
    const e = catalog[0]!;
    expect(e.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(e.sizeBytes).toBeGreaterThan(10_000);
    expect(e.kubernetesVersion).toMatch(/^v1\.\d+\.\d+/);
    expect(e.tenant).toEqual({ ...T, uid: (await getVC()).metadata!.uid });
    expect((e.spec as VirtualCluster['spec']).provisioner?.type).toBe('local');
    expect(e.reason).toBe('manual');
  });

  it('restores deleted objects: every object read before is back, the same', async () => {
    const c = await tenant();
    for (let i = 0; i < 20; i += 2) await c.delete(R.configmaps, 'app', `obj-${i}`);
    await c.delete(R.secrets, 'app', 'obj-1');
    await c.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'obj-after', namespace: 'app' },
      data: { made: 'after the snapshot' },
    } as KubeObject);
    expect(Object.keys(await contents(c))).toHaveLength(30);
    const r = await requestBackupAction(t.client, T, { action: 'restore', snapshot }, 180_000);
    expect(r.message).toContain(snapshot);
    const after = await eventually(async () => contents(await tenant()), 60_000);
    expect(after).toEqual(before);
    await eventually(async () => expect((await getVC()).status?.phase).toBe('Running'), 60_000);
  });

  it('a snapshot whose data fails its checksum is refused by name, and the running tenant is untouched', async () => {
    const folder = join(storeDir, T.namespace, T.name);
    const db = readdirSync(folder).find((f) => f === `${snapshot}.db`)!;
    const path = join(folder, db);
    const data = readFileSync(path);
    data[data.length - 100] = data[data.length - 100]! ^ 0xff;
    writeFileSync(path, data);
    const c = await tenant();
    await c.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'obj-kept', namespace: 'app' },
      data: { kept: 'yes' },
    } as KubeObject);
    const pidBefore = local.controlPlane(rootNamespace(T.namespace, T.name, (await getVC()).metadata!.uid!))!.apiserver
      .pid;
    const e = await requestBackupAction(t.client, T, { action: 'restore', snapshot }, 120_000).catch((x: unknown) => x);
    expect((e as Error).message).toMatch(
      new RegExp(`snapshot ${snapshot} of default/bk .*sha256 is [0-9a-f]{64}, its metadata says`),
    );
    const same = local.controlPlane(rootNamespace(T.namespace, T.name, (await getVC()).metadata!.uid!))!;
    expect(same.apiserver.pid).toBe(pidBefore);
    expect((await contents(await tenant()))['configmaps/obj-kept']).toEqual({ kept: 'yes' });
  });

  it('a snapshot of a newer Kubernetes minor is refused by version before anything stops', async () => {
    const id = (await requestBackupAction(t.client, T, { action: 'create' }, 120_000)).snapshot!;
    const file = join(storeDir, T.namespace, T.name, `${id}.json`);
    const meta = JSON.parse(readFileSync(file, 'utf8')) as { kubernetesVersion: string };
    const [, major, minor] = /^v(\d+)\.(\d+)\./.exec(meta.kubernetesVersion)!;
    const newer = `v${major}.${Number(minor) + 1}.0`;
    writeFileSync(file, JSON.stringify({ ...meta, kubernetesVersion: newer }));
    const root = rootNamespace(T.namespace, T.name, (await getVC()).metadata!.uid!);
    const pidBefore = local.controlPlane(root)!.apiserver.pid;
    const e = await requestBackupAction(t.client, T, { action: 'restore', snapshot: id }, 120_000).catch(
      (x: unknown) => x,
    );
    expect((e as Error).message).toContain(
      `snapshot ${id} holds the data of Kubernetes ${newer} and this tenant runs ${meta.kubernetesVersion}`,
    );
    expect((e as Error).message).toMatch(/downgrade.*nothing was stopped/);
    expect(local.controlPlane(root)!.apiserver.pid).toBe(pidBefore);
    expect((await contents(await tenant()))['configmaps/obj-kept']).toEqual({ kept: 'yes' });
  });

  it('deletes a snapshot and keeps no more than the retention count', async () => {
    const made: string[] = [];
    for (let i = 0; i < 4; i++)
      made.push((await requestBackupAction(t.client, T, { action: 'create' }, 120_000)).snapshot!);
    const ids = (await readCatalog(t.client, T)).map((e) => e.id);
    expect(ids).toEqual(made.slice(1));
    await requestBackupAction(t.client, T, { action: 'delete', snapshot: made[3]! }, 60_000);
    expect((await readCatalog(t.client, T)).map((e) => e.id)).toEqual(made.slice(1, 3));
    const missing = await requestBackupAction(t.client, T, { action: 'delete', snapshot: 'nope' }, 60_000).catch(
      (x: unknown) => x,
    );
    expect((missing as Error).message).toMatch(/snapshot nope of default\/bk is not in directory/);
  });

  let lastState: Record<string, unknown>;

  it('a deleted tenant leaves a snapshot of its last state, listed in the catalog that outlives it', async () => {
    const uid = (await getVC()).metadata!.uid;
    lastState = await contents(await tenant());
    await t.client.delete(R.virtualclusters, T.namespace, T.name);
    await eventually(
      async () => expect(await t.client.getOrNull(R.virtualclusters, T.namespace, T.name)).toBeNull(),
      120_000,
    );
    const last = (await readCatalog(t.client, T)).at(-1)!;
    expect(last.reason).toBe('deletion');
    expect(last.tenant.uid).toBe(uid);
    expect(last.sizeBytes).toBeGreaterThan(10_000);
  }, 200_000);

  it('the deleted tenant comes back under a new name from that snapshot (--as), every object the same', async () => {
    const last = (await readCatalog(t.client, T)).at(-1)!;
    const to = { namespace: T.namespace, name: 'bk-again' };
    await createFromSnapshot(t.client, T, to, last.id);
    const r = await requestBackupAction(t.client, to, { action: 'restore', snapshot: last.id, from: T.name }, 240_000);
    expect(r.message).toContain(`of default/${T.name}`);
    const vc = await t.client.get<VirtualCluster>(R.virtualclusters, to.namespace, to.name);
    expect(vc.spec).toEqual(last.spec);
    const c = await local.controlPlane(rootNamespace(to.namespace, to.name, vc.metadata!.uid!))!.client();
    expect(Object.keys(lastState).length).toBeGreaterThan(30);
    expect(await contents(c)).toEqual(lastState);
  }, 300_000);
});
