import { supervise } from './child.ts';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCA, issueCert, type CertKeyPair } from '../pki/ca.ts';
import { fromPackageRoot } from '../paths.ts';
import { cacheRoot, ensureBuilt, runBuildScript } from './toolchain.ts';

/** distributionVersion is the pinned Distribution registry version (`distribution` in deploy/toolchain/versions.json). */
export function distributionVersion(): string {
  const v = JSON.parse(readFileSync(fromPackageRoot('deploy/toolchain/versions.json'), 'utf8')) as {
    distribution?: string;
  };
  if (!v.distribution) throw new Error('deploy/toolchain/versions.json: field "distribution" is missing');
  return v.distribution;
}

/**
 * registryToolchainDir is the cache directory of the registry, keyed by its own version only, so that pinning or
 * bumping it never changes the Kubernetes or node toolchain keys: `<cacheRoot>/registry-distribution-<v>/bin/registry`.
 */
export function registryToolchainDir(version = distributionVersion()): string {
  return join(cacheRoot(), `registry-distribution-${version}`);
}

/** isRegistryToolchainComplete reports whether a finished build of the registry (and its bcrypt helper) is in dir. */
export function isRegistryToolchainComplete(dir = registryToolchainDir()): boolean {
  return (
    existsSync(join(dir, '.complete')) &&
    existsSync(join(dir, 'bin', 'registry')) &&
    existsSync(join(dir, 'bin', 'htpasswd-bcrypt'))
  );
}

/**
 * ensureRegistryToolchain builds the registry with deploy/toolchain/build-registry.sh into its cache directory when
 * missing (lock, temporary directory, .complete marker and progress lines, as ensureToolchain) and returns the
 * directory. Only what needs a registry calls it, so nobody else waits for the build.
 */
export async function ensureRegistryToolchain(
  o: { out?: NodeJS.WriteStream; script?: string; version?: string } = {},
): Promise<string> {
  const version = o.version ?? distributionVersion();
  return ensureBuilt({
    dir: registryToolchainDir(version),
    isComplete: isRegistryToolchainComplete,
    what: `the OCI registry (CNCF Distribution ${version})`,
    note: 'a cold build takes a few minutes on 2 cores, more under load; later runs reuse it',
    marker: { distribution: version },
    out: o.out ?? process.stderr,
    build: (tmp, out) =>
      runBuildScript(o.script ?? fromPackageRoot('deploy/toolchain/build-registry.sh'), [tmp, version], out),
  });
}

/** RegistryUser is one account of the registry's htpasswd file. */
export interface RegistryUser {
  username: string;
  password: string;
}

/** RegistryOptions tune startRegistry. */
export interface RegistryOptions {
  /** accounts for htpasswd basic auth; without any, the registry serves everyone anonymously */
  users?: readonly RegistryUser[];
  /** a CA to sign the serving certificate with; a new one is made when absent */
  ca?: CertKeyPair;
  /** the directory for storage, config and certificates; a new temporary one (removed by stop) when absent */
  dir?: string;
  /** the toolchain directory; ensureRegistryToolchain() when absent */
  toolchain?: string;
}

/** LocalRegistry is a running registry on 127.0.0.1. */
export interface LocalRegistry {
  /** `127.0.0.1:<port>`, the registry host part of image references */
  host: string;
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** the CA that signed the serving certificate (PEM); clients trust this */
  caPem: string;
  /** the CA file on disk, for `--ca-file` and containerd's hosts.toml */
  caFile: string;
  dir: string;
  /** stops the process and removes the directory when startRegistry made it */
  stop(): Promise<void>;
}

/** bcryptHash hashes a password with the toolchain's htpasswd-bcrypt helper (the format the registry's htpasswd reads). */
export function bcryptHash(toolchain: string, password: string): string {
  if (password.includes('\n')) throw new Error('registry user password: must not contain a newline');
  return execFileSync(join(toolchain, 'bin', 'htpasswd-bcrypt'), { input: `${password}\n`, encoding: 'utf8' }).trim();
}

/**
 * registryConfig renders the registry's YAML configuration: filesystem storage under root, TLS on addr, and htpasswd
 * basic auth when htpasswdFile is given. JSON is valid YAML, so the object is written as JSON.
 */
export function registryConfig(o: {
  addr: string;
  root: string;
  certFile: string;
  keyFile: string;
  htpasswdFile?: string;
}): string {
  return JSON.stringify(
    {
      version: 0.1,
      log: { level: 'warn', accesslog: { disabled: true } },
      storage: { filesystem: { rootdirectory: o.root }, delete: { enabled: true } },
      http: { addr: o.addr, tls: { certificate: o.certFile, key: o.keyFile } },
      ...(o.htpasswdFile ? { auth: { htpasswd: { realm: 'vc-registry', path: o.htpasswdFile } } } : {}),
    },
    null,
    2,
  );
}

async function freePort(): Promise<number> {
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

/**
 * startRegistry runs the Distribution registry on a free port of 127.0.0.1 with TLS from a local CA and filesystem
 * storage, waits until `GET /v2/` answers (200, or 401 with auth), and returns it. The process is killed and a
 * directory it made is removed by stop().
 */
export async function startRegistry(o: RegistryOptions = {}): Promise<LocalRegistry> {
  const toolchain = o.toolchain ?? (await ensureRegistryToolchain());
  const ownDir = !o.dir;
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'vc-registry-'));
  mkdirSync(join(dir, 'storage'), { recursive: true });
  const ca = o.ca ?? (await createCA('vc-registry-ca', 30));
  const serving = await issueCert(ca, {
    commonName: 'vc-registry',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usages: ['server'],
    validityDays: 30,
  });
  const caFile = join(dir, 'ca.crt');
  writeFileSync(caFile, ca.certPem);
  writeFileSync(join(dir, 'tls.crt'), serving.certPem);
  writeFileSync(join(dir, 'tls.key'), serving.keyPem, { mode: 0o600 });
  let htpasswdFile: string | undefined;
  if (o.users?.length) {
    htpasswdFile = join(dir, 'htpasswd');
    const lines = o.users.map((u) => {
      if (!u.username || u.username.includes(':'))
        throw new Error(`registry user ${JSON.stringify(u.username)}: bad name`);
      return `${u.username}:${bcryptHash(toolchain, u.password)}`;
    });
    writeFileSync(htpasswdFile, `${lines.join('\n')}\n`, { mode: 0o600 });
  }
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const configFile = join(dir, 'config.yml');
  writeFileSync(
    configFile,
    registryConfig({
      addr: host,
      root: join(dir, 'storage'),
      certFile: join(dir, 'tls.crt'),
      keyFile: join(dir, 'tls.key'),
      htpasswdFile,
    }),
  );
  const child: ChildProcess = spawn(join(toolchain, 'bin', 'registry'), ['serve', configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', OTEL_TRACES_EXPORTER: 'none' },
  });
  const proc = supervise(child, { keep: 50, killAfterMs: 5000, ...(ownDir && { dir }) });
  const { stop } = proc;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exited()) {
      await stop();
      throw new Error(`registry on ${host} exited at start:\n${proc.logs()}`);
    }
    const status = await probe(port, ca.certPem).catch(() => 0);
    if (status === 200 || status === 401) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`registry on ${host} did not answer GET /v2/ within 30 s:\n${proc.logs()}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { host, url: `https://${host}`, caPem: ca.certPem, caFile, dir, stop };
}

function probe(port: number, ca: string): Promise<number> {
  return new Promise((res, rej) => {
    const req = request({ host: '127.0.0.1', port, path: '/v2/', method: 'GET', ca, timeout: 2000 }, (r) => {
      r.resume();
      res(r.statusCode ?? 0);
    });
    req.on('error', rej);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}
