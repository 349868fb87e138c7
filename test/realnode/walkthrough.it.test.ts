import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../git/server.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually } from '../harness.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');

interface Status {
  pid: number;
  superKubeconfig: string;
  gitURL: string;
  tenants: Array<{ namespace: string; name: string; phase: string; kubeconfig?: string }>;
}

/**
 * The README walkthrough, run as a newcomer would against `vc up --detach`: tenants from the sample repository,
 * a pushed tenant definition, kubectl into a tenant, a Deployment Running on vNodes and in prefixed super
 * namespaces, kubectl logs through the vn-agent and exec refused on a simulated node, then `vc down` leaving no process.
 */
describe('README walkthrough against vc up --detach', () => {
  let dir: string;
  let state: string;
  const vc = async (...args: string[]) =>
    (await execP(process.execPath, [vcBin, ...args], { timeout: 600_000, env: { ...process.env } })).stdout;
  const status = async () => JSON.parse(await vc('status', '--state-dir', state, '-o', 'json')) as Status;
  const kubectl = async (kubeconfig: string, ...args: string[]) =>
    (await execP(binaryPath('kubectl'), ['--kubeconfig', kubeconfig, ...args], { timeout: 60_000 })).stdout;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-walkthrough-'));
    state = join(dir, 'state');
    await vc('up', '--detach', '--state-dir', state);
  });

  afterAll(async () => {
    const s = await status().catch(() => undefined);
    await vc('down', '--state-dir', state).catch(() => undefined);
    if (s) expect(() => process.kill(s.pid, 0)).toThrow();
    const left = await execP('pgrep', ['-f', state])
      .then((r) => r.stdout.trim())
      .catch(() => '');
    expect(left).toBe('');
    rmSync(dir, { recursive: true, force: true });
  });

  it('comes up with the two sample tenants Running', async () => {
    const s = await eventually(async () => {
      const x = await status();
      expect(
        x.tenants
          .filter((t) => t.phase === 'Running')
          .map((t) => t.name)
          .sort(),
      ).toEqual(['dev', 'staging']);
      return x;
    }, 120_000);
    expect(s.gitURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/tenants\.git$/);
  });

  it('creates a tenant pushed to the tenant repository', async () => {
    const s = await status();
    const work = join(dir, 'tenants');
    await git(dir, ['clone', '-q', s.gitURL, work]);
    writeFileSync(
      join(work, 'tenants/qa.yaml'),
      'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: VirtualCluster\nmetadata:\n  name: qa\n  namespace: default\nspec:\n  provisioner:\n    type: local\n',
    );
    await git(work, ['add', '.']);
    await git(work, ['commit', '-qm', 'add qa']);
    await git(work, ['push', '-q', 'origin', 'main']);
    await eventually(
      async () => expect((await status()).tenants.find((t) => t.name === 'qa')?.phase).toBe('Running'),
      120_000,
    );
  });

  it('runs a Deployment in a tenant: Running on vNodes, and under the prefixed namespace in the super cluster', async () => {
    const s = await status();
    const dev = s.tenants.find((t) => t.name === 'dev')!.kubeconfig!;
    await kubectl(dev, 'create', 'deployment', 'web', '--image=nginx', '--replicas=2');
    await eventually(async () => {
      const out = await kubectl(
        dev,
        'get',
        'pods',
        '-l',
        'app=web',
        '-o',
        'jsonpath={range .items[*]}{.status.phase} {.spec.nodeName}{"\\n"}{end}',
      );
      const lines = out.trim().split('\n');
      expect(lines).toHaveLength(2);
      for (const l of lines) expect(l).toMatch(/^Running super-node-\d$/);
    }, 120_000);
    const nodes = await kubectl(dev, 'get', 'nodes', '-o', 'name');
    expect(nodes).toMatch(/node\/super-node-\d/);
    const inSuper = await kubectl(
      s.superKubeconfig,
      'get',
      'pods',
      '-A',
      '-l',
      'app=web',
      '-o',
      'jsonpath={range .items[*]}{.metadata.namespace}{"\\n"}{end}',
    );
    for (const ns of inSuper.trim().split('\n')) expect(ns).toMatch(/^vc-[0-9a-f]{16}-default-dev-default$/);
  });

  it('serves kubectl logs through the vn-agent, and refuses exec on a simulated node with the reason', async () => {
    const dev = (await status()).tenants.find((t) => t.name === 'dev')!.kubeconfig!;
    const pod = (await kubectl(dev, 'get', 'pods', '-l', 'app=web', '-o', 'jsonpath={.items[0].metadata.name}')).trim();
    await eventually(async () => expect((await kubectl(dev, 'logs', pod)).length).toBeGreaterThan(0), 60_000);
    const refused = await kubectl(dev, 'exec', pod, '--', 'echo', 'hello-from-tenant').then(
      (out) => ({ out, stderr: '' }),
      (e: { stdout: string; stderr: string }) => ({ out: e.stdout, stderr: e.stderr }),
    );
    expect(refused.out).toBe('');
    expect(refused.stderr).toMatch(
      new RegExp(
        `exec is not available: pod default/${pod} runs on simulated node super-node-\\d \\(no container runtime\\)`,
      ),
    );
  });
});
