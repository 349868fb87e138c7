import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import type { VcResult } from '../vccli.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');

/** vc runs the CLI as a user would, returning its exit code and output instead of throwing. */
async function vc(args: string[], env: Record<string, string> = {}): Promise<VcResult> {
  try {
    const r = await execP(process.execPath, [vcBin, ...args], { env: { ...process.env, ...env }, timeout: 180_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : 1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

/**
 * vcSaying runs the CLI as vc does and also tells when its standard error first matches `said`: a test starts what the
 * command waits for only once the command has said that it waits (its process takes seconds to start on a busy host).
 */
function vcSaying(args: string[], said: RegExp): { said: Promise<void>; done: Promise<VcResult> } {
  const child = spawn(process.execPath, [vcBin, ...args], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 180_000 });
  let stdout = '';
  let stderr = '';
  let saw: () => void = () => {};
  const saidP = new Promise<void>((resolve) => (saw = resolve));
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (said.test(stderr)) saw();
  });
  const done = new Promise<VcResult>((resolve) =>
    child.on('close', (code) => {
      saw();
      resolve({ code: code ?? 1, stdout, stderr });
    }),
  );
  return { said: saidP, done };
}

describe('vc CLI against a manager on a real super cluster', () => {
  let t: TestSuper;
  let dir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  let makeController: () => VirtualClusterController;
  let kc: string[];

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    for (const f of ['virtualclusters.yaml', 'clusterversions.yaml', 'tenantpolicies.yaml']) {
      const text = readFileSync(join(import.meta.dirname, '../../deploy/crds', f), 'utf8');
      for (const d of parseAllDocuments(text)) await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    }
    await eventually(() => t.client.list(R.virtualclusters));
    dir = mkdtempSync(join(tmpdir(), 'vc-cli-'));
    local = new LocalProvisioner(join(dir, 'tenants'), t.sc.etcd);
    makeController = () =>
      new VirtualClusterController({
        meta: t.client,
        superClient: t.client,
        provisioners: { local },
        tenants: new MutableTenantRegistry(),
      });
    controller = makeController();
    await controller.start();
    kc = ['--kubeconfig', t.sc.kubeconfigPath];
  });

  afterAll(async () => {
    await controller?.stop();
    await local?.stop();
    await t?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates a VirtualCluster, waits for Running with progress, and writes a kubeconfig kubectl can use', async () => {
    const file = join(dir, 'dev.yaml');
    writeFileSync(
      file,
      'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: VirtualCluster\nmetadata:\n  name: dev\nspec:\n  provisioner:\n    type: local\n',
    );
    const out = join(dir, 'dev.kubeconfig');
    const r = await vc(['create', '-f', file, '--kubeconfig-out', out, ...kc]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/default\/dev Provisioning/);
    expect(r.stderr).toMatch(/default\/dev Running/);
    const ns = await execP(binaryPath('kubectl'), ['--kubeconfig', out, 'get', 'namespaces', '-o', 'name']);
    expect(ns.stdout).toContain('namespace/kube-system');
  });

  it('lists and shows VirtualClusters as a table, JSON and YAML', async () => {
    const table = await vc(['get', ...kc]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^NAMESPACE\s+NAME\s+PHASE\s+HEALTH\s+PROVISIONER/m);
    // HEALTH is `-` until the manager's first probe of the tenant is in status, then Healthy.
    expect(table.stdout).toMatch(/^default\s+dev\s+Running\s+(Healthy|-)\s+local\s+vc-[0-9a-f]{16}-default-dev\s/m);
    const json = await vc(['get', 'dev', '-o', 'json', ...kc]);
    expect(JSON.parse(json.stdout)).toMatchObject({ kind: 'VirtualCluster', status: { phase: 'Running' } });
    const yaml = await vc(['get', 'dev', '-o', 'yaml', ...kc]);
    expect(yaml.stdout).toMatch(/phase: Running/);
    const list = JSON.parse((await vc(['get', '-o', 'json', ...kc])).stdout) as { kind: string; items: unknown[] };
    expect(list).toMatchObject({ apiVersion: 'v1', kind: 'List' });
    expect(list.items[0]).toMatchObject({ kind: 'VirtualCluster', metadata: { name: 'dev' } });
    expect((await vc(['get', '-o', 'name', ...kc])).stdout).toBe('virtualcluster.tenancy.x-k8s.io/dev\n');
    // describe shows the status's components (after the controller's first probe) and the Running event: wait for
    // both through the API, then run the command once, since every run is a process of its own (about a CPU-second).
    await eventually(async () => {
      const v = await t.client.get<VirtualCluster>(R.virtualclusters, 'default', 'dev');
      expect(v.status?.components?.find((c) => c.name === 'kube-apiserver')?.healthy).toBe(true);
      const events = await t.client.list<KubeObject & { reason?: string; involvedObject?: { name?: string } }>(
        R.events,
        { namespace: 'default' },
      );
      expect(events.items.some((e) => e.reason === 'Running' && e.involvedObject?.name === 'dev')).toBe(true);
    }, 30_000);
    const d = await vc(['describe', 'dev', ...kc]);
    expect(d.stdout, d.stderr).toMatch(/^Phase:\s+Running$/m);
    expect(d.stdout).toMatch(/^ {2}kube-apiserver\s+true\s+0\s+v1\.\d+/m);
    expect(d.stdout).toMatch(/^ {2}Normal\s+Running\s/m);
    const described = JSON.parse((await vc(['describe', 'dev', '-o', 'json', ...kc])).stdout) as {
      components: unknown[];
    };
    expect(described.components).toContainEqual(expect.objectContaining({ name: 'etcd', healthy: true }));
    // KUBECONFIG is a list, as kubectl reads it; a file that does not exist is skipped.
    const viaEnv = await vc(['get', 'dev', '-o', 'name'], {
      KUBECONFIG: `${join(dir, 'gone')}:${t.sc.kubeconfigPath}`,
    });
    expect(viaEnv.stdout, viaEnv.stderr).toBe('virtualcluster.tenancy.x-k8s.io/dev\n');
  });

  it('prints the kubeconfig and runs a command with it', async () => {
    const k = await vc(['kubeconfig', 'dev', ...kc]);
    expect(k.stdout).toMatch(/^apiVersion: v1/m);
    const tmp = mkdtempSync(join(dir, 'tmp-'));
    const e = await vc(['exec', 'dev', ...kc, '--', 'kubectl', 'get', 'namespace', 'default', '-o', 'name'], {
      TMPDIR: tmp,
    });
    expect(e.code, e.stderr).toBe(0);
    expect(e.stdout.trim()).toBe('namespace/default');
    // The tenant's admin kubeconfig is gone once the command ended (exec.test.ts covers Ctrl-C and SIGTERM).
    expect(readdirSync(tmp).filter((f) => f.startsWith('vc-exec-'))).toEqual([]);
    const v = await vc(['version', '-o', 'json', ...kc]);
    expect(v.code, v.stderr).toBe(0);
    expect(JSON.parse(v.stdout)).toMatchObject({
      clientVersion: expect.stringMatching(/^\d+\.\d+\.\d+/),
      managerError: 'no Deployment vc-system/vc-manager (install one with vc install)',
    });
  });

  it('rewrites the server for a front door the platform runs, keeping the tenant CA and credentials', async () => {
    const own = await vc(['kubeconfig', 'dev', ...kc]);
    const target = new URL(/server: (\S+)/.exec(own.stdout)![1]!);
    // The platform's front door: a TCP pass-through on another port of this host, in front of the tenant apiserver.
    const door = createServer((c) => {
      const up = connect(Number(target.port), target.hostname);
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => door.listen(0, '127.0.0.1', r));
    try {
      const server = `https://127.0.0.1:${(door.address() as AddressInfo).port}`;
      // as docs/operations/install.md writes it: the tenant's namespace, the front door's address
      const k = await vc([
        'kubeconfig',
        'dev',
        '-n',
        'default',
        '--server',
        server,
        '--kubeconfig',
        t.sc.kubeconfigPath,
      ]);
      expect(k.code, k.stderr).toBe(0);
      expect(k.stdout).toContain(`server: ${server}\n`);
      expect(k.stdout.replace(/server: \S+/, '')).toBe(own.stdout.replace(/server: \S+/, ''));
      const file = join(dir, 'front-door.kubeconfig');
      writeFileSync(file, k.stdout, { mode: 0o600 });
      const ns = await execP(binaryPath('kubectl'), [
        '--kubeconfig',
        file,
        'get',
        'namespace',
        'default',
        '-o',
        'name',
      ]);
      expect(ns.stdout.trim()).toBe('namespace/default');
    } finally {
      await new Promise((r) => door.close(r));
    }
    const noPem = join(dir, 'not-a-ca.pem');
    writeFileSync(noPem, 'hello\n');
    for (const [args, message] of [
      [['--server', 'http://127.0.0.1:1'], /--server http:\/\/127\.0\.0\.1:1: expected an https URL with a host/],
      [['--certificate-authority', noPem], /--certificate-authority needs --server/],
      [
        ['--server', 'https://a.example.com', '--certificate-authority', noPem],
        /--certificate-authority: no PEM certificate/,
      ],
    ] as const) {
      const r = await vc(['kubeconfig', 'dev', ...args, ...kc]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(message);
    }
  });

  /** createLocal creates a VirtualCluster on the local provisioner without waiting: it is still being provisioned. */
  const createLocal = (name: string) =>
    t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name, namespace: 'default' },
      spec: { provisioner: { type: 'local' } },
    });

  it('waits, saying so, for a VirtualCluster still being provisioned before running the command', async () => {
    // No controller runs when the command starts, so the tenant is certainly not Running yet (on a busy host a running
    // controller could provision it before the command's first read); a new controller provisions it meanwhile.
    await controller.stop();
    await createLocal('late');
    const running = vcSaying(
      ['exec', 'late', ...kc, '--', 'kubectl', 'get', 'namespace', 'default', '-o', 'name'],
      /default\/late (Pending|Provisioning)/,
    );
    // The controller starts once the command has read the tenant not yet Running and said so (ci62: started while
    // the command's process was still starting on a busy host, it provisioned the tenant before the first read).
    await running.said;
    controller = makeController();
    await controller.start();
    const e = await running.done;
    expect(e.code, e.stderr).toBe(0);
    expect(e.stderr).toMatch(/default\/late (Pending|Provisioning)/);
    expect(e.stdout.trim()).toBe('namespace/default');
  });

  it('prints the kubeconfig of a VirtualCluster still being provisioned once it is written, or fails at once with --wait 0', async () => {
    // No controller runs while the first command does, so the tenant certainly has no kubeconfig yet; the second
    // command waits, and a new controller (the running tenants are adopted as they are) provisions it meanwhile.
    await controller.stop();
    await createLocal('later');
    const now = await vc(['kubeconfig', 'later', '--wait', '0', ...kc]);
    const waiting = vcSaying(['kubeconfig', 'later', ...kc], /default\/later (Pending|Provisioning)/);
    await waiting.said;
    controller = makeController();
    await controller.start();
    const k = await waiting.done;
    expect(now.code).toBe(1);
    expect(now.stderr).toMatch(/VirtualCluster default\/later has no kubeconfig yet \(phase (Pending|Provisioning)\)/);
    expect(k.code, k.stderr).toBe(0);
    expect(k.stderr).toMatch(/default\/later (Pending|Provisioning)/);
    expect(k.stdout).toMatch(/^apiVersion: v1/m);
    const bad = await vc(['kubeconfig', 'later', '--wait', 'soon', ...kc]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--wait: soon is not a number of seconds >= 0/);
  });

  it.each([
    [
      'a schema error',
      'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: VirtualCluster\nmetadata:\n  name: bad\nspec:\n  weight: 0\n',
      /bad\.yaml: VirtualCluster default\/bad: \/spec\/weight must be >= 1/,
    ],
    ['invalid YAML', 'kind: [\n', /bad\.yaml: document 1: invalid YAML/],
  ])('refuses %s with one clear line and a non-zero exit', async (_, text, want) => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, text);
    const r = await vc(['create', '-f', file, ...kc]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(want);
    expect(r.stderr.trim().split('\n')[0]).toMatch(/^vc: /);
    expect(await t.client.getOrNull(R.virtualclusters, 'default', 'bad')).toBeNull();
  });

  it('reports a missing VirtualCluster as one line and a non-zero exit', async () => {
    const r = await vc(['kubeconfig', 'nope', ...kc]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe(
      'vc: VirtualCluster default/nope not found: list them with `vc get`, or pass -n NAMESPACE',
    );
  });

  it('validates a tenant repository and shows what applying it would change, without changing anything', async () => {
    const repo = join(dir, 'repo');
    mkdirSync(join(repo, 'tenants'), { recursive: true });
    const vcDoc = (name: string, weight: number) =>
      `apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: VirtualCluster\nmetadata:\n  name: ${name}\n  ` +
      `namespace: default\nspec:\n  provisioner:\n    type: local\n  weight: ${weight}\n`;
    writeFileSync(join(repo, 'tenants/dev.yaml'), vcDoc('dev', 3));
    writeFileSync(join(repo, 'tenants/new.yaml'), vcDoc('new', 1));
    const ok = await vc(['validate', repo]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/2 object\(s\) valid/);
    // docs/guides/tenants-in-git.md: against the meta cluster's live TenantPolicies (none here: the built-in defaults)
    const live = await vc(['validate', repo, '--kubeconfig', t.sc.kubeconfigPath]);
    expect(live.code, live.stderr).toBe(0);
    expect(live.stdout).toMatch(/2 object\(s\) valid/);
    const diff = await vc(['diff', repo, '--kubeconfig', t.sc.kubeconfigPath]);
    // As kubectl diff: 1 when there are differences.
    expect(diff.code, diff.stderr).toBe(1);
    expect(diff.stdout).toContain('+ VirtualCluster default/new (tenants/new.yaml)');
    expect(diff.stdout).toMatch(/~ VirtualCluster default\/dev \(tenants\/dev\.yaml\): .*\/spec\/weight/);
    expect(await t.client.getOrNull(R.virtualclusters, 'default', 'new')).toBeNull();
    writeFileSync(join(repo, 'tenants/bad.yaml'), vcDoc('bad', 0));
    const bad = await vc(['validate', repo]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/tenants\/bad\.yaml: VirtualCluster default\/bad: \/spec\/weight must be >= 1/);
    rmSync(join(repo, 'tenants/bad.yaml'));
    const policy = join(dir, 'policy.yaml');
    writeFileSync(
      policy,
      'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: TenantPolicy\nmetadata:\n  name: small\n  annotations:\n' +
        '    tenancy.x-k8s.io/is-default-policy: "true"\nspec:\n  weight:\n    max: 2\n',
    );
    const over = await vc(['validate', repo, '--policy', policy]);
    expect(over.code).not.toBe(0);
    expect(over.stderr).toContain(
      'tenants/dev.yaml: VirtualCluster default/dev: spec.weight: weight 3 is above the ceiling 2 of policy "small" (weight.max)',
    );
    // A policy change simulated against the live tenants: the running dev (local) would be refused by a default
    // policy that allows only native control planes; nothing on the cluster changes.
    const nativeOnly = join(dir, 'native-only.yaml');
    writeFileSync(
      nativeOnly,
      'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: TenantPolicy\nmetadata:\n  name: native-only\n  annotations:\n' +
        '    tenancy.x-k8s.io/is-default-policy: "true"\nspec:\n  provisioners:\n    allowed: [native]\n',
    );
    const sim = await vc(['validate', '--existing', '--policy', nativeOnly, ...kc]);
    expect(sim.code, sim.stderr).toBe(1);
    expect(sim.stdout).toMatch(
      /^VirtualCluster default\/dev: would be refused\n {2}spec\.provisioner\.type: .*native-only/m,
    );
    // Every tenant here (dev and those the tests above made) is local, so each one would be refused.
    expect(sim.stdout).toMatch(
      /(\d) tenant\(s\) checked: \1 would be newly refused, 0 stay refused, 0 would be admitted/,
    );
    expect(await t.client.list(R.tenantpolicies)).toMatchObject({ items: [] });
    const fine = await vc(['validate', '--existing', '--policy', policy, ...kc]);
    expect(fine.code, fine.stdout).toBe(0);
  });

  it('deletes a VirtualCluster and waits until it is gone', async () => {
    const r = await vc(['delete', 'dev', ...kc]);
    expect(r.code, r.stderr).toBe(0);
    expect(await t.client.getOrNull(R.virtualclusters, 'default', 'dev')).toBeNull();
  });
});

describe('vc up with a bad number', () => {
  it.each([
    [['--real-nodes', 'two'], '--real-nodes "two": must be a whole number from 0 to 4'],
    [['--real-nodes', '-1'], '--real-nodes "-1": must be a whole number from 0 to 4'],
    [['--super-clusters', '0'], '--super-clusters "0": must be a whole number from 1 to 9'],
  ])('vc up %j exits non-zero with one line, before building or starting anything', async (args, msg) => {
    const state = mkdtempSync(join(tmpdir(), 'vc-up-bad-'));
    try {
      // An empty toolchain cache: had it begun building, the run would take minutes and leave files there.
      const cache = join(state, 'cache');
      const r = await vc(['up', '--state-dir', join(state, 'run'), ...args], { VC_TOOLCHAIN_CACHE: cache });
      expect(r.code).not.toBe(0);
      expect(r.stderr.trim()).toBe(`vc: ${msg}`);
      expect(existsSync(cache)).toBe(false);
      expect(existsSync(join(state, 'run'))).toBe(false);
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  });
});
