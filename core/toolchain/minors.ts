import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromPackageRoot } from '../paths.ts';
import { binaryPath, cacheRoot, ensureBuilt, pinnedVersions, runBuildScript } from './toolchain.ts';

/**
 * This module gives tenant control planes the binaries of their ClusterVersion's Kubernetes version: the pinned
 * toolchain's for `kubernetes` in deploy/toolchain/versions.json, and a second, older minor (`kubernetesPrevious`)
 * built by deploy/toolchain/build-k8s-minor.sh into a cache of its own. Only kube-apiserver and
 * kube-controller-manager are built for it: a tenant runs no scheduler, and etcd, kubectl and kwok stay the pinned ones.
 */

/** TenantBinaries are the two executables a tenant control plane runs of its Kubernetes version. */
export interface TenantBinaries {
  apiserver: string;
  controllerManager: string;
}

/** previousKubernetes is the older pinned minor (`kubernetesPrevious` in versions.json), or undefined without one. */
export function previousKubernetes(): string | undefined {
  const v = JSON.parse(readFileSync(fromPackageRoot('deploy/toolchain/versions.json'), 'utf8')) as {
    kubernetesPrevious?: string;
  };
  return v.kubernetesPrevious;
}

/** knownKubernetesVersions are the versions a tenant control plane can run here: the pinned one first. */
export function knownKubernetesVersions(): string[] {
  const prev = previousKubernetes();
  return [pinnedVersions().kubernetes, ...(prev ? [prev] : [])];
}

/** kubernetesMinorDir is the cache directory of one older version's binaries: `<cacheRoot>/k8s-tenant-<version>`. */
export function kubernetesMinorDir(version: string): string {
  return join(cacheRoot(), `k8s-tenant-${version}`);
}

/** isMinorComplete reports whether a finished build of the tenant binaries is in dir. */
export function isMinorComplete(dir: string): boolean {
  return (
    existsSync(join(dir, '.complete')) &&
    existsSync(join(dir, 'bin', 'kube-apiserver')) &&
    existsSync(join(dir, 'bin', 'kube-controller-manager'))
  );
}

/**
 * ensureKubernetesMinor builds kube-apiserver and kube-controller-manager of `version` (default: the previous pinned
 * minor) into their cache directory when missing (lock, temporary directory, .complete marker, progress lines, as
 * ensureToolchain) and returns the directory. Only what runs that version calls it, so nobody else waits for it.
 */
export async function ensureKubernetesMinor(
  o: { version?: string; out?: NodeJS.WriteStream; script?: string } = {},
): Promise<string> {
  const version = o.version ?? previousKubernetes();
  if (!version) throw new Error('deploy/toolchain/versions.json pins no kubernetesPrevious');
  return ensureBuilt({
    dir: kubernetesMinorDir(version),
    isComplete: isMinorComplete,
    what: `kube-apiserver and kube-controller-manager ${version} (tenants of the older Kubernetes minor)`,
    note: 'a cold build compiles about 2,100 Go packages (most of Kubernetes) on top of the main toolchain; later runs reuse it',
    marker: { kubernetes: version },
    out: o.out ?? process.stderr,
    build: (tmp, out) =>
      runBuildScript(o.script ?? fromPackageRoot('deploy/toolchain/build-k8s-minor.sh'), [tmp, version], out),
  });
}

/** UnknownKubernetesVersion is thrown for a version this toolchain has no binaries for. */
export class UnknownKubernetesVersion extends Error {
  constructor(readonly version: string) {
    super(
      `Kubernetes ${version} is not one this toolchain provides (${knownKubernetesVersions().join(', ')}; ` +
        'deploy/toolchain/versions.json pins them)',
    );
    this.name = 'UnknownKubernetesVersion';
  }
}

/**
 * tenantBinaries are the binaries of `version` (undefined: the pinned one). The pinned version's come from the main
 * toolchain; the previous minor's from its own cache, which must be built (`npx vc toolchain build --previous`);
 * another version throws UnknownKubernetesVersion.
 */
export function tenantBinaries(version?: string): TenantBinaries {
  if (!version || version === pinnedVersions().kubernetes)
    return { apiserver: binaryPath('kube-apiserver'), controllerManager: binaryPath('kube-controller-manager') };
  if (version !== previousKubernetes()) throw new UnknownKubernetesVersion(version);
  const dir = kubernetesMinorDir(version);
  if (!isMinorComplete(dir))
    throw new Error(`Kubernetes ${version} is not built in ${dir}: run \`npx vc toolchain build --previous\``);
  return {
    apiserver: join(dir, 'bin', 'kube-apiserver'),
    controllerManager: join(dir, 'bin', 'kube-controller-manager'),
  };
}
