import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import semver from 'semver';
import { SDK_VERSION } from '@virtualcluster-ts/plugin-sdk';

/** SDK_PACKAGE is the plugin SDK's package name, under which a plugin package declares the SDK it is built for. */
export const SDK_PACKAGE = '@virtualcluster-ts/plugin-sdk';

/** SdkDeclaration is the SDK version range a plugin package declares, and where it declares it. */
export interface SdkDeclaration {
  /** the semver range, as written (`^2.0.0`) */
  range: string;
  /** where: `<package.json path> peerDependencies` (or dependencies) */
  where: string;
}

/**
 * sdkDeclarationOf reads the SDK range of the package whose package.json is `packageJson`: its peerDependencies
 * entry for SDK_PACKAGE, else its dependencies entry; undefined when it declares neither (nothing to check).
 */
export function sdkDeclarationOf(packageJson: string): SdkDeclaration | undefined {
  const pkg = JSON.parse(readFileSync(packageJson, 'utf8')) as Record<string, unknown>;
  for (const field of ['peerDependencies', 'dependencies']) {
    const deps = pkg[field];
    const range =
      typeof deps === 'object' && deps !== null ? (deps as Record<string, unknown>)[SDK_PACKAGE] : undefined;
    if (range !== undefined) return { range: String(range), where: `${packageJson} ${field}` };
  }
  return undefined;
}

/**
 * nearestPackageJson is the package.json of the package a file belongs to: the first one with a `name` in its
 * folder or a parent folder (a nameless one, such as `{"type": "module"}` in a build folder, only sets the module
 * type), or undefined.
 */
export function nearestPackageJson(file: string): string | undefined {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const p = join(dir, 'package.json');
    if (existsSync(p) && typeof (JSON.parse(readFileSync(p, 'utf8')) as { name?: unknown }).name === 'string') return p;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * sdkVersionProblem says why a plugin built for the SDK range `declared` cannot be loaded by a host whose SDK is
 * `host` (SDK_VERSION), or undefined when it can. The version a plugin is built for is the lowest its range admits.
 * - Same major, same or older minor: loads. A minor only adds to the contract, so what an older plugin uses is there.
 * - A newer minor of the same major, or a newer major: refused. A newer minor may add an effect type, a manifest field
 *   or a hook this host does not know; a plugin relying on one would run with it silently dropped (an isolation
 *   effect never applied, a config field never read), so the mismatch is reported when the plugin loads instead.
 * - An older major: refused, since a major release changed something plugins rely on, unless the plugin's range
 *   admits the host's version too (`>=1.0.0`, `^1.0.0 || ^2.0.0`): its author says it works with both.
 * A plugin that declares nothing (a bare file outside any package that names the SDK) is not checked here; its
 * manifest apiVersion still is.
 */
export function sdkVersionProblem(
  plugin: string,
  declared: SdkDeclaration | undefined,
  host: string = SDK_VERSION,
): string | undefined {
  if (!declared) return undefined;
  const says = `plugin ${plugin} declares ${SDK_PACKAGE} "${declared.range}" (${declared.where})`;
  const range = semver.validRange(declared.range);
  const built = range ? semver.minVersion(range) : null;
  if (!range || !built) return `${says}, which is not a semver version range; this host's SDK is ${host}`;
  const h = semver.parse(host);
  if (!h) throw new Error(`the host's SDK version "${host}" is not a semver version`);
  if (built.major > h.major || (built.major === h.major && built.minor > h.minor)) {
    const what = built.major > h.major ? 'a newer major version' : 'a newer minor version';
    return (
      `${says}: it is built for SDK ${built.version}, ${what} than this host's SDK ${host}, and may use parts of the ` +
      `plugin contract this host does not carry out. Upgrade the manager to one with SDK ${built.major}.${built.minor} ` +
      `or later, or use a release of the plugin built for SDK ${h.major}.${h.minor} or older`
    );
  }
  if (built.major < h.major && !semver.satisfies(h, range, { includePrerelease: true })) {
    return (
      `${says}: it is built for SDK ${built.version}, an older major version than this host's SDK ${host}. ` +
      `Rebuild it against ${SDK_PACKAGE} ^${h.major}.0.0 (the SDK's CHANGELOG.md says what changed)`
    );
  }
  return undefined;
}
