/**
 * SnapshotMeta is what each snapshot records next to its data: which tenant, what defined it, what ran it, and how to
 * check that the data is whole.
 */
export interface SnapshotMeta {
  /** id, unique within the tenant: `<UTC time yyyymmddThhmmss.mmmZ>-<first 8 hex of the sha256>` */
  id: string;
  /** the VirtualCluster's namespace and name, and the uid of the object it was taken from */
  tenant: { namespace: string; name: string; uid: string };
  /** the VirtualCluster's spec at the time */
  spec: unknown;
  /** the applied git revision of the GitSource that defined the tenant, when one did */
  gitRevision?: string;
  /** the Kubernetes version the tenant's apiserver reported */
  kubernetesVersion?: string;
  /** ISO time the snapshot was taken */
  createdAt: string;
  /** why: manual, schedule, revision, deletion, upgrade */
  reason: SnapshotReason;
  sizeBytes: number;
  /** sha256 (hex) of the snapshot file */
  sha256: string;
  /** etcd's revision in the snapshot */
  etcdRevision?: number;
}

/** SNAPSHOT_REASONS are why a snapshot is taken. */
export const SNAPSHOT_REASONS = ['manual', 'schedule', 'revision', 'deletion', 'upgrade'] as const;
/** SnapshotReason is one of SNAPSHOT_REASONS. */
export type SnapshotReason = (typeof SNAPSHOT_REASONS)[number];

/** snapshotId names a snapshot by its time and checksum, so ids sort by time and two snapshots never share one. */
export function snapshotId(createdAt: Date, sha256: string): string {
  // Milliseconds: two snapshots of an etcd nothing wrote to in between have the same checksum.
  const t = createdAt.toISOString().replace(/[-:]/g, '');
  return `${t}-${sha256.slice(0, 8)}`;
}

/** Retention says how many snapshots of a tenant to keep and for how long; an absent field does not limit. */
export interface Retention {
  /** keep at most this many (the newest) */
  count?: number;
  /** keep none older than this many seconds */
  maxAgeSeconds?: number;
}

/**
 * expired returns the snapshots retention drops, oldest first: beyond the newest `count`, or older than the maximum
 * age. The newest snapshot is always kept, whatever its age: a tenant is never left with no backup by retention.
 */
export function expired(snapshots: readonly SnapshotMeta[], r: Retention, now: Date): SnapshotMeta[] {
  const newest = [...snapshots].sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id));
  const drop = newest.filter((s, i) => {
    if (i === 0) return false;
    if (r.count !== undefined && i >= r.count) return true;
    return r.maxAgeSeconds !== undefined && now.getTime() - Date.parse(s.createdAt) > r.maxAgeSeconds * 1000;
  });
  return drop.reverse();
}
