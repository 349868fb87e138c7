import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createCA, createKeyPair, fingerprintSha256, issueCert } from './ca.ts';
import type { CertKeyPair, KeyPair } from './ca.ts';

/** ControlPlanePKIOptions describes the control plane generateControlPlanePKI makes certificates for. */
export interface ControlPlanePKIOptions {
  clusterName: string;
  /** Extra apiserver DNS SANs: its Service name, ingress host and the like. */
  apiserverDnsNames: readonly string[];
  /** Extra apiserver IP SANs: node, pod or load-balancer addresses. */
  apiserverIPs: readonly string[];
  /** ClusterIP of the `kubernetes` Service, the first IP of the service CIDR (see firstServiceIP). */
  serviceIP: string;
  /** Lifetime of the leaf certificates. */
  validityDays: number;
  /** Lifetime of the two CAs; defaults to validityDays. Leaves never outlive their CA. */
  caValidityDays?: number;
  /**
   * Lifetime of the kubelet client certificate, which the VirtualCluster's status pins by fingerprint; defaults to
   * caValidityDays, for a provisioner that does not renew it (the local provisioner does, and gives validityDays).
   */
  kubeletClientValidityDays?: number;
  /** Cluster DNS domain; defaults to `cluster.local`. */
  clusterDomain?: string;
}

/**
 * ControlPlanePKI is everything one Kubernetes control plane needs, as PEM strings; it survives JSON untouched.
 * The front-proxy client certificate is signed by the front-proxy CA, every other certificate by the cluster CA.
 */
export interface ControlPlanePKI {
  ca: CertKeyPair;
  /** kube-apiserver serving certificate. */
  apiserver: CertKeyPair;
  /** CA the apiserver trusts for aggregated-API request headers (`--requestheader-client-ca-file`). */
  frontProxyCA: CertKeyPair;
  /** CN `front-proxy-client`: what the apiserver presents to aggregated API servers. */
  frontProxyClient: CertKeyPair;
  /** Signs and verifies service-account tokens. */
  serviceAccount: KeyPair;
  /** CN `admin`, O `system:masters`. */
  admin: CertKeyPair;
  /** CN `system:kube-controller-manager`. */
  controllerManager: CertKeyPair;
  /** CN `system:kube-scheduler`. */
  scheduler: CertKeyPair;
  /** CN `kube-apiserver-kubelet-client`, O `system:masters`: what the apiserver presents to kubelets. */
  kubeletClient: CertKeyPair;
  /** fingerprintSha256 of kubeletClient.certPem, for kubelets that pin the tenant apiserver's client certificate. */
  kubeletClientFingerprint: string;
}

/** CertKeyField names the members of ControlPlanePKI that hold a certificate and its key. */
export type CertKeyField = Exclude<keyof ControlPlanePKI, 'serviceAccount' | 'kubeletClientFingerprint'>;

/** PKI_FILES names the files writePKI writes in its directory, kubeadm style. */
export const PKI_FILES = {
  ca: { cert: 'ca.crt', key: 'ca.key' },
  apiserver: { cert: 'apiserver.crt', key: 'apiserver.key' },
  frontProxyCA: { cert: 'front-proxy-ca.crt', key: 'front-proxy-ca.key' },
  frontProxyClient: { cert: 'front-proxy-client.crt', key: 'front-proxy-client.key' },
  admin: { cert: 'admin.crt', key: 'admin.key' },
  controllerManager: { cert: 'controller-manager.crt', key: 'controller-manager.key' },
  scheduler: { cert: 'scheduler.crt', key: 'scheduler.key' },
  kubeletClient: { cert: 'kubelet-client.crt', key: 'kubelet-client.key' },
  serviceAccount: { privateKey: 'sa.key', publicKey: 'sa.pub' },
} as const satisfies Record<CertKeyField, { cert: string; key: string }> & {
  serviceAccount: { privateKey: string; publicKey: string };
};

const CERT_KEY_FIELDS = Object.keys(PKI_FILES).filter((f) => f !== 'serviceAccount') as CertKeyField[];
const PUBLIC_MODE = 0o644;
const SECRET_MODE = 0o600;

/**
 * generateControlPlanePKI creates a cluster CA, a front-proxy CA, a service-account key pair and the certificates of
 * kube-apiserver, its kubelet and front-proxy clients, the admin user, kube-controller-manager and kube-scheduler.
 * The apiserver serves `kubernetes`, `kubernetes.default`, `kubernetes.default.svc`,
 * `kubernetes.default.svc.<clusterDomain>`, `localhost`, 127.0.0.1, the service IP and the given names and IPs.
 */
export async function generateControlPlanePKI(opts: ControlPlanePKIOptions): Promise<ControlPlanePKI> {
  if (opts.clusterName.trim() === '') throw new Error('clusterName must not be empty');
  if (isIP(opts.serviceIP) === 0) throw new Error(`serviceIP ${opts.serviceIP} is not an IP address`);
  const validityDays = opts.validityDays;
  const caValidityDays = opts.caValidityDays ?? validityDays;

  const [ca, frontProxyCA, serviceAccount] = await Promise.all([
    createCA(`${opts.clusterName}-ca`, caValidityDays),
    createCA(`${opts.clusterName}-front-proxy-ca`, caValidityDays),
    createKeyPair(),
  ]);
  const client = (commonName: string, organizations: string[] = []): Promise<CertKeyPair> =>
    issueCert(ca, { commonName, organizations, usages: ['client'], validityDays });
  const [apiserver, frontProxyClient, admin, controllerManager, scheduler, kubeletClient] = await Promise.all([
    issueApiserverCert(ca, opts),
    issueCert(frontProxyCA, { commonName: 'front-proxy-client', usages: ['client'], validityDays }),
    client('admin', ['system:masters']),
    client('system:kube-controller-manager'),
    client('system:kube-scheduler'),
    issueCert(ca, {
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters'],
      usages: ['client'],
      validityDays: opts.kubeletClientValidityDays ?? caValidityDays,
    }),
  ]);
  return {
    ca,
    apiserver,
    frontProxyCA,
    frontProxyClient,
    serviceAccount,
    admin,
    controllerManager,
    scheduler,
    kubeletClient,
    kubeletClientFingerprint: fingerprintSha256(kubeletClient.certPem),
  };
}

/**
 * issueApiserverCert issues the kube-apiserver serving certificate of opts from ca: `kubernetes`,
 * `kubernetes.default`, `kubernetes.default.svc`, `kubernetes.default.svc.<clusterDomain>`, `localhost`, 127.0.0.1,
 * the service IP and opts' names and IPs. generateControlPlanePKI uses it, and so does whoever reissues only the
 * serving certificate when the names a control plane is reached at change (the CA and every client stay).
 */
export function issueApiserverCert(ca: CertKeyPair, opts: ControlPlanePKIOptions): Promise<CertKeyPair> {
  if (isIP(opts.serviceIP) === 0) throw new Error(`serviceIP ${opts.serviceIP} is not an IP address`);
  const clusterDomain = opts.clusterDomain ?? 'cluster.local';
  return issueCert(ca, {
    commonName: 'kube-apiserver',
    dnsNames: [
      'kubernetes',
      'kubernetes.default',
      'kubernetes.default.svc',
      `kubernetes.default.svc.${clusterDomain}`,
      'localhost',
      ...opts.apiserverDnsNames,
    ],
    ipAddresses: ['127.0.0.1', opts.serviceIP, ...opts.apiserverIPs],
    usages: ['server'],
    validityDays: opts.validityDays,
  });
}

/**
 * writePKI writes pki into dir under the names of PKI_FILES, creating dir (0700) if needed. Private keys get mode
 * 0600, certificates and sa.pub 0644. Each file is replaced atomically, so a reader never sees half a PEM. It is
 * synchronous: a handful of small files, written once per control plane, right before processes read them.
 */
export function writePKI(dir: string, pki: ControlPlanePKI): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const field of CERT_KEY_FIELDS) {
    writeAtomic(join(dir, PKI_FILES[field].cert), pki[field].certPem, PUBLIC_MODE);
    writeAtomic(join(dir, PKI_FILES[field].key), pki[field].keyPem, SECRET_MODE);
  }
  writeAtomic(join(dir, PKI_FILES.serviceAccount.privateKey), pki.serviceAccount.privateKeyPem, SECRET_MODE);
  writeAtomic(join(dir, PKI_FILES.serviceAccount.publicKey), pki.serviceAccount.publicKeyPem, PUBLIC_MODE);
}

/** readPKI reads back what writePKI wrote, recomputing the kubelet client fingerprint. */
export function readPKI(dir: string): ControlPlanePKI {
  const read = (name: string): string => readFileSync(join(dir, name), 'utf8');
  const certs = Object.fromEntries(
    CERT_KEY_FIELDS.map((field) => [
      field,
      { certPem: read(PKI_FILES[field].cert), keyPem: read(PKI_FILES[field].key) },
    ]),
  ) as Record<CertKeyField, CertKeyPair>;
  return {
    ...certs,
    serviceAccount: {
      privateKeyPem: read(PKI_FILES.serviceAccount.privateKey),
      publicKeyPem: read(PKI_FILES.serviceAccount.publicKey),
    },
    kubeletClientFingerprint: fingerprintSha256(certs.kubeletClient.certPem),
  };
}

function writeAtomic(path: string, data: string, mode: number): void {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, data, { mode, flag: 'wx' });
    // writeFileSync's mode is filtered through the umask; chmod sets it exactly.
    chmodSync(tmp, mode);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
