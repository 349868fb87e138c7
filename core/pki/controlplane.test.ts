import { X509Certificate, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { chmod, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCA, fingerprintSha256, issueCert } from './ca.ts';
import type { CertKeyPair } from './ca.ts';
import { PKI_FILES, generateControlPlanePKI, readPKI, writePKI } from './controlplane.ts';
import type { ControlPlanePKI } from './controlplane.ts';
import { x509 } from './x509.ts';

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

function issuedBy(leaf: CertKeyPair, ca: CertKeyPair): boolean {
  const caCert = new X509Certificate(ca.certPem);
  const cert = new X509Certificate(leaf.certPem);
  return cert.checkIssued(caCert) && cert.verify(caCert.publicKey);
}

function sans(certPem: string): string[] {
  const san = new x509.X509Certificate(certPem).getExtension(x509.SubjectAlternativeNameExtension);
  return (san?.names.toJSON() ?? []).map(({ type, value }) => `${type}:${value}`).sort();
}

interface Handshake {
  /** What the client read: `hello` once the server accepted it, else the error it saw. */
  client: string | Error;
  /** The client certificate the server accepted, or why it refused the client. */
  server: tls.PeerCertificate | Error | undefined;
}

/**
 * handshake runs one TLS connection to a server on 127.0.0.1 that, like kube-apiserver, demands a client certificate
 * signed by serverOpts.ca. The server answers `hello` to a client it accepts and hangs up on any other, recording
 * OpenSSL's verdict (`authorizationError`) as the error code.
 */
async function handshake(serverOpts: tls.TlsOptions, clientOpts: tls.ConnectionOptions): Promise<Handshake> {
  let serverSide: tls.PeerCertificate | Error | undefined;
  const server = tls.createServer({ ...serverOpts, requestCert: true, rejectUnauthorized: false }, (socket) => {
    if (!socket.authorized) {
      serverSide = Object.assign(new Error('client refused'), { code: String(socket.authorizationError) });
      socket.destroy();
      return;
    }
    serverSide = socket.getPeerCertificate();
    socket.end('hello');
  });
  server.on('tlsClientError', (err) => {
    serverSide = err;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const client = await new Promise<string | Error>((resolve) => {
      const socket = tls.connect({ host: '127.0.0.1', port, ...clientOpts });
      let data = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (data += chunk));
      socket.on('error', (err) => resolve(err));
      socket.on('close', () => resolve(data === '' ? new Error('closed without data') : data));
    });
    // The server's verdict may trail the client's close by a tick.
    for (let i = 0; i < 50 && serverSide === undefined; i++) await new Promise((r) => setTimeout(r, 10));
    return { client, server: serverSide };
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

function refusal(result: Handshake): string | undefined {
  expect(result.client).toBeInstanceOf(Error);
  expect(result.server).toBeInstanceOf(Error);
  return (result.server as NodeJS.ErrnoException).code;
}

describe('generateControlPlanePKI', () => {
  let pki: ControlPlanePKI;
  let generateMs: number;
  let foreignCA: CertKeyPair;
  let foreignAdmin: CertKeyPair;

  beforeAll(async () => {
    const started = performance.now();
    pki = await generateControlPlanePKI({
      clusterName: 'tenant-a',
      apiserverDnsNames: ['tenant-a-apiserver.tenant-a.svc', 'api.tenant-a.example'],
      apiserverIPs: ['10.0.0.5', 'fd00::5'],
      serviceIP: '10.96.0.1',
      validityDays: 365,
      caValidityDays: 3650,
    });
    generateMs = performance.now() - started;
    foreignCA = await createCA('tenant-b-ca', 10);
    foreignAdmin = await issueCert(foreignCA, {
      commonName: 'admin',
      organizations: ['system:masters'],
      usages: ['client'],
      validityDays: 1,
    });
  });

  it('finishes in well under the time a control plane takes to start', () => {
    expect(generateMs).toBeLessThan(10_000);
  });

  it('makes two distinct CAs with the requested lifetime', () => {
    for (const [ca, cn] of [
      [pki.ca, 'CN=tenant-a-ca'],
      [pki.frontProxyCA, 'CN=tenant-a-front-proxy-ca'],
    ] as const) {
      const cert = new X509Certificate(ca.certPem);
      expect(cert.ca).toBe(true);
      expect(cert.subject).toBe(cn);
      expect(cert.checkIssued(cert)).toBe(true);
      expect(Math.abs(new Date(cert.validTo).getTime() - Date.now() - 3650 * 86_400_000)).toBeLessThan(86_400_000);
    }
    expect(issuedBy(pki.frontProxyCA, pki.ca)).toBe(false);
  });

  it('gives the apiserver exactly the in-cluster, loopback, service and extra SANs, for serving only', () => {
    expect(issuedBy(pki.apiserver, pki.ca)).toBe(true);
    const cert = new X509Certificate(pki.apiserver.certPem);
    expect(cert.subject).toBe('CN=kube-apiserver');
    expect(cert.keyUsage).toEqual([SERVER_AUTH]);
    expect(Math.abs(new Date(cert.validTo).getTime() - Date.now() - 365 * 86_400_000)).toBeLessThan(86_400_000);
    expect(sans(pki.apiserver.certPem)).toEqual(
      [
        'dns:kubernetes',
        'dns:kubernetes.default',
        'dns:kubernetes.default.svc',
        'dns:kubernetes.default.svc.cluster.local',
        'dns:localhost',
        'dns:tenant-a-apiserver.tenant-a.svc',
        'dns:api.tenant-a.example',
        'ip:127.0.0.1',
        'ip:10.96.0.1',
        'ip:10.0.0.5',
        'ip:fd00::5',
      ].sort(),
    );
  });

  it('honours a custom cluster domain', async () => {
    const custom = await generateControlPlanePKI({
      clusterName: 'c',
      apiserverDnsNames: [],
      apiserverIPs: [],
      serviceIP: '10.0.0.1',
      validityDays: 1,
      clusterDomain: 'tenant.internal',
    });
    expect(sans(custom.apiserver.certPem)).toContain('dns:kubernetes.default.svc.tenant.internal');
    expect(sans(custom.apiserver.certPem)).not.toContain('dns:kubernetes.default.svc.cluster.local');
  });

  it.each([
    ['admin', 'O=system:masters\nCN=admin'],
    ['controllerManager', 'CN=system:kube-controller-manager'],
    ['scheduler', 'CN=system:kube-scheduler'],
    ['kubeletClient', 'O=system:masters\nCN=kube-apiserver-kubelet-client'],
  ] as const)('issues %s as a client of the cluster CA with subject %j', (field, subject) => {
    const cert = new X509Certificate(pki[field].certPem);
    expect(cert.subject).toBe(subject);
    expect(cert.keyUsage).toEqual([CLIENT_AUTH]);
    expect(cert.subjectAltName).toBeUndefined();
    expect(issuedBy(pki[field], pki.ca)).toBe(true);
    expect(cert.checkPrivateKey(createPrivateKey(pki[field].keyPem))).toBe(true);
  });

  it('signs the front-proxy client with the front-proxy CA, not the cluster CA', () => {
    const cert = new X509Certificate(pki.frontProxyClient.certPem);
    expect(cert.subject).toBe('CN=front-proxy-client');
    expect(cert.keyUsage).toEqual([CLIENT_AUTH]);
    expect(issuedBy(pki.frontProxyClient, pki.frontProxyCA)).toBe(true);
    expect(issuedBy(pki.frontProxyClient, pki.ca)).toBe(false);
  });

  it('makes a service-account key pair of its own', () => {
    const data = Buffer.from('header.payload');
    const signature = sign('sha256', data, createPrivateKey(pki.serviceAccount.privateKeyPem));
    expect(verify('sha256', data, createPublicKey(pki.serviceAccount.publicKeyPem), signature)).toBe(true);
    expect(pki.serviceAccount.privateKeyPem).not.toBe(pki.ca.keyPem);
  });

  it('returns the fingerprint of the kubelet client certificate', () => {
    const node = new X509Certificate(pki.kubeletClient.certPem).fingerprint256.replaceAll(':', '').toLowerCase();
    expect(pki.kubeletClientFingerprint).toBe(node);
  });

  it('uses a distinct key for every certificate', () => {
    const keys = [pki.ca, pki.apiserver, pki.frontProxyCA, pki.frontProxyClient, pki.admin]
      .concat([pki.controllerManager, pki.scheduler, pki.kubeletClient])
      .map((pair) => pair.keyPem);
    expect(new Set([...keys, pki.serviceAccount.privateKeyPem]).size).toBe(9);
  });

  it('is plain data that survives JSON', () => {
    expect(JSON.parse(JSON.stringify(pki))).toEqual(pki);
  });

  it('rejects an empty cluster name and a service IP that is not an IP', async () => {
    const base = { apiserverDnsNames: [], apiserverIPs: [], validityDays: 1 };
    await expect(generateControlPlanePKI({ ...base, clusterName: '', serviceIP: '10.96.0.1' })).rejects.toThrow(
      /clusterName/,
    );
    await expect(generateControlPlanePKI({ ...base, clusterName: 'c', serviceIP: '10.96.0.0/12' })).rejects.toThrow(
      /serviceIP/,
    );
  });

  describe('TLS between the apiserver certificate and client certificates', () => {
    const serve = (): tls.TlsOptions => ({
      cert: pki.apiserver.certPem,
      key: pki.apiserver.keyPem,
      ca: pki.ca.certPem,
    });

    it('accepts the admin certificate on 127.0.0.1 and shows the server its CN and O', async () => {
      const result = await handshake(serve(), {
        ca: pki.ca.certPem,
        cert: pki.admin.certPem,
        key: pki.admin.keyPem,
      });
      expect(result.client).toBe('hello');
      expect(result.server).not.toBeInstanceOf(Error);
      const peer = result.server as tls.PeerCertificate;
      expect(peer.subject.CN).toBe('admin');
      expect(peer.subject.O).toBe('system:masters');
    });

    it('accepts the kubelet client certificate', async () => {
      const result = await handshake(serve(), {
        ca: pki.ca.certPem,
        cert: pki.kubeletClient.certPem,
        key: pki.kubeletClient.keyPem,
      });
      expect(result.client).toBe('hello');
      expect((result.server as tls.PeerCertificate).subject.CN).toBe('kube-apiserver-kubelet-client');
    });

    it('serves the in-cluster DNS name', async () => {
      const result = await handshake(serve(), {
        ca: pki.ca.certPem,
        servername: 'kubernetes.default.svc',
        cert: pki.admin.certPem,
        key: pki.admin.keyPem,
      });
      expect(result.client).toBe('hello');
    });

    it('rejects a client certificate from a different CA', async () => {
      const result = await handshake(serve(), {
        ca: pki.ca.certPem,
        cert: foreignAdmin.certPem,
        key: foreignAdmin.keyPem,
      });
      expect(refusal(result)).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    });

    it('rejects the front-proxy client certificate, which only the front-proxy CA vouches for', async () => {
      const result = await handshake(serve(), {
        ca: pki.ca.certPem,
        cert: pki.frontProxyClient.certPem,
        key: pki.frontProxyClient.keyPem,
      });
      expect(refusal(result)).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    });

    it('rejects the serving-only apiserver certificate used as a client certificate', async () => {
      const result = await handshake(serve(), {
        ca: pki.ca.certPem,
        cert: pki.apiserver.certPem,
        key: pki.apiserver.keyPem,
      });
      expect(refusal(result)).toBe('INVALID_PURPOSE');
    });

    it('is rejected by a client that trusts another CA', async () => {
      const result = await handshake(serve(), {
        ca: foreignCA.certPem,
        cert: pki.admin.certPem,
        key: pki.admin.keyPem,
      });
      // The server sends the cluster CA along, which the client finds self-signed and untrusted.
      expect((result.client as NodeJS.ErrnoException).code).toMatch(
        /^(SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE)$/,
      );
    });

    it('is rejected for a host name outside its SANs', async () => {
      const result = await handshake(serve(), {
        ca: pki.ca.certPem,
        servername: 'other.example',
        cert: pki.admin.certPem,
        key: pki.admin.keyPem,
      });
      expect((result.client as NodeJS.ErrnoException).code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    });
  });

  describe('writePKI and readPKI', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'pki-'));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('writes the kubeadm file names, keys 0600, and reads back the same PKI', async () => {
      const target = join(dir, 'nested', 'pki');
      writePKI(target, pki);
      expect((await readdir(target)).sort()).toEqual(
        [
          'ca.crt',
          'ca.key',
          'apiserver.crt',
          'apiserver.key',
          'front-proxy-ca.crt',
          'front-proxy-ca.key',
          'front-proxy-client.crt',
          'front-proxy-client.key',
          'admin.crt',
          'admin.key',
          'controller-manager.crt',
          'controller-manager.key',
          'scheduler.crt',
          'scheduler.key',
          'kubelet-client.crt',
          'kubelet-client.key',
          'sa.key',
          'sa.pub',
        ].sort(),
      );
      for (const name of await readdir(target)) {
        const mode = (await stat(join(target, name))).mode & 0o777;
        expect([name, mode]).toEqual([name, name.endsWith('.key') ? 0o600 : 0o644]);
      }
      expect(readPKI(target)).toEqual(pki);
    });

    it('tightens the mode of a key file that already exists', async () => {
      const target = join(dir, 'existing');
      writePKI(target, pki);
      await writeFile(join(target, PKI_FILES.ca.key), 'stale');
      await chmod(join(target, PKI_FILES.ca.key), 0o644);
      writePKI(target, pki);
      expect((await stat(join(target, PKI_FILES.ca.key))).mode & 0o777).toBe(0o600);
      const back = readPKI(target);
      expect(back.ca.keyPem).toBe(pki.ca.keyPem);
      expect(back.kubeletClientFingerprint).toBe(fingerprintSha256(pki.kubeletClient.certPem));
    });

    it('fails to read an incomplete directory', async () => {
      const target = join(dir, 'incomplete');
      writePKI(target, pki);
      await rm(join(target, PKI_FILES.serviceAccount.publicKey));
      expect(() => readPKI(target)).toThrow(/sa\.pub/);
    });
  });
});
