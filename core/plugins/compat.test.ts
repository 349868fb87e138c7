import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PLUGIN_API_VERSION, SDK_VERSION } from '@virtualcluster-ts/plugin-sdk';
import { testDir } from '../../test/tmpdir.ts';
import { nearestPackageJson, SDK_PACKAGE, sdkDeclarationOf, sdkVersionProblem } from './compat.ts';
import { PluginHost } from './host.ts';

const at = (range: string) => ({ range, where: 'x/package.json peerDependencies' });

describe('the SDK compatibility rule', () => {
  it.each([
    // [host SDK, plugin range, loads]
    ['2.3.1', '^2.3.0', true],
    ['2.3.1', '^2.3.1', true],
    ['2.3.1', '^2.0.0', true],
    ['2.3.1', '~2.1.0', true],
    ['2.3.1', '2.0.4', true],
    ['2.3.1', '>=1.0.0', true],
    ['2.3.1', '^1.0.0 || ^2.0.0', true],
    ['2.3.1', '^2.4.0', false],
    ['2.3.1', '2.4.0', false],
    ['2.3.1', '^3.0.0', false],
    ['2.3.1', '^1.0.0', false],
    ['2.3.1', '1.9.0', false],
    ['2.0.0', '^2.0.0', true],
    ['2.0.0', '^2.1.0', false],
  ])('host SDK %s, plugin declaring %s: loads %s', (host, range, loads) => {
    expect(sdkVersionProblem('p', at(range), host) === undefined).toBe(loads);
  });

  it.each([
    [
      'a newer minor',
      '^2.4.0',
      'plugin p declares @virtualcluster-ts/plugin-sdk "^2.4.0" (x/package.json peerDependencies): it is built for ' +
        "SDK 2.4.0, a newer minor version than this host's SDK 2.3.1",
    ],
    ['a newer major', '^3.1.0', "it is built for SDK 3.1.0, a newer major version than this host's SDK 2.3.1"],
    [
      'an older major',
      '^1.2.0',
      "it is built for SDK 1.2.0, an older major version than this host's SDK 2.3.1. Rebuild it against " +
        '@virtualcluster-ts/plugin-sdk ^2.0.0',
    ],
    ['a range that is none', 'latest', 'declares @virtualcluster-ts/plugin-sdk "latest" (x/package.json'],
  ])('refuses %s naming the plugin, its declared SDK version and the host SDK', (_, range, message) => {
    expect(sdkVersionProblem('p', at(range), '2.3.1')).toContain(message);
  });

  it('checks nothing when the plugin declares no SDK', () => {
    expect(sdkVersionProblem('p', undefined, '2.3.1')).toBeUndefined();
  });

  it("is the SDK package's own version", () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../plugins/sdk/package.json'), 'utf8')) as {
      name: string;
      version: string;
    };
    expect([pkg.name, pkg.version]).toEqual([SDK_PACKAGE, SDK_VERSION]);
  });

  it('reads the range from peerDependencies first, then dependencies, in the nearest named package.json', () => {
    const dir = testDir('vc-sdk-compat-');
    const pkg = join(dir, 'pkg');
    mkdirSync(join(pkg, 'dist'), { recursive: true });
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({
        name: 'p',
        peerDependencies: { [SDK_PACKAGE]: '^2.1.0' },
        dependencies: { [SDK_PACKAGE]: '2' },
      }),
    );
    writeFileSync(join(pkg, 'dist', 'package.json'), JSON.stringify({ type: 'module' }));
    expect(nearestPackageJson(join(pkg, 'dist', 'index.js'))).toBe(join(pkg, 'package.json'));
    expect(sdkDeclarationOf(join(pkg, 'package.json'))).toEqual({
      range: '^2.1.0',
      where: `${join(pkg, 'package.json')} peerDependencies`,
    });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'p', dependencies: { [SDK_PACKAGE]: '^2.0.0' } }));
    expect(sdkDeclarationOf(join(pkg, 'package.json'))?.where).toMatch(/ dependencies$/);
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'p' }));
    expect(sdkDeclarationOf(join(pkg, 'package.json'))).toBeUndefined();
  });
});

describe('the plugin host and the SDK version a package declares', () => {
  const [major, minor] = SDK_VERSION.split('.').map(Number) as [number, number];

  /** pluginPackage writes an installed plugin package `name` declaring `range` as its SDK peer dependency. */
  function pluginPackage(root: string, name: string, range: string): void {
    const pkg = join(root, 'node_modules', name);
    mkdirSync(pkg, { recursive: true });
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({ name, type: 'module', main: 'index.js', peerDependencies: { [SDK_PACKAGE]: range } }),
    );
    const manifest = {
      apiVersion: PLUGIN_API_VERSION,
      name,
      version: '1.0.0',
      direction: 'down',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
      resource: { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true },
    };
    writeFileSync(
      join(pkg, 'index.js'),
      `export default { manifest: ${JSON.stringify(manifest)}, toSuper: () => ({ object: null }) };\n`,
    );
  }

  it('loads a package built for this or an older minor, and refuses a newer minor or major by name, with both versions', async () => {
    const dir = testDir('vc-sdk-host-');
    pluginPackage(dir, 'same', `^${major}.${minor}.0`);
    pluginPackage(dir, 'older-minor', `^${major}.0.0`);
    pluginPackage(dir, 'newer-minor', `^${major}.${minor + 1}.0`);
    pluginPackage(dir, 'newer-major', `^${major + 1}.0.0`);
    const h = await PluginHost.load({
      process: 'manager',
      builtins: [],
      thirdParty: ['same', 'older-minor', 'newer-minor', 'newer-major'],
      baseDir: dir,
    });
    expect(h.names()).toEqual(['same', 'older-minor']);
    expect(h.failures.map((f) => [f.plugin, f.source])).toEqual([
      ['newer-minor', 'newer-minor'],
      ['newer-major', 'newer-major'],
    ]);
    expect(h.failures[0]!.reason).toContain(
      `plugin newer-minor declares ${SDK_PACKAGE} "^${major}.${minor + 1}.0" (${join(dir, 'node_modules', 'newer-minor', 'package.json')} peerDependencies): ` +
        `it is built for SDK ${major}.${minor + 1}.0, a newer minor version than this host's SDK ${SDK_VERSION}`,
    );
    expect(h.failures[1]!.reason).toContain(`a newer major version than this host's SDK ${SDK_VERSION}`);
  });
});
