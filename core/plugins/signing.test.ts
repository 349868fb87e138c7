import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSigningKey, keyId, signatureProblem, signPackage } from './signing.ts';

const example = join(import.meta.dirname, 'sandbox/testdata/misbehaving');

describe('signed plugin packages', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'vc-signing-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  const platform = generateSigningKey();
  const stranger = generateSigningKey();
  const trusted = [{ pem: platform.publicKeyPem, source: 'platform.pub' }];
  const copy = (name: string) => {
    const dir = join(tmp, name);
    cpSync(example, dir, { recursive: true });
    return dir;
  };

  const cases: Array<{ name: string; prepare: (dir: string) => void; problem: RegExp | undefined }> = [
    { name: 'signed by a trusted key', prepare: (d) => signPackage(d, platform.privateKeyPem), problem: undefined },
    { name: 'not signed', prepare: () => undefined, problem: /is not signed \(no vc-plugin\.sig/ },
    {
      name: 'signed by a key the platform does not list',
      prepare: (d) => signPackage(d, stranger.privateKeyPem),
      problem: new RegExp(
        `signed by key ${keyId(stranger.publicKeyPem)}, which is not a trusted key \\(trusted: ${keyId(platform.publicKeyPem)} \\(platform.pub\\)\\)`,
      ),
    },
    {
      name: 'tampered after signing',
      prepare: (d) => {
        signPackage(d, platform.privateKeyPem);
        writeFileSync(join(d, 'index.js'), 'export default {};\n');
      },
      problem: /changed after it was signed/,
    },
    {
      name: 'a file added after signing',
      prepare: (d) => {
        signPackage(d, platform.privateKeyPem);
        writeFileSync(join(d, 'extra.js'), '');
      },
      problem: /changed after it was signed/,
    },
    {
      name: 'a signature copied onto other contents with its digest',
      prepare: (d) => {
        const sig = signPackage(d, platform.privateKeyPem);
        writeFileSync(join(d, 'index.js'), 'export default {};\n');
        const forged = signPackage(d, stranger.privateKeyPem);
        writeFileSync(join(d, 'vc-plugin.sig'), JSON.stringify({ ...forged, keyId: sig.keyId }));
      },
      problem: /does not verify against key/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const dir = copy(c.name.replaceAll(' ', '-'));
      c.prepare(dir);
      const problem = signatureProblem(dir, trusted);
      if (c.problem) expect(problem).toMatch(c.problem);
      else expect(problem).toBeUndefined();
    });
  }
});
