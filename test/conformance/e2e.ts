import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fromPackageRoot } from '../../core/paths.ts';
import type { TarEntry } from '../../core/toolchain/images.ts';
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

/** E2E_IMAGE_FILES are the files of a complete e2e images build (build-e2e-images.sh). */
export const E2E_IMAGE_FILES = [
  'sample-apiserver',
  'agnhost/localhost.crt',
  'agnhost/localhost.key',
  'nonewprivs/nnp',
  'nautilus/nautilus.jpg',
  'nautilus/data.json',
] as const;

/**
 * e2eImagesDir is the cache directory of the e2e images build for a Kubernetes version: its own key
 * (`e2e-images-<version>`), apart from the node toolchain's, whose key it leaves unchanged.
 */
export function e2eImagesDir(kubernetes = pinnedVersions().kubernetes): string {
  return join(cacheRoot(), `e2e-images-${kubernetes}`);
}

/**
 * ensureE2eImages returns the directory of what the suite's images need beyond the node toolchain, building it when
 * missing (deploy/toolchain/build-e2e-images.sh): `sample-apiserver` from the k8s.io/sample-apiserver Go module of
 * the pinned Kubernetes version (the aggregator spec's image cannot be pulled here), `agnhost/localhost.crt` and
 * `.key`, which upstream's agnhost image has at its root, `nonewprivs/nnp` and `nautilus/` (nautilus.jpg, data.json)
 * from the k8s.io/kubernetes module's test/images.
 */
export async function ensureE2eImages(out: NodeJS.WriteStream = process.stderr): Promise<string> {
  const kubernetes = pinnedVersions().kubernetes;
  return ensureBuilt({
    dir: e2eImagesDir(kubernetes),
    isComplete: (d) => existsSync(join(d, '.complete')) && E2E_IMAGE_FILES.every((f) => existsSync(join(d, f))),
    what: `the e2e images' parts for Kubernetes ${kubernetes} (k8s.io/sample-apiserver, agnhost's certificate, nonewprivs, nautilus)`,
    note: 'a cold build takes a few minutes (seconds when the e2e build filled the Go cache); later runs reuse it',
    marker: { kubernetes },
    out,
    build: async (tmp, o) => {
      await runBuildScript(fromPackageRoot('deploy/toolchain/build-e2e-images.sh'), [tmp, kubernetes], o);
      return { sampleApiserver: readFileSync(join(tmp, 'sample-apiserver.version'), 'utf8').trim() };
    },
  });
}

/** e2eNginxDir is the cache directory of the nginx root file system built from this host's Debian release. */
export function e2eNginxDir(): string {
  return join(cacheRoot(), `e2e-nginx-debian-${debianRelease()}`);
}

function debianRelease(): string {
  return /^VERSION_CODENAME=(.+)$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? 'unknown';
}

/**
 * ensureE2eNginx returns the directory holding `rootfs/`, the root file system of an nginx image made from Debian's
 * nginx package and its libraries (deploy/toolchain/build-e2e-nginx.sh), building it when missing: the suite's
 * nginx images cannot be pulled here.
 */
export async function ensureE2eNginx(out: NodeJS.WriteStream = process.stderr): Promise<string> {
  return ensureBuilt({
    dir: e2eNginxDir(),
    isComplete: (d) => existsSync(join(d, '.complete')) && existsSync(join(d, 'rootfs/usr/sbin/nginx')),
    what: "an nginx image root file system from this host's Debian packages",
    note: 'a cold build downloads about 3 MB of Debian packages and takes under a minute',
    marker: {},
    out,
    build: async (tmp, o) => {
      await runBuildScript(fromPackageRoot('deploy/toolchain/build-e2e-nginx.sh'), [tmp], o);
      return { nginx: readFileSync(join(tmp, 'nginx.version'), 'utf8').trim() };
    },
  });
}

/** e2eToolsDir is the cache directory of the network tools' root file system built from this host's Debian release. */
export function e2eToolsDir(): string {
  return join(cacheRoot(), `e2e-tools-debian-${debianRelease()}`);
}

/**
 * ensureE2eTools returns the directory holding `rootfs/`: Debian's curl, dig (bind9-dnsutils), netcat-openbsd,
 * getent (libc-bin) and busybox (whose shell looks commands up in the PATH) with every package they depend on
 * (deploy/toolchain/build-e2e-tools.sh), building it when missing; the specs run them inside agnhost and
 * glibc-dns-testing Pods, and this host cannot pull those images.
 */
export async function ensureE2eTools(out: NodeJS.WriteStream = process.stderr): Promise<string> {
  return ensureBuilt({
    dir: e2eToolsDir(),
    // a tree built before busybox joined it lacks rootfs/bin/busybox and is built again
    isComplete: (d) =>
      existsSync(join(d, '.complete')) &&
      existsSync(join(d, 'rootfs/usr/bin/dig')) &&
      existsSync(join(d, 'rootfs/bin/busybox')),
    what: "the e2e images' network tools (curl, dig, nc, getent) and shell (busybox) from this host's Debian packages",
    note: 'a cold build downloads about 26 MB of Debian packages (52 with their dependencies) and takes under a minute',
    marker: {},
    out,
    build: async (tmp, o) => {
      await runBuildScript(fromPackageRoot('deploy/toolchain/build-e2e-tools.sh'), [tmp], o);
      return { packages: readFileSync(join(tmp, 'packages'), 'utf8').trim().split('\n') };
    },
  });
}

/**
 * treeEntries lists a directory tree as tar entries (paths relative to root; files with their modes, symbolic links
 * as they are, directories), for an image made of a whole root file system.
 */
export function treeEntries(root: string, rel = ''): TarEntry[] {
  const out: TarEntry[] = [];
  for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
    const path = rel ? `${rel}/${e.name}` : e.name;
    const full = join(root, path);
    if (e.isSymbolicLink()) out.push({ type: 'symlink', path, target: readlinkSync(full) });
    else if (e.isDirectory())
      out.push({ type: 'dir', path, mode: lstatSync(full).mode & 0o7777 }, ...treeEntries(root, path));
    else if (e.isFile())
      out.push({ type: 'file', path, mode: lstatSync(full).mode & 0o7777, data: readFileSync(full) });
  }
  return out;
}
