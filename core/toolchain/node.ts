import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fromPackageRoot } from '../paths.ts';
import { cacheRoot } from './toolchain.ts';

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
 * every version. Layout: bin/<NODE_BINARIES>, cni/<CNI_PLUGINS>, images/<NodeImage>.tar, .complete.
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
  return (
    (!!process.env.VC_NODE_TOOLCHAIN_DIR || existsSync(join(dir, '.complete'))) &&
    NODE_BINARIES.every((b) => existsSync(join(dir, 'bin', b))) &&
    CNI_PLUGINS.every((c) => existsSync(join(dir, 'cni', c))) &&
    Object.keys(NODE_IMAGES).every((i) => existsSync(join(dir, 'images', `${i}.tar`)))
  );
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
