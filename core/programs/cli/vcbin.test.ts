import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { subset } from 'semver';
import { describe, expect, it } from 'vitest';

const execP = promisify(execFile);
const root = join(import.meta.dirname, '../../..');
const vcBin = join(root, 'core/programs/cli/vc.mjs');
const minNode = /const MIN_NODE = '(\d+\.\d+\.\d+)';/.exec(readFileSync(vcBin, 'utf8'))?.[1];

interface LockPackage {
  dev?: boolean;
  engines?: { node?: string };
}

/** runVc runs vc.mjs on this Node, which reports itself as `version` (a preload rewrites process.versions). */
async function runVc(version: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const preload =
    'data:text/javascript,' +
    encodeURIComponent(
      `Object.defineProperty(process, 'versions', { value: { ...process.versions, node: '${version}' } });`,
    );
  try {
    const r = await execP(process.execPath, ['--import', preload, vcBin, ...args], { timeout: 120_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

describe('the vc program (vc.mjs, also kubectl-vc)', () => {
  it('asks for a Node.js every production dependency accepts', () => {
    expect(minNode).toBeDefined();
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, LockPackage>;
    };
    const refused = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && !p.dev && p.engines?.node)
      .filter(([, p]) => !subset(`>=${minNode}`, p.engines!.node!))
      .map(([path, p]) => `${path}: ${p.engines!.node}`);
    expect(refused).toEqual([]);
  });

  it('refuses an older Node.js in one line that says what to do, exit code 1', async () => {
    const [maj, min] = minNode!.split('.').map(Number);
    const r = await runVc(`${maj}.${min! - 1}.9`, ['version', '--client']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `vc: Node.js ${maj}.${min! - 1}.9 is older than the ${minNode} vc needs: put a newer node first on the PATH, ` +
        'or run `npx vc` in the repository (it runs on the Node 22 that `npm ci` installs)\n',
    );
  }, 120_000);

  it('runs on the minimum itself', async () => {
    const r = await runVc(minNode!, ['version', '--client']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^Client Version: \d+\.\d+\.\d+/);
    expect(r.code).toBe(0);
  }, 120_000);
});
