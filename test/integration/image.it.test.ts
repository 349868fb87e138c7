import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { testDir } from '../tmpdir.ts';

const repo = join(import.meta.dirname, '../..');
const vc = join(repo, 'core/programs/cli/vc.mjs');

interface Descriptor {
  digest: string;
  size: number;
}

/** vcImageBuild runs `vc image build` as a user does and returns the digest it prints and its stderr. */
function vcImageBuild(...args: string[]): { digest: string; stderr: string } {
  const r = spawnSync(process.execPath, [vc, 'image', 'build', ...args], { encoding: 'utf8', cwd: repo });
  expect(r.status, r.stderr).toBe(0);
  return { digest: r.stdout.trim(), stderr: r.stderr };
}

const blob = (layout: string, digest: string): Buffer =>
  readFileSync(join(layout, 'blobs', 'sha256', digest.slice('sha256:'.length)));

interface Workload {
  kind: string;
  spec: { template: { spec: { containers: Array<{ name?: string; command?: string[]; args: string[] }> } } };
}

/** containersOf reads the containers of the Deployment or DaemonSet in a deploy manifest. */
function containersOf(file: string): Array<{ name?: string; command?: string[]; args: string[] }> {
  const docs = parseAllDocuments(readFileSync(join(repo, file), 'utf8')).map((d) => d.toJS() as Workload);
  const w = docs.find((d) => d.kind === 'Deployment' || d.kind === 'DaemonSet');
  if (!w) throw new Error(`${file}: no Deployment or DaemonSet`);
  return w.spec.template.spec.containers;
}

describe('vc image build', () => {
  it('writes the same image twice, with only production files, that runs the deploy manifests unchanged', () => {
    const dir = testDir('vc-image-');
    const first = vcImageBuild('--out', join(dir, 'a'));
    const second = vcImageBuild('--archive', join(dir, 'b.tar'));
    // Same inputs, same digest: once as an OCI layout, once as an archive.
    expect(first.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(second.digest).toBe(first.digest);
    expect(first.stderr).toMatch(/size: [\d.]+ MiB compressed, [\d.]+ MiB uncompressed/);
    console.log(first.stderr.trim());

    // The layout is what OCI readers expect: index -> manifest -> config and layer, each matching its digest.
    const layout = join(dir, 'a');
    const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as {
      manifests: Array<Descriptor & { annotations: Record<string, string> }>;
    };
    expect(index.manifests).toHaveLength(1);
    expect(index.manifests[0]!.digest).toBe(first.digest);
    expect(index.manifests[0]!.annotations['io.containerd.image.name']).toBe(
      'docker.io/library/virtualcluster-ts:0.1.0',
    );
    const manifestBytes = blob(layout, first.digest);
    expect(`sha256:${createHash('sha256').update(manifestBytes).digest('hex')}`).toBe(first.digest);
    const manifest = JSON.parse(manifestBytes.toString()) as { config: Descriptor; layers: Descriptor[] };
    const config = JSON.parse(blob(layout, manifest.config.digest).toString()) as {
      config: { User: string; Entrypoint: string[]; Cmd: string[]; WorkingDir: string };
    };
    expect(config.config.User).toBe('65532:65532');
    expect(config.config.Entrypoint).toEqual(['/usr/local/bin/node', '/app/core/programs/cli/vc.mjs']);

    // Unpack the one layer and look at what is in it, and what is not.
    const root = join(dir, 'root');
    mkdirSync(root);
    execFileSync('tar', ['-xzf', join(layout, 'blobs', 'sha256', manifest.layers[0]!.digest.slice(7)), '-C', root]);
    for (const present of [
      'usr/local/bin/node',
      'usr/sbin/nft',
      'lib64/ld-linux-x86-64.so.2',
      'etc/ssl/certs/ca-certificates.crt',
      'app/dist/core/programs/cli/main.js',
      'app/node_modules/@kubernetes/client-node/package.json',
      'app/node_modules/@virtualcluster-ts/plugin-sdk/package.json',
      'app/deploy/crds',
    ])
      expect(existsSync(join(root, present)), present).toBe(true);
    for (const absent of [
      'app/node_modules/typescript',
      'app/node_modules/vitest',
      'app/node_modules/node',
      'app/node_modules/eslint',
      // the compiled program runs on plain Node: no TypeScript loader or its compiler binary
      'app/node_modules/tsx',
      'app/node_modules/esbuild',
      'app/node_modules/@esbuild',
      'app/core/programs/cli/main.ts',
      'app/dist/core/programs/cli/main.js.map',
      'app/node_modules/@kubernetes/client-node/dist/index.d.ts',
    ])
      expect(existsSync(join(root, absent)), absent).toBe(false);
    expect(readFileSync(join(root, 'etc/passwd'), 'utf8')).toContain(':65532:65532:');

    // The Pods of deploy/ set only args: the image's entrypoint must take them as `vc` subcommands. Run each one
    // in the unpacked root as the image's user, which needs root to chroot.
    if (process.getuid?.() !== 0) {
      console.log('image.it: not root, so the unpacked image is not run under chroot');
      return;
    }
    const containers = ['deploy/manager/deployment.yaml', 'deploy/vn-agent/daemonset.yaml'].flatMap((file) =>
      containersOf(file).map((c) => ({ file: `${file} ${c.name}`, c })),
    );
    expect(containers.map((x) => x.c.args[0])).toEqual(['manager', 'vn-agent', 'cluster-ips']);
    for (const { file, c } of containers) {
      expect(c.command, file).toBeUndefined();
      const run = spawnSync(
        'chroot',
        ['--userspec=65532:65532', root, ...config.config.Entrypoint, c.args[0]!, '--help'],
        { encoding: 'utf8', env: { PATH: process.env.PATH } },
      );
      expect(run.status, `${file}: ${run.stderr}`).toBe(0);
      expect(run.stdout, file).toContain(`Usage: vc ${c.args[0]}`);
    }
    // the node's cluster IP translation runs nft: it loads with the libraries the image carries
    const nft = spawnSync('chroot', [root, '/usr/sbin/nft', '--version'], { encoding: 'utf8' });
    expect(nft.status, nft.stderr).toBe(0);
    expect(nft.stdout).toMatch(/^nftables v\d/);
  }, 600_000);
});
