import { execFileSync, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { startManager, type Manager } from '../../core/programs/manager/manager.ts';
import { rootNamespace, superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { SDK_VERSION } from '@virtualcluster-ts/plugin-sdk';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

interface Pod extends KubeObject {
  spec: { runtimeClassName?: string; [field: string]: unknown };
}

interface VirtualCluster extends KubeObject {
  status?: { phase?: string; message?: string; conditions?: Array<{ type: string; status: string; reason?: string }> };
}

const repo = join(import.meta.dirname, '../..');
const PLUGIN = '@virtualcluster-ts/plugin-sandbox-runtimeclass';

/** npmQuiet runs npm offline and without audit or fund requests: the test needs nothing from the network. */
const npm = (cwd: string, ...args: string[]) =>
  execFileSync('npm', [...args, '--offline', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });

/**
 * A third party's view of the example plugin: the SDK and the plugin are packed with `npm pack` (which builds them),
 * installed from the tarballs into a project of their own, and named by package name in a manager configuration
 * in that project. The manager must find the package relative to its configuration and sync with it.
 */
describe('the sandbox plugin as an installed npm package', () => {
  let t: TestSuper;
  let dir: string;
  let tenant: KubeClient;
  let manager: Manager;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-plugin-package-'));
    const tarballs = join(dir, 'tarballs');
    mkdirSync(tarballs);
    npm(join(repo, 'plugins/sdk'), 'pack', '--pack-destination', tarballs);
    npm(join(repo, 'plugins/examples/sandbox-runtimeclass'), 'pack', '--pack-destination', tarballs);
    const project = join(dir, 'project');
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'my-vc-setup', private: true, type: 'module' }),
    );
    npm(project, 'install', ...readdirSync(tarballs).map((f) => join(tarballs, f)));

    t = await startTestSuper({ nodes: 1 });
    const crds = join(repo, 'deploy/crds');
    for (const f of readdirSync(crds)) {
      for (const d of parseAllDocuments(readFileSync(join(crds, f), 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'pluginpackage-test');
    }
    await eventually(() => t.client.list(R.virtualclusters), 30_000);
    await t.client.create(R.runtimeclasses, {
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name: 'kata' },
      handler: 'kata',
    });
    const cp = await t.sc.addControlPlane('tenant-s', { controllers: TENANT_CONTROLLERS });
    tenant = await cp.client();
    const file = join(project, 'manager.yaml');
    writeFileSync(
      file,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [{ name: 'one', kubeconfig: t.sc.kubeconfigPath }],
        syncer: { workers: 4, patrolIntervalSeconds: 0 },
        plugins: { thirdParty: [PLUGIN] },
        virtualClusters: { enabled: true },
        tenants: [
          {
            name: 's',
            namespace: 'team-s',
            uid: 'uid-s',
            kubeconfig: cp.kubeconfigPath,
            pluginConfig: { sandbox: { runtimeClassName: 'kata' } },
          },
        ],
      }),
    );
    manager = await startManager(loadManagerConfig(file), file);
  });

  afterAll(async () => {
    await manager?.stop();
    await t?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is plain JavaScript: node imports the installed package by name, without tsx', () => {
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const p = (await import('${PLUGIN}')).default; console.log(JSON.stringify(p.manifest));`,
      ],
      {
        cwd: join(dir, 'project'),
        encoding: 'utf8',
      },
    );
    expect(JSON.parse(out)).toMatchObject({
      apiVersion: 'plugins.tenancy.x-k8s.io/v1',
      name: 'sandbox-runtimeclass',
      mutates: 'pods',
    });
  });

  it('loaded by package name from the manager configuration, it runs the tenant Pod under the sandbox runtime class', async () => {
    await eventually(() => tenant.get(R.serviceaccounts, 'default', 'default'), 30_000);
    await tenant.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'boxed', namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'nginx' }] },
    });
    const superNs = superNamespace(rootNamespace('team-s', 's', 'uid-s'), 'default');
    const superPod = await eventually(() => t.client.get<Pod>(R.pods, superNs, 'boxed'), 60_000);
    expect(superPod.spec.runtimeClassName).toBe('kata');
    expect((await tenant.get<Pod>(R.pods, 'default', 'boxed')).spec.runtimeClassName).toBeUndefined();
  });

  it("refuses a VirtualCluster whose pluginConfig breaks the plugin's configSchema, naming the field", async () => {
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'typo', namespace: 'default' },
      spec: { provisioner: { type: 'local' }, pluginConfig: { sandbox: { runtimeClassName: 5 }, sandbx: {} } },
    });
    const vc = await eventually(async () => {
      const v = await t.client.get<VirtualCluster>(R.virtualclusters, 'default', 'typo');
      expect(v.status?.phase).toBe('Error');
      return v;
    });
    expect(vc.status!.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'InvalidSpec',
    });
    expect(vc.status!.message).toContain(
      'VirtualCluster default/typo: spec.pluginConfig.sandbox.runtimeClassName: must be string',
    );
    expect(vc.status!.message).toMatch(
      /VirtualCluster default\/typo: spec\.pluginConfig\.sandbx: no loaded plugin reads this key/,
    );
  });

  it('vc plugins list shows it from the configuration, with its contract version and no failures', () => {
    // The package's own bin, as `npx vc` runs it (without npx's copy of the package in its cache).
    const vc = join(
      repo,
      (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { bin: { vc: string } }).bin.vc,
    );
    const out = execFileSync(
      process.execPath,
      [vc, 'plugins', 'list', '-c', join(dir, 'project', 'manager.yaml'), '-o', 'json'],
      {
        cwd: repo,
        encoding: 'utf8',
      },
    );
    const listed = JSON.parse(out) as {
      plugins: Array<{ name: string; api: string; rbac: unknown[] }>;
      failures: unknown[];
    };
    expect(listed.failures).toEqual([]);
    expect(listed.plugins.find((p) => p.name === 'sandbox-runtimeclass')).toMatchObject({
      api: 'plugins.tenancy.x-k8s.io/v1',
      rbac: [],
    });
  });

  it("is refused, by name and with both SDK versions, when its package is built for a newer minor of the manager's SDK", async () => {
    const installed = join(dir, 'project', 'node_modules', PLUGIN);
    const next = join(dir, 'project', 'node_modules', '@acme', 'sandbox-next');
    cpSync(installed, next, { recursive: true });
    const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
    const [major, minor] = SDK_VERSION.split('.').map(Number) as [number, number];
    const range = `^${major}.${minor + 1}.0`;
    expect(pkg.peerDependencies).toEqual({ '@virtualcluster-ts/plugin-sdk': `^${major}.0.0` });
    writeFileSync(
      join(next, 'package.json'),
      JSON.stringify({
        ...pkg,
        name: '@acme/sandbox-next',
        peerDependencies: { '@virtualcluster-ts/plugin-sdk': range },
      }),
    );
    const host = await PluginHost.load({
      process: 'manager',
      builtins: builtinPlugins,
      thirdParty: [PLUGIN, '@acme/sandbox-next'],
      baseDir: join(dir, 'project'),
    });
    expect(host.names()).toContain('sandbox-runtimeclass');
    expect(host.failures).toEqual([
      {
        plugin: 'sandbox-runtimeclass',
        source: '@acme/sandbox-next',
        reason: expect.stringContaining(
          `plugin sandbox-runtimeclass declares @virtualcluster-ts/plugin-sdk "${range}" (${join(next, 'package.json')} ` +
            `peerDependencies): it is built for SDK ${major}.${minor + 1}.0, a newer minor version than this host's SDK ${SDK_VERSION}`,
        ),
      },
    ]);
  });

  it('published signed and installed with npm, it loads under trustedKeys; signed by another key or changed, it is refused by name', async () => {
    const vcBin = join(
      repo,
      (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { bin: { vc: string } }).bin.vc,
    );
    const vc = (cwd: string, ...args: string[]) =>
      spawnSync(process.execPath, [vcBin, ...args], { cwd, encoding: 'utf8' });
    // The author: the package as npm pack laid it out, its signature listed in `files`, signed, packed again.
    const author = join(dir, 'author');
    mkdirSync(join(author, 'keys'), { recursive: true });
    const tarballs = join(dir, 'tarballs');
    const packed = readdirSync(tarballs).find((f) => f.includes('sandbox-runtimeclass'))!;
    execFileSync('tar', ['-xzf', join(tarballs, packed), '-C', author]);
    const folder = join(author, 'package');
    const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as { files: string[] };
    writeFileSync(
      join(folder, 'package.json'),
      JSON.stringify({ ...manifest, files: [...manifest.files, 'vc-plugin.sig'] }, null, 2),
    );
    for (const k of ['platform', 'other']) expect(vc(author, 'plugins', 'keygen', `keys/${k}`).status).toBe(0);
    const signed = vc(author, 'plugins', 'sign', '--key', 'keys/platform.key', 'package');
    expect(signed.status, signed.stderr).toBe(0);
    const published = join(author, 'published');
    mkdirSync(published);
    npm(folder, 'pack', '--ignore-scripts', '--pack-destination', published);

    // The platform: installs the published tarball with the SDK, checks it, and lists the key it trusts.
    const platform = join(dir, 'platform');
    mkdirSync(platform);
    writeFileSync(join(platform, 'package.json'), JSON.stringify({ name: 'platform', private: true, type: 'module' }));
    const sdk = readdirSync(tarballs).find((f) => f.includes('plugin-sdk'))!;
    npm(platform, 'install', join(tarballs, sdk), ...readdirSync(published).map((f) => join(published, f)));
    const installed = join(platform, 'node_modules', PLUGIN);
    expect(existsSync(join(installed, 'vc-plugin.sig'))).toBe(true);
    const verified = vc(
      platform,
      'plugins',
      'verify',
      '--key',
      join(author, 'keys/platform.pub'),
      `node_modules/${PLUGIN}`,
    );
    expect(verified.status, verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/^verified /);

    const load = async (key: string) => {
      const h = await PluginHost.load({
        process: 'manager',
        builtins: builtinPlugins,
        thirdParty: [PLUGIN],
        baseDir: platform,
        trustedKeys: [join(author, 'keys', `${key}.pub`)],
      });
      await h.close();
      return h;
    };
    const trusted = await load('platform');
    expect(trusted.failures).toEqual([]);
    expect(trusted.names()).toContain('sandbox-runtimeclass');
    const other = await load('other');
    expect(other.names()).not.toContain('sandbox-runtimeclass');
    expect(other.failures).toEqual([
      expect.objectContaining({
        source: PLUGIN,
        reason: expect.stringMatching(/^not installed: .* is signed by key [0-9a-f]{16}, which is not a trusted key/),
      }),
    ]);
    appendFileSync(join(installed, 'dist', 'index.js'), '\n// changed after install\n');
    const changed = await load('platform');
    expect(changed.names()).not.toContain('sandbox-runtimeclass');
    expect(changed.failures).toEqual([
      expect.objectContaining({ source: PLUGIN, reason: expect.stringMatching(/changed after it was signed/) }),
    ]);
  });

  it('loaded by path (the installed folder), it is the same plugin, after the dns mutator', async () => {
    const host = await PluginHost.load({
      process: 'manager',
      builtins: builtinPlugins,
      thirdParty: [`./node_modules/${PLUGIN}`],
      baseDir: join(dir, 'project'),
    });
    expect(host.failures).toEqual([]);
    expect(host.mutatorsOf('pods').map((p) => p.manifest.name)).toEqual(['dns', 'sandbox-runtimeclass']);
    expect(host.validatePluginConfig({ sandbox: { runtimeClassName: 5 } })).toEqual([
      'spec.pluginConfig.sandbox.runtimeClassName: must be string',
    ]);
  });
});
