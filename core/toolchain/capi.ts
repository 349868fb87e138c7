import { supervise } from './child.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCA, issueCert } from '../pki/ca.ts';
import { fromPackageRoot } from '../paths.ts';
import { cacheRoot, ensureBuilt, runBuildScript } from './toolchain.ts';

/** clusterApiVersion is the pinned Cluster API version (`clusterApi` in deploy/toolchain/versions.json). */
export function clusterApiVersion(): string {
  const v = JSON.parse(readFileSync(fromPackageRoot('deploy/toolchain/versions.json'), 'utf8')) as {
    clusterApi?: string;
  };
  if (!v.clusterApi) throw new Error('deploy/toolchain/versions.json: field "clusterApi" is missing');
  return v.clusterApi;
}

/**
 * capiToolchainDir is the cache directory of the Cluster API core manager and its CRDs, keyed by the Cluster API
 * version only, so that it never changes another toolchain's key: `<cacheRoot>/cluster-api-<v>/{bin/capi-manager,crds}`.
 */
export function capiToolchainDir(version = clusterApiVersion()): string {
  return join(cacheRoot(), `cluster-api-${version}`);
}

/** isCapiToolchainComplete reports whether a finished build of the Cluster API manager and its CRDs is in dir. */
export function isCapiToolchainComplete(dir = capiToolchainDir()): boolean {
  return (
    existsSync(join(dir, '.complete')) &&
    existsSync(join(dir, 'bin', 'capi-manager')) &&
    existsSync(join(dir, 'crds', 'cluster.x-k8s.io_clusters.yaml'))
  );
}

/**
 * ensureCapiToolchain builds the Cluster API core manager with deploy/toolchain/build-capi.sh into its cache directory
 * when missing (lock, temporary directory, .complete marker and progress lines, as ensureToolchain) and returns the
 * directory. Only what runs Cluster API calls it, so nobody else waits for the build.
 */
export async function ensureCapiToolchain(o: { out?: NodeJS.WriteStream; version?: string } = {}): Promise<string> {
  const version = o.version ?? clusterApiVersion();
  return ensureBuilt({
    dir: capiToolchainDir(version),
    isComplete: isCapiToolchainComplete,
    what: `the Cluster API core manager (sigs.k8s.io/cluster-api ${version})`,
    note:
      'it compiles 1039 packages (measured with empty GOMODCACHE and GOCACHE: 101 modules, 391 MB downloaded, ' +
      '430 CPU-seconds; far longer in wall time on a loaded machine); later runs reuse it',
    marker: { clusterApi: version },
    out: o.out ?? process.stderr,
    build: (tmp, out) =>
      runBuildScript(fromPackageRoot('deploy/toolchain/build-capi.sh'), [tmp, version, 'manager'], out),
  });
}

/** clusterctlDir is the cache directory of clusterctl of a Cluster API version: `<cacheRoot>/clusterctl-<v>/bin`. */
export function clusterctlDir(version = clusterApiVersion()): string {
  return join(cacheRoot(), `clusterctl-${version}`);
}

/** isClusterctlComplete reports whether a finished build of clusterctl is in dir. */
export function isClusterctlComplete(dir = clusterctlDir()): boolean {
  return existsSync(join(dir, '.complete')) && existsSync(join(dir, 'bin', 'clusterctl'));
}

/**
 * ensureClusterctl builds clusterctl from the same sigs.k8s.io/cluster-api module version as the manager (its
 * cmd/clusterctl) into a cache directory of its own when missing, and returns the path of the binary.
 */
export async function ensureClusterctl(o: { out?: NodeJS.WriteStream; version?: string } = {}): Promise<string> {
  const version = o.version ?? clusterApiVersion();
  const dir = await ensureBuilt({
    dir: clusterctlDir(version),
    isComplete: isClusterctlComplete,
    what: `clusterctl (sigs.k8s.io/cluster-api ${version})`,
    note:
      'it compiles 710 packages, most shared with the Cluster API manager (measured: 26 to 34 CPU-seconds once ' +
      "the manager's build has filled the Go caches); later runs reuse it",
    marker: { clusterctl: version },
    out: o.out ?? process.stderr,
    build: (tmp, out) =>
      runBuildScript(fromPackageRoot('deploy/toolchain/build-capi.sh'), [tmp, version, 'clusterctl'], out),
  });
  return join(dir, 'bin', 'clusterctl');
}

/** CapiManagerOptions tune startCapiManager. */
export interface CapiManagerOptions {
  /** kubeconfig of the management cluster (the meta cluster), with rights to Cluster API's kinds and CRDs */
  kubeconfig: string;
  /** the toolchain directory; ensureCapiToolchain() when absent */
  toolchain?: string;
}

/** CapiManager is a running Cluster API core manager. */
export interface CapiManager {
  /** the CRD files of this Cluster API version (apply them before start, with applyCapiCRDs) */
  crdDir: string;
  /** the last lines it logged, for a failing test's message */
  logs(): string;
  stop(): Promise<void>;
}

/** capiCRDFiles lists the CRD files of a built Cluster API toolchain. */
export function capiCRDFiles(toolchain = capiToolchainDir()): string[] {
  const dir = join(toolchain, 'crds');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join(dir, f));
}

/**
 * startCapiManager runs the Cluster API core manager against the management cluster: health, diagnostics and the
 * webhook server on free ports (health and diagnostics on 127.0.0.1; the webhook server has no host flag and listens
 * on every address of its port). No webhook configuration is installed, so the apiserver never calls it: it serves
 * only because the manager will not start without it, with a certificate from a CA made here. Resolves once /readyz
 * answers 200; stop() kills it and removes its directory.
 */
export async function startCapiManager(o: CapiManagerOptions): Promise<CapiManager> {
  const toolchain = o.toolchain ?? (await ensureCapiToolchain());
  const dir = mkdtempSync(join(tmpdir(), 'vc-capi-'));
  const ca = await createCA('vc-capi-webhook-ca', 1);
  const serving = await issueCert(ca, {
    commonName: 'capi-webhook',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usages: ['server'],
    validityDays: 1,
  });
  writeFileSync(join(dir, 'tls.crt'), serving.certPem);
  writeFileSync(join(dir, 'tls.key'), serving.keyPem, { mode: 0o600 });
  const [health, diagnostics, webhook] = [await freePort(), await freePort(), await freePort()];
  const child: ChildProcess = spawn(
    join(toolchain, 'bin', 'capi-manager'),
    [
      `--kubeconfig=${o.kubeconfig}`,
      `--health-addr=127.0.0.1:${health}`,
      `--diagnostics-address=127.0.0.1:${diagnostics}`,
      '--insecure-diagnostics',
      `--webhook-port=${webhook}`,
      `--webhook-cert-dir=${dir}`,
      '--leader-elect=false',
      '--v=2',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir } },
  );
  const proc = supervise(child, { keep: 200, killAfterMs: 10_000, dir });
  const { logs, stop } = proc;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (proc.exited()) {
      await stop();
      throw new Error(`the Cluster API manager exited at start:\n${logs()}`);
    }
    const status = await readyz(health).catch(() => 0);
    if (status === 200) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the Cluster API manager was not ready within 120 s:\n${logs()}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return { crdDir: join(toolchain, 'crds'), logs, stop };
}

function readyz(port: number): Promise<number> {
  return new Promise((res, rej) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/readyz', method: 'GET', timeout: 2000 }, (r) => {
      r.resume();
      res(r.statusCode ?? 0);
    });
    req.on('error', rej);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => res(port));
    });
  });
}
