/**
 * Hostile tests of the workload boundary on the embedded default (`vc up --detach`), as T (cluster-admin of its own
 * tenant apiserver): every super node there is simulated by kwok, which would run an exec command on this host as the
 * user that started `vc up`. exec, attach and port-forward to a tenant Pod must be refused with a reason kubectl
 * shows, and a file the command would create on the host must not appear. Also checked: the super cluster's own
 * kwok runs no exec either (defence in depth, under the vn-agent's refusal).
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { freePorts } from '../../core/dev/local/process.ts';
import { eventually } from '../harness.ts';
import { Attempts } from './attempts.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');

interface Status {
  superKubeconfig: string;
  tenants: Array<{ name: string; phase: string; kubeconfig?: string }>;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** kubectl runs the real kubectl and returns how it ended; it is killed (and says so) after timeoutMs. */
function kubectl(kubeconfig: string, args: string[], timeoutMs = 60_000): Promise<Run> {
  const child = spawn(binaryPath('kubectl'), ['--kubeconfig', kubeconfig, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const timer = setTimeout(() => {
    stderr += `\n(killed after ${timeoutMs} ms)`;
    child.kill('SIGKILL');
  }, timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/** refusal checks that a kubectl run failed without output, and returns the reason line it printed. */
function refusal(r: Run, reason: RegExp): string {
  expect(r.code).not.toBe(0);
  expect(r.stdout).not.toMatch(/uid=|Forwarding from/);
  const line = r.stderr.split('\n').find((l) => reason.test(l));
  expect(line, r.stderr).toBeDefined();
  return line!.trim();
}

describe('security: the workload boundary on simulated nodes (exec, attach, port-forward)', () => {
  const attempts = new Attempts();
  let dir: string;
  let state: string;
  let dev: string;
  let superKubeconfig: string;
  let pod: string;
  const vc = async (...args: string[]) =>
    (await execP(process.execPath, [vcBin, ...args], { timeout: 600_000 })).stdout;
  const simulated = (verb: string) =>
    new RegExp(`${verb} is not available: pod default/${pod} runs on simulated node \\S+ \\(no container runtime\\)`);
  const marker = (name: string) => join(dir, `${name}-ran-on-host`);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-workload-'));
    state = join(dir, 'state');
    await vc('up', '--detach', '--state-dir', state, '--real-nodes', '0');
    const s = await eventually(async () => {
      const x = JSON.parse(await vc('status', '--state-dir', state, '-o', 'json')) as Status;
      const d = x.tenants.find((t) => t.name === 'dev');
      expect(d?.phase).toBe('Running');
      return { superKubeconfig: x.superKubeconfig, dev: d!.kubeconfig! };
    }, 120_000);
    dev = s.dev;
    superKubeconfig = s.superKubeconfig;
    pod = 'web-0';
    await eventually(
      async () => expect((await kubectl(dev, ['get', 'serviceaccount', 'default'])).code).toBe(0),
      60_000,
    );
    const run = await kubectl(dev, ['run', pod, '--image=busybox', '--restart=Never', '--', 'sleep', '3600']);
    expect(run.stderr).toBe('');
    await eventually(
      async () =>
        expect((await kubectl(dev, ['get', 'pod', pod, '-o', 'jsonpath={.status.phase}'])).stdout).toBe('Running'),
      120_000,
    );
  });

  afterAll(async () => {
    await vc('down', '--state-dir', state).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    attempts.report('workload boundary');
  });

  it('T: kubectl exec -- id is refused with the reason', async () => {
    const why = await attempts.attempt('kubectl exec -- id', async () =>
      refusal(await kubectl(dev, ['exec', pod, '--', 'id']), simulated('exec')),
    );
    expect(why).toMatch(/no container runtime/);
  });

  it('T: kubectl exec -- cat /etc/hostname is refused, and a command creating a file leaves nothing on the host', async () => {
    await attempts.attempt('kubectl exec -- cat /etc/hostname', async () =>
      refusal(await kubectl(dev, ['exec', pod, '--', 'cat', '/etc/hostname']), simulated('exec')),
    );
    await attempts.attempt('kubectl exec -- touch <host file>', async () => {
      const why = refusal(
        await kubectl(dev, ['exec', pod, '--', 'sh', '-c', `touch ${marker('exec')}`]),
        simulated('exec'),
      );
      expect(existsSync(marker('exec'))).toBe(false);
      return why;
    });
  });

  it('T: kubectl attach is refused with the reason', async () => {
    await attempts.attempt('kubectl attach', async () =>
      refusal(await kubectl(dev, ['attach', pod, '-i'], 30_000), simulated('attach')),
    );
  });

  it('T: kubectl port-forward is refused with the reason', async () => {
    await attempts.attempt('kubectl port-forward', async () => {
      // kubectl may listen before it opens the tunnel; a connection then carries the refusal and kubectl exits.
      const [local] = await freePorts(1);
      const pf = kubectl(dev, ['port-forward', `pod/${pod}`, `${local}:22`], 30_000);
      const poke = setInterval(
        () =>
          net
            .connect(local, '127.0.0.1')
            .on('error', () => undefined)
            .on('connect', function (this: net.Socket) {
              this.end('x');
            }),
        500,
      );
      try {
        return refusal(await pf, simulated('port-forward'));
      } finally {
        clearInterval(poke);
      }
    });
  });

  it("the super cluster's kwok runs no exec on the host either (no ClusterExec)", async () => {
    await attempts.attempt('super admin kubectl exec straight to kwok', async () => {
      const ns = (
        await kubectl(superKubeconfig, [
          'get',
          'pods',
          '-A',
          '-l',
          `run=${pod}`,
          '-o',
          'jsonpath={.items[0].metadata.namespace}',
        ])
      ).stdout;
      expect(ns).toMatch(/-dev-default$/);
      const r = await kubectl(superKubeconfig, ['exec', '-n', ns, pod, '--', 'sh', '-c', `touch ${marker('kwok')}`]);
      expect(r.code).not.toBe(0);
      expect(existsSync(marker('kwok'))).toBe(false);
      return r.stderr.trim().split('\n').pop()!;
    });
  });

  it('prints attempts N, refused N, succeeded 0', () => {
    expect(attempts.summary()).toBe(
      `attempts ${attempts.records.length}, refused ${attempts.records.length}, succeeded 0`,
    );
    expect(attempts.records.length).toBe(6);
  });
});
