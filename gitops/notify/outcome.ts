/**
 * What a GitSource status change means to the people watching the repository: the outcomes of revisions (applied,
 * healthy, refused, unhealthy) and a source that failed, read from two successive statuses. Pure; the notifier
 * (notifier.ts) sends them.
 */
import type { GitSourceStatus } from '../applier/gitsource.ts';

/** NotificationEvent is one kind of outcome; the schema of spec.notifications[].events lists the same. */
export type NotificationEvent = 'Applied' | 'Healthy' | 'Refused' | 'Unhealthy' | 'Failed';

/** Outcome is one thing to report about a GitSource. */
export interface Outcome {
  event: NotificationEvent;
  /** the commit it is about; absent for Failed */
  revision?: string;
  reason?: string;
  message: string;
}

/** REFUSALS are the Ready reasons that refuse a fetched revision (as opposed to failing to fetch one). */
const REFUSALS = new Set([
  'ValidationFailed',
  'ParseFailed',
  'OutOfScope',
  'NotOwned',
  'EmptyPath',
  'DeletionLimitExceeded',
  'VerificationFailed',
  'NotDescendant',
  'LimitExceeded',
]);
/** FAILURES are the Ready reasons of a source that could not produce a revision at all. */
const FAILURES = new Set([
  'AuthenticationFailed',
  'RefNotFound',
  'PathNotFound',
  'FetchFailed',
  'Timeout',
  'AddressRefused',
  'InvalidSpec',
  'ApplyFailed',
  'PruneFailed',
]);

function ready(s: GitSourceStatus | undefined) {
  return s?.conditions?.find((c) => c.type === 'Ready');
}

/**
 * outcomesOf lists what changed from `prev` to `next`: Applied when lastAppliedRevision moved; Healthy when Ready
 * became True (or stayed True on a newly applied revision); Unhealthy when Ready became False for health;
 * Refused when Ready became False for a refusal or the refused revision changed; Failed likewise for a fetch or apply
 * failure. A status that only repeats itself yields nothing, so each outcome is sent once per change.
 */
export function outcomesOf(prev: GitSourceStatus | undefined, next: GitSourceStatus): Outcome[] {
  const out: Outcome[] = [];
  const applied = next.lastAppliedRevision;
  const moved = !!applied && applied !== prev?.lastAppliedRevision;
  if (moved) out.push({ event: 'Applied', revision: applied, message: `revision ${applied} applied` });
  const was = ready(prev);
  const now = ready(next);
  if (!now) return out;
  const changed = was?.status !== now.status || was?.reason !== now.reason;
  const base = { reason: now.reason, message: now.message ?? '' };
  if (now.status === 'True' && (changed || moved) && applied) {
    out.push({ event: 'Healthy', revision: applied, ...base });
  } else if (now.status === 'False' && now.reason === 'HealthCheckFailed' && (changed || moved) && applied) {
    out.push({ event: 'Unhealthy', revision: applied, ...base });
  } else if (now.status === 'False' && REFUSALS.has(now.reason ?? '')) {
    const revision = next.lastAttemptedRevision ?? next.artifact?.revision;
    const prevRevision = prev?.lastAttemptedRevision ?? prev?.artifact?.revision;
    if (changed || revision !== prevRevision) out.push({ event: 'Refused', ...(revision && { revision }), ...base });
  } else if (now.status === 'False' && FAILURES.has(now.reason ?? '') && changed) {
    out.push({ event: 'Failed', ...base });
  }
  return out;
}
