import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCA, type CertKeyPair } from '../../pki/pki.ts';
import { checkNodeCertificateSettings, NodeCertificates } from './nodecerts.ts';
import { KUBELET_SERVING_FILE } from './nodeconfig.ts';

describe('checkNodeCertificateSettings', () => {
  it.each<[string, { validityDays?: number; renewFraction?: number }, RegExp | undefined]>([
    ['the defaults', {}, undefined],
    [
      'eight minutes renewed at a quarter (of nine from a minute before issue: 6.75 minutes left)',
      { validityDays: 8 / 1440, renewFraction: 0.25 },
      undefined,
    ],
    [
      'six and a half minutes renewed a minute after issue (two minutes into a window from a minute before it)',
      { validityDays: 6.5 / 1440, renewFraction: 2 / 7.5 },
      undefined,
    ],
    [
      'six minutes renewed a minute after issue: five minutes left, not above them',
      { validityDays: 6 / 1440, renewFraction: 2 / 7 },
      /renewed with 300 s of life left/,
    ],
    [
      'four minutes renewed at half of the window from a minute before issue',
      { validityDays: 4 / 1440, renewFraction: 0.5 },
      /renewed with 150 s of life left .*make validityDays longer or renewFraction smaller/,
    ],
    ['a fraction of 1', { renewFraction: 1 }, /renewFraction must be between 0 and 1, got 1/],
    ['no lifetime', { validityDays: 0 }, /validityDays must be above 0, got 0/],
  ])('%s', (_, s, want) => {
    if (want) expect(() => checkNodeCertificateSettings(s, 'realNodeCertificates')).toThrow(want);
    else expect(() => checkNodeCertificateSettings(s, 'realNodeCertificates')).not.toThrow();
  });
});

describe('NodeCertificates', () => {
  let dir: string;
  let ca: CertKeyPair;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-nodecerts-'));
    mkdirSync(join(dir, 'pki'));
    ca = await createCA('super', 1);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes each component its certificate and key in one file, and renews the due ones with the same subject', async () => {
    const reported: string[] = [];
    // a minute back and 62 s ahead: a quarter of the life has passed a second in
    const certs = new NodeCertificates({
      node: 'n1',
      dir,
      ca,
      settings: { validityDays: 62 / 86_400, renewFraction: 0.5 },
      clients: ['kubelet', 'kube-proxy'],
      serving: { ipAddresses: ['10.0.0.1', '127.0.0.1'] },
      report: (c) => {
        reported.push(`${c.status}/${c.reason}`);
        return Promise.resolve();
      },
    });
    await certs.issue();
    const read = (c: 'kubelet' | 'kube-proxy') => readFileSync(certs.path(c), 'utf8');
    expect(read('kubelet')).toMatch(/BEGIN CERTIFICATE[\s\S]+BEGIN PRIVATE KEY/);
    const first = new X509Certificate(read('kubelet'));
    expect(first.subject).toBe('O=system:nodes\nCN=system:node:n1');
    expect(new X509Certificate(read('kube-proxy')).subject).toBe('CN=system:kube-proxy');
    expect(certs.read().map((c) => c.name)).toEqual(['kubelet', 'kube-proxy', 'kubelet-serving']);
    // The kubelet's serving certificate: one file the kubelet configuration names as certificate and key.
    const serving = () => readFileSync(join(dir, KUBELET_SERVING_FILE), 'utf8');
    expect(serving()).toMatch(/BEGIN CERTIFICATE[\s\S]+BEGIN PRIVATE KEY/);
    const firstServing = new X509Certificate(serving());
    expect([firstServing.subject, firstServing.subjectAltName]).toEqual([
      'CN=n1',
      'DNS:n1, IP Address:10.0.0.1, IP Address:127.0.0.1',
    ]);
    certs.start();
    try {
      const deadline = Date.now() + 10_000;
      // the serving certificate is renewed in the same pass, after the clients
      const renewed = () =>
        new X509Certificate(read('kubelet')).serialNumber !== first.serialNumber &&
        new X509Certificate(serving()).serialNumber !== firstServing.serialNumber;
      while (!renewed() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const next = new X509Certificate(read('kubelet'));
      expect(next.serialNumber).not.toBe(first.serialNumber);
      expect(next.subject).toBe(first.subject);
      expect(next.checkIssued(new X509Certificate(ca.certPem))).toBe(true);
      const nextServing = new X509Certificate(serving());
      expect(nextServing.serialNumber).not.toBe(firstServing.serialNumber);
      expect([nextServing.subject, nextServing.subjectAltName, nextServing.keyUsage]).toEqual([
        firstServing.subject,
        firstServing.subjectAltName,
        firstServing.keyUsage,
      ]);
      expect(reported[0]).toBe('True/CertificatesCurrent');
      expect(certs.condition(new Date(Date.parse(next.validTo) + 1000))).toMatchObject({
        status: 'False',
        reason: 'CertificateExpired',
        message: expect.stringMatching(/^expired: kubelet \(/),
      });
    } finally {
      await certs.stop();
    }
  });
});
