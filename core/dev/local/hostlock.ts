import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';

/**
 * REAL_NODE_LOCK is the host-wide lock every set of real nodes holds while it runs. kube-proxy owns the host's global
 * KUBE-* iptables chains and rewrites them whole on every sync, so the real nodes of two super clusters on one host
 * would delete each other's Service rules; the nodes of one super cluster write the same rules and share the lock.
 */
export const REAL_NODE_LOCK = join(tmpdir(), 'virtualcluster-ts-realnodes');

/** HostLockOwner says who holds a host lock. */
export interface HostLockOwner {
  pid: number;
  /** the process's start time in clock ticks since boot (/proc/<pid>/stat), so a reused pid is not taken for it */
  startTicks?: string;
  stateDir: string;
  since: string;
}

/**
 * STALE_MS is when a lock whose holder stopped refreshing it counts as abandoned. It is long because a holder on a
 * busy host can miss refreshes for many seconds (at load 30, two managers each believed they held a 10 s lock); a
 * holder that died is recognised at once by its pid instead (ownerAlive).
 */
const STALE_MS = 60_000;

/** processStartTicks is field 22 of /proc/<pid>/stat (undefined off Linux or for a process that is gone). */
export function processStartTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** ownerAlive says whether the recorded holder still runs: its pid exists and, where known, started when recorded. */
export function ownerAlive(o: HostLockOwner): boolean {
  try {
    process.kill(o.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (!o.startTicks) return true;
  const now = processStartTicks(o.pid);
  return now === undefined || now === o.startTicks;
}

/** HostLock is a held host-wide lock; release gives it up (a holder that dies without it is recognised by its pid). */
export interface HostLock {
  release(): Promise<void>;
}

/** hostLockOwner reads who holds the lock at path, if anyone recorded it. */
export function hostLockOwner(path = REAL_NODE_LOCK): HostLockOwner | undefined {
  try {
    return JSON.parse(readFileSync(`${path}.owner`, 'utf8')) as HostLockOwner;
  } catch {
    return undefined;
  }
}

/** describeOwner is one line naming the holder of a host lock. */
export function describeOwner(o: HostLockOwner | undefined): string {
  return o ? `pid ${o.pid}, state ${o.stateDir}, since ${o.since}` : 'owner unknown';
}

/**
 * acquireHostLock takes the lock at path for stateDir. waitMs 0 fails at once with an error naming the holder;
 * otherwise it waits up to waitMs, calling onWait once with the holder.
 */
export async function acquireHostLock(
  stateDir: string,
  o: { path?: string; waitMs?: number; onWait?: (owner: string) => void } = {},
): Promise<HostLock> {
  const path = o.path ?? REAL_NODE_LOCK;
  writeFileSync(path, '', { flag: 'a' });
  const deadline = Date.now() + (o.waitMs ?? 0);
  let announced = false;
  for (;;) {
    // A holder killed with -9 leaves its lock behind: break it at once when its recorded process is gone. (Two
    // processes breaking the same dead lock at the same instant could both go on; the owner file written next shows
    // the survivor, and vc up checks it again before starting nodes.)
    const recorded = hostLockOwner(path);
    if (recorded && recorded.pid !== process.pid && !ownerAlive(recorded)) {
      rmSync(`${path}.lock`, { recursive: true, force: true });
      rmSync(`${path}.owner`, { force: true });
    }
    try {
      const release = await lockfile.lock(path, {
        stale: STALE_MS,
        update: 5_000,
        realpath: false,
        // A blocked event loop that misses updates must not crash the node's owner; another process may take over a
        // lock it considers stale, which the holder cannot prevent anyway.
        onCompromised: () => undefined,
      });
      const owner: HostLockOwner = {
        pid: process.pid,
        startTicks: processStartTicks(process.pid),
        stateDir,
        since: new Date().toISOString(),
      };
      writeFileSync(`${path}.owner`, JSON.stringify(owner) + '\n');
      return {
        release: async () => {
          rmSync(`${path}.owner`, { force: true });
          await release().catch(() => undefined);
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ELOCKED') throw e;
      const owner = describeOwner(hostLockOwner(path));
      if (Date.now() >= deadline)
        throw new Error(
          `another set of real nodes runs on this host (${owner}); its kube-proxy owns the host's KUBE-* iptables ` +
            `chains. Stop it (vc down --state-dir <its state dir>) or start with --real-nodes 0`,
        );
      if (!announced) o.onWait?.(owner);
      announced = true;
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}

/** hostLockHeld says whether a live process holds the lock at path. */
export async function hostLockHeld(path = REAL_NODE_LOCK): Promise<boolean> {
  const owner = hostLockOwner(path);
  if (owner && !ownerAlive(owner)) return false;
  try {
    return await lockfile.check(path, { stale: STALE_MS, realpath: false });
  } catch {
    return false;
  }
}
