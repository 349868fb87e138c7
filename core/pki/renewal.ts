/**
 * When a certificate the manager issued is due for renewal: at a configurable fraction of its life. Pure, so every
 * provisioner that renews certificates and the lifecycle's decisions share it (core/lifecycle/certificates.ts
 * re-exports it).
 */

/** DEFAULT_RENEW_FRACTION is the share of a certificate's life after which it is renewed: two thirds, as kubelets do. */
export const DEFAULT_RENEW_FRACTION = 2 / 3;

/** IssuedCertificate is one certificate the manager issued: its name and validity window. */
export interface IssuedCertificate {
  name: string;
  notBefore: Date;
  notAfter: Date;
}

/**
 * renewAt is when a certificate is renewed: `fraction` (0 < fraction < 1) of the way from notBefore to notAfter. A
 * fraction outside that range is refused, since 0 would renew in a loop and 1 only at expiry.
 */
export function renewAt(c: Pick<IssuedCertificate, 'notBefore' | 'notAfter'>, fraction: number): Date {
  if (!(fraction > 0 && fraction < 1)) throw new Error(`renewal fraction must be between 0 and 1, got ${fraction}`);
  const from = c.notBefore.getTime();
  return new Date(from + (c.notAfter.getTime() - from) * fraction);
}

/** dueForRenewal lists, soonest expiry first, the certificates whose renewal time has come at `now`. */
export function dueForRenewal(certs: readonly IssuedCertificate[], now: Date, fraction: number): IssuedCertificate[] {
  return certs
    .filter((c) => renewAt(c, fraction).getTime() <= now.getTime())
    .sort((a, b) => a.notAfter.getTime() - b.notAfter.getTime());
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
