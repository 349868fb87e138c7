import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCA, issueCert, type CertKeyPair } from '../pki/pki.ts';
import { readClientPair, watchClientPair } from './clientfiles.ts';

describe('the vn-agent client certificate files', () => {
  let dir: string;
  let first: CertKeyPair;
  let second: CertKeyPair;
  const certFile = () => join(dir, 'tls.crt');
  const keyFile = () => join(dir, 'tls.key');
  const put = (cert: string, key: string) => {
    writeFileSync(certFile(), cert);
    writeFileSync(keyFile(), key);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-clientfiles-'));
    const ca = await createCA('kubelet-client-ca', 1);
    const issue = () => issueCert(ca, { commonName: 'vc-vn-agent', usages: ['client'], validityDays: 1 });
    [first, second] = await Promise.all([issue(), issue()]);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a matching pair and names the file of a broken one', () => {
    put(first.certPem, first.keyPem);
    expect(readClientPair(certFile(), keyFile())).toEqual(first);
    put(first.certPem, second.keyPem);
    expect(() => readClientPair(certFile(), keyFile())).toThrow(
      `${keyFile()}: the key is not the one of the certificate`,
    );
    put('garbage', first.keyPem);
    expect(() => readClientPair(certFile(), keyFile())).toThrow(`${certFile()}: not a PEM certificate`);
    put(first.certPem, 'garbage');
    expect(() => readClientPair(certFile(), keyFile())).toThrow(`${keyFile()}: not a PEM private key`);
  });

  it('hands a replaced pair over once, and skips a half-written one until it is whole', async () => {
    put(first.certPem, first.keyPem);
    const applied: string[] = [];
    const errors: string[] = [];
    const stop = watchClientPair({
      certFile: certFile(),
      keyFile: keyFile(),
      current: first.certPem,
      apply: (p) => applied.push(new X509Certificate(p.certPem).serialNumber),
      onError: (e) => errors.push(e.message),
      intervalMs: 50,
    });
    try {
      const tick = () => new Promise((r) => setTimeout(r, 200));
      await tick();
      expect(applied).toEqual([]);
      // the certificate landed, the key not yet
      writeFileSync(certFile(), second.certPem);
      await tick();
      expect(applied).toEqual([]);
      expect(errors.at(-1)).toMatch(/the key is not the one of the certificate/);
      writeFileSync(keyFile(), second.keyPem);
      await tick();
      expect(applied).toEqual([new X509Certificate(second.certPem).serialNumber]);
      await tick();
      expect(applied).toHaveLength(1);
    } finally {
      stop();
    }
  });
});
