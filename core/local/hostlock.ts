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
  stateDir: string;
  since: string;
}

/** HostLock is a held host-wide lock; release gives it up (also done when the process dies: it goes stale in 10 s). */
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
    try {
      const release = await lockfile.lock(path, {
        stale: 10_000,
        update: 2_000,
        realpath: false,
        // A blocked event loop that misses updates must not crash the node's owner; another process may take over a
        // lock it considers stale, which the holder cannot prevent anyway.
        onCompromised: () => undefined,
      });
      const owner: HostLockOwner = { pid: process.pid, stateDir, since: new Date().toISOString() };
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

/** hostLockHeld says whether a live process holds the lock at path (a dead holder's lock is stale after 10 s). */
export async function hostLockHeld(path = REAL_NODE_LOCK): Promise<boolean> {
  try {
    return await lockfile.check(path, { stale: 10_000, realpath: false });
  } catch {
    return false;
  }
}
