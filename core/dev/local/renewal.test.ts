import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseKubeconfig } from '../../kube/kubeconfig.ts';
import { generateControlPlanePKI, writePKI } from '../../pki/pki.ts';
import { dueLeaves, readCertificates, RENEWED_LEAVES, renewLeaf, writeLeafKubeconfig } from './renewal.ts';

const MINUTE_DAYS = 1 / 1440;

describe('renewing the leaves of a local tenant PKI', () => {
  let dir: string;
  const pki = () => join(dir, 'pki');
  const cert = (base: string) => new X509Certificate(readFileSync(join(pki(), `${base}.crt`), 'utf8'));
  const cluster = () => ({
    clusterName: 't',
    server: 'https://127.0.0.1:1',
    caPem: readFileSync(join(pki(), 'ca.crt'), 'utf8'),
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-renewal-'));
    writePKI(
      pki(),
      await generateControlPlanePKI({
        clusterName: 't',
        apiserverDnsNames: ['t.example'],
        apiserverIPs: ['10.1.2.3'],
        serviceIP: '10.96.0.1',
        validityDays: 10 * MINUTE_DAYS,
        caValidityDays: 30,
      }),
    );
    for (const leaf of RENEWED_LEAVES) writeLeafKubeconfig(dir, leaf, cluster());
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is due only past the fraction of a leaf life, and never for the CAs or the kubelet client', () => {
    const issued = cert('admin');
    const from = new Date(issued.validFrom).getTime();
    const life = new Date(issued.validTo).getTime() - from;
    const cases: Array<[string, number, number]> = [
      // [what, fraction, share of the life passed]
      ['fresh', 2 / 3, 0.1],
      ['just before two thirds', 2 / 3, 0.6],
      ['past two thirds', 2 / 3, 0.7],
      ['past a third with fraction 1/3', 1 / 3, 0.4],
    ];
    const due = cases.map(([, f, at]) => dueLeaves(pki(), f, new Date(from + life * at)).length);
    expect(due).toEqual([0, 0, RENEWED_LEAVES.length, RENEWED_LEAVES.length]);
    const manual = readCertificates(pki()).filter((c) => c.manual);
    expect(manual.map((c) => c.name).sort()).toEqual(['cluster CA', 'front-proxy CA', 'kube-apiserver kubelet client']);
    // The kubelet client is pinned by fingerprint: it lives as the CA, not as the short-lived leaves.
    expect(new Date(cert('kubelet-client').validTo).getTime()).toBeGreaterThan(Date.now() + 29 * 86_400_000);
  });

  it.each(RENEWED_LEAVES.map((l) => [l.name, l] as const))('renews %s like the one it replaces', async (_, leaf) => {
    const before = cert(leaf.base);
    const kcBefore = leaf.kubeconfig && readFileSync(join(dir, leaf.kubeconfig.file), 'utf8');
    await renewLeaf(pki(), leaf, 60 * MINUTE_DAYS);
    writeLeafKubeconfig(dir, leaf, cluster());
    const after = cert(leaf.base);
    expect(after.serialNumber).not.toBe(before.serialNumber);
    expect([after.subject, after.issuer, after.subjectAltName, after.keyUsage]).toEqual([
      before.subject,
      before.issuer,
      before.subjectAltName,
      before.keyUsage,
    ]);
    const life = new Date(after.validTo).getTime() - Date.now();
    expect(life).toBeGreaterThan(58 * 60_000);
    expect(life).toBeLessThan(61 * 60_000);
    const ca = new X509Certificate(readFileSync(join(pki(), `${leaf.issuer}.crt`), 'utf8'));
    expect(after.verify(ca.publicKey)).toBe(true);
    // The key on disk is the renewed certificate's.
    expect(after.checkPrivateKey(createPrivateKey(readFileSync(join(pki(), `${leaf.base}.key`), 'utf8')))).toBe(true);
    if (leaf.kubeconfig) {
      const text = readFileSync(join(dir, leaf.kubeconfig.file), 'utf8');
      expect(text).not.toBe(kcBefore);
      const kc = parseKubeconfig(text, leaf.kubeconfig.file);
      expect(kc.context).toBe(`${leaf.kubeconfig.user}@t`);
      expect(new X509Certificate(kc.certPem!).serialNumber).toBe(after.serialNumber);
    }
  });
});
