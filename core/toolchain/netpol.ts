import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromPackageRoot } from '../paths.ts';
import { cacheRoot, ensureBuilt, runBuildScript } from './toolchain.ts';

/** kubeRouterVersion is the pinned kube-router version (`kubeRouter` in deploy/toolchain/versions.json). */
export function kubeRouterVersion(): string {
  const v = JSON.parse(readFileSync(fromPackageRoot('deploy/toolchain/versions.json'), 'utf8')) as {
    kubeRouter: string;
  };
  return v.kubeRouter;
}

/**
 * netpolToolchainDir is the cache directory of the NetworkPolicy enforcer, keyed by its own version only, so that it
 * never changes the node toolchain's key: `<cacheRoot>/netpol-kube-router-<v>/bin/kube-router`.
 */
export function netpolToolchainDir(version = kubeRouterVersion()): string {
  return join(cacheRoot(), `netpol-kube-router-${version}`);
}

/** isNetpolToolchainComplete reports whether a finished build of the enforcer is in dir. */
export function isNetpolToolchainComplete(dir = netpolToolchainDir()): boolean {
  return existsSync(join(dir, '.complete')) && existsSync(join(dir, 'bin', 'kube-router'));
}

/** kubeRouterPath is the built kube-router, or undefined when it is not built (real nodes then enforce nothing). */
export function kubeRouterPath(dir = netpolToolchainDir()): string | undefined {
  return isNetpolToolchainComplete(dir) ? join(dir, 'bin', 'kube-router') : undefined;
}

/**
 * ensureNetpolToolchain builds kube-router with deploy/toolchain/build-netpol.sh into its cache directory when
 * missing (lock, temporary directory, .complete marker, as ensureToolchain) and returns the directory.
 */
export async function ensureNetpolToolchain(
  o: { out?: NodeJS.WriteStream; script?: string; version?: string } = {},
): Promise<string> {
  const version = o.version ?? kubeRouterVersion();
  const dir = netpolToolchainDir(version);
  return ensureBuilt({
    dir,
    isComplete: isNetpolToolchainComplete,
    what: `the NetworkPolicy enforcer of real nodes (kube-router ${version})`,
    note: 'a cold build takes about 10 minutes on 2 cores, more under load; later runs reuse it',
    marker: { kubeRouter: version },
    out: o.out ?? process.stderr,
    build: (tmp, out) =>
      runBuildScript(o.script ?? fromPackageRoot('deploy/toolchain/build-netpol.sh'), [tmp, version], out),
  });
}
