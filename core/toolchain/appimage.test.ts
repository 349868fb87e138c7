import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fromPackageRoot } from '../paths.ts';
import {
  APP_CMD,
  APP_DIR,
  APP_ENTRYPOINT,
  APP_UID,
  keepInImage,
  parseLdd,
  prodPackages,
  type LockPackage,
} from './appimage.ts';

describe('prodPackages', () => {
  const lock = (packages: Record<string, LockPackage>) => ({ lockfileVersion: 3, packages });
  it.each<{ name: string; packages: Record<string, LockPackage>; want: unknown[] }>([
    {
      name: 'keeps what is not dev, nested ones too, sorted; drops the root and workspace folders',
      packages: {
        '': { version: '0.1.0' },
        'plugins/sdk': { version: '0.1.0' },
        'node_modules/yaml': { version: '2.9.1' },
        'node_modules/typescript': { version: '5.9.3', dev: true },
        'node_modules/@kubernetes/client-node': { version: '2.0.1' },
        'node_modules/@kubernetes/client-node/node_modules/ws': { version: '8.1.0' },
        'node_modules/vitest/node_modules/ws': { version: '8.2.0', dev: true },
      },
      want: [
        { path: 'node_modules/@kubernetes/client-node', version: '2.0.1' },
        { path: 'node_modules/@kubernetes/client-node/node_modules/ws', version: '8.1.0' },
        { path: 'node_modules/yaml', version: '2.9.1' },
      ],
    },
    {
      name: 'keeps a workspace link only when its target is shipped',
      packages: {
        'node_modules/@virtualcluster-ts/plugin-sdk': { link: true, resolved: 'plugins/sdk' },
        'node_modules/@virtualcluster-ts/plugin-sandbox-runtimeclass': {
          link: true,
          resolved: 'plugins/examples/sandbox-runtimeclass',
        },
      },
      want: [{ path: 'node_modules/@virtualcluster-ts/plugin-sdk', linkTo: 'plugins/sdk' }],
    },
    {
      name: 'keeps optional platform packages (the build skips those not installed)',
      packages: { 'node_modules/@esbuild/linux-x64': { version: '0.28.2', optional: true } },
      want: [{ path: 'node_modules/@esbuild/linux-x64', version: '0.28.2' }],
    },
  ])('$name', ({ packages, want }) => {
    expect(prodPackages(lock(packages), ['plugins/sdk'])).toEqual(want);
  });

  it('names the lock file when it is too old or a link has no target', () => {
    expect(() => prodPackages({ lockfileVersion: 1 }, [], '/r/package-lock.json')).toThrow(
      '/r/package-lock.json: needs lockfileVersion 2 or 3',
    );
    expect(() => prodPackages(lock({ 'node_modules/x': { link: true } }), [], 'L')).toThrow(
      'L: packages["node_modules/x"]: a link without "resolved"',
    );
  });
});

describe('parseLdd', () => {
  const glibc = [
    '\tlinux-vdso.so.1 (0x00007ffd1a5f2000)',
    '\tlibdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f3bfcf3e000)',
    '\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f3bfcc00000)',
    '\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f3bfca1e000)',
    '\t/lib64/ld-linux-x86-64.so.2 (0x00007f3bfcf56000)',
  ].join('\n');
  it.each([
    {
      name: 'libraries and the loader, without the vDSO',
      text: glibc,
      want: [
        '/lib/x86_64-linux-gnu/libdl.so.2',
        '/lib/x86_64-linux-gnu/libstdc++.so.6',
        '/lib/x86_64-linux-gnu/libc.so.6',
        '/lib64/ld-linux-x86-64.so.2',
      ],
    },
    { name: 'a static binary needs nothing', text: '\tstatically linked\n', want: [] },
  ])('$name', ({ text, want }) => {
    expect(parseLdd(text, '/bin/node')).toEqual(want);
  });

  it('a missing library is an error naming it and the binary', () => {
    expect(() => parseLdd('\tlibfoo.so.1 => not found\n', '/usr/bin/node')).toThrow(
      '/usr/bin/node: shared library libfoo.so.1 not found',
    );
  });
});

describe('keepInImage', () => {
  it.each([
    ['index.js', true],
    ['package.json', true],
    ['LICENSE', true],
    ['esbuild', true],
    ['index.d.ts', false],
    ['index.d.mts', false],
    ['main.ts', false],
    ['index.js.map', false],
    ['README.md', false],
    ['x.tsbuildinfo', false],
  ])('%s -> %s', (name, want) => {
    expect(keepInImage(name)).toBe(want);
  });
});

describe('deploy/Dockerfile', () => {
  it('runs the same entrypoint, default args, working directory and user as vc image build', () => {
    const text = readFileSync(fromPackageRoot('deploy/Dockerfile'), 'utf8');
    // The last of each instruction is the final stage's.
    const last = (instr: string): string => {
      const lines = text.split('\n').filter((l) => l.startsWith(`${instr} `));
      return lines[lines.length - 1]!.slice(instr.length + 1).trim();
    };
    expect(JSON.parse(last('ENTRYPOINT'))).toEqual(APP_ENTRYPOINT);
    expect(JSON.parse(last('CMD'))).toEqual(APP_CMD);
    expect(last('WORKDIR')).toBe(`/${APP_DIR}`);
    expect(last('USER')).toBe(`${APP_UID}:${APP_UID}`);
  });
});
