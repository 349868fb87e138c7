import { supervise } from './child.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromPackageRoot } from '../paths.ts';
import { cacheRoot, ensureBuilt, runBuildScript } from './toolchain.ts';

/** seaweedfsVersion is the pinned SeaweedFS version (`seaweedfs` in deploy/toolchain/versions.json). */
export function seaweedfsVersion(): string {
  const v = JSON.parse(readFileSync(fromPackageRoot('deploy/toolchain/versions.json'), 'utf8')) as {
    seaweedfs?: string;
  };
  if (!v.seaweedfs) throw new Error('deploy/toolchain/versions.json: field "seaweedfs" is missing');
  return v.seaweedfs;
}

/** seaweedfsDir is the cache directory of SeaweedFS, keyed by its own version: `<cacheRoot>/seaweedfs-<v>/bin/weed`. */
export function seaweedfsDir(version = seaweedfsVersion()): string {
  return join(cacheRoot(), `seaweedfs-${version}`);
}

/** isSeaweedfsComplete reports whether a finished build of SeaweedFS is in dir. */
export function isSeaweedfsComplete(dir = seaweedfsDir()): boolean {
  return existsSync(join(dir, '.complete')) && existsSync(join(dir, 'bin', 'weed'));
}

/**
 * ensureSeaweedfs builds SeaweedFS with deploy/toolchain/build-seaweedfs.sh into its cache directory when missing
 * (lock, temporary directory, .complete marker and progress lines, as ensureToolchain) and returns the path of `weed`.
 * Only the object-store tests and benchmarks call it, so nothing else waits for the build.
 */
export async function ensureSeaweedfs(o: { out?: NodeJS.WriteStream; version?: string } = {}): Promise<string> {
  const version = o.version ?? seaweedfsVersion();
  const dir = await ensureBuilt({
    dir: seaweedfsDir(version),
    isComplete: isSeaweedfsComplete,
    what: `SeaweedFS ${version} (the S3-compatible store of the backup tests)`,
    note: 'a cold build compiles about 1,500 packages: many minutes on 2 cores; later runs reuse it',
    marker: { seaweedfs: version },
    out: o.out ?? process.stderr,
    build: (tmp, out) => runBuildScript(fromPackageRoot('deploy/toolchain/build-seaweedfs.sh'), [tmp, version], out),
  });
  return join(dir, 'bin', 'weed');
}

/** LocalObjectStore is a running S3 gateway on 127.0.0.1 with one identity. */
export interface LocalObjectStore {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  dir: string;
  /** stops the process and removes the directory */
  stop(): Promise<void>;
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
 * startObjectStore runs SeaweedFS (`weed server`: master, volume server, filer and S3 gateway in one process) on free
 * ports of 127.0.0.1, with data in a new temporary directory and one S3 identity that may do everything, and waits
 * until the S3 port answers. stop() kills the process and removes the directory.
 */
export async function startObjectStore(o: { weed?: string } = {}): Promise<LocalObjectStore> {
  const weed = o.weed ?? (await ensureSeaweedfs());
  const dir = mkdtempSync(join(tmpdir(), 'vc-s3-'));
  mkdirSync(join(dir, 'data'));
  const accessKeyId = `vc${Math.random().toString(36).slice(2, 12)}`;
  const secretAccessKey = `${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  const config = join(dir, 's3.json');
  writeFileSync(
    config,
    JSON.stringify({
      identities: [
        {
          name: 'backups',
          credentials: [{ accessKey: accessKeyId, secretKey: secretAccessKey }],
          actions: ['Admin', 'Read', 'List', 'Tagging', 'Write'],
        },
      ],
    }),
    { mode: 0o600 },
  );
  const ports: number[] = [];
  while (ports.length < 8) {
    const p = await freePort();
    if (!ports.includes(p)) ports.push(p);
  }
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc] = ports as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const args = [
    'server',
    `-dir=${join(dir, 'data')}`,
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-master.port=${master}`,
    `-master.port.grpc=${masterGrpc}`,
    `-volume.port=${volume}`,
    `-volume.port.grpc=${volumeGrpc}`,
    '-volume.max=8',
    '-master.volumeSizeLimitMB=64',
    '-filer',
    `-filer.port=${filer}`,
    `-filer.port.grpc=${filerGrpc}`,
    '-s3',
    `-s3.port=${s3}`,
    `-s3.port.grpc=${s3Grpc}`,
    `-s3.config=${config}`,
  ];
  const child: ChildProcess = spawn(weed, args, {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    // TMPDIR: its glog files (weed.INFO, weed.ERROR, ...) go to the temporary directory, which stop() removes.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, TMPDIR: dir },
  });
  const proc = supervise(child, { keep: 80, killAfterMs: 10_000, dir });
  // Its unix sockets are named under /tmp whatever TMPDIR says, by kind and port: removed once it has stopped.
  const sockets = [
    `filer-${filer}`,
    `filer-grpc-${filerGrpc}`,
    `master-grpc-${masterGrpc}`,
    `volume-grpc-${volumeGrpc}`,
  ].map((n) => `/tmp/seaweedfs-${n}.sock`);
  const stop = async () => {
    await proc.stop();
    for (const s of sockets) rmSync(s, { force: true });
  };
  const endpoint = `http://127.0.0.1:${s3}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (proc.exited()) {
      await stop();
      throw new Error(`SeaweedFS exited at start:\n${proc.logs()}`);
    }
    // An unsigned request is answered (403) once the gateway serves; before, the connection is refused.
    if ((await probe(s3).catch(() => 0)) > 0) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`SeaweedFS's S3 gateway on ${endpoint} did not answer within 120 s:\n${proc.logs()}`);
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  return { endpoint, accessKeyId, secretAccessKey, dir, stop };
}

function probe(port: number): Promise<number> {
  return new Promise((res, rej) => {
    const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET', timeout: 2000 }, (r) => {
      r.resume();
      res(r.statusCode ?? 0);
    });
    req.on('error', rej);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}
