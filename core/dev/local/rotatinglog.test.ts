import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManagedProcess } from './process.ts';
import { RotatingLog } from './rotatinglog.ts';

const dirs: string[] = [];
const temp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'vc-rotating-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const write = (log: RotatingLog, s: string): Promise<void> =>
  new Promise((res, rej) => log.write(s, (e) => (e ? rej(e) : res())));

describe('RotatingLog', () => {
  it('moves the file to .1 once the next write would pass maxBytes, keeping one older file', async () => {
    const file = join(temp(), 'c.log');
    const log = new RotatingLog(file, 10);
    for (const s of ['aaaa\n', 'bbbb\n', 'cccc\n', 'dddd\n', 'eeee\n']) await write(log, s);
    await new Promise<void>((res) => log.end(res));
    expect(readFileSync(file, 'utf8')).toBe('eeee\n');
    expect(readFileSync(`${file}.1`, 'utf8')).toBe('cccc\ndddd\n');
  });

  it('counts what the file held before it was opened', async () => {
    const file = join(temp(), 'c.log');
    const first = new RotatingLog(file, 10);
    await write(first, '12345678\n');
    await new Promise<void>((res) => first.end(res));
    const again = new RotatingLog(file, 10);
    await write(again, 'next\n');
    await new Promise<void>((res) => again.end(res));
    expect(readFileSync(`${file}.1`, 'utf8')).toBe('12345678\n');
    expect(readFileSync(file, 'utf8')).toBe('next\n');
  });
});

describe('ManagedProcess logs', () => {
  it('keeps a chatty component within twice its maxLogBytes on disk', async () => {
    const file = join(temp(), 'chatty.log');
    const p = new ManagedProcess({
      name: 'chatty',
      command: '/bin/sh',
      args: ['-c', 'i=0; while [ $i -lt 4000 ]; do echo "line $i of a component that logs a lot"; i=$((i+1)); done'],
      logFile: file,
      maxLogBytes: 16 * 1024,
    });
    p.start();
    await p.exited();
    await p.stop();
    expect(statSync(file).size).toBeLessThanOrEqual(16 * 1024);
    expect(statSync(`${file}.1`).size).toBeLessThanOrEqual(16 * 1024);
    // About 160 KB were written: the older lines went with the rotations, the newest file starts at a line.
    expect(readFileSync(`${file}.1`, 'utf8')).toMatch(/^line \d+ of a component that logs a lot\n/);
  });
});
