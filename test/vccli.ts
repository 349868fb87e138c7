import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../core/programs/cli/vc.mjs');

/** VcResult is what one `vc` run ended with: its exit code (-1 when it did not exit) and its output. */
export interface VcResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * runVc runs the `vc` CLI as a user would, against the cluster of kubeconfigPath, with home as its HOME (and no
 * VC_KUBECONFIG from the test's environment); a failing run resolves with its exit code rather than rejecting.
 */
export async function runVc(kubeconfigPath: string, home: string, args: string[]): Promise<VcResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, KUBECONFIG: kubeconfigPath, HOME: home };
  delete env.VC_KUBECONFIG;
  try {
    const r = await execP(process.execPath, [vcBin, ...args], { env, timeout: 300_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}
