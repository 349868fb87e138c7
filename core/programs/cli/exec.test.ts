import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const here = join(import.meta.dirname, 'exec.ts');

/** runner is a process that calls runWithKubeconfig as `vc exec` does and exits with what it returns. */
function runner(tmp: string, command: string[]) {
  const code =
    `const { runWithKubeconfig } = await import(${JSON.stringify(here)});` +
    `process.exitCode = await runWithKubeconfig('apiVersion: v1\\nkind: Config\\n', ${JSON.stringify(command)}, process.env);`;
  return spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    env: { ...process.env, TMPDIR: tmp },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

const exited = (p: ReturnType<typeof spawn>) =>
  new Promise<{ code: number | null; out: string }>((res) => {
    let out = '';
    p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    p.once('close', (code) => res({ code, out }));
  });

// tsx keeps its own cache under the temp directory: only vc-exec-* entries are the kubeconfig's.
const leftovers = (tmp: string) => readdirSync(tmp).filter((f) => f.startsWith('vc-exec-'));

describe('runWithKubeconfig', () => {
  let tmp: string;
  beforeEach(() => {
    tmp = mkdtempSync(join(tmpdir(), 'vc-exec-test-'));
  });
  afterEach(() => rmSync(tmp, { recursive: true, force: true }));

  it('gives the command a readable KUBECONFIG and removes it after a normal exit, keeping the exit code', async () => {
    const r = await exited(runner(tmp, ['sh', '-c', 'cat "$KUBECONFIG"; exit 3']));
    expect(r.out).toContain('kind: Config');
    expect(r.code).toBe(3);
    expect(leftovers(tmp)).toEqual([]);
  });

  it('removes the kubeconfig after Ctrl-C (SIGINT), passed on to the command', async () => {
    const p = runner(tmp, ['sh', '-c', 'echo started; exec sleep 30']);
    const done = exited(p);
    await new Promise<void>((res) => p.stdout!.once('data', () => res()));
    expect(leftovers(tmp)).toHaveLength(1);
    p.kill('SIGINT');
    const r = await done;
    expect(r.code).toBe(130);
    expect(leftovers(tmp)).toEqual([]);
  });

  it('removes the kubeconfig after SIGTERM', async () => {
    const p = runner(tmp, ['sh', '-c', 'echo started; exec sleep 30']);
    const done = exited(p);
    await new Promise<void>((res) => p.stdout!.once('data', () => res()));
    p.kill('SIGTERM');
    expect((await done).code).toBe(143);
    expect(leftovers(tmp)).toEqual([]);
  });

  it('removes the kubeconfig when the command cannot start', async () => {
    const r = await exited(runner(tmp, ['/nonexistent/command']));
    expect(r.code).not.toBe(0);
    expect(leftovers(tmp)).toEqual([]);
  });
});
