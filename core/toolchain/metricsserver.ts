import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromPackageRoot } from '../paths.ts';
import { cacheRoot, ensureBuilt, runBuildScript } from './toolchain.ts';

/** metricsServerVersion is the pinned metrics-server version (`metricsServer` in deploy/toolchain/versions.json). */
export function metricsServerVersion(): string {
  const v = JSON.parse(readFileSync(fromPackageRoot('deploy/toolchain/versions.json'), 'utf8')) as {
    metricsServer: string;
  };
  return v.metricsServer;
}

/** metricsServerDir is metrics-server's cache directory, keyed by its version only: `<cacheRoot>/metrics-server-<v>`. */
export function metricsServerDir(version = metricsServerVersion()): string {
  return join(cacheRoot(), `metrics-server-${version}`);
}

/** metricsServerPath is the built metrics-server, or undefined when it is not built. */
export function metricsServerPath(dir = metricsServerDir()): string | undefined {
  const bin = join(dir, 'bin', 'metrics-server');
  return existsSync(join(dir, '.complete')) && existsSync(bin) ? bin : undefined;
}

/**
 * ensureMetricsServer builds metrics-server with deploy/toolchain/build-metrics-server.sh into its cache directory
 * when missing (lock, temporary directory, .complete marker, as ensureToolchain) and returns the binary.
 */
export async function ensureMetricsServer(o: { out?: NodeJS.WriteStream; version?: string } = {}): Promise<string> {
  const version = o.version ?? metricsServerVersion();
  const dir = metricsServerDir(version);
  await ensureBuilt({
    dir,
    isComplete: (d) => metricsServerPath(d) !== undefined,
    what: `metrics-server ${version} (tenant kubectl top and HPAs)`,
    note: 'a cold build takes about 7 minutes on 2 cores under load; later runs reuse it',
    marker: { metricsServer: version },
    out: o.out ?? process.stderr,
    build: (tmp, out) =>
      runBuildScript(fromPackageRoot('deploy/toolchain/build-metrics-server.sh'), [tmp, version], out),
  });
  return join(dir, 'bin', 'metrics-server');
}
