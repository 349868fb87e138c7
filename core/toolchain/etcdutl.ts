import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fromPackageRoot } from '../paths.ts';
import { cacheRoot, ensureBuilt, pinnedVersions, runBuildScript } from './toolchain.ts';

/**
 * etcdutlDir is the cache directory of etcdutl, keyed by the pinned etcd version only, so that it never changes the
 * control-plane toolchain's key: `<cacheRoot>/etcdutl-<etcd version>/bin/etcdutl`.
 */
export function etcdutlDir(version = pinnedVersions().etcd): string {
  return join(cacheRoot(), `etcdutl-${version}`);
}

/** isEtcdutlComplete reports whether a finished build of etcdutl is in dir. */
export function isEtcdutlComplete(dir = etcdutlDir()): boolean {
  return existsSync(join(dir, '.complete')) && existsSync(join(dir, 'bin', 'etcdutl'));
}

/**
 * ensureEtcdutl builds etcdutl with deploy/toolchain/build-etcdutl.sh into its cache directory when missing (lock,
 * temporary directory, .complete marker, as ensureToolchain) and returns the path of the binary.
 */
export async function ensureEtcdutl(o: { out?: NodeJS.WriteStream; version?: string } = {}): Promise<string> {
  const version = o.version ?? pinnedVersions().etcd;
  const dir = await ensureBuilt({
    dir: etcdutlDir(version),
    isComplete: isEtcdutlComplete,
    what: `etcdutl ${version} (restores etcd snapshots)`,
    note: 'a cold build takes a few minutes on 2 cores (it shares most modules with etcd); later runs reuse it',
    marker: { etcd: version },
    out: o.out ?? process.stderr,
    build: (tmp, out) => runBuildScript(fromPackageRoot('deploy/toolchain/build-etcdutl.sh'), [tmp, version], out),
  });
  return join(dir, 'bin', 'etcdutl');
}
