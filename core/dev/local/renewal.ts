import { randomBytes, X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dueForRenewal, type IssuedCertificate } from '../../lifecycle/certificates.ts';
import { withRenewalRequest, type RenewalRequest } from '../../pki/renewal.ts';
import { fingerprintSha256, issueCert, PKI_FILES, renderKubeconfig, subjectOf, type CertUsage } from '../../pki/pki.ts';

/**
 * The leaf certificates of a local tenant's PKI directory, which of them the manager renews, and the renewal itself:
 * a new key and certificate from the same issuer with the same subject, names and usages, written atomically, and
 * the kubeconfig that embeds it written again. Which process must then pick it up is the caller's (LocalProvisioner).
 */

/** Leaf is one certificate of the tenant's PKI directory that the manager renews. */
export interface Leaf {
  /** the name it is reported under (metric label, CertificatesValid message) */
  name: string;
  /** the base name of its files in the PKI directory: `<base>.crt` and `<base>.key` */
  base: string;
  /** the base name of the CA that signs it */
  issuer: 'ca' | 'front-proxy-ca';
  /** the kubeconfig (in the control plane's directory) that embeds it, with its user name */
  kubeconfig?: { file: string; user: string };
  /** the process that reads it only at start and is restarted after a renewal (others reload it themselves) */
  restart?: 'controllerManager';
}

/**
 * RENEWED_LEAVES are the certificates renewed before expiry. kube-apiserver reloads its serving certificate and its
 * front-proxy client certificate from their files; the manager reads the admin kubeconfig again (the syncer and the
 * health monitor reconnect when it changes); kube-controller-manager reads its kubeconfig at start, so it restarts
 * (without leader election there is no lease to wait for; the apiserver keeps serving throughout).
 */
export const RENEWED_LEAVES: readonly Leaf[] = [
  { name: 'kube-apiserver serving', base: 'apiserver', issuer: 'ca' },
  { name: 'front-proxy client', base: 'front-proxy-client', issuer: 'front-proxy-ca' },
  { name: 'admin client', base: 'admin', issuer: 'ca', kubeconfig: { file: 'admin.kubeconfig', user: 'admin' } },
  {
    name: 'kube-controller-manager client',
    base: 'controller-manager',
    issuer: 'ca',
    kubeconfig: { file: 'controller-manager.kubeconfig', user: 'system:kube-controller-manager' },
    restart: 'controllerManager',
  },
  {
    name: 'kube-scheduler client',
    base: 'scheduler',
    issuer: 'ca',
    kubeconfig: { file: 'scheduler.kubeconfig', user: 'system:kube-scheduler' },
  },
];

/** WATCHED_ONLY are reported (metric, condition) but not renewed by the manager: `vc rotate-ca` rotates the CAs. */
export const WATCHED_ONLY = [
  { name: 'cluster CA', file: PKI_FILES.ca.cert },
  { name: 'front-proxy CA', file: PKI_FILES.frontProxyCA.cert },
] as const;

/**
 * KUBELET_CLIENT is the certificate kube-apiserver presents to kubelets (to the vn-agent). It is renewed too, but in
 * two steps (kubeletClientStep, core/pki/renewal.ts), since the vn-agent accepts only the fingerprints the VirtualCluster's status
 * publishes: the renewed pair is made beside it (`kubelet-client-next.*`) and published first, and only then moved
 * into the files the apiserver reads (it reloads them for each new connection), the one replaced kept as
 * `kubelet-client-previous.crt` and published until it expires, since connections opened before go on with it.
 */
export const KUBELET_CLIENT: Leaf = { name: 'kube-apiserver kubelet client', base: 'kubelet-client', issuer: 'ca' };
const NEXT = 'kubelet-client-next';
const PREVIOUS = 'kubelet-client-previous.crt';

/** stagedKubeletClient is the renewed kubelet client certificate of pkiDir not yet given to the apiserver, if any. */
export function stagedKubeletClient(pkiDir: string, now: Date): { fingerprint: string; ageMs: number } | undefined {
  const f = join(pkiDir, `${NEXT}.crt`);
  if (!existsSync(f)) return undefined;
  return { fingerprint: fingerprintSha256(readFileSync(f, 'utf8')), ageMs: now.getTime() - statSync(f).mtimeMs };
}

/**
 * kubeletClientFingerprints is what the status publishes of pkiDir's kubelet client certificates: the one the
 * apiserver reads, and the ones in rotation beside it (a staged renewal, the replaced one while in date).
 */
export function kubeletClientFingerprints(pkiDir: string, now: Date): { current: string; rotating: string[] } {
  const read = (f: string) => readFileSync(join(pkiDir, f), 'utf8');
  const rotating: string[] = [];
  const staged = stagedKubeletClient(pkiDir, now);
  if (staged) rotating.push(staged.fingerprint);
  if (existsSync(join(pkiDir, PREVIOUS))) {
    const pem = read(PREVIOUS);
    if (new Date(new X509Certificate(pem).validTo) > now) rotating.push(fingerprintSha256(pem));
  }
  return { current: fingerprintSha256(read(PKI_FILES.kubeletClient.cert)), rotating };
}

/** stageKubeletClient issues the renewed kubelet client pair beside the current one (`kubelet-client-next.*`). */
export async function stageKubeletClient(pkiDir: string, validityDays: number): Promise<void> {
  await renewLeaf(pkiDir, { ...KUBELET_CLIENT, base: NEXT }, validityDays, KUBELET_CLIENT.base);
}

/**
 * promoteKubeletClient gives the apiserver the staged pair: the current certificate is kept as the previous one, then
 * the staged key and certificate replace the current ones (key first, each in one rename) and the staged files go.
 */
export function promoteKubeletClient(pkiDir: string): void {
  const read = (f: string) => readFileSync(join(pkiDir, f), 'utf8');
  writeAtomic(join(pkiDir, PREVIOUS), read(PKI_FILES.kubeletClient.cert), 0o644);
  writeAtomic(join(pkiDir, PKI_FILES.kubeletClient.key), read(`${NEXT}.key`), 0o600);
  writeAtomic(join(pkiDir, PKI_FILES.kubeletClient.cert), read(`${NEXT}.crt`), 0o644);
  dropStagedKubeletClient(pkiDir);
}

/** dropStagedKubeletClient removes a staged kubelet client pair (a CA rotation issues the certificate itself). */
export function dropStagedKubeletClient(pkiDir: string): void {
  rmSync(join(pkiDir, `${NEXT}.crt`), { force: true });
  rmSync(join(pkiDir, `${NEXT}.key`), { force: true });
}

/** ReportedCertificate is an IssuedCertificate with whether the manager renews it by itself. */
export type ReportedCertificate = IssuedCertificate & { manual?: boolean };

const EKU: Record<string, CertUsage> = { '1.3.6.1.5.5.7.3.1': 'server', '1.3.6.1.5.5.7.3.2': 'client' };

function validity(name: string, pem: string): IssuedCertificate {
  const x = new X509Certificate(pem);
  return { name, notBefore: new Date(x.validFrom), notAfter: new Date(x.validTo) };
}

/**
 * readCertificates lists every certificate of pkiDir with its validity, the renewed leaves first, those `request` (a
 * renewal asked for by hand) covers with its renewBy.
 */
export function readCertificates(pkiDir: string, request?: RenewalRequest): ReportedCertificate[] {
  const read = (f: string) => readFileSync(join(pkiDir, f), 'utf8');
  return [
    ...[...RENEWED_LEAVES, KUBELET_CLIENT]
      .filter((l) => existsSync(join(pkiDir, `${l.base}.crt`)))
      .map((l) => withRenewalRequest(validity(l.name, read(`${l.base}.crt`)), request)),
    ...WATCHED_ONLY.filter((w) => existsSync(join(pkiDir, w.file))).map((w) => ({
      ...validity(w.name, read(w.file)),
      manual: true,
    })),
  ];
}

/**
 * dueLeaves are the leaves of pkiDir whose renewal time (fraction of their life, or the time of a renewal `request`
 * asked for by hand that covers them) has come at now: of RENEWED_LEAVES, and KUBELET_CLIENT last (which is renewed
 * in two steps, see kubeletClientStep).
 */
export function dueLeaves(pkiDir: string, fraction: number, now: Date, request?: RenewalRequest): Leaf[] {
  const certs = readCertificates(pkiDir, request).filter((c) => !c.manual);
  const due = new Set(dueForRenewal(certs, now, fraction).map((c) => c.name));
  return [...RENEWED_LEAVES, KUBELET_CLIENT].filter((l) => due.has(l.name));
}

/** sansOf reads a certificate's DNS and IP subject alternative names. */
function sansOf(x: X509Certificate): { dnsNames: string[]; ipAddresses: string[] } {
  const sans = (x.subjectAltName ?? '').split(', ');
  return {
    dnsNames: sans.filter((s) => s.startsWith('DNS:')).map((s) => s.slice(4)),
    ipAddresses: sans.filter((s) => s.startsWith('IP Address:')).map((s) => s.slice(11)),
  };
}

/** writeAtomic replaces path with data in one rename, so that a process reloading it never reads half a PEM. */
export function writeAtomic(path: string, data: string, mode: number): void {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, data, { mode, flag: 'wx' });
    chmodSync(tmp, mode);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/**
 * renewLeaf issues leaf again in pkiDir from its CA, for validityDays (cut at the CA's expiry), with a new key and the
 * subject, names and usages of the certificate it replaces (`<from>.crt`, by default the leaf's own). The key is written first: a process that reloads when
 * either file changes reads a matching pair once the certificate lands.
 */
export async function renewLeaf(pkiDir: string, leaf: Leaf, validityDays: number, from = leaf.base): Promise<void> {
  const read = (f: string) => readFileSync(join(pkiDir, f), 'utf8');
  const old = new X509Certificate(read(`${from}.crt`));
  const { cn, o } = subjectOf(old);
  const usages = (old.keyUsage ?? []).map((oid) => EKU[oid]).filter((u): u is CertUsage => !!u);
  const next = await issueCert(signingCa(pkiDir, leaf.issuer), {
    commonName: cn,
    organizations: o,
    ...sansOf(old),
    usages,
    validityDays,
  });
  writeAtomic(join(pkiDir, `${leaf.base}.key`), next.keyPem, 0o600);
  writeAtomic(join(pkiDir, `${leaf.base}.crt`), next.certPem, 0o644);
}

/**
 * writeLeafKubeconfig writes the kubeconfig of leaf in dir (the control plane's directory, PKI in `dir/pki`): the
 * cluster `clusterName` at server, trusting caPem, authenticating with the leaf's certificate and key as they are now.
 */
export function writeLeafKubeconfig(
  dir: string,
  leaf: Pick<Leaf, 'base' | 'kubeconfig'>,
  cluster: { clusterName: string; server: string; caPem: string },
): void {
  if (!leaf.kubeconfig) return;
  const text = renderKubeconfig({
    ...cluster,
    user: leaf.kubeconfig.user,
    clientCertPem: readFileSync(join(dir, 'pki', `${leaf.base}.crt`), 'utf8'),
    clientKeyPem: readFileSync(join(dir, 'pki', `${leaf.base}.key`), 'utf8'),
  });
  writeAtomic(join(dir, leaf.kubeconfig.file), text, 0o600);
}

/** pemBlocks splits a PEM bundle into its certificates. */
export function pemBlocks(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [];
}

/**
 * signingCa is the CA that signs `issuer`'s leaves: the first certificate of `<issuer>.crt` (during a CA rotation it
 * is a bundle of two, the signing one first) and `<issuer>.key`.
 */
export function signingCa(pkiDir: string, issuer: Leaf['issuer']): { certPem: string; keyPem: string } {
  const certPem = pemBlocks(readFileSync(join(pkiDir, `${issuer}.crt`), 'utf8'))[0];
  if (!certPem) throw new Error(`${issuer}.crt in ${pkiDir} holds no certificate`);
  return { certPem, keyPem: readFileSync(join(pkiDir, `${issuer}.key`), 'utf8') };
}

/** SIGNING_CERT is the file of the cluster CA certificate alone, for the controller manager's CSR signer. */
export const SIGNING_CERT = 'ca-signing.crt';

/**
 * writeSigningCert writes SIGNING_CERT from the first certificate of ca.crt, where it differs: kube-controller-manager's
 * --cluster-signing-cert-file takes exactly one certificate, while ca.crt is a bundle of two during a CA rotation.
 */
export function writeSigningCert(pkiDir: string): void {
  const pem = signingCa(pkiDir, 'ca').certPem;
  const f = join(pkiDir, SIGNING_CERT);
  if (!existsSync(f) || readFileSync(f, 'utf8') !== pem) writeAtomic(f, pem, 0o644);
}
