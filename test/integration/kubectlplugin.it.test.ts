import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');

// `kubectl vc ...` as a user runs it: the real kubectl of the toolchain finds `kubectl-vc` on PATH (npm links the
// package's bin there) and runs it; `node` on that PATH is this Node, as an npm install would find its own.
describe('kubectl vc: the CLI as a kubectl plugin, against a real apiserver', () => {
  let t: TestSuper;
  let bin: string;
  let env: NodeJS.ProcessEnv;

  async function kubectl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const r = await execP(binaryPath('kubectl'), args, { env, timeout: 120_000 });
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (e) {
      const x = e as { code?: number; stdout?: string; stderr?: string };
      return { code: typeof x.code === 'number' ? x.code : 1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
    }
  }

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 0 });
    const crd = readFileSync(join(import.meta.dirname, '../../deploy/crds/virtualclusters.yaml'), 'utf8');
    for (const d of parseAllDocuments(crd)) await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    await eventually(() => t.client.list(R.virtualclusters));
    await t.client.create(R.namespaces, { metadata: { name: 'team-a' } });
    for (const [ns, name] of [
      ['default', 'dev'],
      ['team-a', 'prod'],
    ] as const)
      await t.client.create(R.virtualclusters, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { namespace: ns, name },
        spec: { provisioner: { type: 'local' } },
      });
    bin = mkdtempSync(join(tmpdir(), 'vc-kubectl-plugin-'));
    symlinkSync(vcBin, join(bin, 'kubectl-vc'));
    symlinkSync(process.execPath, join(bin, 'node'));
    env = {
      ...process.env,
      PATH: `${bin}${delimiter}${process.env.PATH}`,
      KUBECONFIG: t.sc.kubeconfigPath,
      HOME: bin,
    };
    delete env.VC_KUBECONFIG;
  });

  afterAll(async () => {
    await t?.stop();
    if (bin) rmSync(bin, { recursive: true, force: true });
  });

  it('kubectl lists vc as a plugin', async () => {
    const r = await kubectl(['plugin', 'list', '--name-only']);
    expect(r.stdout.split('\n')).toContain('kubectl-vc');
  });

  it('kubectl vc get lists the VirtualClusters of every namespace, and -n narrows it', async () => {
    const all = await kubectl(['vc', 'get']);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toMatch(/^NAMESPACE\s+NAME\s+PHASE/);
    expect(all.stdout).toMatch(/\ndefault\s+dev\s+Pending\s+-\s+local/);
    expect(all.stdout).toMatch(/\nteam-a\s+prod\s+Pending\s+-\s+local/);
    const one = await kubectl(['vc', 'get', '-n', 'team-a', '-o', 'name']);
    expect(one.stdout).toBe('virtualcluster.tenancy.x-k8s.io/prod\n');
  });

  it.each([
    '{.items[*].metadata.name}',
    '{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}',
    '{.items[?(@.metadata.namespace=="team-a")].spec.provisioner.type}',
    '{.kind} {.items[0].kind} {.items[-1:].apiVersion}',
  ])('kubectl vc get -o jsonpath=%s prints what kubectl get prints', async (template) => {
    const ours = await kubectl(['vc', 'get', '-o', `jsonpath=${template}`]);
    const theirs = await kubectl(['get', 'virtualclusters', '-A', '-o', `jsonpath=${template}`]);
    expect(theirs.code, theirs.stderr).toBe(0);
    expect(ours.code, ours.stderr).toBe(0);
    expect(ours.stdout).toBe(theirs.stdout);
    expect(ours.stdout).not.toBe('');
  });

  it('kubectl vc get NAME -o json shows the object as kubectl get does', async () => {
    const ours = await kubectl(['vc', 'get', 'prod', '-n', 'team-a', '-o', 'json']);
    const theirs = await kubectl(['get', 'virtualcluster', 'prod', '-n', 'team-a', '-o', 'json']);
    const strip = (s: string) => {
      const o = JSON.parse(s) as { metadata: Record<string, unknown> };
      delete o.metadata.managedFields;
      return o;
    };
    expect(strip(ours.stdout)).toEqual(strip(theirs.stdout));
  });

  it('a missing VirtualCluster is one line naming it and what to do, exit code 1', async () => {
    const r = await kubectl(['vc', 'get', 'nope', '-n', 'team-a']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('vc: VirtualCluster team-a/nope not found: list them with `vc get`, or pass -n NAMESPACE\n');
  });
});
