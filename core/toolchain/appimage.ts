import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { join, relative } from 'node:path';
import { packageRoot } from '../paths.ts';
import { fileEntry, ociImage, writeOciArchive, writeOciLayout, type OciImage, type TarEntry } from './images.ts';

/** APP_DIR is where the application lives inside the image (the Dockerfile's WORKDIR). */
export const APP_DIR = 'app';
/** APP_UID is the non-root user (and group) the image runs as, the same as deploy/Dockerfile's USER. */
export const APP_UID = 65532;
/** APP_ENTRYPOINT is the image's entrypoint: `vc`, so a Pod's args name the subcommand (`manager --config ...`). */
export const APP_ENTRYPOINT = ['/usr/local/bin/node', `/${APP_DIR}/core/programs/cli/vc.mjs`];
/** APP_CMD is the default subcommand when a Pod gives no args. */
export const APP_CMD = ['manager', '--config', '/etc/vc/manager.yaml'];

/** LockPackage is the part of one package-lock.json `packages` entry the image build reads. */
export interface LockPackage {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  link?: boolean;
  resolved?: string;
}

/** ProdPackage is one production package: its path under the root and, for a workspace link, the linked directory. */
export interface ProdPackage {
  path: string;
  version?: string;
  linkTo?: string;
}

/**
 * prodPackages lists the production packages of a package-lock.json (lockfileVersion 2 or 3): every
 * `node_modules/...` entry not flagged `dev`, sorted. Workspace links are kept only when their target is in
 * `keepLinks` (the image ships the plugin SDK, not the example plugins). Entries without a version that are not
 * links, and the workspace folders themselves, are left out. The lock file name is only for error messages.
 */
export function prodPackages(
  lock: { lockfileVersion?: number; packages?: Record<string, LockPackage> },
  keepLinks: readonly string[],
  lockName = 'package-lock.json',
): ProdPackage[] {
  if (!lock.packages || (lock.lockfileVersion ?? 0) < 2)
    throw new Error(`${lockName}: needs lockfileVersion 2 or 3 with a "packages" map (run npm install with npm >= 7)`);
  const out: ProdPackage[] = [];
  for (const [path, p] of Object.entries(lock.packages)) {
    if (!path.startsWith('node_modules/') && !path.includes('/node_modules/')) continue;
    if (p.dev) continue;
    if (p.link) {
      if (!p.resolved) throw new Error(`${lockName}: packages[${JSON.stringify(path)}]: a link without "resolved"`);
      if (keepLinks.includes(p.resolved)) out.push({ path, linkTo: p.resolved });
      continue;
    }
    out.push({ path, version: p.version });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * parseLdd returns the files `ldd` names for a binary: every `name => /path` and the loader's own absolute path,
 * in order. The vDSO has no file; "not found" is an error naming the library.
 */
export function parseLdd(text: string, binary: string): string[] {
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('linux-vdso') || line.startsWith('statically linked')) continue;
    if (line.includes('=> not found')) throw new Error(`${binary}: shared library ${line.split(' ')[0]} not found`);
    const m = /=>\s+(\/\S+)/.exec(line) ?? /^(\/\S+)\s+\(/.exec(line);
    if (m && !out.includes(m[1]!)) out.push(m[1]!);
  }
  return out;
}

/** keepInImage says whether a file of a package belongs in the image: no TypeScript, source maps or docs. */
export function keepInImage(name: string): boolean {
  return !/\.(ts|mts|cts|map|md|markdown|tsbuildinfo)$/i.test(name);
}

/** walk adds the files and symlinks below src (skipping nested node_modules and what keepInImage drops) at dest. */
function walk(src: string, dest: string, out: TarEntry[], skipNodeModules: boolean): void {
  for (const name of readdirSync(src).sort()) {
    const s = join(src, name);
    const d = `${dest}/${name}`;
    const st = lstatSync(s);
    if (st.isSymbolicLink()) {
      out.push({ type: 'symlink', path: d, target: readlinkSync(s) });
    } else if (st.isDirectory()) {
      if (skipNodeModules && name === 'node_modules') continue;
      walk(s, d, out, skipNodeModules);
    } else if (st.isFile() && keepInImage(name)) {
      out.push(fileEntry(d, s));
    }
  }
}

/** AppImageOptions tune appImageFiles and buildAppImage. */
export interface AppImageOptions {
  /** the repository root (package.json, package-lock.json, dist/, node_modules/); packageRoot by default */
  root?: string;
  /** the Node.js binary to ship; node_modules/node/bin/node (the pinned `node` package) by default */
  nodeBinary?: string;
  /** the nft binary to ship at /usr/sbin/nft (the node's cluster IP translation); /usr/sbin/nft by default */
  nftBinary?: string;
  /** the CA bundle to ship at /etc/ssl/certs/ca-certificates.crt */
  caBundle?: string;
  /** the image reference written into index.json */
  ref?: string;
}

const SDK_DIR = 'plugins/sdk';

/**
 * appImageFiles collects the image's files: Node.js and nft with the shared libraries and loader they link, the compiled
 * dist/ (JavaScript and JSON only), the production node_modules of package-lock.json, the plugin SDK's build, the
 * CRDs and versions.json the programs read, a CA bundle, /etc/passwd and /etc/group with the user 65532, and /tmp.
 * A missing part is an error saying which and how to make it.
 */
export function appImageFiles(o: AppImageOptions = {}): TarEntry[] {
  const root = o.root ?? packageRoot;
  const node = o.nodeBinary ?? join(root, 'node_modules', 'node', 'bin', 'node');
  const need = (p: string, how: string): string => {
    if (!existsSync(p)) throw new Error(`image build: ${p} is missing: ${how}`);
    return p;
  };
  need(node, 'install the pinned `node` package (npm ci)');
  const nft = need(o.nftBinary ?? '/usr/sbin/nft', 'install the nftables package (apt-get install nftables)');
  need(join(root, 'dist', 'core', 'programs', 'cli', 'main.js'), 'run `npm run build` first');
  need(join(root, SDK_DIR, 'dist'), 'run `npm run build:plugins` first');
  const caBundle = need(o.caBundle ?? '/etc/ssl/certs/ca-certificates.crt', 'install the ca-certificates package');
  const out: TarEntry[] = [];
  const A = APP_DIR;

  // Node.js, and nft for the node's cluster IP translation (`vc cluster-ips`), each with the libraries it links
  const libs = new Set<string>();
  for (const [binary, at] of [
    [node, 'usr/local/bin/node'],
    [nft, 'usr/sbin/nft'],
  ] as const) {
    out.push({ type: 'file', path: at, mode: 0o755, data: readFileSync(binary) });
    for (const lib of parseLdd(execFileSync('ldd', [binary], { encoding: 'utf8' }), binary)) {
      if (libs.has(lib)) continue;
      libs.add(lib);
      out.push({ type: 'file', path: lib.slice(1), mode: 0o755, data: readFileSync(realpathSync(lib)) });
    }
  }
  out.push({ type: 'file', path: 'etc/ssl/certs/ca-certificates.crt', data: readFileSync(caBundle) });
  out.push({
    type: 'file',
    path: 'etc/passwd',
    data: Buffer.from(`root:x:0:0:root:/root:/sbin/nologin\nvc:x:${APP_UID}:${APP_UID}:vc:/tmp:/sbin/nologin\n`),
  });
  out.push({ type: 'file', path: 'etc/group', data: Buffer.from(`root:x:0:\nvc:x:${APP_UID}:\n`) });
  out.push({
    type: 'file',
    path: 'etc/nsswitch.conf',
    data: Buffer.from('passwd: files\ngroup: files\nhosts: files dns\n'),
  });
  out.push({ type: 'dir', path: 'tmp', mode: 0o1777 });

  out.push(fileEntry(`${A}/package.json`, join(root, 'package.json')));
  out.push(fileEntry(`${A}/core/programs/cli/vc.mjs`, join(root, 'core/programs/cli/vc.mjs')));
  out.push(fileEntry(`${A}/deploy/toolchain/versions.json`, join(root, 'deploy/toolchain/versions.json')));
  walk(join(root, 'deploy', 'crds'), `${A}/deploy/crds`, out, false);
  const dist: TarEntry[] = [];
  walk(join(root, 'dist'), `${A}/dist`, dist, false);
  out.push(...dist.filter((e) => e.type !== 'file' || /\.(js|mjs|cjs|json)$/.test(e.path)));
  out.push(fileEntry(`${A}/${SDK_DIR}/package.json`, join(root, SDK_DIR, 'package.json')));
  walk(join(root, SDK_DIR, 'dist'), `${A}/${SDK_DIR}/dist`, out, false);

  const lockFile = join(root, 'package-lock.json');
  const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as Parameters<typeof prodPackages>[0];
  for (const p of prodPackages(lock, [SDK_DIR], lockFile)) {
    const dir = join(root, p.path);
    if (p.linkTo) {
      out.push({
        type: 'symlink',
        path: `${A}/${p.path}`,
        target: relative(join(root, p.path, '..'), join(root, p.linkTo)),
      });
      continue;
    }
    // Optional packages for other platforms (esbuild's, fsevents) are in the lock but not installed here.
    if (!existsSync(dir)) continue;
    const installed = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version?: string }).version;
    if (p.version && installed !== p.version)
      throw new Error(`image build: ${p.path} is ${installed} but ${lockFile} pins ${p.version}: run npm ci`);
    walk(dir, `${A}/${p.path}`, out, true);
  }
  return out;
}

/** AppImage is the built image plus where it was written. */
export interface AppImage extends OciImage {
  ref: string;
  /** the OCI layout directory or archive written */
  path: string;
}

/** defaultAppRef is the reference the deploy manifests name (`virtualcluster-ts:<version>`), fully qualified. */
export function defaultAppRef(root = packageRoot): string {
  const v = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  return `docker.io/library/virtualcluster-ts:${v}`;
}

/**
 * buildAppImage builds the manager, vn-agent and CLI image from appImageFiles and writes it as an OCI layout
 * directory (`out`) or an OCI archive (`archive`). The same inputs give the same digest: every tar member is owned
 * by 0:0 with mtime 0, sorted, and the config carries no timestamps.
 */
export function buildAppImage(o: AppImageOptions & ({ out: string } | { archive: string })): AppImage {
  const ref = o.ref ?? defaultAppRef(o.root);
  const spec = {
    ref,
    files: appImageFiles(o),
    entrypoint: APP_ENTRYPOINT,
    cmd: APP_CMD,
    // Debian's PATH, as deploy/Dockerfile's base has it: nft is in /usr/sbin
    env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'NODE_ENV=production', 'LOG_LEVEL=info'],
    workingDir: `/${APP_DIR}`,
    user: `${APP_UID}:${APP_UID}`,
    createdBy: 'virtualcluster-ts vc image build',
  };
  if ('archive' in o) return { ...writeOciArchive(o.archive, spec), ref, path: o.archive };
  const img = ociImage(spec);
  writeOciLayout(o.out, img);
  return { ...img, ref, path: o.out };
}
