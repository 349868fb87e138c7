import type { ConditionInput } from '../controller/status.ts';
import type { Outcome } from './decisions.ts';
import { DEFAULT_RENEW_FRACTION, dueForRenewal, renewAt, type IssuedCertificate } from '../pki/renewal.ts';

export { DEFAULT_RENEW_FRACTION, dueForRenewal, renewAt, type IssuedCertificate };

/**
 * This module holds the decisions about the certificates the manager issued for a tenant, without I/O: when each is
 * due for renewal (at a configurable fraction of its life) and what the tenant's CertificatesValid condition says.
 * Whoever reads the certificates (a provisioner) and renews them applies these answers.
 */

/** CERTIFICATES_VALID is the condition that says whether the tenant's certificates are valid and not overdue. */
export const CERTIFICATES_VALID = 'CertificatesValid';
/** CERTIFICATE_EXPIRED is the reason of a tenant one of whose certificates has expired. */
export const CERTIFICATE_EXPIRED = 'CertificateExpired';
/** CERTIFICATE_RENEWAL_OVERDUE is the reason of a tenant one of whose certificates is past its renewal time. */
export const CERTIFICATE_RENEWAL_OVERDUE = 'CertificateRenewalOverdue';
/** CERTIFICATE_GRACE_MS is how long past its renewal time a certificate may stay before CertificatesValid turns False. */
export const CERTIFICATE_GRACE_MS = 60_000;
/** CERTIFICATES_CURRENT is the reason of CertificatesValid=True. */
export const CERTIFICATES_CURRENT = 'CertificatesCurrent';

/** nextRenewal is the earliest renewal time among certs (undefined for none): when to look again. */
export function nextRenewal(certs: readonly IssuedCertificate[], fraction: number): Date | undefined {
  const times = certs.map((c) => renewAt(c, fraction).getTime());
  return times.length ? new Date(Math.min(...times)) : undefined;
}

/**
 * certificatesCondition is the CertificatesValid condition at `now`: False CertificateExpired naming the expired ones,
 * else False CertificateRenewalOverdue naming those past their renewal time by more than `graceMs` (a renewal that
 * keeps failing), else True with the earliest expiry.
 */
export function certificatesCondition(
  certs: readonly IssuedCertificate[],
  now: Date,
  fraction: number,
  graceMs = CERTIFICATE_GRACE_MS,
): ConditionInput {
  const t = now.getTime();
  const names = (cs: readonly IssuedCertificate[]) =>
    cs.map((c) => `${c.name} (${c.notAfter.toISOString()})`).join(', ');
  const expired = certs.filter((c) => c.notAfter.getTime() <= t);
  if (expired.length)
    return {
      type: CERTIFICATES_VALID,
      status: 'False',
      reason: CERTIFICATE_EXPIRED,
      message: `expired: ${names(expired)}`,
    };
  const overdue = certs.filter((c) => renewAt(c, fraction).getTime() + graceMs <= t);
  if (overdue.length)
    return {
      type: CERTIFICATES_VALID,
      status: 'False',
      reason: CERTIFICATE_RENEWAL_OVERDUE,
      message: `past their renewal time and not renewed: ${names(overdue)}`,
    };
  const first = [...certs].sort((a, b) => a.notAfter.getTime() - b.notAfter.getTime())[0];
  return {
    type: CERTIFICATES_VALID,
    status: 'True',
    reason: CERTIFICATES_CURRENT,
    message: first ? `earliest expiry: ${names([first])}` : 'no certificates issued',
  };
}

/**
 * renewalRequeue brings a served tenant's key back a second after its next certificate is due (the provisioner renews
 * it then), or sooner when `after` asks for that already.
 */
export function renewalRequeue(
  after: Outcome,
  certs: readonly IssuedCertificate[],
  fraction: number,
  now: Date,
): Outcome {
  const due = nextRenewal(certs, fraction);
  if (!due) return after;
  const renewIn = Math.max(1000, due.getTime() - now.getTime() + 1000);
  return { ...after, requeueAfter: Math.min(after.requeueAfter ?? renewIn, renewIn) };
}

/** CA_ROTATION is the condition that reports the last step of a CA rotation asked for with `vc rotate-ca`. */
export const CA_ROTATION = 'CARotation';
/** NEW_CA_ADDED is the reason of CARotation=True after step add: a new CA is trusted beside the old, which signs. */
export const NEW_CA_ADDED = 'NewCAAdded';
/** LEAVES_REISSUED is the reason of CARotation=True after step reissue: the new CA signs the reissued clients. */
export const LEAVES_REISSUED = 'LeavesReissued';
/** OLD_CA_DROPPED is the reason of CARotation=True after step drop: the old CA is no longer trusted. */
export const OLD_CA_DROPPED = 'OldCADropped';
/** CA_ROTATION_REASONS are the reasons of CARotation=True, by the step done. */
export const CA_ROTATION_REASONS = { add: NEW_CA_ADDED, reissue: LEAVES_REISSUED, drop: OLD_CA_DROPPED } as const;
/** CA_ROTATION_REFUSED is the reason of CARotation=False: a step asked for out of order, or an unknown one. */
export const CA_ROTATION_REFUSED = 'RotationStepRefused';

/** CaRotationReport is what a provisioner did with the rotation step a VirtualCluster asks for. */
export interface CaRotationReport {
  step: string;
  /** why the step was not done; absent when it is done */
  refused?: string;
}

/** caRotationCondition is the CARotation condition of a provisioner's report of a rotation step. */
export function caRotationCondition(r: CaRotationReport): ConditionInput {
  const reason = CA_ROTATION_REASONS[r.step as keyof typeof CA_ROTATION_REASONS];
  if (r.refused || !reason)
    return {
      type: CA_ROTATION,
      status: 'False',
      reason: CA_ROTATION_REFUSED,
      message: r.refused ?? `unknown CA rotation step ${JSON.stringify(r.step)}: give add, reissue or drop`,
    };
  const message = {
    add: 'a new CA is trusted beside the old one, which still signs; next: vc rotate-ca --step reissue',
    reissue: 'the new CA signs and every client certificate was issued again; next: vc rotate-ca --step drop',
    drop: 'the old CA is no longer trusted: kubeconfigs issued before the rotation fail',
  }[r.step as keyof typeof CA_ROTATION_REASONS];
  return { type: CA_ROTATION, status: 'True', reason, message };
}
