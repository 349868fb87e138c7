import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { holderGone, localIdentity, processTag } from './local.ts';

/** deadPid is the pid of a process that has run and ended. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

describe('holderGone', () => {
  const tag = processTag() ?? null;

  it('tells a holder on this kernel and pid namespace whose process has ended', () => {
    expect(tag).toMatch(/^[0-9a-f]{8}$/);
    expect(holderGone(`host-${deadPid()}-${tag}`, tag)).toBe(true);
  });

  it('never calls a live process gone: this one, or a pid in use', () => {
    expect(holderGone(localIdentity(tag ?? undefined), tag)).toBe(false);
    expect(holderGone(`host-${process.ppid}-${tag}`, tag)).toBe(false);
  });

  it('knows nothing of holders elsewhere: another tag, no tag, or no tag of its own', () => {
    const pid = deadPid();
    expect(holderGone(`host-${pid}-00000000`, tag === '00000000' ? 'ffffffff' : tag)).toBe(false);
    expect(holderGone(`host-${pid}`, tag)).toBe(false);
    expect(holderGone(`host-${pid}-${tag}`, null)).toBe(false);
  });
});
