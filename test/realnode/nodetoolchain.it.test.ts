import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import {
  NODE_IMAGES,
  isNodeToolchainComplete,
  nodeImageArchive,
  nodeToolchainDir,
  type NodeImage,
} from '../../core/toolchain/node.ts';
import { realNodeBlockers } from '../../core/toolchain/setup.ts';

// The node toolchain for real: a throwaway containerd from it (everything under one temporary directory, shim
// sockets included), every image archive imported, busybox run by runc. Needs root and a built node toolchain.
const run = promisify(execFile);
const dir = nodeToolchainDir();
const skip = [
  ...realNodeBlockers(),
  ...(isNodeToolchainComplete(dir)
    ? []
    : [`the node toolchain is not built in ${dir} (npx vc toolchain build --node)`]),
];
if (skip.length) process.stderr.write(`nodetoolchain.it.test.ts skipped: ${skip.join('; ')}\n`);

describe.skipIf(skip.length > 0)('node toolchain', () => {
  let tmp = '';
  let sock = '';
  const cgroup = `vc-ntc-${process.pid}`;
  const bin = (b: string): string => join(dir, 'bin', b);
  const ctr = (...args: string[]) =>
    run(bin('ctr'), ['-a', sock, '-n', 'k8s.io', ...args], { timeout: 30_000, maxBuffer: 1 << 20 });
  let containerd: ChildProcess | undefined;

  afterAll(async () => {
    if (!tmp) return;
    await ctr('tasks', 'kill', '-s', 'KILL', 'ntc-bb').catch(() => undefined);
    await ctr('containers', 'rm', 'ntc-bb').catch(() => undefined);
    if (containerd && containerd.exitCode === null) {
      const exited = new Promise((res) => containerd!.once('exit', res));
      containerd.kill('SIGTERM');
      await Promise.race([exited, new Promise((res) => setTimeout(res, 10_000))]);
      if (containerd.exitCode === null) containerd.kill('SIGKILL');
    }
    // Shims outlive containerd (re-parented to PID 1): stop the ones of this containerd, found by its address.
    for (const pid of processesMentioning(sock)) process.kill(pid, 'SIGKILL');
    for (const m of mountsUnder(tmp).reverse()) await run('umount', ['-l', m]).catch(() => undefined);
    for (const h of cgroupHierarchies()) {
      const p = join('/sys/fs/cgroup', h, cgroup);
      if (existsSync(p)) rmdirSync(p);
    }
    rmSync(tmp, { recursive: true, force: true });
    // What the test must not leave behind, checked after the cleanup so a failure above still cleans up.
    expect(processesMentioning(sock)).toEqual([]);
    expect(mountsUnder(tmp)).toEqual([]);
    expect(cgroupHierarchies().filter((h) => existsSync(join('/sys/fs/cgroup', h, cgroup)))).toEqual([]);
  });

  it('starts containerd, imports every image under its reference and runs busybox with runc', async () => {
    // Short: the shim socket directory may be at most 42 characters.
    tmp = mkdtempSync('/tmp/vc-ntc-');
    sock = join(tmp, 'containerd.sock');
    writeFileSync(
      join(tmp, 'config.toml'),
      [
        'version = 3',
        `root = "${tmp}/root"`,
        `state = "${tmp}/state"`,
        // No CRI (no CNI, no pod sandboxes here) and no NRI socket in /run/nri.
        'disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime",',
        '  "io.containerd.podsandbox.controller.v1.podsandbox", "io.containerd.nri.v1.nri"]',
        '[grpc]',
        `  address = "${sock}"`,
        '[ttrpc]',
        `  address = "${sock}.ttrpc"`,
        '[plugins."io.containerd.internal.v1.opt"]',
        `  path = "${tmp}/opt"`,
        // Shim sockets default to /run/containerd/s.
        '[plugins."io.containerd.shim.v1.manager"]',
        `  socket_dir = "${tmp}/s"`,
        '',
      ].join('\n'),
    );
    containerd = spawn(bin('containerd'), ['--config', join(tmp, 'config.toml')], {
      env: { ...process.env, PATH: `${join(dir, 'bin')}:${process.env.PATH}` },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    containerd.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
    const deadline = Date.now() + 20_000;
    while (
      !(await ctr('version').then(
        () => true,
        () => false,
      ))
    ) {
      if (containerd.exitCode !== null || Date.now() > deadline) throw new Error(`containerd did not start:\n${log}`);
      await new Promise((res) => setTimeout(res, 200));
    }

    for (const key of Object.keys(NODE_IMAGES) as NodeImage[])
      await ctr('images', 'import', nodeImageArchive(key, dir));
    const { stdout: refs } = await ctr('images', 'ls', '-q');
    expect(refs.trim().split('\n').sort()).toEqual(Object.values(NODE_IMAGES).sort());

    const { stdout } = await ctr(
      'run',
      '--rm',
      '--fifo-dir',
      join(tmp, 'fifo'),
      '--runc-binary',
      bin('runc'),
      '--runc-root',
      join(tmp, 'runc'),
      '--cgroup',
      `/${cgroup}`,
      NODE_IMAGES.busybox,
      'ntc-bb',
      'sh',
      '-c',
      'echo "hello from $(cat /proc/1/comm)"; wget --help 2>&1 | head -1; ls /',
    );
    const [hello, wget, ...root] = stdout.trim().split('\n');
    expect(hello).toBe('hello from sh');
    expect(wget).toMatch(/^BusyBox v1\.35/);
    // Its own root file system, not the host's.
    expect(root).toContain('bin');
    expect(root).not.toContain('work');
    expect(readdirSync(join(tmp, 's'))).toEqual([]);
  }, 60_000);
});

function processesMentioning(s: string): number[] {
  const pids: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p) || Number(p) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(s)) pids.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function mountsUnder(d: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m === d || m.startsWith(`${d}/`));
}

function cgroupHierarchies(): string[] {
  // v1: one directory per controller; v2: the unified tree itself ('.').
  return existsSync('/sys/fs/cgroup') ? ['.', ...readdirSync('/sys/fs/cgroup')] : [];
}
