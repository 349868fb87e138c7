import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import { rootNamespace } from '../names/names.ts';
import { expired, snapshotId, type Retention, type SnapshotMeta, type SnapshotReason } from './catalog.ts';
import type { SnapshotFile } from './etcdsnapshot.ts';
import type { BackupStore } from './store.ts';

/**
 * Snapshotter is the optional ability of a provisioner to snapshot a tenant's etcd and to replace its data from a
 * snapshot (the local provisioner has it; see isSnapshotter).
 */
export interface Snapshotter {
  /** snapshotTenant writes a consistent snapshot of the tenant's etcd into path */
  snapshotTenant(vc: VirtualCluster, root: string, path: string): Promise<SnapshotFile>;
  /**
   * restoreTenant replaces the tenant's etcd data with the snapshot at path and restarts its control plane on it;
   * when the restored data cannot start, the data it had comes back and the error is thrown. sourceRoot is the root
   * namespace of the tenant the snapshot was taken of, when it is another one (`vc restore --as`): its keys move to
   * this tenant's etcd prefix.
   */
  restoreTenant(vc: VirtualCluster, root: string, path: string, sourceRoot?: string): Promise<void>;
}

/** isSnapshotter tells whether a provisioner can snapshot and restore. */
export function isSnapshotter(p: unknown): p is Snapshotter {
  const s = p as Partial<Snapshotter> | undefined;
  return typeof s?.snapshotTenant === 'function' && typeof s.restoreTenant === 'function';
}

/** BackupRequest is one backup of one tenant. */
export interface BackupRequest {
  vc: VirtualCluster;
  /** the tenant's root namespace (the provisioner's key) */
  root: string;
  reason: SnapshotReason;
  gitRevision?: string;
  kubernetesVersion?: string;
  /** retention applied to the tenant's snapshots after this one is stored */
  retention?: Retention;
  now?: () => Date;
}

/**
 * backupTenant snapshots a tenant, stores the snapshot with its metadata, then drops what retention no longer keeps.
 * It returns the new snapshot's metadata and the ids retention removed.
 */
export async function backupTenant(
  snapshotter: Snapshotter,
  store: BackupStore,
  r: BackupRequest,
): Promise<{ meta: SnapshotMeta; removed: string[] }> {
  const { namespace = 'default', name = '', uid = '' } = r.vc.metadata ?? {};
  const tmp = mkdtempSync(join(tmpdir(), 'vc-backup-'));
  try {
    const now = (r.now ?? (() => new Date()))();
    const file = await snapshotter.snapshotTenant(r.vc, r.root, join(tmp, 'snapshot.db'));
    const meta: SnapshotMeta = {
      id: snapshotId(now, file.sha256),
      tenant: { namespace, name, uid },
      spec: r.vc.spec,
      ...(r.gitRevision && { gitRevision: r.gitRevision }),
      ...(r.kubernetesVersion && { kubernetesVersion: r.kubernetesVersion }),
      createdAt: now.toISOString(),
      reason: r.reason,
      sizeBytes: file.sizeBytes,
      sha256: file.sha256,
      ...(file.etcdRevision !== undefined && { etcdRevision: file.etcdRevision }),
    };
    await store.put(meta, file.path);
    const removed: string[] = [];
    if (r.retention) {
      for (const old of expired(await store.list({ namespace, name }), r.retention, now)) {
        await store.delete({ namespace, name }, old.id);
        removed.push(old.id);
      }
    }
    return { meta, removed };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * restoreTenant fetches a snapshot (checking its checksum: a corrupt one fails here, before anything is stopped) and
 * has the provisioner replace the tenant's data with it. `from` names the tenant the snapshot was taken of; it is
 * the tenant being restored unless the restore makes a new one (`--as`).
 */
export async function restoreTenant(
  snapshotter: Snapshotter,
  store: BackupStore,
  r: { vc: VirtualCluster; root: string; id: string; from?: { namespace: string; name: string } },
): Promise<SnapshotMeta> {
  const from = r.from ?? { namespace: r.vc.metadata?.namespace ?? 'default', name: r.vc.metadata?.name ?? '' };
  const tmp = mkdtempSync(join(tmpdir(), 'vc-restore-'));
  try {
    const path = join(tmp, 'snapshot.db');
    const meta = await store.fetch(from, r.id, path);
    const source = rootNamespace(meta.tenant.namespace, meta.tenant.name, meta.tenant.uid);
    await snapshotter.restoreTenant(r.vc, r.root, path, ...(source !== r.root ? [source] : []));
    return meta;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
