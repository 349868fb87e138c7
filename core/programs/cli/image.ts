import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { fromPackageRoot } from '../../paths.ts';
import { CliError } from './vcs.ts';

/** DEFAULT_IMAGE_DIR is where `vc image build` writes the OCI layout when given neither --out nor --archive. */
export const DEFAULT_IMAGE_DIR = fromPackageRoot('.state', 'image');

const MiB = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MiB`;

/**
 * registerImageCommands adds `vc image build` (the manager, vn-agent and CLI image, built without Docker) and
 * `vc image push` (to any OCI registry).
 */
export function registerImageCommands(program: Command): void {
  const image = program.command('image').description('the manager, vn-agent and CLI image: build it here, push it');
  image
    .command('build')
    .description(
      'build the OCI image of the manager, vn-agent and CLI from dist/ (npm run build), the production node_modules ' +
        'and the pinned Node.js runtime; prints the manifest digest on stdout',
    )
    .option('--out <dir>', 'write an OCI layout directory (default .state/image in the repository)')
    .option('--archive <file>', 'write an OCI archive (a tar of the layout, as `ctr images import` reads) instead')
    .option(
      '--ref <ref>',
      'the reference recorded in the image index (default docker.io/library/virtualcluster-ts:<version>)',
    )
    .action(async (o: { out?: string; archive?: string; ref?: string }) => {
      if (o.out && o.archive) throw new CliError('vc image build: give --out or --archive, not both');
      const { buildAppImage } = await import('../../toolchain/appimage.ts');
      const started = Date.now();
      const img = o.archive
        ? buildAppImage({ archive: resolve(o.archive), ref: o.ref })
        : buildAppImage({ out: resolve(o.out ?? DEFAULT_IMAGE_DIR), ref: o.ref });
      process.stderr.write(
        `image ${img.ref} written to ${img.path} (${o.archive ? 'OCI archive' : 'OCI layout'}) in ` +
          `${((Date.now() - started) / 1000).toFixed(1)} s\n` +
          `size: ${MiB(img.layerSize)} compressed, ${MiB(img.diffSize)} uncompressed\n`,
      );
      process.stdout.write(`${img.manifestDigest}\n`);
    });
  image
    .command('push <ref>')
    .description(
      'push the built image to any OCI registry as REF (registry/repository:tag); credentials come from the docker ' +
        'config file ($DOCKER_CONFIG/config.json or ~/.docker/config.json, "auths"): anonymous, basic or bearer token',
    )
    .option('--from <layout>', 'the OCI layout directory or archive to push (default .state/image in the repository)')
    .option('--ca-file <file>', "a CA certificate (PEM) to trust for the registry's TLS besides the system's")
    .action(async (ref: string, o: { from?: string; caFile?: string }) => {
      const { pushImage } = await import('../../toolchain/push.ts');
      const from = resolve(o.from ?? DEFAULT_IMAGE_DIR);
      let ca: string | undefined;
      if (o.caFile) {
        try {
          ca = readFileSync(o.caFile, 'utf8');
        } catch (e) {
          throw new CliError(`--ca-file ${o.caFile}: ${(e as Error).message}`);
        }
      }
      const r = await pushImage(from, ref, { ca });
      process.stderr.write(
        `pushed ${from} to ${ref}: ${r.blobsSent} blobs sent (${MiB(r.bytesSent)}), ${r.blobsSkipped} already there\n` +
          `${r.pinned}\n`,
      );
      process.stdout.write(`${r.digest}\n`);
    });
}
