/**
 * Node-call hooks in the real vn-agent (issue 35 §2): one third-party plugin (test/fixtures/nodecallguard.ts) loaded
 * by the manager's plugin host and by the vn-agent's. The manager's side labels the super Pod of an annotated tenant
 * Pod; the agent's request filter refuses exec into that Pod and caps log tails, its output filter masks passwords in
 * the logs. Tenant A enables it, tenant B does not and is left alone; every call goes through the tenants' own
 * apiservers with kubectl, to kwok's kubelet. The same plugin runs once in the processes' own and once sandboxed in
 * both (compiled to JavaScript in a package of its own, as a sandboxed plugin is installed): the answers are the same.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { startNodesAgent } from '../../core/dev/embedded/embedded.ts';
import { fingerprintSha256 } from '../../core/pki/pki.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { superNamespace } from '../../core/names/names.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import type { VnAgent } from '../../core/vnagent/agent.ts';
import { StaticTenantDirectory } from '../../core/vnagent/testing.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { SEALED } from '../fixtures/nodecallguard.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';

const GUARD = join(import.meta.dirname, '../fixtures/nodecallguard.ts');

/**
 * sandboxedGuard installs the guard as a sandboxed plugin is installed: compiled to JavaScript, in a package of its
 * own, with the SDK in its node_modules. It returns the package folder.
 */
function sandboxedGuard(dir: string): string {
  const pkg = join(dir, 'node-call-guard');
  mkdirSync(join(pkg, 'node_modules/@virtualcluster-ts'), { recursive: true });
  symlinkSync(
    join(import.meta.dirname, '../../plugins/sdk'),
    join(pkg, 'node_modules/@virtualcluster-ts/plugin-sdk'),
    'dir',
  );
  const js = ts.transpileModule(readFileSync(GUARD, 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
  }).outputText;
  writeFileSync(join(pkg, 'index.js'), js);
  writeFileSync(
    join(pkg, 'package.json'),
    JSON.stringify({ name: 'node-call-guard', version: '0.1.0', type: 'module', main: 'index.js' }),
  );
  return pkg;
}

async function kubectl(
  cp: LocalControlPlane,
  args: string[],
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(binaryPath('kubectl'), ['--kubeconfig', cp.kubeconfigPath, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const [code] = (await once(child, 'close')) as [number | null];
  clearTimeout(timer);
  return { code, out, err };
}

describe.each(['in-process', 'sandboxed'] as const)(
  'vn-agent: node-call hooks of the plugins the manager loads, through the real agent (%s)',
  (mode) => {
    let t: TestSuper;
    let dir: string;
    let cpA: LocalControlPlane;
    let cpB: LocalControlPlane;
    let a: KubeClient;
    let b: KubeClient;
    let tenantA: Tenant;
    let agent: VnAgent;
    let syncer: Syncer;
    let managerHost: PluginHost | undefined;

    const pod = (name: string, sealed: boolean): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default', ...(sealed && { annotations: { [SEALED]: 'true' } }) },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    });

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'vc-vnagenthooks-'));
      const plugins = mode === 'sandboxed' ? { sandboxed: [sandboxedGuard(dir)] } : { thirdParty: [GUARD] };
      t = await startTestSuper({ nodes: 1 });
      [cpA, cpB] = await Promise.all(
        ['tenant-a', 'tenant-b'].map((n) => t.sc.addControlPlane(n, { controllers: TENANT_CONTROLLERS })),
      );
      [a, b] = await Promise.all([cpA.client(), cpB.client()]);
      const directory = new StaticTenantDirectory();
      // the agent loads the same third-party plugin as the manager, as `vc up --plugin` has it
      agent = await startNodesAgent(t.sc, { port: 0, directory, handshakeTimeoutMs: 10_000, ...plugins });
      const tenant = (cp: LocalControlPlane, ns: string, name: string, uid: string, extra: Partial<Tenant>) => {
        const x = tenantFor(cp, ns, name, uid, {
          pluginConfig: { nodes: { vnAgent: { host: '127.0.0.1', port: agent.port } }, ...extra.pluginConfig },
          ...(extra.plugins && { plugins: extra.plugins }),
        });
        directory.upsert({
          key: x.key,
          vcName: x.vcName,
          vcNamespace: x.vcNamespace,
          caPem: cp.caPem,
          fingerprint: fingerprintSha256(readFileSync(join(cp.dir, 'pki/kubelet-client.crt'), 'utf8')),
          ...(x.plugins && { plugins: x.plugins }),
          ...(x.pluginConfig && { pluginConfig: x.pluginConfig }),
        });
        return x;
      };
      tenantA = tenant(cpA, 'team-a', 'a', '11111111-aaaa-4aaa-8aaa-0000000000f1', {
        plugins: { enable: ['node-call-guard'] },
        pluginConfig: { 'node-call-guard': { maxTailLines: 2 } },
      });
      const tenantB = tenant(cpB, 'team-b', 'b', '22222222-bbbb-4bbb-8bbb-0000000000f2', {});
      managerHost = await PluginHost.load({ process: 'manager', builtins: builtinPlugins, ...plugins });
      expect(managerHost.failures).toEqual([]);
      syncer = new Syncer({
        superClient: t.client,
        host: managerHost,
        registry: new MutableTenantRegistry([tenantA, tenantB]),
        patrolIntervalMs: 0,
        workers: 8,
      });
      await syncer.start();
      await Promise.all([a, b].map((c) => eventually(() => c.get(R.serviceaccounts, 'default', 'default'), 60_000)));
      await a.create(R.pods, pod('sealed', true));
      await a.create(R.pods, pod('open', false));
      await b.create(R.pods, pod('sealed', true));
      await eventually(async () => {
        for (const [c, n] of [
          [a, 'sealed'],
          [a, 'open'],
          [b, 'sealed'],
        ] as const) {
          const p = await c.get<KubeObject & { status?: { phase?: string } }>(R.pods, 'default', n);
          expect(p.status?.phase).toBe('Running');
        }
      }, 90_000);
      // a log line with a password, in the log kwok serves for every container
      appendFileSync(
        join(t.sc.cluster.dir, 'kwok/container.log'),
        `${new Date().toISOString()} stdout F password=hunter2\n`,
      );
    });

    afterAll(async () => {
      await syncer?.stop();
      await managerHost?.close();
      await agent?.stop();
      await t?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("the manager's side of the plugin labels only the annotated Pod's super copy, and only for the tenant that enabled it", async () => {
      const labels = async (tn: Tenant, name: string) =>
        (await t.client.get(R.pods, superNamespace(tn.key, 'default'), name)).metadata?.labels ?? {};
      await eventually(async () => expect((await labels(tenantA, 'sealed'))[SEALED]).toBe('true'));
      expect((await labels(tenantA, 'open'))[SEALED]).toBeUndefined();
    });

    it("refuses exec into the sealed Pod with the plugin's reason; the open Pod and tenant B reach the agent's own check", async () => {
      const sealed = await kubectl(cpA, ['exec', 'sealed', '--', 'true']);
      expect(sealed.code).not.toBe(0);
      expect(sealed.err).toContain(
        'refused by plugin node-call-guard: pod default/sealed is sealed: exec is not allowed',
      );
      for (const [cp, name] of [
        [cpA, 'open'],
        [cpB, 'sealed'],
      ] as const) {
        const r = await kubectl(cp, ['exec', name, '--', 'true']);
        expect(r.code).not.toBe(0);
        expect(r.err).not.toContain('node-call-guard');
        expect(r.err).toMatch(/simulated/);
      }
    });

    it('caps the log lines tenant A may ask for and masks the password; tenant B reads its log whole', async () => {
      const whole = await kubectl(cpA, ['logs', 'open']);
      expect(whole.code, whole.err).toBe(0);
      // maxTailLines 2: the last two lines only, whatever was asked
      expect(whole.out.trim().split('\n')).toEqual(['kwok fake container log line 3', 'password=***']);
      expect((await kubectl(cpA, ['logs', 'open', '--tail=100'])).out.trim().split('\n')).toHaveLength(2);
      expect((await kubectl(cpA, ['logs', 'open', '--tail=1'])).out.trim()).toBe('password=***');
      const other = await kubectl(cpB, ['logs', 'sealed']);
      expect(other.code, other.err).toBe(0);
      expect(other.out).toContain('kwok fake container log line 1');
      expect(other.out).toContain('password=hunter2');
    });
  },
);
