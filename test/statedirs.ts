import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAllSync } from '../core/dev/local/process.ts';

/**
 * State directories of the local clusters a test or benchmark starts. Each is removed by the code that made it when it
 * stops them; the registry is for a run stopped by a signal (Ctrl-C of `npm run bench`), which unwinds nothing.
 */
const dirs = new Set<string>();

/** stateDir makes a directory under the OS temp directory, removed as well if the run is stopped by a signal. */
export function stateDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}

/** removeStateDir removes a directory stateDir made (a no-op once gone). */
export function removeStateDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  dirs.delete(dir);
}

/** unescapeMount decodes a mountinfo path: octal escapes of space, tab, newline and backslash. */
const unescapeMount = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** mountsUnder lists the mount points of /proc/self/mountinfo text at dir or below it. */
export function mountsUnder(mountinfo: string, dir: string): string[] {
  const base = dir.replace(/\/+$/, '');
  return mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((m): m is string => !!m)
    .map(unescapeMount)
    .filter((m) => m === base || m.startsWith(`${base}/`));
}

/**
 * removeStateDirsOnSignal makes SIGINT and SIGTERM stop every process this run started (SIGKILL), remove every state
 * directory not yet removed, and exit 130 or 143. A directory with something still mounted below it is left, and
 * named, rather than removed through the mount.
 */
export function removeStateDirsOnSignal(): void {
  const stop = (code: number) => () => {
    killAllSync();
    let mountinfo = '';
    try {
      mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
    } catch {
      // not Linux: nothing can be mounted by this run
    }
    for (const dir of dirs) {
      const mounted = mountsUnder(mountinfo, dir);
      if (mounted.length) {
        process.stderr.write(`left ${dir}: still mounted below it: ${mounted.join(', ')}\n`);
        continue;
      }
      try {
        removeStateDir(dir);
      } catch (e) {
        process.stderr.write(`could not remove ${dir}: ${String(e)}\n`);
      }
    }
    process.exit(code);
  };
  process.once('SIGINT', stop(130));
  process.once('SIGTERM', stop(143));
}
