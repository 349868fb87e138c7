import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtinPlugins } from '../../plugins/registry.ts';
import { PLUGIN_API_VERSION, type Plugin } from './contract.ts';
import { apiVersionProblem, PluginHost, resolvePackage, SUPPORTED_API_MAJORS } from './host.ts';
import { testDir } from '../../test/tmpdir.ts';

const sandbox = join(import.meta.dirname, '../../plugins/examples/sandbox-runtimeclass');
const good = (name: string, extra: Record<string, unknown> = {}): Plugin =>
  ({
    manifest: {
      apiVersion: PLUGIN_API_VERSION,
      name,
      version: '1.0.0',
      direction: 'down',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
      resource: { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true },
      ...extra,
    },
    toSuper: () => ({ object: null }),
  }) as unknown as Plugin;

describe('plugin host', () => {
  it('loads every built-in for the manager, and only the vn-agent-capable ones for the vn-agent', async () => {
    const m = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    expect(m.failures).toEqual([]);
    expect(m.names()).toEqual(expect.arrayContaining(['pods', 'services', 'nodes', 'dns', 'ingresses']));
    const v = await PluginHost.load({ process: 'vn-agent', builtins: builtinPlugins });
    expect(v.names()).toEqual(['pods']);
  });

  it('reports a plugin with an invalid manifest by name and field, and keeps the others', async () => {
    const bad = good('bad-one', { direction: 'sideways', extra: true });
    const h = await PluginHost.load({ process: 'manager', builtins: [good('fine'), bad] });
    expect(h.names()).toEqual(['fine']);
    expect(h.failures).toHaveLength(1);
    expect(h.failures[0]!.plugin).toBe('bad-one');
    expect(h.failures[0]!.reason).toMatch(/plugin bad-one: \/direction must be one of/);
    expect(h.failures[0]!.reason).toMatch(/\/extra is not a known field/);
  });

  it.each([
    ['a duplicate name', [good('x'), good('x')], /already loaded/],
    [
      'a resource plugin with no transform',
      [{ manifest: good('y').manifest }],
      /must implement toSuper\(\) or toTenant\(\)/,
    ],
    [
      'a mutator of an unknown plugin',
      [
        {
          manifest: {
            apiVersion: PLUGIN_API_VERSION,
            name: 'm',
            version: '1.0.0',
            direction: 'mutator',
            mutates: 'nope',
            sourceOfTruth: 'tenant',
            processes: ['manager'],
          },
          mutate: () => ({ object: null }),
        },
      ],
      /mutates unknown plugin "nope"/,
    ],
  ])('refuses %s', async (_, builtins, reason) => {
    const h = await PluginHost.load({ process: 'manager', builtins: builtins as Plugin[] });
    expect(h.failures.map((f) => f.reason).join('\n')).toMatch(reason);
  });

  it('loads a third-party package by path and reports one that fails to load, by its source', async () => {
    const dir = testDir('vc-plugin-');
    mkdirSync(join(dir, 'broken'));
    writeFileSync(join(dir, 'broken', 'index.ts'), "throw new Error('boom at import');\n");
    const h = await PluginHost.load({
      process: 'manager',
      builtins: builtinPlugins,
      thirdParty: [sandbox, './broken', './missing'],
      baseDir: dir,
    });
    expect(h.names()).toContain('sandbox-runtimeclass');
    expect(h.mutatorsOf('pods').map((p) => p.manifest.name)).toEqual(['dns', 'sandbox-runtimeclass']);
    const reasons = Object.fromEntries(h.failures.map((f) => [f.source, f.reason]));
    expect(reasons['./broken']).toMatch(/boom at import/);
    expect(reasons['./missing']).toMatch(/no such file or directory/);
  });

  it('runs opt-in plugins only where enabled, and lets a tenant disable any plugin', async () => {
    const h = await PluginHost.load({ process: 'manager', builtins: builtinPlugins, enable: ['priorityclasses'] });
    expect(h.enabledFor({}, 'ingresses')).toBe(false);
    expect(h.enabledFor({ plugins: { enable: ['ingresses'] } }, 'ingresses')).toBe(true);
    expect(h.enabledFor({}, 'priorityclasses')).toBe(true);
    expect(h.enabledFor({ plugins: { disable: ['services'] } }, 'services')).toBe(false);
    expect(h.enabledFor({}, 'services')).toBe(true);
  });

  it.each([
    [
      'a newer major version',
      'plugins.tenancy.x-k8s.io/v2',
      /plugin x is written for plugin contract plugins\.tenancy\.x-k8s\.io\/v2; this host supports plugins\.tenancy\.x-k8s\.io\/v1/,
    ],
    ['no apiVersion', undefined, /plugin x declares no apiVersion; this host supports plugins\.tenancy\.x-k8s\.io\/v1/],
    [
      'an apiVersion of another API',
      'apps/v1',
      /plugin x has apiVersion "apps\/v1", which is not a plugin contract version/,
    ],
  ])('refuses a plugin with %s, naming it and the supported version', async (_, apiVersion, reason) => {
    const p = good('x', { apiVersion });
    const h = await PluginHost.load({ process: 'manager', builtins: [good('fine'), p] });
    expect(h.names()).toEqual(['fine']);
    expect(h.failures).toEqual([{ plugin: 'x', source: 'builtin', reason: expect.stringMatching(reason) }]);
  });

  it('accepts another minor revision of the supported major version', async () => {
    expect(apiVersionProblem('x', 'plugins.tenancy.x-k8s.io/v1')).toBeUndefined();
    expect(SUPPORTED_API_MAJORS).toEqual([1]);
  });

  const sandboxSchema = {
    type: 'object',
    additionalProperties: false,
    required: ['runtimeClassName'],
    properties: { runtimeClassName: { type: 'string' }, enforce: { type: 'boolean' } },
  };
  const configured = (name: string) => good(name, { configSchema: sandboxSchema });

  it('fails the load of a plugin whose manager default breaks its configSchema, naming plugin and field', async () => {
    const h = await PluginHost.load({
      process: 'manager',
      builtins: [configured('sandbox'), configured('other')],
      defaultPluginConfig: { sandbox: { runtimeClassName: 5 }, other: { runtimeClassName: 'kata' } },
    });
    expect(h.names()).toEqual(['other']);
    expect(h.failures).toEqual([
      {
        plugin: 'sandbox',
        source: 'defaultPluginConfig',
        reason: 'invalid default configuration:\ndefaultPluginConfig.sandbox.runtimeClassName: must be string',
      },
    ]);
  });

  it('checks the built-ins: nodes takes vnAgent {host, port} and gracePeriodSeconds', async () => {
    const ok = await PluginHost.load({
      process: 'manager',
      builtins: builtinPlugins,
      defaultPluginConfig: { nodes: { vnAgent: { host: '127.0.0.1', port: 10550 } } },
    });
    expect(ok.failures).toEqual([]);
    expect(ok.validatePluginConfig({ nodes: { vnAgent: { port: 'x' } } })).toEqual([
      'spec.pluginConfig.nodes.vnAgent.port: must be integer',
    ]);
    expect(ok.validatePluginConfig({ nodes: { gracePeriodSeconds: -1 } })).toEqual([
      'spec.pluginConfig.nodes.gracePeriodSeconds: must be >= 0',
    ]);
  });

  it('validates a tenant pluginConfig per plugin and reports keys that name no loaded plugin', async () => {
    const h = await PluginHost.load({ process: 'manager', builtins: [configured('sandbox'), good('plain')] });
    expect(h.validatePluginConfig(undefined)).toEqual([]);
    expect(
      h.validatePluginConfig({ sandbox: { runtimeClassName: 'kata', enforce: true }, plain: { anything: 1 } }),
    ).toEqual([]);
    expect(h.validatePluginConfig({ sandbox: { runtimeClassName: 7, extra: 1 }, sandbx: {} })).toEqual([
      'spec.pluginConfig.sandbox.extra: is not a known field',
      'spec.pluginConfig.sandbox.runtimeClassName: must be string',
      'spec.pluginConfig.sandbx: no loaded plugin reads this key (keys: plain, sandbox)',
    ]);
    expect(h.validatePluginConfig({ sandbox: 'kata' })).toEqual(['spec.pluginConfig.sandbox: must be object']);
  });

  it('reads a plugin configuration under the configKey its manifest declares, and refuses a key taken twice', async () => {
    const h = await PluginHost.load({
      process: 'manager',
      builtins: [
        good('sandbox-runtimeclass', { configKey: 'sandbox', configSchema: sandboxSchema }),
        good('other', { configKey: 'sandbox' }),
      ],
    });
    expect(h.names()).toEqual(['sandbox-runtimeclass']);
    expect(h.failures[0]).toMatchObject({
      plugin: 'other',
      reason: 'pluginConfig key "sandbox" is already the configuration of plugin sandbox-runtimeclass',
    });
    expect(h.validatePluginConfig({ sandbox: { runtimeClassName: 1 } })).toEqual([
      'spec.pluginConfig.sandbox.runtimeClassName: must be string',
    ]);
    expect(h.validatePluginConfig({ 'sandbox-runtimeclass': {} })).toHaveLength(1);
  });

  it('knows the plugins of the other process, so their configuration is not called unknown', async () => {
    const h = await PluginHost.load({ process: 'vn-agent', builtins: builtinPlugins });
    expect(h.validatePluginConfig({ nodes: {} })).toEqual([]);
  });

  it('refuses a plugin whose configSchema is not a JSON Schema', async () => {
    const h = await PluginHost.load({
      process: 'manager',
      builtins: [good('s', { configSchema: { type: 'no-such-type' } })],
    });
    expect(h.failures[0]!.reason).toMatch(/invalid configSchema/);
  });

  it('loads a package by name from node_modules next to the configuration (baseDir), through its exports', async () => {
    const dir = testDir('vc-plugin-');
    const pkg = join(dir, 'node_modules', '@acme', 'vc-plugin-noop');
    mkdirSync(join(pkg, 'dist'), { recursive: true });
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({
        name: '@acme/vc-plugin-noop',
        type: 'module',
        exports: { '.': { types: './dist/index.d.ts', import: './dist/index.js' } },
      }),
    );
    const manifest = { ...good('noop').manifest, name: 'noop' };
    writeFileSync(
      join(pkg, 'dist', 'index.js'),
      `export default { manifest: ${JSON.stringify(manifest)}, toSuper: () => ({ object: null }) };\n`,
    );
    const h = await PluginHost.load({
      process: 'manager',
      builtins: [],
      thirdParty: ['@acme/vc-plugin-noop', '@acme/missing'],
      baseDir: join(dir, 'config'),
    });
    expect(h.names()).toEqual(['noop']);
    expect(h.failures).toEqual([
      {
        plugin: '@acme/missing',
        source: '@acme/missing',
        reason: expect.stringMatching(
          /package @acme\/missing is not installed in .*config, a parent folder or the manager's installation/,
        ),
      },
    ]);
    expect(resolvePackage('@acme/vc-plugin-noop', dir)).toBe(join(pkg, 'dist', 'index.js'));
  });
});
