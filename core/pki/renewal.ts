/**
 * When a certificate the manager issued is due for renewal: at a configurable fraction of its life. Pure, so every
 * provisioner that renews certificates and the lifecycle's decisions share it (core/lifecycle/certificates.ts
 * re-exports it).
 */

/** CLOCK_SKEW_MS is how far before its issue a certificate's notBefore lies, so that peers whose clocks lag accept it. */
export const CLOCK_SKEW_MS = 60_000;

/** DEFAULT_RENEW_FRACTION is the share of a certificate's life after which it is renewed: two thirds, as kubelets do. */
export const DEFAULT_RENEW_FRACTION = 2 / 3;

/** IssuedCertificate is one certificate the manager issued: its name and validity window. */
export interface IssuedCertificate {
  name: string;
  notBefore: Date;
  notAfter: Date;
  /** a renewal asked for by hand (the renew-certificates annotation, withRenewalRequest): renewed by then at the latest */
  renewBy?: Date;
}

/**
 * renewAt is when a certificate is renewed: `fraction` (0 < fraction < 1) of the way from notBefore to notAfter, or
 * its renewBy where that comes first. A fraction outside that range is refused, since 0 would renew in a loop and 1
 * only at expiry.
 */
export function renewAt(c: Pick<IssuedCertificate, 'notBefore' | 'notAfter' | 'renewBy'>, fraction: number): Date {
  if (!(fraction > 0 && fraction < 1)) throw new Error(`renewal fraction must be between 0 and 1, got ${fraction}`);
  const from = c.notBefore.getTime();
  const at = from + (c.notAfter.getTime() - from) * fraction;
  return new Date(c.renewBy ? Math.min(at, c.renewBy.getTime()) : at);
}

/** dueForRenewal lists, soonest expiry first, the certificates whose renewal time has come at `now`. */
export function dueForRenewal(certs: readonly IssuedCertificate[], now: Date, fraction: number): IssuedCertificate[] {
  return certs
    .filter((c) => renewAt(c, fraction).getTime() <= now.getTime())
    .sort((a, b) => a.notAfter.getTime() - b.notAfter.getTime());
}

/**
 * RENEWABLE names the certificates a renewal may be asked for by hand (the renew-certificates annotation, `vc certs
 * renew --cert`): the short name an operator writes, and the name the metric and CertificatesValid report it under.
 * A native tenant runs no scheduler of its own: its `scheduler` certificate is kept and renewed, and used by nothing.
 */
export const RENEWABLE = {
  apiserver: 'kube-apiserver serving',
  'front-proxy-client': 'front-proxy client',
  admin: 'admin client',
  'controller-manager': 'kube-controller-manager client',
  scheduler: 'kube-scheduler client',
  'kubelet-client': 'kube-apiserver kubelet client',
} as const;

/** RenewableName is a short name of RENEWABLE. */
export type RenewableName = keyof typeof RENEWABLE;

/**
 * RenewalRequest is a renewal asked for by hand: every certificate of `names` (all of RENEWABLE without) issued
 * before `before` is renewed, at `before` at the latest, through the same steps as a renewal at the end of its life.
 */
export interface RenewalRequest {
  before: Date;
  names?: readonly RenewableName[];
}

/**
 * parseRenewalRequest reads the renew-certificates annotation, `[NAME[,NAME...]@]TIME` (TIME in RFC 3339, NAME of
 * RENEWABLE), into a request, or answers why it is refused (`where` names the object and field). TIME counts to the
 * second: a certificate issued in that second is not issued before it. A TIME still to come schedules the renewal
 * for then.
 */
export function parseRenewalRequest(value: string, where: string): RenewalRequest | { refused: string } {
  const at = value.lastIndexOf('@');
  const [list, time] = at < 0 ? [undefined, value] : [value.slice(0, at), value.slice(at + 1)];
  const refused = (why: string) => ({ refused: `${where}: ${JSON.stringify(value)}: ${why}` });
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(time.trim()))
    return refused('the time is not RFC 3339 (like 2026-12-01T10:00:00Z); write [NAME[,NAME...]@]TIME');
  const ms = Date.parse(time.trim());
  if (Number.isNaN(ms)) return refused(`${time.trim()} is not a time`);
  const before = new Date(Math.floor(ms / 1000) * 1000);
  if (list === undefined) return { before };
  const names = list.split(',').map((n) => n.trim());
  const unknown = names.filter((n) => !Object.hasOwn(RENEWABLE, n));
  if (unknown.length || !names.length)
    return refused(
      `unknown certificate ${unknown.map((n) => JSON.stringify(n)).join(', ') || '""'}; the names are ` +
        Object.keys(RENEWABLE).join(', '),
    );
  return { before, names: names as RenewableName[] };
}

/**
 * withRenewalRequest marks a certificate `request` covers with renewBy: one of its names (by the name it is reported
 * under) that was issued before `request.before`. Issued is notBefore plus the CLOCK_SKEW_MS it is dated back by, so
 * the certificate that renews it (issued at `before` or later) is not covered again. Others are answered unchanged.
 */
export function withRenewalRequest<C extends IssuedCertificate>(c: C, request: RenewalRequest | undefined): C {
  if (!request) return c;
  const names = (request.names ?? (Object.keys(RENEWABLE) as RenewableName[])).map((n) => RENEWABLE[n] as string);
  if (!names.includes(c.name)) return c;
  if (c.notBefore.getTime() + CLOCK_SKEW_MS >= request.before.getTime()) return c;
  return { ...c, renewBy: request.before };
}

/**
 * PUBLISH_GRACE_MS is how long a renewed kubelet client certificate of a tenant apiserver stays published before the
 * apiserver is given it: time for every vn-agent's watch of the VirtualCluster to bring the status.
 */
export const PUBLISH_GRACE_MS = 5_000;

/** KubeletClientStep is what the kubelet client certificate's renewal does now (kubeletClientStep). */
export type KubeletClientStep = 'none' | 'stage' | 'wait' | 'promote';

/**
 * kubeletClientStep decides the renewal of a tenant apiserver's kubelet client certificate, which the vn-agent accepts
 * only once the VirtualCluster's status publishes its fingerprint: `stage` a renewed pair once the current one is due
 * and none is staged; `promote` a staged one (give it to the apiserver) once the status has published its fingerprint
 * for PUBLISH_GRACE_MS; else `wait` while one is staged, `none` otherwise. Both provisioners follow it: the local one
 * with files beside the apiserver's, the native one in the tenant's PKI Secret.
 */
export function kubeletClientStep(s: {
  due: boolean;
  staged?: { fingerprint: string; ageMs: number };
  published: readonly string[];
}): KubeletClientStep {
  if (s.staged)
    return s.published.includes(s.staged.fingerprint) && s.staged.ageMs >= PUBLISH_GRACE_MS ? 'promote' : 'wait';
  return s.due ? 'stage' : 'none';
}
