import type { EventRecorder } from '../controller/events.ts';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import type { LifecycleOptions } from './options.ts';

// The snapshots the VirtualCluster controller asks for (LifecycleOptions.beforeUpgrade and beforeRemove, which
// core/lifecycle/backups.ts provides) and the events that tell the tenant's owner about them.

/**
 * snapshotBeforeUpgrade snapshots the tenant (the beforeUpgrade option) before its control plane moves to the next
 * minor, and says so in an event: the snapshot's id, or a Warning that there is no store to keep one (the upgrade goes
 * on). A snapshot that throws holds the upgrade back.
 */
export async function snapshotBeforeUpgrade(
  events: EventRecorder,
  take: LifecycleOptions['beforeUpgrade'],
  vc: VirtualCluster,
  from: string,
  to: string,
): Promise<void> {
  const id = await take?.(vc, from, to);
  if (id) await events.record(vc, 'Normal', 'UpgradeSnapshot', `snapshot ${id} taken before ${from} -> ${to}`);
  else
    await events.record(
      vc,
      'Warning',
      'UpgradeWithoutSnapshot',
      `upgrading ${from} -> ${to} without a snapshot: this manager keeps no backups (/backups/directory)`,
    );
}

/**
 * snapshotBeforeRemove snapshots a deleted tenant (the beforeRemove option) before its control plane is removed. A
 * snapshot that fails is a Warning event, and the deletion goes on: a tenant too broken to snapshot must still go.
 */
export async function snapshotBeforeRemove(
  events: EventRecorder,
  take: LifecycleOptions['beforeRemove'],
  vc: VirtualCluster,
): Promise<void> {
  if (!take) return;
  await take(vc).catch((e: unknown) =>
    events.record(vc, 'Warning', 'SnapshotFailed', `no snapshot before deletion: ${(e as Error).message}`),
  );
}
