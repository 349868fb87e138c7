/**
 * The images the conformance suite runs, made here: this host has no registry, so the real nodes' containerd gets
 * each under the name the suite of this Kubernetes version uses (test/utils/image/manifest.go upstream), built from
 * the node toolchain, Go modules of the pinned Kubernetes version and Debian packages.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileEntry, type ImageSpec, type TarEntry } from '../../core/toolchain/images.ts';
import type { NodeImage } from '../../core/toolchain/node.ts';

/** E2eImage is what a name of E2E_IMAGES is built as. */
export type E2eImage =
  | Extract<NodeImage, 'busybox' | 'pause' | 'etcd'>
  | 'agnhost'
  | 'nginx'
  | 'sample-apiserver'
  | 'nautilus'
  | 'nonewprivs'
  | 'glibc-dns-testing';

/**
 * E2E_IMAGES maps the images the e2e suite names to images built here. The versions differ from the names' (the
 * toolchain's agnhost, busybox and etcd, Debian's nginx, curl and dig, the sample-apiserver of this Kubernetes
 * version): the specs use these programs' long-standing behaviour only.
 * - agnhost: the toolchain's, with upstream's /localhost.crt and .key (the StatefulSet readiness probe fetches
 *   them), its /agnhost-2 link, and the network tools upstream's Alpine-based image has (curl, dig, netcat-openbsd),
 *   from Debian, with Debian's dynamically linked busybox, whose shell runs `nc` from the PATH, not its own applet.
 * - busybox: the toolchain's, with every applet also in /bin as upstream's image has it.
 * - nautilus: agnhost serving /nautilus.jpg and /data.json with test-webserver (Kubectl "Update Demo").
 * - nonewprivs: upstream's program that prints its effective uid, set-user-ID root (Security Context
 *   "should not allow privilege escalation when false").
 * - glibc-dns-testing: dig and getent with glibc (the DNS specs' "jessie" probes), a busybox shell around them.
 * - nginx from Debian's packages; sample-apiserver from the k8s.io/sample-apiserver module with an etcd beside it
 *   (the aggregator spec's Pod).
 */
export const E2E_IMAGES: Readonly<Record<string, E2eImage>> = {
  'registry.k8s.io/e2e-test-images/agnhost:2.63.0': 'agnhost',
  'registry.k8s.io/e2e-test-images/agnhost:2.55': 'agnhost',
  'registry.k8s.io/e2e-test-images/busybox:1.37.0-1': 'busybox',
  'registry.k8s.io/pause:3.10.2': 'pause',
  'registry.k8s.io/e2e-test-images/nginx:1.15-4': 'nginx',
  'registry.k8s.io/e2e-test-images/nginx:1.27-0': 'nginx',
  'registry.k8s.io/e2e-test-images/sample-apiserver:1.29.2': 'sample-apiserver',
  'registry.k8s.io/etcd:3.6.8-0': 'etcd',
  'registry.k8s.io/e2e-test-images/nautilus:1.8': 'nautilus',
  'registry.k8s.io/e2e-test-images/nonewprivs:1.4': 'nonewprivs',
  'registry.k8s.io/e2e-test-images/glibc-dns-testing:2.0.0': 'glibc-dns-testing',
};

/** E2eImageSources are the built parts the images are made of. */
export interface E2eImageSources {
  /** the node toolchain's image specs (nodeImageSpecs) */
  node: Record<Extract<NodeImage, 'busybox' | 'pause' | 'etcd' | 'agnhost'>, () => ImageSpec>;
  /** ensureE2eNginx's root file system */
  nginx: () => TarEntry[];
  /** ensureE2eImages' directory: sample-apiserver, agnhost/, nonewprivs/, nautilus/ */
  images: string;
  /** ensureE2eTools' root file system (Debian's curl, dig, netcat-openbsd, getent and their libraries) */
  tools: () => TarEntry[];
}

const TMP_DIR: TarEntry = { type: 'dir', path: 'tmp', mode: 0o1777 };

/**
 * overlay lays `top` over `base` as one layer: an entry of base whose path top also has is left out, so the image
 * holds top's (a tar with the path twice would leave the outcome to the order the runtime unpacks it in).
 */
export function overlay(base: readonly TarEntry[], top: readonly TarEntry[]): TarEntry[] {
  const over = new Set(top.map((e) => e.path));
  return [...base.filter((e) => !over.has(e.path)), ...top];
}

/**
 * binLinks are the links an image of busybox applets also needs in /bin to match upstream's busybox image, which
 * installs every applet there (the Sysctls spec runs /bin/sysctl); Debian's busybox lists some under sbin and usr.
 */
export function binLinks(files: readonly TarEntry[]): TarEntry[] {
  const have = new Set(files.map((e) => e.path));
  const out: TarEntry[] = [];
  for (const e of files) {
    if (e.type !== 'symlink' || e.target !== '/bin/busybox' || e.path.startsWith('bin/')) continue;
    const at = `bin/${e.path.slice(e.path.lastIndexOf('/') + 1)}`;
    if (have.has(at)) continue;
    have.add(at);
    out.push({ type: 'symlink', path: at, target: '/bin/busybox' });
  }
  return out;
}

/** e2eImageSpec is the image a name of E2E_IMAGES is built as, without its reference (the caller names it). */
export function e2eImageSpec(key: E2eImage, s: E2eImageSources): Omit<ImageSpec, 'ref'> {
  const agnhost = (): Omit<ImageSpec, 'ref'> => {
    const base = s.node.agnhost();
    const cert = ['localhost.crt', 'localhost.key'].map((f) => fileEntry(f, join(s.images, 'agnhost', f)));
    // upstream's image links agnhost-2 to agnhost: the entrypoint-override specs run /agnhost-2
    const second: TarEntry = { type: 'symlink', path: 'agnhost-2', target: 'agnhost' };
    return { ...base, files: overlay([...base.files, ...cert, second], s.tools()) };
  };
  switch (key) {
    case 'agnhost':
      return agnhost();
    case 'busybox': {
      const b = s.node.busybox();
      return { ...b, files: [...b.files, ...binLinks(b.files)] };
    }
    case 'nautilus': {
      const a = agnhost();
      const html = ['nautilus.jpg', 'data.json'].map((f) => fileEntry(f, join(s.images, 'nautilus', f)));
      return { ...a, files: [...a.files, ...html], cmd: ['test-webserver'] };
    }
    case 'nonewprivs': {
      const data = readFileSync(join(s.images, 'nonewprivs', 'nnp'));
      return { files: [{ type: 'file', path: 'usr/local/bin/nnp', mode: 0o4755, data }, TMP_DIR], cmd: ['nnp'] };
    }
    case 'glibc-dns-testing': {
      const b = s.node.busybox();
      return { ...b, files: overlay(b.files, s.tools()) };
    }
    case 'nginx':
      return { files: s.nginx(), cmd: ['nginx', '-g', 'daemon off;'] };
    case 'sample-apiserver':
      return {
        files: [fileEntry('sample-apiserver', join(s.images, 'sample-apiserver')), TMP_DIR],
        entrypoint: ['/sample-apiserver'],
      };
    default:
      return s.node[key]();
  }
}
