import { X509Certificate, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { x509 } from './x509.ts';
import {
  createCA,
  createCertificateRequest,
  createKeyPair,
  fingerprintSha256,
  firstServiceIP,
  issueCert,
} from './ca.ts';
import type { CertKeyPair } from './ca.ts';

const DAY_MS = 86_400_000;

/** derChildren splits the contents of the DER TLV at offset into its child TLVs, as byte ranges. */
function derChildren(der: Uint8Array, offset: number): Array<{ start: number; end: number }> {
  const header = (at: number): { contentStart: number; end: number } => {
    const first = der[at + 1]!;
    if (first < 0x80) return { contentStart: at + 2, end: at + 2 + first };
    const lengthBytes = first & 0x7f;
    let length = 0;
    for (let i = 0; i < lengthBytes; i++) length = length * 256 + der[at + 2 + i]!;
    return { contentStart: at + 2 + lengthBytes, end: at + 2 + lengthBytes + length };
  };
  const parent = header(offset);
  const children: Array<{ start: number; end: number }> = [];
  for (let at = parent.contentStart; at < parent.end; at = header(at).end) {
    children.push({ start: at, end: header(at).end });
  }
  return children;
}

/** rawNames returns the DER bytes of a certificate's issuer and subject Name exactly as encoded. */
function rawNames(pem: string): { issuer: Buffer; subject: Buffer } {
  const der = new X509Certificate(pem).raw;
  const tbs = derChildren(der, 0)[0]!;
  // TBSCertificate: [0] version, serialNumber, signature, issuer, validity, subject, ...
  const [, , , issuer, , subject] = derChildren(der, tbs.start);
  return { issuer: der.subarray(issuer!.start, issuer!.end), subject: der.subarray(subject!.start, subject!.end) };
}

function sanJson(pem: string): Array<{ type: string; value: string }> {
  const san = new x509.X509Certificate(pem).getExtension(x509.SubjectAlternativeNameExtension);
  return san ? san.names.toJSON().map(({ type, value }) => ({ type, value })) : [];
}

function expectDaysFromNow(date: Date, days: number): void {
  expect(Math.abs(date.getTime() - (Date.now() + days * DAY_MS))).toBeLessThan(DAY_MS);
}

describe('createCA', () => {
  let ca: CertKeyPair;
  beforeAll(async () => {
    ca = await createCA('unit-ca', 3650);
  });

  it('is a self-signed CA limited to signing certificates and CRLs', () => {
    const cert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(true);
    expect(cert.subject).toBe('CN=unit-ca');
    expect(cert.issuer).toBe('CN=unit-ca');
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.checkIssued(cert)).toBe(true);

    const parsed = new x509.X509Certificate(ca.certPem);
    const basic = parsed.getExtension(x509.BasicConstraintsExtension);
    expect(basic?.ca).toBe(true);
    expect(basic?.critical).toBe(true);
    const keyUsage = parsed.getExtension(x509.KeyUsagesExtension);
    expect(keyUsage?.usages).toBe(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
    expect(keyUsage?.critical).toBe(true);
    expect(parsed.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId).toMatch(/^[0-9a-f]{40}$/);
  });

  it('has a PKCS#8 ECDSA P-256 key matching the certificate', () => {
    expect(ca.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n[\s\S]+\n-----END PRIVATE KEY-----\n$/);
    expect(ca.certPem).toMatch(/^-----BEGIN CERTIFICATE-----\n[\s\S]+\n-----END CERTIFICATE-----\n$/);
    const key = createPrivateKey(ca.keyPem);
    expect(key.asymmetricKeyType).toBe('ec');
    expect(key.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(new X509Certificate(ca.certPem).checkPrivateKey(key)).toBe(true);
  });

  it('is valid from one minute ago for validityDays', () => {
    const cert = new X509Certificate(ca.certPem);
    expectDaysFromNow(new Date(cert.validTo), 3650);
    const backdate = Date.now() - new Date(cert.validFrom).getTime();
    expect(backdate).toBeGreaterThan(55_000);
    expect(backdate).toBeLessThan(90_000);
  });

  it('rejects an empty name and a non-positive validity', async () => {
    await expect(createCA(' ', 1)).rejects.toThrow(/commonName/);
    await expect(createCA('x', 0)).rejects.toThrow(/validityDays/);
    await expect(createCA('x', Number.NaN)).rejects.toThrow(/validityDays/);
  });
});

describe('issueCert', () => {
  let ca: CertKeyPair;
  let otherCA: CertKeyPair;
  let leaf: CertKeyPair;
  beforeAll(async () => {
    [ca, otherCA] = await Promise.all([createCA('unit-ca', 30), createCA('other-ca', 30)]);
    leaf = await issueCert(ca, {
      commonName: 'web',
      organizations: ['org-a', 'org-b'],
      dnsNames: ['web.example', 'localhost', 'web.example'],
      ipAddresses: ['127.0.0.1', '10.96.0.1', '::1'],
      usages: ['server'],
      validityDays: 7,
    });
  });

  it('verifies against its CA and no other', () => {
    const cert = new X509Certificate(leaf.certPem);
    const caCert = new X509Certificate(ca.certPem);
    const otherCert = new X509Certificate(otherCA.certPem);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(otherCert.publicKey)).toBe(false);
    expect(cert.checkIssued(otherCert)).toBe(false);
    expect(cert.ca).toBe(false);
  });

  it('encodes the issuer byte for byte as the CA subject', () => {
    expect(rawNames(leaf.certPem).issuer.equals(rawNames(ca.certPem).subject)).toBe(true);
  });

  it('has exactly the requested SANs, deduplicated', () => {
    expect(sanJson(leaf.certPem)).toEqual([
      { type: 'dns', value: 'web.example' },
      { type: 'dns', value: 'localhost' },
      { type: 'ip', value: '127.0.0.1' },
      { type: 'ip', value: '10.96.0.1' },
      { type: 'ip', value: '::1' },
    ]);
  });

  it('has no SAN extension when given no names', async () => {
    const client = await issueCert(ca, { commonName: 'c', usages: ['client'], validityDays: 1 });
    expect(new x509.X509Certificate(client.certPem).getExtension(x509.SubjectAlternativeNameExtension)).toBeNull();
    expect(new X509Certificate(client.certPem).subjectAltName).toBeUndefined();
  });

  it('carries exactly the requested extended key usages', async () => {
    const [client, both] = await Promise.all([
      issueCert(ca, { commonName: 'c', usages: ['client'], validityDays: 1 }),
      issueCert(ca, { commonName: 'b', usages: ['server', 'client', 'server'], validityDays: 1 }),
    ]);
    expect(new X509Certificate(leaf.certPem).keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(new X509Certificate(client.certPem).keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(new X509Certificate(both.certPem).keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
  });

  it('has key usage digitalSignature|keyEncipherment, CA:false and key identifiers chaining to the CA', () => {
    const parsed = new x509.X509Certificate(leaf.certPem);
    const keyUsage = parsed.getExtension(x509.KeyUsagesExtension);
    expect(keyUsage?.usages).toBe(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment);
    expect(keyUsage?.critical).toBe(true);
    expect(parsed.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(false);

    const caKeyId = new x509.X509Certificate(ca.certPem).getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
    const leafKeyId = parsed.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
    expect(caKeyId).toMatch(/^[0-9a-f]{40}$/);
    expect(leafKeyId).toMatch(/^[0-9a-f]{40}$/);
    expect(leafKeyId).not.toBe(caKeyId);
    expect(parsed.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId).toBe(caKeyId);
  });

  it('puts CN and every O in the subject', () => {
    expect(new X509Certificate(leaf.certPem).subject).toBe('O=org-a + O=org-b\nCN=web');
    const subject = new x509.X509Certificate(leaf.certPem).subjectName;
    expect(subject.getField('CN')).toEqual(['web']);
    expect(subject.getField('O')).toEqual(['org-a', 'org-b']);
  });

  it('uses a fresh positive 128-bit serial and a fresh key each time', async () => {
    const again = await issueCert(ca, { commonName: 'web', usages: ['server'], validityDays: 7 });
    const serials = [leaf, again].map((c) => new X509Certificate(c.certPem).serialNumber);
    for (const serial of serials) {
      expect(serial).toMatch(/^[0-7][0-9A-F]{31}$/);
    }
    expect(serials[0]).not.toBe(serials[1]);
    expect(again.keyPem).not.toBe(leaf.keyPem);
    expect(new X509Certificate(again.certPem).checkPrivateKey(createPrivateKey(again.keyPem))).toBe(true);
  });

  it('is valid from one minute ago for validityDays', () => {
    const cert = new X509Certificate(leaf.certPem);
    expectDaysFromNow(new Date(cert.validTo), 7);
    const backdate = Date.now() - new Date(cert.validFrom).getTime();
    expect(backdate).toBeGreaterThan(55_000);
    expect(backdate).toBeLessThan(90_000);
  });

  it('never outlives its CA', async () => {
    const shortCA = await createCA('short', 2);
    const long = await issueCert(shortCA, { commonName: 'l', usages: ['client'], validityDays: 365 });
    expect(new X509Certificate(long.certPem).validTo).toBe(new X509Certificate(shortCA.certPem).validTo);
  });

  it('refuses a non-CA issuer, a mismatched CA key and bad options', async () => {
    const opts = { commonName: 'x', usages: ['client'], validityDays: 1 } as const;
    await expect(issueCert(leaf, opts)).rejects.toThrow(/not a CA/);
    await expect(issueCert({ certPem: ca.certPem, keyPem: otherCA.keyPem }, opts)).rejects.toThrow(/does not belong/);
    await expect(issueCert(ca, { ...opts, usages: [] })).rejects.toThrow(/at least one usage/);
    await expect(issueCert(ca, { ...opts, ipAddresses: ['10.0.0.300'] })).rejects.toThrow(/invalid IP/);
    await expect(issueCert(ca, { ...opts, ipAddresses: ['::ffff:10.0.0.1'] })).rejects.toThrow(/embedded IPv4/);
    await expect(issueCert(ca, { ...opts, dnsNames: [''] })).rejects.toThrow(/empty DNS name/);
    await expect(issueCert(ca, { ...opts, validityDays: -1 })).rejects.toThrow(/validityDays/);
  });
});

describe('createCertificateRequest', () => {
  it('makes a self-signed PKCS#10 request for O and CN whose public key matches the returned private key', async () => {
    const r = await createCertificateRequest('vc-vn-agent', ['g1']);
    const csr = new x509.Pkcs10CertificateRequest(r.csrPem);
    expect(csr.subject).toBe('O=g1, CN=vc-vn-agent');
    expect(await csr.verify()).toBe(true);
    const fromKey = createPublicKey(createPrivateKey(r.keyPem)).export({ type: 'spki', format: 'der' });
    expect(Buffer.from(csr.publicKey.rawData).equals(fromKey)).toBe(true);
    expect((await createCertificateRequest('x')).csrPem).not.toBe(r.csrPem);
    await expect(createCertificateRequest('')).rejects.toThrow();
  });
});

describe('createKeyPair', () => {
  it('makes a P-256 pair whose public key verifies what the private key signs', async () => {
    const [pair, other] = await Promise.all([createKeyPair(), createKeyPair()]);
    expect(pair.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(pair.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n$/);
    const privateKey = createPrivateKey(pair.privateKeyPem);
    expect(privateKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    const data = Buffer.from('token payload');
    const signature = sign('sha256', data, privateKey);
    expect(verify('sha256', data, createPublicKey(pair.publicKeyPem), signature)).toBe(true);
    expect(verify('sha256', data, createPublicKey(other.publicKeyPem), signature)).toBe(false);
  });
});

describe('fingerprintSha256', () => {
  it("equals node's fingerprint256 without colons, in lower case", async () => {
    const [a, b] = await Promise.all([createCA('a', 1), createCA('b', 1)]);
    for (const { certPem } of [a, b]) {
      const node = new X509Certificate(certPem).fingerprint256.replaceAll(':', '').toLowerCase();
      expect(fingerprintSha256(certPem)).toBe(node);
      expect(fingerprintSha256(certPem)).toMatch(/^[0-9a-f]{64}$/);
    }
    expect(fingerprintSha256(a.certPem)).not.toBe(fingerprintSha256(b.certPem));
  });
});

describe('firstServiceIP', () => {
  it.each([
    ['10.96.0.0/12', '10.96.0.1'],
    ['10.96.5.7/12', '10.96.0.1'],
    ['172.20.0.0/16', '172.20.0.1'],
    ['192.168.0.254/31', '192.168.0.255'],
    ['fd00:10:96::/112', 'fd00:10:96::1'],
    ['FD00:0:0:0:0:0:0:ab00/120', 'fd00::ab01'],
  ])('%s -> %s', (cidr, ip) => {
    expect(firstServiceIP(cidr)).toBe(ip);
  });

  it.each(['10.96.0.0', '10.96.0.0/32', '10.96.0.0/33', '10.96.0.0/x', 'nonsense/12', 'fd00::/128'])(
    'rejects %s',
    (cidr) => {
      expect(() => firstServiceIP(cidr)).toThrow(/invalid service CIDR/);
    },
  );
});
