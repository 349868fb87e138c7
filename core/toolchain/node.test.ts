import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { parse } from 'yaml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fromPackageRoot } from '../paths.ts';
import { generateControlPlanePKI } from '../pki/pki.ts';
import {
  nativePKIOptions,
  renderNative,
  type ClusterVersion,
  type VirtualCluster,
} from '../provisioners/native/render.ts';
import {
  CNI_PLUGINS,
  NODE_BINARIES,
  NODE_IMAGES,
  OPTIONAL_NODE_BINARIES,
  ensureNodeToolchain,
  isNodeToolchainComplete,
  nodeImageArchive,
  nodeToolchainDir,
  pinnedNodeVersions,
  type NodeVersions,
} from './node.ts';
import { pinnedVersions } from './toolchain.ts';

const versions: NodeVersions = {
  kubernetes: 'v0.0.1-test',
  containerd: 'v0.0.2-test',
  runc: 'v0.0.3-test',
  cniPlugins: 'v0.0.4-test',
  coredns: 'v0.0.5-test',
};

describe('node toolchain cache', () => {
  let root: string;
  let script: string;
  let controlPlaneDir: string;
  const prev = { cache: process.env.VC_TOOLCHAIN_CACHE, dir: process.env.VC_NODE_TOOLCHAIN_DIR };
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'vc-node-toolchain-'));
    process.env.VC_TOOLCHAIN_CACHE = join(root, 'cache');
    delete process.env.VC_NODE_TOOLCHAIN_DIR;
    controlPlaneDir = join(root, 'cp');
    mkdirSync(controlPlaneDir);
    for (const b of ['etcd', 'kube-apiserver', 'kube-controller-manager']) writeFileSync(join(controlPlaneDir, b), b);
    // A stand-in recipe: slow enough for two callers to overlap, writes every binary and a busybox that lists two
    // applets, counts its runs, and checks it got the versions as arguments.
    script = join(root, 'build-node.sh');
    const bins = [...NODE_BINARIES].map((b) => `printf '#!/bin/sh\\necho ${b}\\n' > "$1/bin/${b}"`);
    const cni = CNI_PLUGINS.map((c) => `echo ${c} > "$1/cni/${c}"`);
    writeFileSync(
      script,
      [
        '#!/usr/bin/env bash',
        'set -e',
        `echo "$*" >> ${join(root, 'runs')}`,
        'mkdir -p "$1/bin" "$1/cni"',
        'echo "::step building" >&2',
        'echo "::total 2" >&2',
        'sleep 1',
        ...bins,
        ...cni,
        `printf '#!/bin/sh\\nprintf "bin/sh\\\\nusr/bin/wget\\\\nlinuxrc\\\\n"\\n' > "$1/bin/busybox"`,
        'chmod +x "$1/bin/"*',
        'echo 1:1.35.0-test > "$1/busybox.version"',
        '',
      ].join('\n'),
    );
    chmodSync(script, 0o755);
  });
  afterEach(() => {
    for (const [k, v] of [
      ['VC_TOOLCHAIN_CACHE', prev.cache],
      ['VC_NODE_TOOLCHAIN_DIR', prev.dir],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(root, { recursive: true, force: true });
  });

  const quiet = () => new PassThrough() as unknown as NodeJS.WriteStream;
  const build = () => ensureNodeToolchain({ versions, script, controlPlaneDir, out: quiet() });
  const runs = () => readFileSync(join(root, 'runs'), 'utf8').trim().split('\n');

  it('builds once when two callers ask at the same time, with binaries, CNI plugins, images and marker', async () => {
    const [a, b] = await Promise.all([build(), build()]);
    expect(a).toBe(b);
    expect(a).toBe(nodeToolchainDir(versions));
    expect(isNodeToolchainComplete(a)).toBe(true);
    expect(runs()).toEqual([`${a}.tmp-${process.pid} v0.0.1-test v0.0.2-test v0.0.3-test v0.0.4-test v0.0.5-test`]);
    expect(readdirSync(join(a, 'images')).sort()).toEqual(
      Object.keys(NODE_IMAGES)
        .map((k) => `${k}.tar`)
        .sort(),
    );
    const marker = JSON.parse(readFileSync(join(a, '.complete'), 'utf8'));
    expect(marker).toMatchObject({ ...versions, busybox: '1:1.35.0-test', gvisor: false });
    expect(Object.keys(marker.images).sort()).toEqual(Object.keys(NODE_IMAGES).sort());
    expect(readdirSync(join(root, 'cache')).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('does nothing when a complete build of these versions is cached, and gives the same image digests again', async () => {
    const dir = await build();
    const first = readFileSync(nodeImageArchive('busybox', dir));
    rmSync(join(dir, '.complete'));
    expect(isNodeToolchainComplete(dir)).toBe(false);
    await build();
    await build();
    expect(runs()).toHaveLength(2);
    expect(readFileSync(nodeImageArchive('busybox', dir)).equals(first)).toBe(true);
  });

  it('uses VC_NODE_TOOLCHAIN_DIR as it is, without a marker', async () => {
    const dir = await build();
    rmSync(join(dir, '.complete'));
    process.env.VC_NODE_TOOLCHAIN_DIR = dir;
    expect(nodeToolchainDir(versions)).toBe(dir);
    expect(await build()).toBe(dir);
    expect(runs()).toHaveLength(1);
  });

  it('never builds into an incomplete VC_NODE_TOOLCHAIN_DIR, and names what it lacks', async () => {
    const dir = await build();
    rmSync(nodeImageArchive('etcd', dir));
    rmSync(join(dir, 'cni', 'portmap'));
    process.env.VC_NODE_TOOLCHAIN_DIR = dir;
    await expect(build()).rejects.toThrow(`VC_NODE_TOOLCHAIN_DIR=${dir} lacks cni/portmap, images/etcd.tar`);
    expect(runs()).toHaveLength(1);
    expect(existsSync(join(dir, 'bin', 'kubelet'))).toBe(true);
  });

  it('keeps a failed build out of the cache and reports its output', async () => {
    writeFileSync(script, '#!/usr/bin/env bash\necho "runc needs libseccomp-dev" >&2\nexit 4\n');
    await expect(build()).rejects.toThrow(/exit 4[\s\S]*runc needs libseccomp-dev/);
    expect(isNodeToolchainComplete(nodeToolchainDir(versions))).toBe(false);
    expect(existsSync(nodeToolchainDir(versions))).toBe(false);
    expect(readdirSync(join(root, 'cache')).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('keeps a build whose images cannot be made out of the cache', async () => {
    rmSync(join(controlPlaneDir, 'etcd'));
    await expect(build()).rejects.toThrow(/etcd/);
    expect(existsSync(nodeToolchainDir(versions))).toBe(false);
  });

  it('shows the ::note lines of the recipe even when the build succeeds', async () => {
    writeFileSync(script, readFileSync(script, 'utf8') + 'echo "::note gVisor did not build; the reason:" >&2\n');
    const out = new PassThrough();
    let text = '';
    out.on('data', (d: Buffer) => (text += d.toString()));
    await ensureNodeToolchain({ versions, script, controlPlaneDir, out: out as unknown as NodeJS.WriteStream });
    expect(text).toMatch(/^gVisor did not build; the reason:$/m);
  });

  it('passes the gVisor version when pinned and records whether runsc was built', async () => {
    const gv = { ...versions, gvisor: 'v0.0.0-20260905035102-160fafc42237' };
    writeFileSync(
      script,
      readFileSync(script, 'utf8') + OPTIONAL_NODE_BINARIES.map((b) => `echo x > "$1/bin/${b}"`).join('\n') + '\n',
    );
    const dir = await ensureNodeToolchain({ versions: gv, script, controlPlaneDir, out: quiet() });
    expect(dir).toMatch(/_gvisor-160fafc42237$/);
    expect(runs()[0]).toMatch(/ v0\.0\.5-test v0\.0\.0-20260905035102-160fafc42237$/);
    expect(JSON.parse(readFileSync(join(dir, '.complete'), 'utf8')).gvisor).toBe(true);
  });
});

describe('NODE_IMAGES', () => {
  it('names the images the native provisioner renders for the sample ClusterVersion, at the pinned versions', async () => {
    const cv = parse(readFileSync(fromPackageRoot('deploy/samples/clusterversion.yaml'), 'utf8')) as ClusterVersion;
    const vc: VirtualCluster = {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'dev', namespace: 'team-a', uid: '0b3f7a52-0000-4000-8000-000000000001' },
      spec: { clusterVersionName: cv.metadata!.name!, pkiExpireDays: 30 },
    };
    const root = 'team-a-1a2b3c-dev';
    const pki = await generateControlPlanePKI(nativePKIOptions(vc, root));
    const images = renderNative({ vc, clusterVersion: cv, pki, rootNamespace: root })
      .flatMap((o) => {
        const spec = (o as { spec?: { template?: { spec?: { containers?: Array<{ image: string }> } } } }).spec;
        return spec?.template?.spec?.containers ?? [];
      })
      .map((c) => c.image);
    expect(new Set(images)).toEqual(
      new Set([NODE_IMAGES.etcd, NODE_IMAGES['kube-apiserver'], NODE_IMAGES['kube-controller-manager']]),
    );
    const v = pinnedVersions();
    expect(cv.spec.kubernetesVersion).toBe(v.kubernetes);
    expect(NODE_IMAGES.etcd).toBe(`registry.k8s.io/etcd:${v.etcd.slice(1)}-0`);
    expect(NODE_IMAGES.coredns).toBe(`registry.k8s.io/coredns/coredns:${pinnedNodeVersions().coredns}`);
    // Generating the control-plane PKI is slow on a loaded machine.
  }, 30_000);
});
