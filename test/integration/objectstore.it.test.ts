import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { backupTenant, restoreTenant } from '../../core/backup/backup.ts';
import type { SnapshotMeta } from '../../core/backup/catalog.ts';
import { ObjectStore, isCredentialError } from '../../core/backup/s3.ts';
import { SnapshotNotFound, sha256File } from '../../core/backup/store.ts';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { rootNamespace } from '../../core/names/names.ts';
import { optionalBuild } from '../optionalbuilds.ts';
import { isSeaweedfsComplete, startObjectStore, type LocalObjectStore } from '../../core/toolchain/seaweedfs.ts';
import { startTestSuper, type TestSuper } from '../harness.ts';
import { startLocalSystem, type LocalSystem } from '../localsystem.ts';

const T = { namespace: 'default', name: 'objs' };

/**
 * The object-store backup destination against a real S3-compatible server (SeaweedFS, built by the toolchain and run
 * on loopback): snapshots go in and come back whole, a wrong key pair is refused with a message that says which half
 * is wrong, and a restore with it leaves the running tenant as it was.
 */
const haveStore = optionalBuild('SeaweedFS (the S3 server)', isSeaweedfsComplete());

describe.skipIf(!haveStore)('backups in an S3-compatible object store', () => {
  let s3: LocalObjectStore;
  let store: ObjectStore;
  let dir: string;
  let t: TestSuper;
  let sys: LocalSystem;
  const settings = () => ({ endpoint: s3.endpoint, bucket: 'vc-backups', prefix: 'platform/' });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-objectstore-it-'));
    s3 = await startObjectStore();
    store = new ObjectStore({
      ...settings(),
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    await store.ensureBucket();
    t = await startTestSuper({ nodes: 1 });
    sys = await startLocalSystem(t, { name: 'objectstore' });
  }, 900_000);

  afterAll(async () => {
    await sys?.stop();
    await t?.stop();
    await s3?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const metaOf = async (file: string, id: string): Promise<SnapshotMeta> => ({
    id,
    tenant: { namespace: 'team', name: 'a', uid: 'u1' },
    spec: { provisioner: { type: 'local' } },
    createdAt: new Date().toISOString(),
    reason: 'manual',
    ...(await sha256File(file)),
  });

  it('stores, lists, fetches whole and deletes snapshots', async () => {
    const file = join(dir, 'data.db');
    writeFileSync(file, randomBytes(3 * 1024 * 1024 + 17));
    const a = await metaOf(file, '20260101T000000.000Z-aaaaaaaa');
    const b = await metaOf(file, '20260101T000001.000Z-bbbbbbbb');
    await store.put(a, file);
    await store.put(b, file);
    expect((await store.list(a.tenant)).map((m) => m.id)).toEqual([a.id, b.id]);
    expect(await store.list({ namespace: 'team', name: 'other' })).toEqual([]);
    const back = join(dir, 'back.db');
    expect(await store.fetch(a.tenant, a.id, back)).toEqual(a);
    expect(await sha256File(back)).toEqual({ sha256: a.sha256, sizeBytes: a.sizeBytes });
    await store.delete(a.tenant, a.id);
    expect((await store.list(a.tenant)).map((m) => m.id)).toEqual([b.id]);
    await expect(store.fetch(a.tenant, a.id, back)).rejects.toBeInstanceOf(SnapshotNotFound);
    await store.delete(a.tenant, a.id); // a missing one is not an error
  });

  it('a body that is not what its metadata says is refused by the store, and nothing is listed', async () => {
    const file = join(dir, 'data2.db');
    writeFileSync(file, randomBytes(4096));
    const m = await metaOf(file, '20260101T000002.000Z-cccccccc');
    writeFileSync(file, randomBytes(4096)); // changed after its checksum was taken
    await expect(store.put(m, file)).rejects.toThrow(/storing snapshot 20260101T000002.000Z-cccccccc/);
    expect((await store.list(m.tenant)).map((x) => x.id)).not.toContain(m.id);
  });

  it.each([
    ['an unknown access key id', 'nobody', 'x', /does not know the access key id/],
    ['a wrong secret', undefined, 'wrong', /secret access key is wrong/],
  ])('%s is refused with a message that says so', async (_, accessKeyId, secretAccessKey, msg) => {
    const bad = new ObjectStore({
      ...settings(),
      credentials: { accessKeyId: accessKeyId ?? s3.accessKeyId, secretAccessKey },
    });
    const e = await bad.check().catch((x: unknown) => x);
    expect(isCredentialError(e)).toBe(true);
    expect((e as Error).message).toMatch(msg);
    expect((e as Error).message).toContain(`object store ${s3.endpoint}/vc-backups`);
  });

  describe('a local tenant', () => {
    let vc: VirtualCluster;
    let root: string;
    const tenant = (): Promise<KubeClient> => sys.local.controlPlane(root)!.client();
    const names = async () =>
      (await (await tenant()).list(R.configmaps, { namespace: 'app' })).items
        .map((o) => o.metadata!.name!)
        .filter((n) => n.startsWith('obj-'))
        .sort();

    beforeAll(async () => {
      await t.client.create(R.virtualclusters, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: T,
        spec: { provisioner: { type: 'local' } },
      });
      vc = await sys.running(T.namespace, T.name);
      root = rootNamespace(T.namespace, T.name, vc.metadata!.uid!);
    }, 180_000);

    it('is backed up into the bucket and restored from it: deleted objects return, later ones go', async () => {
      const c = await tenant();
      await c.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'app' } });
      for (let i = 0; i < 10; i++)
        await c.create(R.configmaps, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `obj-${i}`, namespace: 'app' },
          data: { i: String(i) },
        } as KubeObject);
      const before = await names();
      const { meta } = await backupTenant(sys.local, store, { vc, root, reason: 'manual' });
      expect((await store.list(T)).map((m) => m.id)).toEqual([meta.id]);
      for (let i = 0; i < 10; i += 3) await c.delete(R.configmaps, 'app', `obj-${i}`);
      await c.create(R.configmaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'obj-later', namespace: 'app' },
      } as KubeObject);
      expect(await names()).not.toEqual(before);
      await restoreTenant(sys.local, store, { vc, root, id: meta.id });
      expect(await names()).toEqual(before);
    }, 300_000);

    it('a restore with a wrong key pair fails before anything is stopped', async () => {
      const [snap] = await store.list(T);
      const bad = new ObjectStore({
        ...settings(),
        credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: 'wrong' },
      });
      const pid = sys.local.controlPlane(root)!.apiserver.pid;
      const e = await restoreTenant(sys.local, bad, { vc, root, id: snap!.id }).catch((x: unknown) => x);
      expect((e as Error).message).toMatch(/secret access key is wrong/);
      expect(sys.local.controlPlane(root)!.apiserver.pid).toBe(pid);
      expect((await names()).length).toBeGreaterThan(0);
    });
  });
});
