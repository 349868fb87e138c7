import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { ensureNodeToolchain, isNodeToolchainComplete, nodeToolchainDir, type NodeBuildOptions } from './node.ts';
import { ensureNetpolToolchain } from './netpol.ts';

/** NodePackage is a Debian package the node toolchain needs, found by one file it installs. */
export interface NodePackage {
  pkg: string;
  /** a command looked up on PATH (plus /usr/sbin and /sbin), or an absolute file */
  provides: string;
  /** why a real node needs it, for the one line the setup step prints */
  why: string;
  /** needed to build the toolchain (else only to run a node) */
  build: boolean;
}

/** NODE_PACKAGES lists what only the distribution provides; the setup step installs the missing ones as root. */
export const NODE_PACKAGES: readonly NodePackage[] = [
  { pkg: 'iptables', provides: 'iptables', why: 'kube-proxy and CNI rules', build: false },
  { pkg: 'conntrack', provides: 'conntrack', why: "kube-proxy's connection tracking", build: false },
  { pkg: 'ipset', provides: 'ipset', why: "kube-router's NetworkPolicy rules", build: false },
  { pkg: 'nftables', provides: 'nft', why: "the fence of a tenant control plane's network", build: false },
  { pkg: 'libseccomp-dev', provides: '/usr/include/seccomp.h', why: "runc's seccomp support", build: true },
  { pkg: 'gcc', provides: 'gcc', why: 'static pause and runc', build: true },
  { pkg: 'libc6-dev', provides: '/usr/include/stdio.h', why: 'static pause and runc', build: true },
];

/** HostFacts are what realNodeBlockers looks at; tests pass their own. */
export interface HostFacts {
  platform: string;
  uid: number;
  /** the content of /proc/mounts */
  mounts: string;
}

/** hostFacts reads the facts of this machine. */
export function hostFacts(): HostFacts {
  return {
    platform: process.platform,
    uid: process.getuid?.() ?? -1,
    mounts: existsSync('/proc/mounts') ? readFileSync('/proc/mounts', 'utf8') : '',
  };
}

/**
 * realNodeBlockers names, one entry each, why this machine cannot run a real node's toolchain (not Linux, not root,
 * no cgroup file system mounted); empty when it can. vc up's own preflight checks more (overlayfs, iptables, netns).
 */
export function realNodeBlockers(h: HostFacts = hostFacts()): string[] {
  const out: string[] = [];
  if (h.platform !== 'linux') out.push(`real nodes need Linux (this is ${h.platform})`);
  if (h.uid !== 0) out.push('real nodes need root (containerd, runc, network namespaces, iptables)');
  const cgroups = h.mounts.split('\n').some((l) => /^\S+ \S+ cgroup2? /.test(l));
  if (!cgroups) out.push('no cgroup file system is mounted (see /proc/mounts)');
  return out;
}

/** missingPackages returns the packages of NODE_PACKAGES whose file is not on this machine. */
export function missingPackages(pkgs: readonly NodePackage[] = NODE_PACKAGES): NodePackage[] {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/sbin'].filter(Boolean);
  const present = (p: string): boolean =>
    p.startsWith('/') ? existsSync(p) : dirs.some((d) => existsSync(join(d, p)));
  return pkgs.filter((p) => !present(p.provides));
}

/** installPackages runs `apt-get install -y` for pkgs (after `apt-get update` when apt knows none of them). */
export async function installPackages(pkgs: readonly NodePackage[], out: NodeJS.WritableStream): Promise<void> {
  if (!pkgs.length) return;
  const names = pkgs.map((p) => p.pkg);
  out.write(
    `installing Debian packages for real nodes with apt-get install -y: ${pkgs.map((p) => `${p.pkg} (${p.why})`).join(', ')}\n`,
  );
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const first = await run('apt-get', ['install', '-y', '-q', ...names], env);
  if (first.code === 0) return;
  // A fresh machine may never have fetched its package lists.
  const update = await run('apt-get', ['update', '-q'], env);
  const second = update.code === 0 ? await run('apt-get', ['install', '-y', '-q', ...names], env) : update;
  if (second.code !== 0)
    throw new Error(
      `apt-get install -y ${names.join(' ')} failed (exit ${second.code}):\n${second.output.slice(-2000)}`,
    );
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  return new Promise((res) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', (e) => res({ code: 127, output: String(e) }));
    child.on('close', (c) => res({ code: c ?? 1, output }));
  });
}

/** NodeSetupOptions tune setupNodeToolchain. */
export interface NodeSetupOptions extends NodeBuildOptions {
  /** build even when this machine cannot run real nodes (`vc toolchain build --node`) */
  force?: boolean;
  host?: HostFacts;
}

/**
 * setupNodeToolchain is the node part of the setup step (`vc toolchain build`): when this machine can run real nodes
 * (or force is set), it installs the missing NODE_PACKAGES as root with one line saying so and builds or finds the
 * node toolchain, returning its directory. When it cannot, it prints one line saying why and what is missing and
 * returns undefined: simulated nodes keep working. With force, a package missing for the build is an error.
 */
export async function setupNodeToolchain(opts: NodeSetupOptions = {}): Promise<string | undefined> {
  const out = opts.out ?? process.stderr;
  const host = opts.host ?? hostFacts();
  const blockers = realNodeBlockers(host);
  const missing = missingPackages();
  if (blockers.length && !opts.force) {
    const pk = missing.length ? `; missing Debian packages: ${missing.map((p) => p.pkg).join(' ')}` : '';
    out.write(`skipping the node toolchain (simulated nodes keep working): ${blockers.join('; ')}${pk}\n`);
    return undefined;
  }
  if (host.uid === 0) {
    await installPackages(missing, out);
    // build-node.sh fetches busybox-static with apt-get download, which needs the package lists.
    if (
      !isNodeToolchainComplete(nodeToolchainDir(opts.versions)) &&
      (await run('apt-cache', ['show', 'busybox-static'], process.env)).code !== 0
    ) {
      out.write('fetching the Debian package lists (apt-get update) to download busybox-static for the node images\n');
      const u = await run('apt-get', ['update', '-q'], process.env);
      if (u.code !== 0) throw new Error(`apt-get update failed (exit ${u.code}):\n${u.output.slice(-2000)}`);
    }
  } else {
    const forBuild = missing.filter((p) => p.build);
    if (forBuild.length)
      throw new Error(
        `the node toolchain needs the Debian packages ${forBuild.map((p) => p.pkg).join(' ')}: ` +
          `run \`apt-get install -y ${forBuild.map((p) => p.pkg).join(' ')}\` as root`,
      );
  }
  const dir = await ensureNodeToolchain(opts);
  // The NetworkPolicy enforcer is a cache of its own: without it real nodes run, but enforce no NetworkPolicy.
  try {
    await ensureNetpolToolchain({ out });
  } catch (e) {
    out.write(
      `kube-router did not build, so real nodes will not enforce NetworkPolicies: ${String(e).split('\n').slice(-3).join(' ')}\n`,
    );
  }
  return dir;
}
