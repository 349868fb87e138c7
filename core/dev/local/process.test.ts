import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManagedProcess, stopGraceMs, waitFor } from './process.ts';

const dir = mkdtempSync(join(tmpdir(), 'vc-process-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** sleeper is a shell that exits on SIGTERM like any well-behaved component (the trap makes it answer at once). */
function sleeper(name: string): ManagedProcess {
  return new ManagedProcess({
    name,
    command: '/bin/sh',
    args: ['-c', 'trap "exit 0" TERM; echo trapped; while :; do sleep 0.1; done'],
    logFile: join(dir, `${name}.log`),
  });
}

describe('stopGraceMs', () => {
  it.each([
    [{}, undefined],
    [{ discard: false }, undefined],
    [{ discard: true }, 0],
  ])('%j → %s', (o, want) => expect(stopGraceMs(o)).toBe(want));
});

describe('ManagedProcess.stop', () => {
  // A component that shuts down on SIGTERM exits by itself under a normal stop; a discarding stop (grace 0) never
  // asks it and kills it, which the exit signal shows.
  it.each([
    ['graceful', undefined, '0'],
    ['discarding', 0, 'SIGKILL'],
  ])('%s stop', async (name, grace, exit) => {
    const p = sleeper(name);
    p.start();
    // the shell says when its trap is in place
    await waitFor('trap', async () => p.logTail().includes('trapped'), { timeoutMs: 30_000, process: p });
    await p.stop(grace);
    expect(p.running).toBe(false);
    expect(p.lastExit).toBe(exit);
  });
});

describe('waitFor', () => {
  // A component stopped on purpose does not come back, even with a restart policy: a wait for its readiness ends at
  // once with an error naming it, instead of running out its timeout (a tenant's etcd that failed stops its apiserver).
  it('ends when the awaited process, restartable, is stopped', async () => {
    const p = new ManagedProcess({
      name: 'stopped-one',
      command: '/bin/sh',
      args: ['-c', 'trap "exit 0" TERM; while :; do sleep 0.1; done'],
      logFile: join(dir, 'stopped-one.log'),
      restart: true,
    });
    p.start();
    const t0 = Date.now();
    const waiting = waitFor('never ready', async () => false, { timeoutMs: 60_000, process: p });
    await p.stop();
    await expect(waiting).rejects.toThrow(/never ready: stopped-one was stopped/);
    expect(Date.now() - t0).toBeLessThan(30_000);
  });
});
