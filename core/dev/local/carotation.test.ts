import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateControlPlanePKI, writePKI } from '../../pki/pki.ts';
import { lastStep, rotateCa, rotationRefusal, type CaRotationStep } from './carotation.ts';
import { pemBlocks } from './renewal.ts';

describe('rotationRefusal', () => {
  const cases: Array<[CaRotationStep | undefined, CaRotationStep, boolean]> = [
    [undefined, 'add', true],
    [undefined, 'reissue', false],
    [undefined, 'drop', false],
    ['add', 'add', true],
    ['add', 'reissue', true],
    ['add', 'drop', false],
    ['reissue', 'add', false],
    ['reissue', 'drop', true],
    ['drop', 'add', true],
    ['drop', 'drop', true],
    ['drop', 'reissue', false],
  ];
  it.each(cases)('after %s, step %s allowed: %s', (last, step, allowed) => {
    const why = rotationRefusal(last, step);
    expect(why === undefined).toBe(allowed);
    if (why) expect(why).toMatch(/vc rotate-ca|--step/);
  });
});

describe('rotating the CA of a PKI directory', () => {
  let dir: string;
  const cert = (base: string) => new X509Certificate(readFileSync(join(dir, `${base}.crt`), 'utf8'));
  const bundle = () => pemBlocks(readFileSync(join(dir, 'ca.crt'), 'utf8')).map((p) => new X509Certificate(p));
  const signedBy = (leaf: X509Certificate, ca: X509Certificate) => leaf.verify(ca.publicKey);
  const validity = { leafDays: 1, caDays: 10 };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-carotation-'));
    writePKI(
      dir,
      await generateControlPlanePKI({
        clusterName: 'k',
        apiserverDnsNames: [],
        apiserverIPs: [],
        serviceIP: '10.96.0.1',
        validityDays: 10,
      }),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('adds a CA beside the old, makes it sign with clients reissued, then drops the old', async () => {
    const old = bundle()[0]!;
    const before = { admin: cert('admin'), serving: cert('apiserver'), kubelet: cert('kubelet-client') };
    expect(await rotateCa(dir, 'drop', validity)).toMatchObject({ done: false });

    expect(await rotateCa(dir, 'add', validity)).toMatchObject({ done: true, changed: true });
    const [first, added] = bundle();
    expect(first!.serialNumber).toBe(old.serialNumber);
    expect(added!.subject).toBe(old.subject);
    expect(cert('admin').serialNumber).toBe(before.admin.serialNumber);
    // Asking again changes nothing.
    expect(await rotateCa(dir, 'add', validity)).toMatchObject({ done: true, changed: false });

    expect(await rotateCa(dir, 'reissue', validity)).toMatchObject({
      done: true,
      restart: ['apiserver', 'controllerManager'],
    });
    expect(bundle().map((c) => c.serialNumber)).toEqual([added!.serialNumber, old.serialNumber]);
    for (const base of ['admin', 'controller-manager', 'scheduler', 'kubelet-client'])
      expect(signedBy(cert(base), added!), base).toBe(true);
    // The serving certificate stays on the old CA: kubeconfigs trusting only it still reach the apiserver.
    expect(cert('apiserver').serialNumber).toBe(before.serving.serialNumber);
    expect(cert('kubelet-client').fingerprint256).not.toBe(before.kubelet.fingerprint256);
    // Every client, the kubelet client included (it is renewed as they are), lives as a leaf.
    for (const base of ['admin', 'kubelet-client'])
      expect(new Date(cert(base).validTo).getTime(), base).toBeLessThan(Date.now() + 2 * 86_400_000);

    expect(await rotateCa(dir, 'drop', validity)).toMatchObject({ done: true, changed: true });
    expect(bundle().map((c) => c.serialNumber)).toEqual([added!.serialNumber]);
    expect(signedBy(cert('apiserver'), added!)).toBe(true);
    expect(cert('apiserver').subjectAltName).toBe(before.serving.subjectAltName);
    expect(lastStep(dir)).toBe('drop');
  });
});
