import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import {
  NODE_PACKAGES,
  installPackages,
  missingPackages,
  realNodeBlockers,
  setupNodeToolchain,
  type HostFacts,
} from './setup.ts';

const V1 = 'cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory 0 0\n';
const V2 = 'cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n';
const NONE = 'proc /proc proc rw 0 0\ntmpfs /sys/fs/cgroup tmpfs rw 0 0\n';

describe('realNodeBlockers', () => {
  it.each<{ name: string; host: HostFacts; want: RegExp[] }>([
    { name: 'root on Linux with cgroup v1', host: { platform: 'linux', uid: 0, mounts: V1 }, want: [] },
    { name: 'root on Linux with cgroup v2', host: { platform: 'linux', uid: 0, mounts: V2 }, want: [] },
    { name: 'not root', host: { platform: 'linux', uid: 1000, mounts: V1 }, want: [/need root/] },
    { name: 'no cgroups', host: { platform: 'linux', uid: 0, mounts: NONE }, want: [/no cgroup file system/] },
    {
      name: 'macOS as a user',
      host: { platform: 'darwin', uid: 501, mounts: '' },
      want: [/need Linux \(this is darwin\)/, /need root/, /no cgroup/],
    },
  ])('$name', ({ host, want }) => {
    const got = realNodeBlockers(host);
    expect(got).toHaveLength(want.length);
    want.forEach((re, i) => expect(got[i]).toMatch(re));
  });
});

describe('missingPackages', () => {
  let dir: string | undefined;
  afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));
  it('finds commands on PATH and absolute files', () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-setup-'));
    writeFileSync(join(dir, 'have-cmd'), '');
    const pkgs = [
      { pkg: 'a', provides: 'have-cmd', why: '', build: false },
      { pkg: 'b', provides: 'vc-no-such-command', why: '', build: false },
      { pkg: 'c', provides: join(dir, 'have-cmd'), why: '', build: true },
      { pkg: 'd', provides: join(dir, 'nope.h'), why: '', build: true },
    ];
    const prev = process.env.PATH;
    process.env.PATH = `${dir}:${prev}`;
    try {
      expect(missingPackages(pkgs).map((p) => p.pkg)).toEqual(['b', 'd']);
    } finally {
      process.env.PATH = prev;
    }
  });
});

describe('setupNodeToolchain', () => {
  it('skips with one line naming why when the machine cannot run real nodes, and builds nothing', async () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (d: Buffer) => (text += d.toString()));
    const dir = await setupNodeToolchain({
      host: { platform: 'linux', uid: 1000, mounts: V1 },
      script: '/nonexistent/build-node.sh',
      out: out as unknown as NodeJS.WriteStream,
    });
    expect(dir).toBeUndefined();
    expect(text.trim().split('\n')).toHaveLength(1);
    expect(text).toMatch(/^skipping the node toolchain \(simulated nodes keep working\): real nodes need root/);
  });
});

describe('installPackages', () => {
  // A stand-in apt-get first on PATH records its calls; `install` fails until `update` has run when told to.
  let dir = '';
  const prevPath = process.env.PATH;
  afterEach(() => {
    process.env.PATH = prevPath;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const standIn = (mode: 'ok' | 'needs-update' | 'broken'): string => {
    dir = mkdtempSync(join(tmpdir(), 'vc-apt-'));
    const script = [
      '#!/bin/sh',
      `echo "$DEBIAN_FRONTEND $*" >> ${dir}/calls`,
      `case "$1" in update) touch ${dir}/updated; exit 0;; esac`,
      mode === 'broken' ? 'echo "E: Unable to locate package conntrack" >&2; exit 100' : '',
      mode === 'needs-update' ? `[ -e ${dir}/updated ] || { echo "E: no package lists" >&2; exit 100; }` : '',
      'exit 0',
    ].join('\n');
    writeFileSync(join(dir, 'apt-get'), script, { mode: 0o755 });
    process.env.PATH = `${dir}:${prevPath}`;
    return dir;
  };
  const calls = (): string[] => readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n');
  const capture = (): { out: NodeJS.WritableStream; text: () => string } => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (d: Buffer) => (text += d.toString()));
    return { out, text: () => text };
  };
  const pkgs = NODE_PACKAGES.filter((p) => p.pkg === 'iptables' || p.pkg === 'conntrack');

  it('installs the missing packages with one line naming each and why, non-interactively', async () => {
    standIn('ok');
    const c = capture();
    await installPackages(pkgs, c.out);
    expect(c.text()).toBe(
      'installing Debian packages for real nodes with apt-get install -y: iptables (kube-proxy and CNI rules), ' +
        "conntrack (kube-proxy's connection tracking)\n",
    );
    expect(calls()).toEqual(['noninteractive install -y -q iptables conntrack']);
  });

  it('fetches the package lists once when a fresh machine has none, then installs', async () => {
    standIn('needs-update');
    const c = capture();
    await installPackages(pkgs, c.out);
    expect(calls()).toEqual([
      'noninteractive install -y -q iptables conntrack',
      'noninteractive update -q',
      'noninteractive install -y -q iptables conntrack',
    ]);
    expect(c.text().trim().split('\n')).toHaveLength(1);
  });

  it("fails naming the command, its exit code and apt-get's own words", async () => {
    standIn('broken');
    await expect(installPackages(pkgs, capture().out)).rejects.toThrow(
      /^apt-get install -y iptables conntrack failed \(exit 100\):\nE: Unable to locate package conntrack/,
    );
  });

  it('runs nothing when nothing is missing', async () => {
    standIn('broken');
    const c = capture();
    await installPackages([], c.out);
    expect(c.text()).toBe('');
    expect(existsSync(join(dir, 'calls'))).toBe(false);
  });
});
