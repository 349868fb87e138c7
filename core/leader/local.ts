import { createHash } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * A holder killed with SIGKILL cannot give its Lease up, and the next candidate waits the whole lease duration for
 * it. When both run on the same kernel and in the same pid namespace (`vc up`, the manager and its standby on one
 * host), the candidate can see that the holder's process is gone and take the Lease at once. The identity carries a
 * tag of the kernel boot and the pid namespace, so a candidate elsewhere (another host, another container) never
 * reads a pid that is not its own to read.
 */

/** processTag names this kernel boot and pid namespace (8 hex digits), or undefined where /proc does not tell. */
export function processTag(): string | undefined {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const pidns = readlinkSync('/proc/self/ns/pid');
    return createHash('sha256').update(`${boot}/${pidns}`).digest('hex').slice(0, 8);
  } catch {
    return undefined;
  }
}

/** localIdentity is a leader election identity `<hostname>-<pid>[-<processTag>]`. */
export function localIdentity(tag = processTag()): string {
  return `${hostname()}-${process.pid}${tag ? `-${tag}` : ''}`;
}

/**
 * holderGone tells an identity made by localIdentity with this process's tag whose process no longer exists. A pid
 * in use again by another process counts as alive (the lease is then waited out as usual); so does one this process
 * may not signal.
 */
export function holderGone(identity: string, tag: string | null = processTag() ?? null): boolean {
  if (!tag) return false;
  const m = /-(\d+)-([0-9a-f]{8})$/.exec(identity);
  if (!m || m[2] !== tag) return false;
  const pid = Number(m[1]);
  if (!pid || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
