import { X509Certificate } from 'node:crypto';
import {
  dueForRenewal,
  kubeletClientStep,
  renewAt,
  withRenewalRequest,
  type IssuedCertificate,
  type KubeletClientStep,
  type RenewalRequest,
} from '../../pki/renewal.ts';
import {
  fingerprintSha256,
  issueApiserverCert,
  issueCert,
  subjectOf,
  type ControlPlanePKI,
  type ControlPlanePKIOptions,
} from '../../pki/pki.ts';

/**
 * The certificates of a native tenant's PKI (kept in its PKI Secret), which of them the manager renews, and the
 * renewal: a new key and certificate from the same CA with the same subject, names and usages. How each is taken up
 * (core/provisioners/native/render.ts): the apiserver reloads its serving and front-proxy client files, which the
 * kubelet rewrites in the projected volume when the Secret changes (they are left out of the apiserver's config hash,
 * so they do not roll it); the admin kubeconfig Secret is written again and the manager's clients reconnect; the
 * controller manager's kubeconfig is in its config hash, so its StatefulSet rolls (the apiserver keeps serving); the
 * scheduler client certificate, which no native component uses, is only written to the Secret. The
 * apiserver's kubelet client certificate is renewed in two steps (renewKubeletClient), as the local provisioner's.
 */

/** NativeLeaf is a member of ControlPlanePKI the native provisioner renews. */
export type NativeLeaf = 'apiserver' | 'frontProxyClient' | 'admin' | 'controllerManager' | 'scheduler';

/** NATIVE_RENEWED names the renewed leaves as the metric and the CertificatesValid condition report them. */
export const NATIVE_RENEWED: Readonly<Record<NativeLeaf, string>> = {
  apiserver: 'kube-apiserver serving',
  frontProxyClient: 'front-proxy client',
  admin: 'admin client',
  controllerManager: 'kube-controller-manager client',
  // issued with the rest of the PKI though no native component presents it (the tenant's Pods are scheduled in the
  // super cluster): renewed all the same, so no certificate the manager issued is left to expire
  scheduler: 'kube-scheduler client',
};

/** NATIVE_KUBELET_CLIENT names the apiserver's kubelet client certificate as the metric and the condition report it. */
export const NATIVE_KUBELET_CLIENT = 'kube-apiserver kubelet client';

/** NATIVE_WATCHED are reported but not renewed: the CAs (a new one is a rotation). */
export const NATIVE_WATCHED = {
  ca: 'cluster CA',
  frontProxyCA: 'front-proxy CA',
} as const satisfies Partial<Record<keyof ControlPlanePKI, string>>;

/** ReportedCertificate is one certificate as the provisioner reports it (Provisioned.certificates). */
export type ReportedCertificate = IssuedCertificate & { manual?: boolean };

/** validity reads a PEM certificate's window, with the renewBy of a renewal asked for by hand that covers it. */
function validity(name: string, pem: string, request?: RenewalRequest): IssuedCertificate {
  const x = new X509Certificate(pem);
  return withRenewalRequest({ name, notBefore: new Date(x.validFrom), notAfter: new Date(x.validTo) }, request);
}

/**
 * nativeCertificates are the tenant's certificates with their windows (and the renewBy of `request`, the renewal asked
 * for by hand), the watched ones marked manual.
 */
export function nativeCertificates(pki: ControlPlanePKI, request?: RenewalRequest): ReportedCertificate[] {
  return [
    ...Object.entries(NATIVE_RENEWED).map(([k, name]) => validity(name, pki[k as NativeLeaf].certPem, request)),
    validity(NATIVE_KUBELET_CLIENT, pki.kubeletClient.certPem, request),
    ...Object.entries(NATIVE_WATCHED).map(([k, name]) => ({
      ...validity(name, pki[k as keyof typeof NATIVE_WATCHED].certPem),
      manual: true,
    })),
  ];
}

/**
 * renewDueLeaves issues again, for validityDays, each renewed leaf whose `fraction` of life has passed at `now`, or
 * that `request` (a renewal asked for by hand) covers from its time on, and answers the PKI with them replaced and
 * their names (none: the same PKI object). `opts` are the apiserver's certificate options (its names and addresses,
 * as the serving certificate carries them now).
 */
export async function renewDueLeaves(
  pki: ControlPlanePKI,
  opts: ControlPlanePKIOptions,
  now: Date,
  fraction: number,
  validityDays: number,
  request?: RenewalRequest,
): Promise<{ pki: ControlPlanePKI; renewed: string[] }> {
  const leaves = Object.keys(NATIVE_RENEWED) as NativeLeaf[];
  const byName = new Map(leaves.map((k) => [NATIVE_RENEWED[k], k]));
  const due = new Set(
    dueForRenewal(
      leaves.map((k) => validity(NATIVE_RENEWED[k], pki[k].certPem, request)),
      now,
      fraction,
    ).map((c) => byName.get(c.name)!),
  );
  if (due.size === 0) return { pki, renewed: [] };
  const client = (commonName: string, organizations: string[] = []) =>
    issueCert(pki.ca, { commonName, organizations, usages: ['client'], validityDays });
  const next: ControlPlanePKI = { ...pki };
  if (due.has('apiserver')) next.apiserver = await issueApiserverCert(pki.ca, { ...opts, validityDays });
  if (due.has('frontProxyClient'))
    next.frontProxyClient = await issueCert(pki.frontProxyCA, {
      commonName: 'front-proxy-client',
      usages: ['client'],
      validityDays,
    });
  if (due.has('admin')) next.admin = await client('admin', ['system:masters']);
  if (due.has('controllerManager')) next.controllerManager = await client('system:kube-controller-manager');
  if (due.has('scheduler')) next.scheduler = await client('system:kube-scheduler');
  return { pki: next, renewed: leaves.filter((k) => due.has(k)).map((k) => NATIVE_RENEWED[k]) };
}

/**
 * nativeCaRotation answers the CA rotation step a native tenant's ca-rotation annotation asks for (`vc rotate-ca`),
 * or undefined without one: refused, naming the step and the way a native tenant's CAs are replaced instead. The
 * refusal reaches `vc rotate-ca` as the CARotation condition at once, instead of a wait for a step never done.
 */
export function nativeCaRotation(step: string | undefined): { step: string; refused: string } | undefined {
  if (step === undefined) return undefined;
  return {
    step,
    refused:
      `step ${step}: native tenants have no CA rotation yet; their CAs live spec.pkiExpireDays, and a change of it ` +
      'replaces them with every certificate they signed (docs/operations/certificates.md)',
  };
}

/**
 * KubeletClientRotation is the renewal of a native tenant's kubelet client certificate in progress, kept in its PKI
 * Secret beside the PKI: a renewed pair not yet given to the apiserver (with when it was made), and the certificate
 * the last renewal replaced, which the apiserver goes on presenting on connections opened before, until it expires.
 */
export interface KubeletClientRotation {
  next?: { certPem: string; keyPem: string; stagedAt: string };
  previousCertPem?: string;
}

/**
 * kubeletClientFingerprints is what the VirtualCluster's status publishes of the kubelet client certificates: the one
 * the apiserver is given, and the ones in rotation beside it (a staged renewal, the one replaced while in date).
 */
export function kubeletClientFingerprints(
  pki: ControlPlanePKI,
  rotation: KubeletClientRotation,
  now: Date,
): { current: string; rotating: string[] } {
  const rotating: string[] = [];
  if (rotation.next) rotating.push(fingerprintSha256(rotation.next.certPem));
  const previous = rotation.previousCertPem;
  if (previous && new Date(new X509Certificate(previous).validTo) > now) rotating.push(fingerprintSha256(previous));
  return { current: pki.kubeletClientFingerprint, rotating };
}

/**
 * renewKubeletClient takes the apiserver's kubelet client certificate one step through its renewal (kubeletClientStep):
 * once `fraction` of its life has passed, a renewed pair from the same CA (same subject, for validityDays) is staged
 * in the rotation; once `published` (the status's fingerprints) has held it for the grace, it becomes the PKI's
 * kubeletClient, which the apiserver's Secret then carries, and the replaced certificate is kept as the previous one.
 * A previous certificate past its expiry is dropped. `request`, a renewal asked for by hand, makes the current one
 * due from its time on when issued before it. Answers the PKI and rotation to keep, and the step taken.
 */
export async function renewKubeletClient(
  pki: ControlPlanePKI,
  rotation: KubeletClientRotation,
  s: { now: Date; fraction: number; validityDays: number; published: readonly string[]; request?: RenewalRequest },
): Promise<{ pki: ControlPlanePKI; rotation: KubeletClientRotation; step: KubeletClientStep }> {
  const current = validity(NATIVE_KUBELET_CLIENT, pki.kubeletClient.certPem, s.request);
  const kept: KubeletClientRotation = { ...rotation };
  if (kept.previousCertPem && new Date(new X509Certificate(kept.previousCertPem).validTo) <= s.now)
    delete kept.previousCertPem;
  const step = kubeletClientStep({
    due: renewAt(current, s.fraction).getTime() <= s.now.getTime(),
    ...(kept.next && {
      staged: {
        fingerprint: fingerprintSha256(kept.next.certPem),
        ageMs: s.now.getTime() - Date.parse(kept.next.stagedAt),
      },
    }),
    published: s.published,
  });
  if (step === 'stage') {
    const { cn, o } = subjectOf(new X509Certificate(pki.kubeletClient.certPem));
    const pair = await issueCert(pki.ca, {
      commonName: cn,
      organizations: o,
      usages: ['client'],
      validityDays: s.validityDays,
    });
    return { pki, rotation: { ...kept, next: { ...pair, stagedAt: s.now.toISOString() } }, step };
  }
  if (step === 'promote') {
    const next = kept.next!;
    return {
      pki: {
        ...pki,
        kubeletClient: { certPem: next.certPem, keyPem: next.keyPem },
        kubeletClientFingerprint: fingerprintSha256(next.certPem),
      },
      rotation: { previousCertPem: pki.kubeletClient.certPem },
      step,
    };
  }
  return { pki, rotation: kept, step };
}
