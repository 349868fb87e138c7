import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RenewalRequest } from '../../pki/renewal.ts';
import { parseKubeconfig } from '../../kube/kubeconfig.ts';
import { fingerprintSha256, generateControlPlanePKI, writePKI } from '../../pki/pki.ts';
import {
  dueLeaves,
  KUBELET_CLIENT,
  kubeletClientFingerprints,
  promoteKubeletClient,
  readCertificates,
  RENEWED_LEAVES,
  renewLeaf,
  stageKubeletClient,
  stagedKubeletClient,
  writeLeafKubeconfig,
} from './renewal.ts';

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
        kubeletClientValidityDays: 10 * MINUTE_DAYS,
      }),
    );
    for (const leaf of RENEWED_LEAVES) writeLeafKubeconfig(dir, leaf, cluster());
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is due only past the fraction of a leaf life, the kubelet client last, and never for the CAs', () => {
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
    expect(due).toEqual([0, 0, RENEWED_LEAVES.length + 1, RENEWED_LEAVES.length + 1]);
    expect(dueLeaves(pki(), 2 / 3, new Date(from + life * 0.7)).at(-1)).toBe(KUBELET_CLIENT);
    const manual = readCertificates(pki()).filter((c) => c.manual);
    expect(manual.map((c) => c.name).sort()).toEqual(['cluster CA', 'front-proxy CA']);
  });

  it('is due from the time of a renewal asked for by hand, for the certificates it names only', () => {
    const from = new Date(cert('admin').validFrom).getTime();
    // asked a minute after the PKI was issued (its notBefore is a minute back): everything in it was issued before
    const before = new Date(from + 2 * 60_000);
    const names = (at: Date, request: RenewalRequest) => dueLeaves(pki(), 2 / 3, at, request).map((l) => l.name);
    expect(names(new Date(before.getTime() - 1), { before })).toEqual([]);
    expect(names(before, { before, names: ['kubelet-client', 'scheduler'] })).toEqual([
      'kube-scheduler client',
      'kube-apiserver kubelet client',
    ]);
    expect(names(before, { before })).toEqual([...RENEWED_LEAVES, KUBELET_CLIENT].map((l) => l.name));
    // asked for at (or before) the issue of the certificates: none is renewed again
    expect(names(before, { before: new Date(from + 60_000) })).toEqual([]);
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

describe('renewing the kubelet client certificate of a local tenant PKI', () => {
  let dir: string;
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-kubeletclient-'));
    writePKI(
      dir,
      await generateControlPlanePKI({
        clusterName: 't',
        apiserverDnsNames: [],
        apiserverIPs: [],
        serviceIP: '10.96.0.1',
        validityDays: 10 * MINUTE_DAYS,
        caValidityDays: 30,
        kubeletClientValidityDays: 10 * MINUTE_DAYS,
      }),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('publishes a staged pair beside the current one, then keeps the replaced one published until it expires', async () => {
    const first = read('kubelet-client.crt');
    const now = new Date();
    expect(kubeletClientFingerprints(dir, now)).toEqual({ current: fingerprintSha256(first), rotating: [] });

    await stageKubeletClient(dir, 20 * MINUTE_DAYS);
    const staged = stagedKubeletClient(dir, new Date());
    // The apiserver's files are untouched; the renewed one is only published.
    expect(read('kubelet-client.crt')).toBe(first);
    expect(kubeletClientFingerprints(dir, now)).toEqual({
      current: fingerprintSha256(first),
      rotating: [staged!.fingerprint],
    });
    const next = new X509Certificate(read('kubelet-client-next.crt'));
    expect([next.subject, next.issuer, next.keyUsage]).toEqual([
      new X509Certificate(first).subject,
      new X509Certificate(first).issuer,
      new X509Certificate(first).keyUsage,
    ]);

    promoteKubeletClient(dir);
    const renewed = new X509Certificate(read('kubelet-client.crt'));
    expect(fingerprintSha256(read('kubelet-client.crt'))).toBe(staged!.fingerprint);
    expect(renewed.checkPrivateKey(createPrivateKey(read('kubelet-client.key')))).toBe(true);
    expect(stagedKubeletClient(dir, new Date())).toBeUndefined();
    // The replaced one stays accepted while in date (connections opened before present it), and goes once expired.
    expect(kubeletClientFingerprints(dir, now)).toEqual({
      current: staged!.fingerprint,
      rotating: [fingerprintSha256(first)],
    });
    const pastFirst = new Date(new Date(new X509Certificate(first).validTo).getTime() + 1000);
    expect(kubeletClientFingerprints(dir, pastFirst)).toEqual({ current: staged!.fingerprint, rotating: [] });
  });
});
