import { isDeepStrictEqual } from 'node:util';
import type { Retention, SnapshotMeta } from '../backup/catalog.ts';
import type { TenantPolicySpec as PolicySpecSchema, VirtualClusterSpec } from '../api/generated.ts';
import { upgradeVerdict } from '../provisioners/upgrade.ts';
import { durationMs } from './sleep.ts';
import { nextCron, parseCron, type Cron } from './cron.ts';

/** DEFAULT_RETAIN_FOR_MS is how long a deleted tenant's data is kept under Retain when its policy says nothing: 7 days. */
export const DEFAULT_RETAIN_FOR_MS = 7 * 24 * 3_600_000;

/** DeletionPolicy is what deleting a VirtualCluster does to its data. */
export type DeletionPolicy = 'Retain' | 'Delete';

/** BackupSettings are what a tenant's TenantPolicy (spec.backup) and VirtualCluster say about its snapshots. */
export interface BackupSettings {
  /** a scheduled snapshot this often; undefined: none */
  everyMs?: number;
  /** or a scheduled snapshot at the times of this cron expression */
  cron?: Cron;
  /** why the policy's cron expression takes no snapshot: it cannot be read */
  scheduleError?: string;
  /** snapshot a tenant defined by git at each applied revision that changed it */
  onRevision: boolean;
  /** the retention applied after each snapshot: the policy's, else the platform's */
  retention?: Retention;
  deletionPolicy: DeletionPolicy;
  /** how long a deleted tenant's data is kept under Retain */
  retainForMs: number;
}

/**
 * backupSettingsOf resolves a tenant's backup settings: the VirtualCluster's spec.deletionPolicy over its policy's
 * spec.backup, over the platform's retention and the defaults (no schedule, a snapshot per revision, Retain for 7 days).
 */
export function backupSettingsOf(
  spec: Pick<VirtualClusterSpec, 'deletionPolicy'> | undefined,
  policy: PolicySpecSchema['backup'] | undefined,
  platformRetention?: Retention,
): BackupSettings {
  const every = policy?.schedule?.every !== undefined ? durationMs(policy.schedule.every) : undefined;
  const cron = policy?.schedule?.cron !== undefined ? parseCron(policy.schedule.cron) : undefined;
  const retainFor = policy?.retainFor !== undefined ? durationMs(policy.retainFor) : undefined;
  const retention = policy?.retention ?? platformRetention;
  return {
    // An interval under a second is a typo, not a wish for a snapshot loop: ajv refuses none of them, so it is off.
    ...(every !== undefined && every >= 1000 && { everyMs: every }),
    ...(typeof cron === 'object' && { cron }),
    ...(typeof cron === 'string' && { scheduleError: cron }),
    onRevision: policy?.onRevision ?? true,
    ...(retention && { retention }),
    deletionPolicy: spec?.deletionPolicy ?? policy?.deletionPolicy ?? 'Retain',
    retainForMs: retainFor ?? DEFAULT_RETAIN_FOR_MS,
  };
}

/** AutomaticInput is what decides whether a Running tenant is due for an automatic snapshot. */
export interface AutomaticInput {
  now: Date;
  /** the VirtualCluster's uid and creationTimestamp, and its spec now */
  uid: string;
  createdAt: Date;
  spec: unknown;
  /**
   * the applied revision of the GitSource that defines the tenant, once that source finished applying it (its last
   * attempted revision is its last applied one); undefined for a tenant not defined by git, or while a revision is
   * being applied
   */
  appliedRevision?: string;
  /** the tenant's snapshots in the store (any uid: a tenant made again under the same name shares the folder) */
  catalog: readonly SnapshotMeta[];
  settings: BackupSettings;
}

/** Automatic is the decision: take a snapshot for this reason now, and/or look again after recheckMs. */
export interface Automatic {
  take?: 'revision' | 'schedule';
  /** when the next scheduled snapshot falls due, counted from now; undefined: no schedule */
  recheckMs?: number;
  /** the spec changed but the source still reports the revision of the last revision snapshot: look again soon */
  awaitingRevision?: boolean;
}

/**
 * nextAutomatic decides a Running tenant's automatic snapshot. Revision: the tenant comes from git, the source has
 * finished applying a revision, and the spec differs from the one recorded by this VirtualCluster's newest revision
 * snapshot (or there is none): the tenant runs a spec a revision changed and no snapshot holds it yet. Schedule: the
 * interval has passed since this VirtualCluster's newest snapshot of any automatic reason, or since it was made. A
 * revision snapshot also counts as the scheduled one, so a change does not cause two snapshots back to back.
 */
export function nextAutomatic(i: AutomaticInput): Automatic {
  const mine = i.catalog.filter((s) => s.tenant.uid === i.uid);
  const newest = (reasons: readonly string[]) =>
    mine
      .filter((s) => reasons.includes(s.reason))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id))[0];
  // Retention may have removed the revision snapshot of the revision that runs: a snapshot of another reason recorded
  // at that revision with this spec holds the same data for `vc restore --to-revision`, and another would be a copy.
  const held = mine.some((s) => s.gitRevision === i.appliedRevision && isDeepStrictEqual(s.spec, i.spec));
  if (i.settings.onRevision && i.appliedRevision && !held) {
    const last = newest(['revision']);
    // A changed spec under the revision the last snapshot already names is a revision whose status is not written yet
    // (or an edit git does not make): waiting keeps the new revision's snapshot from being recorded under the old one.
    if (!last || (!isDeepStrictEqual(last.spec, i.spec) && last.gitRevision !== i.appliedRevision))
      return { take: 'revision', ...nextSlot(i.settings, i.now) };
    if (!isDeepStrictEqual(last.spec, i.spec)) return { ...scheduled(i, newest), awaitingRevision: true };
  }
  return scheduled(i, newest);
}

/**
 * nextSlot is when to look again after a snapshot taken now that counts as the scheduled one: without it, a tenant
 * nothing else reconciles would take no scheduled snapshot after a revision one.
 */
function nextSlot(s: BackupSettings, now: Date): Pick<Automatic, 'recheckMs'> {
  if (s.everyMs !== undefined) return { recheckMs: s.everyMs };
  const next = s.cron && nextCron(s.cron, now);
  return next ? { recheckMs: next.getTime() - now.getTime() } : {};
}

/** scheduled is the schedule's part of nextAutomatic. */
function scheduled(i: AutomaticInput, newest: (reasons: readonly string[]) => SnapshotMeta | undefined): Automatic {
  const { everyMs: every, cron } = i.settings;
  if (every === undefined && cron === undefined) return {};
  const last = newest(['schedule', 'revision']);
  const since = last ? Date.parse(last.createdAt) : i.createdAt.getTime();
  const now = i.now.getTime();
  if (every !== undefined) {
    const due = since + every - now;
    return due <= 0 ? { take: 'schedule', recheckMs: every } : { recheckMs: due };
  }
  // A cron slot missed while the manager was away is taken once, not once per slot.
  const slot = nextCron(cron!, new Date(since));
  if (!slot) return {};
  if (slot.getTime() > now) return { recheckMs: slot.getTime() - now };
  return { take: 'schedule', ...nextSlot(i.settings, i.now) };
}

/** RetainedRecord is what the catalog ConfigMap keeps of a tenant deleted under Retain. */
export interface RetainedRecord {
  /** the uid of the deleted VirtualCluster, whose root namespace the snapshot's keys carry */
  uid: string;
  /** the snapshot of its last state */
  snapshot: string;
  deletedAt: string;
  /** ISO time after which the data goes for good */
  until: string;
}

/** RetainedFate is what happens to a retained tenant's data. */
export type RetainedFate = 'restore' | 'keep' | 'expire';

/**
 * retainedFate decides a retained record: past its time it expires; within it, a VirtualCluster of the same name made
 * since (another uid) gets the data back, and without one the data is kept.
 */
export function retainedFate(r: RetainedRecord, now: Date, current: { uid: string } | undefined): RetainedFate {
  if (Date.parse(r.until) <= now.getTime()) return 'expire';
  return current && current.uid !== r.uid ? 'restore' : 'keep';
}

/** retainedStatus is how a retained tenant is shown: `Deleted (retained until <ISO time>)`. */
export function retainedStatus(r: RetainedRecord): string {
  return `Deleted (retained until ${r.until})`;
}

/**
 * restoreRefusal says why a snapshot's data cannot go into a tenant that runs `tenantVersion`, or undefined when it
 * can: the data moves from the snapshot's Kubernetes version to the tenant's as an upgrade would (same minor, or one
 * minor up; never down, never two up: core/provisioners/upgrade.ts). Either version unknown lets the restore go on,
 * as the tenant's own start would refuse data it cannot read.
 */
export function restoreRefusal(
  snapshot: Pick<SnapshotMeta, 'id' | 'kubernetesVersion'>,
  tenantVersion: string | undefined,
): string | undefined {
  if (!snapshot.kubernetesVersion || !tenantVersion) return undefined;
  const v = upgradeVerdict(snapshot.kubernetesVersion, tenantVersion);
  if (v.kind !== 'refused') return undefined;
  return (
    `snapshot ${snapshot.id} holds the data of Kubernetes ${snapshot.kubernetesVersion} and this tenant runs ` +
    `${tenantVersion}: ${v.message}; restore it into a tenant of ${snapshot.kubernetesVersion} (vc restore --as with ` +
    `a ClusterVersion of that version), nothing was stopped`
  );
}
