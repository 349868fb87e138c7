/**
 * Ctrl-C of a foreground `vc up` with a real node (issue 13): the terminal sends SIGINT to its whole process group
 * (vc up and every child it started), and vc up must still stop everything it started on the host.
 *
 * `kill -9` of `vc up` with a real node (issue 13): nothing of vc up gets to clean up, so its components die by their
 * parent-death signal while the containerd shims, the containers (runc and gVisor) and everything on the host stay
 * behind; `vc down` then removes all of it from the node's record. Host snapshots before the start and after `vc down`
 * must be equal; one taken right after the kill must not be, or the test would prove nothing.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostLockHeld } from '../../core/dev/local/hostlock.ts';
import { cgroupMounts, readNodeRecord, type NodeRecord } from '../../core/dev/local/nodehost.ts';
import { shimSocketName } from '../../core/dev/local/nodesweep.ts';
import { hostSnapshot, snapshotDiff, type HostSnapshot } from '../../core/dev/local/testing.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { NODE_IMAGES, nodeToolchainDir } from '../../core/toolchain/node.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, realNodeSkipReason } from '../harness.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`killcleanup.it.test.ts skipped: ${skip}\n`);

const pod = (name: string, runtimeClassName?: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      ...(runtimeClassName && { runtimeClassName }),
      nodeSelector: { [REAL_NODE_LABEL]: 'true' },
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
      containers: [{ name: 'c', image: NODE_IMAGES.busybox, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
    },
  });

/**
 * ours narrows a host snapshot to what belongs to one real node, from its record: processes and mounts naming its
 * directory, its bridge and the veths attached to it, iptables rules carrying its CNI network name, its cgroups, its
 * shim sockets and socket directory.
 */
function ours(s: HostSnapshot, r: NodeRecord, veths: string[], shimSockets: string[]) {
  const state = r.dir;
  let chains: string[] = [];
  for (const tool of ['iptables-save', 'ip6tables-save'])
    chains = chains.concat(
      execFileSync(tool, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
        .split('\n')
        .filter((l) => l.includes(`name: \\"${r.network}\\"`)),
    );
  return {
    processes: s.processes.filter((p) => p.includes(state)),
    mounts: s.mounts.filter((m) => m.startsWith(state)),
    links: s.links.filter((l) => l === r.bridge || veths.includes(l)),
    chains,
    cgroups: cgroupMounts()
      .map((m) => join(m, r.cgroupRoot))
      .filter((d) => existsSync(d)),
    paths: [...shimSockets, ...(r.shimSocketDir ? [r.shimSocketDir] : [])].filter((f) => existsSync(f)),
  };
}

/**
 * expectHostAsBefore checks, after a stop, that nothing of the node is left (ours(...) empty), that no process names
 * the state directory, and, when no other checkout's real nodes ran meanwhile, that the whole host snapshot equals the
 * first of earlier (taken before the start); the others of earlier only tell whether foreign nodes ran.
 */
async function expectHostAsBefore(
  state: string,
  earlier: HostSnapshot[],
  record: NodeRecord,
  veths: string[],
  shimSockets: string[],
): Promise<void> {
  const after = await hostSnapshot(join(nodeToolchainDir(), 'bin'));
  expect(ours(after, record, veths, shimSockets)).toEqual({
    processes: [],
    mounts: [],
    links: [],
    chains: [],
    cgroups: [],
    paths: [],
  });
  // other checkouts' real nodes may run on this host too; without them the whole host must be as it was
  const foreign = [...earlier, after].some((x) => x.processes.some((p) => !p.includes(state)));
  if (foreign) process.stdout.write('other real nodes ran on this host: compared only what belongs to this node\n');
  else expect(snapshotDiff(earlier[0]!, after)).toEqual({});
  const stray = await execP('pgrep', ['-f', state])
    .then((r) => r.stdout.trim())
    .catch(() => '');
  expect(stray).toBe('');
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.skipIf(!!skip)('vc down after kill -9 of vc up with a real node', () => {
  let dir: string;
  let state: string;
  let before: HostSnapshot;
  let upPid = 0;
  const binDir = join(nodeToolchainDir(), 'bin');
  const vc = async (...args: string[]) =>
    (await execP(process.execPath, [vcBin, ...args], { timeout: 600_000, env: { ...process.env } })).stdout;
  const kubectl = async (kubeconfig: string, input: string | undefined, ...args: string[]) => {
    const child = execP(binaryPath('kubectl'), ['--kubeconfig', kubeconfig, ...args], { timeout: 60_000 });
    if (input !== undefined) child.child.stdin!.end(input);
    return (await child).stdout;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-kill-'));
    state = join(dir, 'state');
    // another checkout's real nodes may run: wait for the host lock to be free rather than fall back to kwok
    const deadline = Date.now() + 30 * 60_000;
    for (;;) {
      while ((await hostLockHeld()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2000));
      before = await hostSnapshot(binDir);
      try {
        await vc('up', '--detach', '--state-dir', state, '--nodes', '1', '--real-nodes', '1');
        break;
      } catch (e) {
        const log = existsSync(join(state, 'up.log')) ? readFileSync(join(state, 'up.log'), 'utf8') : '';
        if (!/another set of real nodes/.test(`${String(e)}${log}`) || Date.now() > deadline) throw e;
      }
    }
  }, 35 * 60_000);

  afterAll(async () => {
    if (upPid && alive(upPid)) process.kill(upPid, 'SIGKILL');
    await vc('down', '--state-dir', state).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves nothing behind', async () => {
    const status = JSON.parse(readFileSync(join(state, 'status.json'), 'utf8')) as {
      pid: number;
      superKubeconfig: string;
    };
    upPid = status.pid;
    const kc = status.superKubeconfig;
    await kubectl(kc, pod('plain'), 'create', '-f', '-');
    if (existsSync(join(binDir, 'runsc'))) {
      await kubectl(
        kc,
        JSON.stringify({
          apiVersion: 'node.k8s.io/v1',
          kind: 'RuntimeClass',
          metadata: { name: 'gvisor' },
          handler: 'runsc',
        }),
        'create',
        '-f',
        '-',
      );
      await kubectl(kc, pod('sandboxed', 'gvisor'), 'create', '-f', '-');
    }
    await eventually(
      async () => {
        const phases = await kubectl(
          kc,
          undefined,
          'get',
          'pods',
          '-n',
          'default',
          '-o',
          'jsonpath={.items[*].status.phase}',
        );
        expect(phases.split(' ').every((p) => p === 'Running')).toBe(true);
      },
      120_000,
      1000,
    );

    const nodeDir = join(state, 'nodes', 'super-real-0');
    const record = readNodeRecord(nodeDir)!;
    const tasksDir = join(record.dir, 'containerd/state/io.containerd.runtime.v2.task/k8s.io');
    const shimSockets = readdirSync(tasksDir).map(
      (id) => `/run/containerd/s/${shimSocketName(record.containerdSock, 'k8s.io', id)}`,
    );
    process.kill(upPid, 'SIGKILL');
    await eventually(() => expect(alive(upPid)).toBe(false), 10_000);
    // the components die with their parent; the shims, containers and everything on the host stay
    const killed = await eventually(async () => {
      const s = await hostSnapshot(binDir);
      expect(s.processes.filter((p) => p.includes(state) && /bin\/(kubelet|containerd|kube-proxy) /.test(p))).toEqual(
        [],
      );
      return s;
    }, 15_000);
    const veths = (await execP('ip', ['-o', 'link', 'show', 'master', record.bridge])).stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => /^\d+: ([^:@]+)/.exec(l)![1]!);
    const left = ours(killed, record, veths, shimSockets);
    expect(left.processes.some((p) => /containerd-shim/.test(p))).toBe(true);
    expect(left.links.length).toBeGreaterThan(1);
    expect(left.mounts.length).toBeGreaterThan(0);
    expect(left.chains.length).toBeGreaterThan(0);
    expect(left.cgroups.length).toBeGreaterThan(0);

    const t0 = Date.now();
    await vc('down', '--state-dir', state);
    process.stdout.write(`vc down after kill -9 took ${Date.now() - t0} ms\n`);
    await expectHostAsBefore(state, [before, killed], record, veths, shimSockets);
  }, 300_000);
});

describe.skipIf(!!skip)('Ctrl-C of a foreground vc up with a real node', () => {
  let dir: string;
  let state: string;
  const binDir = join(nodeToolchainDir(), 'bin');
  let child: ReturnType<typeof spawn> | undefined;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'vc-ctrlc-'));
    state = join(dir, 'state');
  });

  afterAll(async () => {
    if (child?.pid && alive(child.pid)) process.kill(-child.pid, 'SIGKILL');
    await execP(process.execPath, [vcBin, 'down', '--state-dir', state], { timeout: 300_000 }).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('stops every process, mount, link, rule and cgroup it started, with the container running', async () => {
    const deadline = Date.now() + 30 * 60_000;
    while ((await hostLockHeld()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2000));
    const before = await hostSnapshot(binDir);
    // its own process group, as a shell gives a foreground job: Ctrl-C reaches the group, not only vc up
    child = spawn(process.execPath, [vcBin, 'up', '--state-dir', state, '--nodes', '1', '--real-nodes', '1'], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const closed = once(child, 'close');
    await eventually(
      () => {
        expect(child!.exitCode, out).toBeNull();
        expect(out).toContain('press Ctrl-C to stop everything');
      },
      600_000,
      500,
    );
    const status = JSON.parse(readFileSync(join(state, 'status.json'), 'utf8')) as { superKubeconfig: string };
    const kc = status.superKubeconfig;
    const create = execP(binaryPath('kubectl'), ['--kubeconfig', kc, 'create', '-f', '-'], { timeout: 60_000 });
    create.child.stdin!.end(pod('held'));
    await create;
    await eventually(
      async () => {
        const r = await execP(binaryPath('kubectl'), [
          '--kubeconfig',
          kc,
          'get',
          'pod',
          'held',
          '-o',
          'jsonpath={.status.phase}',
        ]);
        expect(r.stdout).toBe('Running');
      },
      120_000,
      1000,
    );
    const record = readNodeRecord(join(state, 'nodes', 'super-real-0'))!;
    const veths = (await execP('ip', ['-o', 'link', 'show', 'master', record.bridge])).stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => /^\d+: ([^:@]+)/.exec(l)![1]!);
    const running = ours(await hostSnapshot(binDir), record, veths, []);
    expect(running.processes.some((p) => /containerd-shim/.test(p))).toBe(true);
    expect(running.mounts.length).toBeGreaterThan(0);
    expect(running.chains.length).toBeGreaterThan(0);

    process.kill(-child.pid!, 'SIGINT');
    const [code] = (await closed) as [number | null];
    expect(out).toContain('stopping ...');
    expect(code, out).toBe(0);
    expect(existsSync(join(state, 'status.json'))).toBe(false);
    await expectHostAsBefore(state, [before], record, veths, []);
    expect(await hostLockHeld()).toBe(false);
  }, 900_000);
});
