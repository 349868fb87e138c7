import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { parse, parseAllDocuments, stringify } from 'yaml';
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

  async function kubectl(
    args: string[],
    envOverride: NodeJS.ProcessEnv = env,
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const r = await execP(binaryPath('kubectl'), args, { env: envOverride, timeout: 120_000 });
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

  it('kubectl vc version prints the client and the installed manager, read from its Deployment', async () => {
    const client = await kubectl(['vc', 'version', '-o', 'json']);
    expect(JSON.parse(client.stdout)).toMatchObject({ managerError: expect.stringMatching(/vc-system\/vc-manager/) });
    const deployments = {
      group: 'apps',
      version: 'v1',
      resource: 'deployments',
      kind: 'Deployment',
      namespaced: true,
    } as const;
    const image = 'registry.example:5000/platform/virtualcluster-ts@sha256:' + 'c'.repeat(64);
    await t.client.create(R.namespaces, { metadata: { name: 'vc-system' } });
    await t.client.create(deployments, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { namespace: 'vc-system', name: 'vc-manager', labels: { 'app.kubernetes.io/version': '0.1.0' } },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'vc-manager' } },
        template: {
          metadata: { labels: { app: 'vc-manager' } },
          spec: { containers: [{ name: 'manager', image }] },
        },
      },
    } as KubeObject);
    const json = await kubectl(['vc', 'version', '-o', 'json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      clientVersion: expect.stringMatching(/^\d+\.\d+\.\d+/),
      manager: { version: '0.1.0', image, namespace: 'vc-system' },
    });
    const text = await kubectl(['vc', 'version']);
    expect(text.stdout).toMatch(
      new RegExp(`^Client Version: \\S+\\nManager Version: 0\\.1\\.0 \\(${image.replace(/\./g, '\\.')}\\)\\n$`),
    );
  });

  describe('which cluster, as kubectl picks it', () => {
    // A kubeconfig whose current context names a server nothing listens on, and a second context, `super`, naming
    // the real apiserver: only --context super reaches it.
    let twoContexts: string;
    beforeAll(() => {
      const real = parse(readFileSync(t.sc.kubeconfigPath, 'utf8')) as {
        clusters: Array<{ name: string; cluster: Record<string, unknown> }>;
        contexts: Array<{ name: string; context: { cluster: string; user: string } }>;
        users: Array<{ name: string; user: Record<string, unknown> }>;
        'current-context': string;
      };
      const ctx = real.contexts.find((c) => c.name === real['current-context'])!.context;
      const cluster = real.clusters.find((c) => c.name === ctx.cluster)!.cluster;
      const user = real.users.find((u) => u.name === ctx.user)!.user;
      twoContexts = join(bin, 'two-contexts.kubeconfig');
      writeFileSync(
        twoContexts,
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [
            { name: 'nowhere', cluster: { server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true } },
            { name: 'real', cluster },
          ],
          users: [{ name: 'admin', user }],
          contexts: [
            { name: 'elsewhere', context: { cluster: 'nowhere', user: 'admin' } },
            { name: 'super', context: { cluster: 'real', user: 'admin' } },
          ],
          'current-context': 'elsewhere',
        }),
        { mode: 0o600 },
      );
    });

    it('--context picks a context other than the current one', async () => {
      const r = await kubectl(['vc', 'get', '-o', 'name', '--kubeconfig', twoContexts, '--context', 'super']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.split('\n').filter(Boolean).sort()).toEqual([
        'virtualcluster.tenancy.x-k8s.io/dev',
        'virtualcluster.tenancy.x-k8s.io/prod',
      ]);
      const current = await kubectl(['vc', 'get', '--kubeconfig', twoContexts]);
      expect(current.code).toBe(1);
      expect(current.stderr.split('\n').filter(Boolean)).toHaveLength(1);
      expect(current.stderr).toMatch(/^vc: .*127\.0\.0\.1:1/);
    });

    it('a context the kubeconfig lacks is one line naming it, exit code 1', async () => {
      const r = await kubectl(['vc', 'get', '--kubeconfig', twoContexts, '--context', 'nope']);
      expect(r.code).toBe(1);
      expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
      expect(r.stderr).toMatch(/^vc: .*nope/);
    });

    it('--kubeconfig wins over KUBECONFIG, and ~/.kube/config serves when neither is given', async () => {
      const over = await kubectl(['vc', 'get', '--kubeconfig', twoContexts], {
        ...env,
        KUBECONFIG: t.sc.kubeconfigPath,
      });
      expect(over.code).toBe(1);
      expect(over.stderr).toMatch(/127\.0\.0\.1:1/);
      const home = mkdtempSync(join(bin, 'home-'));
      mkdirSync(join(home, '.kube'));
      writeFileSync(join(home, '.kube', 'config'), readFileSync(t.sc.kubeconfigPath), { mode: 0o600 });
      const noEnv: NodeJS.ProcessEnv = { ...env, HOME: home };
      delete noEnv.KUBECONFIG;
      const fromHome = await kubectl(['vc', 'get', '-n', 'team-a', '-o', 'name'], noEnv);
      expect(fromHome.code, fromHome.stderr).toBe(0);
      expect(fromHome.stdout).toBe('virtualcluster.tenancy.x-k8s.io/prod\n');
    });
  });
});
