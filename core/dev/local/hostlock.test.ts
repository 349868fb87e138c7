import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { acquireHostLock, hostLockHeld, hostLockOwner, ownerAlive, processStartTicks } from './hostlock.ts';

describe('host lock for real nodes', () => {
  const dirs: string[] = [];
  const lockPath = () => {
    const d = mkdtempSync(join(tmpdir(), 'vc-hostlock-'));
    dirs.push(d);
    return join(d, 'realnodes');
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('refuses a second holder at once, naming the first, and admits it after release', async () => {
    const path = lockPath();
    const first = await acquireHostLock('/state/one', { path });
    expect(await hostLockHeld(path)).toBe(true);
    expect(hostLockOwner(path)).toMatchObject({ pid: process.pid, stateDir: '/state/one' });
    await expect(acquireHostLock('/state/two', { path })).rejects.toThrow(
      /another set of real nodes runs on this host \(pid \d+, state \/state\/one/,
    );
    await first.release();
    expect(await hostLockHeld(path)).toBe(false);
    expect(hostLockOwner(path)).toBeUndefined();
    const second = await acquireHostLock('/state/two', { path });
    expect(hostLockOwner(path)?.stateDir).toBe('/state/two');
    await second.release();
  });

  it('lets a waiting holder in once the first releases', async () => {
    const path = lockPath();
    const first = await acquireHostLock('/state/one', { path });
    const waited: string[] = [];
    const second = acquireHostLock('/state/two', { path, waitMs: 20_000, onWait: (o) => waited.push(o) });
    setTimeout(() => void first.release(), 500);
    const lock = await second;
    expect(waited).toHaveLength(1);
    expect(waited[0]).toContain('/state/one');
    expect(hostLockOwner(path)?.stateDir).toBe('/state/two');
    await lock.release();
  });

  it('breaks at once the lock of a holder that died (kill -9), and keeps one whose pid was reused', async () => {
    const path = lockPath();
    // What a killed holder leaves: the lock directory and its owner record, naming a pid that no longer runs.
    mkdirSync(`${path}.lock`);
    writeFileSync(`${path}.owner`, JSON.stringify({ pid: 2147483646, stateDir: '/state/dead', since: 'then' }));
    expect(await hostLockHeld(path)).toBe(false);
    const lock = await acquireHostLock('/state/new', { path });
    expect(hostLockOwner(path)?.stateDir).toBe('/state/new');
    await lock.release();
    // A live pid with another start time is a different process: not the recorded holder.
    expect(ownerAlive({ pid: process.pid, startTicks: 'other', stateDir: '', since: '' })).toBe(false);
    expect(ownerAlive({ pid: process.pid, startTicks: processStartTicks(process.pid), stateDir: '', since: '' })).toBe(
      true,
    );
  });
});
