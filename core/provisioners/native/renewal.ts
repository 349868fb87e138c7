import { X509Certificate } from 'node:crypto';
import { dueForRenewal, type IssuedCertificate } from '../../pki/renewal.ts';
import { issueApiserverCert, issueCert, type ControlPlanePKI, type ControlPlanePKIOptions } from '../../pki/pki.ts';

/**
 * The certificates of a native tenant's PKI (kept in its PKI Secret), which of them the manager renews, and the
 * renewal: a new key and certificate from the same CA with the same subject, names and usages. How each is taken up
 * (core/provisioners/native/render.ts): the apiserver reloads its serving and front-proxy client files, which the
 * kubelet rewrites in the projected volume when the Secret changes (they are left out of the apiserver's config hash,
 * so they do not roll it); the admin kubeconfig Secret is written again and the manager's clients reconnect; the
 * controller manager's kubeconfig is in its config hash, so its StatefulSet rolls (the apiserver keeps serving).
 */

/** NativeLeaf is a member of ControlPlanePKI the native provisioner renews. */
export type NativeLeaf = 'apiserver' | 'frontProxyClient' | 'admin' | 'controllerManager';

/** NATIVE_RENEWED names the renewed leaves as the metric and the CertificatesValid condition report them. */
export const NATIVE_RENEWED: Readonly<Record<NativeLeaf, string>> = {
  apiserver: 'kube-apiserver serving',
  frontProxyClient: 'front-proxy client',
  admin: 'admin client',
  controllerManager: 'kube-controller-manager client',
};

/**
 * NATIVE_WATCHED are reported but not renewed: the CAs (a new one is a rotation) and the kubelet client certificate,
 * which the vn-agent pins by fingerprint and which lives as long as the CA.
 */
export const NATIVE_WATCHED = {
  ca: 'cluster CA',
  frontProxyCA: 'front-proxy CA',
  kubeletClient: 'kube-apiserver kubelet client',
} as const satisfies Partial<Record<keyof ControlPlanePKI, string>>;

/** ReportedCertificate is one certificate as the provisioner reports it (Provisioned.certificates). */
export type ReportedCertificate = IssuedCertificate & { manual?: boolean };

/** validity reads a PEM certificate's window. */
function validity(name: string, pem: string): IssuedCertificate {
  const x = new X509Certificate(pem);
  return { name, notBefore: new Date(x.validFrom), notAfter: new Date(x.validTo) };
}

/** nativeCertificates are the tenant's certificates with their windows, the watched ones marked manual. */
export function nativeCertificates(pki: ControlPlanePKI): ReportedCertificate[] {
  return [
    ...Object.entries(NATIVE_RENEWED).map(([k, name]) => validity(name, pki[k as NativeLeaf].certPem)),
    ...Object.entries(NATIVE_WATCHED).map(([k, name]) => ({
      ...validity(name, pki[k as keyof typeof NATIVE_WATCHED].certPem),
      manual: true,
    })),
  ];
}

/**
 * renewDueLeaves issues again, for validityDays, each renewed leaf whose `fraction` of life has passed at `now`, and
 * answers the PKI with them replaced and their names (none: the same PKI object). `opts` are the apiserver's
 * certificate options (its names and addresses, as the serving certificate carries them now).
 */
export async function renewDueLeaves(
  pki: ControlPlanePKI,
  opts: ControlPlanePKIOptions,
  now: Date,
  fraction: number,
  validityDays: number,
): Promise<{ pki: ControlPlanePKI; renewed: string[] }> {
  const leaves = Object.keys(NATIVE_RENEWED) as NativeLeaf[];
  const due = new Set(
    dueForRenewal(
      leaves.map((k) => validity(k, pki[k].certPem)),
      now,
      fraction,
    ).map((c) => c.name as NativeLeaf),
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
  return { pki: next, renewed: leaves.filter((k) => due.has(k)).map((k) => NATIVE_RENEWED[k]) };
}

/**
 * nativeCaRotation answers the CA rotation step a native tenant's ca-rotation annotation asks for (`vc rotate-ca`),
 * or undefined without one: refused, naming the step, since the native provisioner does not rotate CAs yet. The
 * refusal reaches `vc rotate-ca` as the CARotation condition at once, instead of a wait for a step never done.
 */
export function nativeCaRotation(step: string | undefined): { step: string; refused: string } | undefined {
  if (step === undefined) return undefined;
  return {
    step,
    refused:
      `step ${step}: native tenants have no CA rotation yet; their CAs live spec.pkiExpireDays ` +
      '(docs/operations/certificates.md)',
  };
}
