import { statSync } from 'node:fs';
import { join } from 'node:path';
import { backupTenant, restoreTenant } from '../../core/backup/backup.ts';
import { DirectoryStore } from '../../core/backup/store.ts';
import type { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';

/** BackupFigures are the time and size of one backup and one restore of a tenant holding `objects` objects. */
export interface BackupFigures {
  objects: number;
  backupSeconds: number;
  snapshotBytes: number;
  restoreSeconds: number;
  /** objects of the bench namespace the tenant lists after the restore: the restore's check */
  listedAfterRestore: number;
}

const NAMESPACE = 'density-backup';
/** WRITERS is how many creates go at once while the objects are made (making them is not measured). */
const WRITERS = 16;

/** objectCounts reads DENSITY_BACKUP_OBJECTS (`1000,10000` by default; `0` or empty: no backup figures). */
export function objectCounts(env = process.env.DENSITY_BACKUP_OBJECTS): number[] {
  return (env ?? '1000,10000')
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isInteger(n) && n > 0)
    .sort((a, b) => a - b);
}

/** configMap is object i of the bench: a ConfigMap of about 200 bytes of data, as small application objects are. */
const configMap = (i: number): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `obj-${i}`, namespace: NAMESPACE },
    data: { index: String(i), payload: 'x'.repeat(192) },
  }) as KubeObject;

/** fill makes objects from..to-1 in the tenant, WRITERS at a time. */
async function fill(c: KubeClient, from: number, to: number): Promise<void> {
  let next = from;
  const writer = async () => {
    while (next < to) {
      const i = next++;
      await c.create(R.configmaps, configMap(i));
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, writer));
}

/**
 * backupAtSizes grows one awake tenant of the local provisioner to each count of objects in turn (ConfigMaps in
 * namespace density-backup, on top of what it held) and, at each, takes a snapshot into a directory store through
 * core/backup (etcd's snapshot API, sha256, the store's copy) and restores it in place (etcdutl builds the data
 * directory, the tenant's processes stop and start on it, until its apiserver is ready again), timing both and listing
 * the objects after the restore. The root must be the tenant's root namespace as the manager names it, so that the
 * restore is one in place, not a move of keys.
 */
export async function backupAtSizes(
  local: LocalProvisioner,
  vc: VirtualCluster,
  root: string,
  storeDir: string,
  counts: readonly number[],
): Promise<BackupFigures[]> {
  const store = new DirectoryStore(storeDir);
  const out: BackupFigures[] = [];
  let made = 0;
  const client = () => local.controlPlane(root)!.client();
  await (await client()).create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  for (const n of counts) {
    await fill(await client(), made, n);
    made = n;
    const t0 = performance.now();
    const { meta } = await backupTenant(local, store, { vc, root, reason: 'manual' });
    const backupSeconds = (performance.now() - t0) / 1000;
    const file = join(storeDir, vc.metadata!.namespace!, vc.metadata!.name!, `${meta.id}.db`);
    const t1 = performance.now();
    await restoreTenant(local, store, { vc, root, id: meta.id });
    const restoreSeconds = (performance.now() - t1) / 1000;
    const after = await (await client()).list(R.configmaps, { namespace: NAMESPACE });
    const listedAfterRestore = after.items.filter((o) => o.metadata?.name?.startsWith('obj-')).length;
    if (listedAfterRestore !== n)
      throw new Error(`after the restore at ${n} objects the tenant lists ${listedAfterRestore}`);
    out.push({ objects: n, backupSeconds, snapshotBytes: statSync(file).size, restoreSeconds, listedAfterRestore });
  }
  return out;
}
