import { KeyObject, X509Certificate, createHash, createPrivateKey, randomBytes, type webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
import { x509 } from './x509.ts';
import { CLOCK_SKEW_MS } from './renewal.ts';

/** CertKeyPair is a certificate (`CERTIFICATE` PEM) and its private key (PKCS#8 `PRIVATE KEY` PEM). */
export interface CertKeyPair {
  certPem: string;
  keyPem: string;
}

/** KeyPair is a key pair without a certificate: PKCS#8 `PRIVATE KEY` PEM and SPKI `PUBLIC KEY` PEM. */
export interface KeyPair {
  privateKeyPem: string;
  publicKeyPem: string;
}

/** CERT_USAGES lists the extended key usages issueCert can grant: TLS server and TLS client authentication. */
export const CERT_USAGES = ['server', 'client'] as const;

/** CertUsage is one of CERT_USAGES. */
export type CertUsage = (typeof CERT_USAGES)[number];

/** LeafOptions describes the certificate issueCert signs. */
export interface LeafOptions {
  commonName: string;
  /** Subject O values; Kubernetes maps them to groups of a client certificate's user. */
  organizations?: readonly string[];
  dnsNames?: readonly string[];
  /** IPv4 or IPv6 addresses in textual form; IPv6 with an embedded dotted IPv4 part is not supported. */
  ipAddresses?: readonly string[];
  usages: readonly CertUsage[];
  validityDays: number;
}

const EC_KEY = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNATURE = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

const EKU_OIDS: Record<CertUsage, string> = {
  server: x509.ExtendedKeyUsage.serverAuth,
  client: x509.ExtendedKeyUsage.clientAuth,
};

/**
 * createCA makes a self-signed certificate authority with a new ECDSA P-256 key: basicConstraints CA:true and
 * keyUsage keyCertSign|cRLSign (both critical), valid from one minute ago for validityDays.
 */
export async function createCA(commonName: string, validityDays: number): Promise<CertKeyPair> {
  requireName(commonName);
  const now = Date.now();
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: [{ CN: [commonName] }],
    notBefore: new Date(now - CLOCK_SKEW_MS),
    notAfter: new Date(now + validityMs(validityDays)),
    keys,
    signingAlgorithm: SIGNATURE,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: certToPem(cert), keyPem: privateKeyToPem(keys.privateKey) };
}

/**
 * issueCert signs a leaf certificate for a new ECDSA P-256 key with ca: subject CN and O, SubjectAltName from the DNS
 * names and IPs, extended key usages from usages, keyUsage digitalSignature|keyEncipherment, subject and authority
 * key identifiers and a random serial. It is valid from one minute ago for validityDays, cut off at the CA's own
 * expiry. The CA must be an ECDSA P-256 CA whose key matches its certificate.
 */
export async function issueCert(ca: CertKeyPair, opts: LeafOptions): Promise<CertKeyPair> {
  requireName(opts.commonName);
  if (opts.usages.length === 0) throw new Error(`certificate ${opts.commonName}: at least one usage is required`);
  for (const usage of opts.usages) {
    if (!CERT_USAGES.includes(usage)) throw new Error(`certificate ${opts.commonName}: unknown usage ${String(usage)}`);
  }
  const dnsNames = unique(opts.dnsNames ?? []);
  const ipAddresses = unique(opts.ipAddresses ?? []);
  for (const name of dnsNames) {
    if (name.trim() === '') throw new Error(`certificate ${opts.commonName}: empty DNS name`);
  }
  for (const ip of ipAddresses) requireIP(ip, `certificate ${opts.commonName}`);
  const lifetime = validityMs(opts.validityDays);

  const issuer = await loadIssuer(ca);
  const now = Date.now();
  const keys = await generateKeys();
  const organizations = unique(opts.organizations ?? []);
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
    new x509.ExtendedKeyUsageExtension(unique(opts.usages).map((usage) => EKU_OIDS[usage])),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    await authorityKeyIdentifier(issuer.cert),
  ];
  if (dnsNames.length + ipAddresses.length > 0) {
    extensions.push(
      new x509.SubjectAlternativeNameExtension([
        ...dnsNames.map((value) => ({ type: 'dns' as const, value })),
        ...ipAddresses.map((value) => ({ type: 'ip' as const, value })),
      ]),
    );
  }
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    // Organization before CommonName, one RDN each, as Go's crypto/x509 (kubeadm, client-go) writes it.
    subject: organizations.length > 0 ? [{ O: organizations }, { CN: [opts.commonName] }] : [{ CN: [opts.commonName] }],
    // The CA's own Name object keeps the issuer bytes equal to the CA subject; Go matches issuers byte for byte.
    issuer: issuer.cert.subjectName,
    notBefore: new Date(now - CLOCK_SKEW_MS),
    notAfter: new Date(Math.min(now + lifetime, issuer.cert.notAfter.getTime())),
    publicKey: keys.publicKey,
    signingKey: issuer.signingKey,
    signingAlgorithm: SIGNATURE,
    extensions,
  });
  return { certPem: certToPem(cert), keyPem: privateKeyToPem(keys.privateKey) };
}

/**
 * issueNodeCert signs a kubelet-style client certificate for a node: CN `system:node:<nodeName>`, O `system:nodes`,
 * the identity the kube-apiserver's Node authorizer limits to that node's own Pods and Node object.
 */
export function issueNodeCert(ca: CertKeyPair, nodeName: string, validityDays: number): Promise<CertKeyPair> {
  if (!nodeName.trim()) throw new Error('node certificate: nodeName must not be empty');
  return issueCert(ca, {
    commonName: `system:node:${nodeName}`,
    organizations: ['system:nodes'],
    usages: ['client'],
    validityDays,
  });
}

/** CertificateRequest is a PKCS#10 request (`CERTIFICATE REQUEST` PEM) and its private key (PKCS#8 PEM). */
export interface CertificateRequest {
  csrPem: string;
  keyPem: string;
}

/**
 * createCertificateRequest makes a new ECDSA P-256 key and a PKCS#10 request for it, subject O and CN as issueCert
 * writes them: what a Kubernetes CertificateSigningRequest carries in spec.request. The key never leaves the caller.
 */
export async function createCertificateRequest(
  commonName: string,
  organizations: readonly string[] = [],
): Promise<CertificateRequest> {
  requireName(commonName);
  const keys = await generateKeys();
  const orgs = unique(organizations);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: orgs.length > 0 ? [{ O: orgs }, { CN: [commonName] }] : [{ CN: [commonName] }],
    keys,
    signingAlgorithm: SIGNATURE,
  });
  return { csrPem: csr.toString('pem'), keyPem: privateKeyToPem(keys.privateKey) };
}

/** createKeyPair makes a bare ECDSA P-256 key pair, as used to sign and verify service-account tokens (ES256). */
export async function createKeyPair(): Promise<KeyPair> {
  const keys = await generateKeys();
  return {
    privateKeyPem: privateKeyToPem(keys.privateKey),
    publicKeyPem: KeyObject.from(keys.publicKey).export({ type: 'spki', format: 'pem' }) as string,
  };
}

/**
 * fingerprintSha256 is the lowercase hex SHA-256 of the certificate's DER: node's `fingerprint256` without colons.
 * For a bundle it fingerprints the first certificate.
 */
export function fingerprintSha256(certPem: string): string {
  return createHash('sha256').update(new X509Certificate(certPem).raw).digest('hex');
}

/** subjectOf reads a certificate's CN and O values (to issue its renewal for the same subject). */
export function subjectOf(x: X509Certificate): { cn: string; o: string[] } {
  const lines = x.subject.split('\n');
  const cn = lines.find((l) => l.startsWith('CN='))?.slice(3);
  if (!cn) throw new Error(`certificate ${x.subject} has no CN`);
  return { cn, o: lines.filter((l) => l.startsWith('O=')).map((l) => l.slice(2)) };
}

/**
 * firstServiceIP is the first host address of a service CIDR (`10.96.0.0/12` gives `10.96.0.1`), the ClusterIP of
 * the `kubernetes` Service and so a SAN the apiserver certificate needs.
 */
export function firstServiceIP(cidr: string): string {
  const slash = cidr.indexOf('/');
  const address = cidr.slice(0, slash);
  const prefixText = cidr.slice(slash + 1);
  const family = slash < 0 ? 0 : isIP(address);
  const width = family === 4 ? 32 : 128;
  const prefix = Number(prefixText);
  if (family === 0 || !/^\d{1,3}$/.test(prefixText) || prefix >= width) {
    throw new Error(`invalid service CIDR ${cidr}: want address/prefix with room for at least one host`);
  }
  const hostBits = BigInt(width - prefix);
  const first = ((ipToBigInt(address, family) >> hostBits) << hostBits) + 1n;
  return bigIntToIP(first, family);
}

interface Issuer {
  cert: x509.X509Certificate;
  signingKey: webcrypto.CryptoKey;
}

async function loadIssuer(ca: CertKeyPair): Promise<Issuer> {
  const nodeCert = new X509Certificate(ca.certPem);
  if (!nodeCert.ca) throw new Error(`issuer ${nodeCert.subject} is not a CA certificate`);
  const key = createPrivateKey(ca.keyPem);
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new Error(`CA key of ${nodeCert.subject} is not ECDSA P-256`);
  }
  if (!nodeCert.checkPrivateKey(key)) throw new Error(`CA key does not belong to CA certificate ${nodeCert.subject}`);
  const der = key.export({ type: 'pkcs8', format: 'der' });
  return {
    cert: new x509.X509Certificate(ca.certPem),
    signingKey: await crypto.subtle.importKey('pkcs8', der, EC_KEY, false, ['sign']),
  };
}

/** authorityKeyIdentifier copies the CA's subject key identifier, which need not be the SHA-1 of its key. */
async function authorityKeyIdentifier(ca: x509.X509Certificate): Promise<x509.AuthorityKeyIdentifierExtension> {
  const ski = ca.getExtension(x509.SubjectKeyIdentifierExtension);
  return ski
    ? new x509.AuthorityKeyIdentifierExtension(ski.keyId)
    : x509.AuthorityKeyIdentifierExtension.create(ca.publicKey);
}

function generateKeys(): Promise<webcrypto.CryptoKeyPair> {
  return crypto.subtle.generateKey(EC_KEY, true, ['sign', 'verify']);
}

function privateKeyToPem(key: webcrypto.CryptoKey): string {
  return KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }) as string;
}

function certToPem(cert: x509.X509Certificate): string {
  return `${cert.toString('pem').trimEnd()}\n`;
}

/** randomSerial is 128 random bits, the top one cleared (serials are positive) and the next set (no leading zero). */
function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x40;
  return bytes.toString('hex');
}

function validityMs(days: number): number {
  if (!Number.isFinite(days) || days <= 0) throw new Error(`validityDays must be a positive number, got ${days}`);
  return days * DAY_MS;
}

function requireName(commonName: string): void {
  if (commonName.trim() === '') throw new Error('commonName must not be empty');
}

function requireIP(ip: string, what: string): void {
  if (isIP(ip) === 0) throw new Error(`${what}: invalid IP address ${ip}`);
  if (ip.includes(':') && ip.includes('.')) throw new Error(`${what}: IPv6 with embedded IPv4 unsupported: ${ip}`);
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

function ipToBigInt(ip: string, family: number): bigint {
  if (family === 4) return ip.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(octet), 0n);
  requireIP(ip, 'service CIDR');
  const [head = '', tail] = ip.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : new Array<string>(8 - headGroups.length - tailGroups.length).fill('0');
  return [...headGroups, ...zeros, ...tailGroups].reduce((acc, group) => (acc << 16n) | BigInt(`0x${group}`), 0n);
}

function bigIntToIP(value: bigint, family: number): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  // The WHATWG URL serializer compresses IPv6 the canonical RFC 5952 way.
  return new URL(`http://[${groups.join(':')}]`).hostname.slice(1, -1);
}
