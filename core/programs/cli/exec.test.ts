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

/**
 * exitOf resolves with the runner's exit status as a shell reports it, once the runner itself has ended: not once its
 * output closes, which a command it left behind (had a signal killed it outright) would hold open for minutes.
 */
const exitOf = (p: ReturnType<typeof spawn>) =>
  new Promise<number | string>((res) => p.once('exit', (code, sig) => res(code ?? `killed by ${sig}`)));

/** started resolves when the command has printed `started` (so the runner forwards signals to it). */
const started = (p: ReturnType<typeof spawn>) =>
  new Promise<void>((res) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      if (!out.includes('started')) return;
      p.stdout!.off('data', onData);
      res();
    };
    p.stdout!.on('data', onData);
  });

/**
 * signal sends sig to the runner, and once more after 10 s while it still runs: a loaded host has lost the first one
 * (twice in full runs, the test then timing out); a second signal is the user's second Ctrl-C, which removes the file
 * and leaves with the same status.
 */
const signal = (p: ReturnType<typeof spawn>, sig: NodeJS.Signals) => {
  p.kill(sig);
  const again = setTimeout(() => p.kill(sig), 10_000);
  p.once('exit', () => clearTimeout(again));
};

// tsx keeps its own cache under the temp directory: only vc-exec-* entries are the kubeconfig's.
const leftovers = (tmp: string) => readdirSync(tmp).filter((f) => f.startsWith('vc-exec-'));

// Each test starts node with tsx compiling exec.ts cold (its cache is in the test's own TMPDIR): about a second alone,
// more than 30 s in a full run on a host at load average 18 (the whole suite's unit stage failed on it once).
describe('runWithKubeconfig', { timeout: 120_000 }, () => {
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
    const p = runner(tmp, ['sh', '-c', 'echo started; exec sleep 300']);
    const done = exitOf(p);
    await started(p);
    expect(leftovers(tmp)).toHaveLength(1);
    signal(p, 'SIGINT');
    expect(await done).toBe(130);
    expect(leftovers(tmp)).toEqual([]);
  });

  it('removes the kubeconfig after SIGTERM', async () => {
    const p = runner(tmp, ['sh', '-c', 'echo started; exec sleep 300']);
    const done = exitOf(p);
    await started(p);
    signal(p, 'SIGTERM');
    expect(await done).toBe(143);
    expect(leftovers(tmp)).toEqual([]);
  });

  it('removes the kubeconfig when the command cannot start', async () => {
    const r = await exited(runner(tmp, ['/nonexistent/command']));
    expect(r.code).not.toBe(0);
    expect(leftovers(tmp)).toEqual([]);
  });
});
