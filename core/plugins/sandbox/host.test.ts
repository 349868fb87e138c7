import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { builtinPlugins } from '../../../plugins/registry.ts';
import { PluginHost } from '../host.ts';
import { generateSigningKey, signPackage } from '../signing.ts';
import type { MutatorPlugin } from '../contract.ts';
import { testContext } from '../testing.ts';

const example = join(import.meta.dirname, 'testdata/misbehaving');

describe('the host with sandboxed and signed plugins', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'vc-sandbox-host-'));
  const hosts: PluginHost[] = [];
  afterAll(async () => {
    await Promise.all(hosts.map((h) => h.close()));
    rmSync(tmp, { recursive: true, force: true });
  });
  const load = async (o: Partial<Parameters<typeof PluginHost.load>[0]>) => {
    const h = await PluginHost.load({ process: 'manager', builtins: builtinPlugins, baseDir: tmp, ...o });
    hosts.push(h);
    return h;
  };
  const platform = generateSigningKey();
  writeFileSync(join(tmp, 'platform.pub'), platform.publicKeyPem);
  const signed = join(tmp, 'signed');
  cpSync(example, signed, { recursive: true });
  signPackage(signed, platform.privateKeyPem);
  const unsigned = join(tmp, 'unsigned');
  cpSync(example, unsigned, { recursive: true });

  it('loads a sandboxed plugin as a mutator of its plugin, and disables it for every tenant after maxFailures stops', async () => {
    const h = await load({ sandboxed: ['./unsigned'], sandbox: { cpuMillis: 50, maxFailures: 1 } });
    expect(h.failures).toEqual([]);
    expect(h.mutatorsOf('configmaps').map((m) => m.manifest.name)).toContain('misbehaving');
    expect(h.enabledFor({}, 'misbehaving')).toBe(true);
    const m = h.get('misbehaving') as MutatorPlugin;
    const obj = { kind: 'ConfigMap', metadata: { name: 'a', namespace: 'app', labels: { misbehave: 'loop' } } };
    expect(() => m.mutate(obj, obj, testContext())).toThrow(/more than 50 ms of CPU/);
    expect(h.enabledFor({}, 'misbehaving')).toBe(false);
    expect(h.enabledFor({}, 'configmaps')).toBe(true);
  });

  it('with trusted keys, installs a package signed by one and refuses an unsigned one by name', async () => {
    const h = await load({
      sandboxed: ['./signed'],
      thirdParty: ['./unsigned'],
      trustedKeys: [join(tmp, 'platform.pub')],
    });
    expect(h.names()).toContain('misbehaving');
    expect(h.failures).toEqual([
      {
        plugin: './unsigned',
        source: './unsigned',
        reason: expect.stringMatching(/^not installed: package .*unsigned is not signed/),
      },
    ]);
  });

  it('refuses a sandboxed plugin that implements a hook the sandbox cannot carry', async () => {
    const dir = join(tmp, 'router');
    cpSync(example, dir, { recursive: true });
    writeFileSync(join(dir, 'index.js'), `import p from './plugin.js'; export default { ...p, route: () => [] };\n`);
    cpSync(join(example, 'index.js'), join(dir, 'plugin.js'));
    const h = await load({ sandboxed: ['./router'] });
    expect(h.failures.map((f) => f.reason)).toEqual([
      expect.stringMatching(
        /failed to load in the sandbox: plugin misbehaving implements route, which a sandboxed plugin cannot/,
      ),
    ]);
  });
});
