import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * runWithKubeconfig runs a command with KUBECONFIG naming a file that holds `kubeconfig`, and removes that file on
 * every way out: the command's exit, a signal to this process (Ctrl-C, SIGTERM, SIGHUP: passed on to the command,
 * then the file goes once it has ended) and this process's own exit. The file sits in a directory of its own, mode
 * 0700, under the temp directory. It resolves to the exit status a shell would report (128 + signal number when the
 * command was killed).
 */
export async function runWithKubeconfig(
  kubeconfig: string,
  command: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'vc-exec-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  process.once('exit', remove);
  const file = join(dir, 'kubeconfig');
  const handlers = new Map<NodeJS.Signals, () => void>();
  try {
    writeFileSync(file, kubeconfig, { mode: 0o600 });
    // The handlers are in place before the command starts: a signal that comes as soon as it runs (a loaded host may
    // run the command well before this process again) is passed on, not left to kill this process by default while
    // the command runs on.
    const started: { child?: ReturnType<typeof spawn> } = {};
    for (const sig of FORWARDED) {
      // A second signal while the command still runs: remove the file and leave without waiting any longer.
      let seen = false;
      const h = () => {
        if (seen) {
          remove();
          process.exit(128 + constants.signals[sig]);
        }
        seen = true;
        started.child?.kill(sig);
      };
      handlers.set(sig, h);
      process.on(sig, h);
    }
    const running = spawn(command[0]!, command.slice(1), { stdio: 'inherit', env: { ...env, KUBECONFIG: file } });
    started.child = running;
    return await new Promise<number>((res, rej) => {
      running.once('error', (e) => rej(new Error(`${command[0]}: ${e.message}`)));
      running.once('close', (code, signal) => res(code ?? (signal ? 128 + constants.signals[signal] : 1)));
    });
  } finally {
    for (const [sig, h] of handlers) process.off(sig, h);
    process.off('exit', remove);
    remove();
  }
}
