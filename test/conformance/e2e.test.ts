import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { treeEntries } from './e2e.ts';

describe('treeEntries', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('lists files with their modes, symbolic links as they are and nested directories', () => {
    const root = mkdtempSync(join(tmpdir(), 'vc-tree-'));
    dirs.push(root);
    mkdirSync(join(root, 'usr/sbin'), { recursive: true });
    writeFileSync(join(root, 'usr/sbin/nginx'), 'binary');
    chmodSync(join(root, 'usr/sbin/nginx'), 0o755);
    mkdirSync(join(root, 'var/log'), { recursive: true });
    symlinkSync('/dev/stdout', join(root, 'var/log/access.log'));
    for (const d of ['usr', 'usr/sbin', 'var/log']) chmodSync(join(root, d), 0o755);
    chmodSync(join(root, 'var'), 0o750);
    const got = treeEntries(root)
      .map((e) => ({ ...e, ...(e.type === 'file' && { data: e.data.toString() }) }))
      .sort((a, b) => a.path.localeCompare(b.path));
    expect(got).toEqual([
      { type: 'dir', path: 'usr', mode: 0o755 },
      { type: 'dir', path: 'usr/sbin', mode: 0o755 },
      { type: 'file', path: 'usr/sbin/nginx', mode: 0o755, data: 'binary' },
      { type: 'dir', path: 'var', mode: 0o750 },
      { type: 'dir', path: 'var/log', mode: 0o755 },
      { type: 'symlink', path: 'var/log/access.log', target: '/dev/stdout' },
    ]);
  });
});
