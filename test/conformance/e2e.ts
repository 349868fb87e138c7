import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fromPackageRoot } from '../../core/paths.ts';
import { cacheRoot, ensureBuilt, pinnedVersions, runBuildScript } from '../../core/toolchain/toolchain.ts';

/** E2E_BINARIES are the files of a complete e2e build: the upstream suite and the Ginkgo CLI that runs it. */
export const E2E_BINARIES = ['e2e.test', 'ginkgo'] as const;

/**
 * e2eDir is the cache directory of the e2e build for a Kubernetes version: its own key next to the toolchains
 * (`e2e-k8s-<version>`), so building it never touches their keys.
 */
export function e2eDir(kubernetes = pinnedVersions().kubernetes): string {
  return join(cacheRoot(), `e2e-k8s-${kubernetes}`);
}

/** isE2eComplete reports whether dir holds a finished e2e build. */
export function isE2eComplete(dir: string): boolean {
  return existsSync(join(dir, '.complete')) && E2E_BINARIES.every((b) => existsSync(join(dir, b)));
}

/**
 * ensureE2eBinaries returns the directory of the upstream e2e.test and ginkgo for the pinned Kubernetes version,
 * building them with deploy/toolchain/build-e2e.sh (the toolchains' Kubernetes module recipe) when missing, the way
 * the toolchains are built: under a lock, into a temporary directory renamed into place with a .complete marker.
 */
export async function ensureE2eBinaries(out: NodeJS.WriteStream = process.stderr): Promise<string> {
  const kubernetes = pinnedVersions().kubernetes;
  return ensureBuilt({
    dir: e2eDir(kubernetes),
    isComplete: isE2eComplete,
    what: `the Kubernetes e2e suite (k8s.io/kubernetes/test/e2e ${kubernetes})`,
    note: 'a cold build takes about 30 minutes on 2 cores (less when the toolchain shares its Go cache); later runs reuse it',
    marker: { kubernetes },
    out,
    build: async (tmp, o) => {
      await runBuildScript(fromPackageRoot('deploy/toolchain/build-e2e.sh'), [tmp, kubernetes], o);
      return { bytes: statSync(join(tmp, 'e2e.test')).size };
    },
  });
}
