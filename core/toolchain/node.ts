import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fromPackageRoot } from '../paths.ts';
import { fileEntry, writeOciArchive, type ImageSpec, type TarEntry } from './images.ts';
import { cacheRoot, ensureBuilt, ensureToolchain, runBuildScript } from './toolchain.ts';

/**
 * NodeVersions are the pinned versions of what a real node runs, read from deploy/toolchain/versions.json. pause,
 * agnhost, kubelet and kube-proxy follow `kubernetes`.
 */
export interface NodeVersions {
  kubernetes: string;
  containerd: string;
  runc: string;
  cniPlugins: string;
  coredns: string;
  /** gVisor's pseudo-version; its runsc is an optional second runtime handler */
  gvisor?: string;
}

/** NODE_BINARIES lists every executable a complete node toolchain has in its bin/ directory. */
export const NODE_BINARIES = [
  'kubelet',
  'kube-proxy',
  'containerd',
  'containerd-shim-runc-v2',
  'ctr',
  'runc',
  'coredns',
  'agnhost',
  'pause',
] as const;
/** NodeBinary is one of NODE_BINARIES. */
export type NodeBinary = (typeof NODE_BINARIES)[number];

/** OPTIONAL_NODE_BINARIES may be missing from a complete node toolchain (gVisor, when it did not build). */
export const OPTIONAL_NODE_BINARIES = ['runsc', 'containerd-shim-runsc-v1'] as const;

/** CNI_PLUGINS lists the CNI plugin executables in the toolchain's cni/ directory. */
export const CNI_PLUGINS = ['bridge', 'host-local', 'loopback', 'portmap'] as const;

/**
 * NODE_IMAGES names the images a node toolchain provides as OCI archives in images/<key>.tar, each imported into a
 * real node's containerd under exactly this reference (fully qualified: CRI normalises short names to docker.io).
 */
export const NODE_IMAGES = {
  pause: 'registry.k8s.io/pause:3.10',
  busybox: 'docker.io/library/busybox:1.35',
  agnhost: 'registry.k8s.io/e2e-test-images/agnhost:2.56',
  /** CoreDNS from versions.json `coredns` */
  coredns: 'registry.k8s.io/coredns/coredns:v1.15.0',
  /** the control-plane toolchain's etcd, tagged as the native provisioner names `etcd.version` v3.6.16 */
  etcd: 'registry.k8s.io/etcd:3.6.16-0',
  /** the control-plane toolchain's kube-apiserver, tagged as the native provisioner names `kubernetesVersion` */
  'kube-apiserver': 'registry.k8s.io/kube-apiserver:v1.36.3',
  /** the control-plane toolchain's kube-controller-manager, likewise */
  'kube-controller-manager': 'registry.k8s.io/kube-controller-manager:v1.36.3',
} as const;
/** NodeImage is a key of NODE_IMAGES. */
export type NodeImage = keyof typeof NODE_IMAGES;

/** pinnedNodeVersions reads the node parts of deploy/toolchain/versions.json. */
export function pinnedNodeVersions(): NodeVersions {
  const v = JSON.parse(readFileSync(fromPackageRoot('deploy/toolchain/versions.json'), 'utf8')) as NodeVersions;
  return {
    kubernetes: v.kubernetes,
    containerd: v.containerd,
    runc: v.runc,
    cniPlugins: v.cniPlugins,
    coredns: v.coredns,
    gvisor: v.gvisor,
  };
}

/**
 * nodeToolchainDir is the directory of the node toolchain for the given versions (it may not exist yet):
 * $VC_NODE_TOOLCHAIN_DIR when set (a hand-made layout, for development), else a directory in cacheRoot() keyed by
 * every version. Layout: bin/<NODE_BINARIES> (and bin/busybox, the images' shell), cni/<CNI_PLUGINS>,
 * images/<NodeImage>.tar, .complete (JSON: versions, busybox package version, gvisor built or not, image digests).
 */
export function nodeToolchainDir(v?: NodeVersions): string {
  if (process.env.VC_NODE_TOOLCHAIN_DIR) return resolve(process.env.VC_NODE_TOOLCHAIN_DIR);
  const n = v ?? pinnedNodeVersions();
  const gv = n.gvisor ? `_gvisor-${n.gvisor.split('-').pop()!.slice(0, 12)}` : '';
  return join(
    cacheRoot(),
    `node-k8s-${n.kubernetes}_containerd-${n.containerd}_runc-${n.runc}_cni-${n.cniPlugins}_coredns-${n.coredns}${gv}`,
  );
}

/** isNodeToolchainComplete reports whether every required binary, CNI plugin and image archive is in dir. */
export function isNodeToolchainComplete(dir: string = nodeToolchainDir()): boolean {
  return (!!process.env.VC_NODE_TOOLCHAIN_DIR || existsSync(join(dir, '.complete'))) && !missingNodeParts(dir).length;
}

/** missingNodeParts lists the required files (relative to dir) a node toolchain directory lacks. */
export function missingNodeParts(dir: string): string[] {
  return [
    ...NODE_BINARIES.map((b) => `bin/${b}`),
    ...CNI_PLUGINS.map((c) => `cni/${c}`),
    ...Object.keys(NODE_IMAGES).map((i) => `images/${i}.tar`),
  ].filter((p) => !existsSync(join(dir, p)));
}

/** nodeBinaryPath returns the path of one node binary; it throws when the node toolchain is not built. */
export function nodeBinaryPath(
  name: NodeBinary | (typeof OPTIONAL_NODE_BINARIES)[number],
  dir = nodeToolchainDir(),
): string {
  if (!isNodeToolchainComplete(dir))
    throw new Error(`the node toolchain is not built in ${dir}: run \`npx vc toolchain build --node\``);
  return join(dir, 'bin', name);
}

/** cniBinDir is the directory holding the CNI plugins of a node toolchain. */
export function cniBinDir(dir = nodeToolchainDir()): string {
  return join(dir, 'cni');
}

/** nodeImageArchive is the OCI archive of one image of a node toolchain. */
export function nodeImageArchive(image: NodeImage, dir = nodeToolchainDir()): string {
  return join(dir, 'images', `${image}.tar`);
}

/** NodeBuildOptions tune ensureNodeToolchain. */
export interface NodeBuildOptions {
  versions?: NodeVersions;
  /** where progress goes; defaults to stderr */
  out?: NodeJS.WriteStream;
  /** the build recipe (default deploy/toolchain/build-node.sh); tests substitute a fast one */
  script?: string;
  /** the control-plane toolchain whose etcd, kube-apiserver and kube-controller-manager become images; default: ensureToolchain() */
  controlPlaneDir?: string;
}

/**
 * ensureNodeToolchain returns the directory of a complete node toolchain for the pinned versions, building it when
 * missing the same way ensureToolchain does (lock, private temporary directory, .complete marker, rename): the
 * binaries with deploy/toolchain/build-node.sh, then the image archives of NODE_IMAGES (the control-plane images
 * from the control-plane toolchain, which is built first when missing). gVisor is optional: when it did not build,
 * the toolchain is complete without it and the marker says `gvisor: false`.
 */
export async function ensureNodeToolchain(opts: NodeBuildOptions = {}): Promise<string> {
  const v = opts.versions ?? pinnedNodeVersions();
  const out = opts.out ?? process.stderr;
  const dir = nodeToolchainDir(v);
  if (isNodeToolchainComplete(dir)) return dir;
  // A hand-made layout is never replaced by a build.
  if (process.env.VC_NODE_TOOLCHAIN_DIR)
    throw new Error(`VC_NODE_TOOLCHAIN_DIR=${dir} lacks ${missingNodeParts(dir).join(', ')}`);
  const controlPlane = opts.controlPlaneDir ?? (await ensureToolchain({ out }));
  const script = opts.script ?? fromPackageRoot('deploy/toolchain/build-node.sh');
  return ensureBuilt({
    dir,
    isComplete: isNodeToolchainComplete,
    what:
      `the node toolchain (kubernetes ${v.kubernetes}, containerd ${v.containerd}, runc ${v.runc}, ` +
      `CNI plugins ${v.cniPlugins}, CoreDNS ${v.coredns}${v.gvisor ? ', gVisor' : ''})`,
    note: 'a cold build takes about 10 minutes on 2 cores (less after the control-plane toolchain); later runs reuse it',
    marker: { ...v },
    out,
    build: async (tmp, o) => {
      const args = [tmp, v.kubernetes, v.containerd, v.runc, v.cniPlugins, v.coredns, ...(v.gvisor ? [v.gvisor] : [])];
      await runBuildScript(script, args, o);
      o.write('writing image archives\n');
      const digests = writeNodeImages(tmp, controlPlane);
      return {
        busybox: readFileSync(join(tmp, 'busybox.version'), 'utf8').trim(),
        gvisor: OPTIONAL_NODE_BINARIES.every((b) => existsSync(join(tmp, 'bin', b))),
        images: digests,
      };
    },
  });
}

/**
 * nodeImageSpecs describes every image of NODE_IMAGES from the binaries of a node toolchain (dir/bin) and of the
 * control-plane toolchain (controlPlaneDir). Images that need a shell (busybox, agnhost: netexec's /shell) get
 * Debian's static busybox with a symlink per applet, at the paths `busybox --list-full` gives. Each spec is made
 * when called, so only one image's binaries are in memory at a time.
 */
export function nodeImageSpecs(dir: string, controlPlaneDir: string): Record<NodeImage, () => ImageSpec> {
  const bin = (name: string): string => join(dir, 'bin', name);
  const busybox = bin('busybox');
  const applets = execFileSync(busybox, ['--list-full'], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.includes('/') && l !== 'bin/busybox');
  const shell = (): TarEntry[] => [
    fileEntry('bin/busybox', busybox),
    ...applets.map((p): TarEntry => ({ type: 'symlink', path: p, target: '/bin/busybox' })),
  ];
  const tmp: TarEntry = { type: 'dir', path: 'tmp', mode: 0o1777 };
  const local = (name: string, from: string): TarEntry => fileEntry(`usr/local/bin/${name}`, from);
  return {
    pause: () => ({ ref: NODE_IMAGES.pause, files: [fileEntry('pause', bin('pause'))], entrypoint: ['/pause'] }),
    busybox: () => ({ ref: NODE_IMAGES.busybox, files: [...shell(), tmp], cmd: ['sh'] }),
    agnhost: () => ({
      ref: NODE_IMAGES.agnhost,
      files: [fileEntry('agnhost', bin('agnhost')), ...shell(), tmp],
      entrypoint: ['/agnhost'],
      cmd: ['pause'],
    }),
    coredns: () => ({
      ref: NODE_IMAGES.coredns,
      files: [fileEntry('coredns', bin('coredns'))],
      entrypoint: ['/coredns'],
    }),
    etcd: () => ({ ref: NODE_IMAGES.etcd, files: [local('etcd', join(controlPlaneDir, 'etcd')), tmp], cmd: ['etcd'] }),
    'kube-apiserver': () => ({
      ref: NODE_IMAGES['kube-apiserver'],
      files: [local('kube-apiserver', join(controlPlaneDir, 'kube-apiserver')), tmp],
      cmd: ['kube-apiserver'],
    }),
    'kube-controller-manager': () => ({
      ref: NODE_IMAGES['kube-controller-manager'],
      files: [local('kube-controller-manager', join(controlPlaneDir, 'kube-controller-manager')), tmp],
      cmd: ['kube-controller-manager'],
    }),
  };
}

/**
 * writeNodeImages writes images/<key>.tar for every image of NODE_IMAGES into a node toolchain directory and
 * returns each image's manifest digest.
 */
export function writeNodeImages(dir: string, controlPlaneDir: string): Record<NodeImage, string> {
  mkdirSync(join(dir, 'images'), { recursive: true });
  const specs = nodeImageSpecs(dir, controlPlaneDir);
  const digests = {} as Record<NodeImage, string>;
  for (const key of Object.keys(specs) as NodeImage[]) {
    digests[key] = writeOciArchive(nodeImageArchive(key, dir), specs[key]()).manifestDigest;
  }
  return digests;
}
