import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImageSpec, TarEntry } from '../../core/toolchain/images.ts';
import { E2E_IMAGES, e2eImageSpec, overlay, type E2eImageSources } from './images.ts';

const file = (path: string, data = path): TarEntry => ({ type: 'file', path, data: Buffer.from(data) });
const link = (path: string, target: string): TarEntry => ({ type: 'symlink', path, target });

describe('overlay', () => {
  it.each<[string, TarEntry[], TarEntry[], TarEntry[]]>([
    ['nothing on top: the base as it is', [file('a'), link('b', '/a')], [], [file('a'), link('b', '/a')]],
    ['disjoint paths: both, base first', [file('a')], [file('b')], [file('a'), file('b')]],
    [
      "a path in both: top's entry only (a Debian program over busybox's applet link)",
      [link('bin/sh', '/bin/busybox'), link('usr/bin/nslookup', '/bin/busybox')],
      [file('usr/bin/nslookup', 'bind9')],
      [link('bin/sh', '/bin/busybox'), file('usr/bin/nslookup', 'bind9')],
    ],
    [
      'a directory in both: one entry, with top mode',
      [{ type: 'dir', path: 'tmp', mode: 0o1777 }],
      [{ type: 'dir', path: 'tmp', mode: 0o755 }],
      [{ type: 'dir', path: 'tmp', mode: 0o755 }],
    ],
  ])('%s', (_, base, top, want) => {
    expect(overlay(base, top)).toEqual(want);
  });
});

describe('e2eImageSpec', () => {
  let dir: string;
  let sources: E2eImageSources;
  const paths = (s: Omit<ImageSpec, 'ref'>) => s.files.map((e) => e.path);

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'vc-e2eimages-'));
    for (const f of [
      'agnhost/localhost.crt',
      'agnhost/localhost.key',
      'nonewprivs/nnp',
      'nautilus/nautilus.jpg',
      'nautilus/data.json',
      'sample-apiserver',
    ]) {
      mkdirSync(join(dir, f, '..'), { recursive: true });
      writeFileSync(join(dir, f), f, { mode: f.endsWith('nnp') || f === 'sample-apiserver' ? 0o755 : 0o644 });
    }
    const shell = [file('bin/busybox'), link('bin/sh', '/bin/busybox'), link('usr/bin/nslookup', '/bin/busybox')];
    sources = {
      node: {
        agnhost: () => ({
          ref: 'agnhost',
          files: [file('agnhost'), ...shell],
          entrypoint: ['/agnhost'],
          cmd: ['pause'],
        }),
        busybox: () => ({ ref: 'busybox', files: shell, cmd: ['sh'] }),
        pause: () => ({ ref: 'pause', files: [file('pause')], entrypoint: ['/pause'] }),
        etcd: () => ({ ref: 'etcd', files: [file('usr/local/bin/etcd')], cmd: ['etcd'] }),
      },
      nginx: () => [file('usr/sbin/nginx')],
      images: dir,
      tools: () => [
        file('usr/bin/dig'),
        file('usr/bin/curl'),
        file('usr/bin/nslookup', 'bind9'),
        file('bin/nc.openbsd'),
        link('usr/local/bin/nc', '/bin/nc.openbsd'),
      ],
    };
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('agnhost has its certificate and the network tools, Debian over busybox where both have a path', () => {
    const s = e2eImageSpec('agnhost', sources);
    expect(s.entrypoint).toEqual(['/agnhost']);
    expect(paths(s)).toEqual(
      expect.arrayContaining(['agnhost', 'localhost.crt', 'localhost.key', 'usr/bin/dig', 'usr/bin/curl', 'bin/sh']),
    );
    const nslookup = s.files.filter((e) => e.path === 'usr/bin/nslookup');
    expect(nslookup).toEqual([file('usr/bin/nslookup', 'bind9')]);
    expect(s.files.find((e) => e.path === 'usr/local/bin/nc')).toEqual(link('usr/local/bin/nc', '/bin/nc.openbsd'));
  });

  it('agnhost links /agnhost-2 to itself, as upstream, for the entrypoint-override specs', () => {
    const s = e2eImageSpec('agnhost', sources);
    expect(s.files.find((e) => e.path === 'agnhost-2')).toEqual(link('agnhost-2', 'agnhost'));
  });

  it('busybox has every applet in /bin as upstream, where Debian lists some elsewhere', () => {
    const s = e2eImageSpec('busybox', sources);
    expect(s.files.find((e) => e.path === 'bin/nslookup')).toEqual(link('bin/nslookup', '/bin/busybox'));
    expect(s.files.filter((e) => e.path === 'bin/sh')).toHaveLength(1);
    expect(s.files.find((e) => e.path === 'usr/bin/nslookup')).toEqual(link('usr/bin/nslookup', '/bin/busybox'));
  });

  it('nautilus is agnhost serving nautilus.jpg and data.json from / with test-webserver', () => {
    const s = e2eImageSpec('nautilus', sources);
    expect(s.entrypoint).toEqual(['/agnhost']);
    expect(s.cmd).toEqual(['test-webserver']);
    expect(paths(s)).toEqual(expect.arrayContaining(['nautilus.jpg', 'data.json', 'localhost.crt', 'usr/bin/curl']));
    expect(s.files.find((e) => e.path === 'data.json')).toMatchObject({ data: Buffer.from('nautilus/data.json') });
  });

  it('nonewprivs runs nnp, set-user-ID root', () => {
    const s = e2eImageSpec('nonewprivs', sources);
    expect(s.cmd).toEqual(['nnp']);
    expect(s.files.find((e) => e.path === 'usr/local/bin/nnp')).toMatchObject({ type: 'file', mode: 0o4755 });
  });

  it('glibc-dns-testing has a shell, dig and the rest of the tools', () => {
    const s = e2eImageSpec('glibc-dns-testing', sources);
    expect(paths(s)).toEqual(expect.arrayContaining(['bin/sh', 'usr/bin/dig', 'usr/local/bin/nc']));
    expect(s.files.filter((e) => e.path === 'usr/bin/nslookup')).toHaveLength(1);
  });

  it('every name of E2E_IMAGES is an image with files and a process to run', () => {
    for (const [ref, key] of Object.entries(E2E_IMAGES)) {
      const s = e2eImageSpec(key, sources);
      expect(s.files.length, ref).toBeGreaterThan(0);
      expect([...(s.entrypoint ?? []), ...(s.cmd ?? [])].length, ref).toBeGreaterThan(0);
      expect(new Set(paths(s)).size, `${ref}: a path twice`).toBe(s.files.length);
    }
  });
});
