import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtinPlugins } from '../../plugins/registry.ts';
import { PLUGIN_API_VERSION, type Plugin } from './contract.ts';
import { PluginHost } from './host.ts';

const sandbox = join(import.meta.dirname, '../../plugins/examples/sandbox-runtimeclass');
const good = (name: string, extra: Record<string, unknown> = {}): Plugin =>
  ({
    manifest: { apiVersion: PLUGIN_API_VERSION, name, version: '1.0.0', direction: 'down', sourceOfTruth: 'tenant', processes: ['manager'], resource: { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true }, ...extra },
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
    ['a resource plugin with no transform', [{ manifest: good('y').manifest }], /must implement toSuper\(\) or toTenant\(\)/],
    ['a mutator of an unknown plugin', [{ manifest: { apiVersion: PLUGIN_API_VERSION, name: 'm', version: '1.0.0', direction: 'mutator', mutates: 'nope', sourceOfTruth: 'tenant', processes: ['manager'] }, mutate: () => ({ object: null }) }], /mutates unknown plugin "nope"/],
  ])('refuses %s', async (_, builtins, reason) => {
    const h = await PluginHost.load({ process: 'manager', builtins: builtins as Plugin[] });
    expect(h.failures.map((f) => f.reason).join('\n')).toMatch(reason);
  });

  it('loads a third-party package by path and reports one that fails to load, by its source', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vc-plugin-'));
    mkdirSync(join(dir, 'broken'));
    writeFileSync(join(dir, 'broken', 'index.ts'), "throw new Error('boom at import');\n");
    const h = await PluginHost.load({ process: 'manager', builtins: builtinPlugins, thirdParty: [sandbox, './broken', './missing'], baseDir: dir });
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
});
