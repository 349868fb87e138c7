import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const main = join(import.meta.dirname, 'main.ts');
/** tsx, found from this repository: the CLI runs in a folder of its own */
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const fixture = join(import.meta.dirname, '../../plugins/sandbox/testdata/misbehaving');

/** vc runs the CLI as a user does, in the folder `cwd`. */
function vc(cwd: string, args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, ['--import', tsx, main, ...args], { cwd, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('vc plugins keygen, sign and verify', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vc-pluginsign-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const pkg = 'node_modules/@acme/vc-plugin-labels';
  mkdirSync(join(dir, 'keys'));
  cpSync(fixture, join(dir, pkg), { recursive: true });

  it('signs a package that then verifies against its key only, until a file changes', () => {
    expect(vc(dir, ['plugins', 'keygen', 'keys/platform']).out).toMatch(/^key [0-9a-f]{16}: keys\/platform\.key/);
    expect(vc(dir, ['plugins', 'keygen', 'keys/other']).code).toBe(0);
    expect(vc(dir, ['plugins', 'sign', '--key', 'keys/platform.key', pkg]).out).toMatch(
      /^signed .* with key [0-9a-f]{16}: sha256:/,
    );
    expect(vc(dir, ['plugins', 'verify', '--key', 'keys/platform.pub', pkg])).toMatchObject({
      code: 0,
      out: expect.stringMatching(/^verified /),
    });
    expect(vc(dir, ['plugins', 'verify', '--key', 'keys/other.pub', pkg])).toMatchObject({
      code: 1,
      err: expect.stringMatching(/which is not a trusted key/),
    });
    appendFileSync(join(dir, pkg, 'index.js'), '// changed\n');
    expect(vc(dir, ['plugins', 'verify', '--key', 'keys/other.pub', '--key', 'keys/platform.pub', pkg])).toMatchObject({
      code: 1,
      err: expect.stringMatching(/changed after it was signed/),
    });
  }, 60_000);
});
