import { createHash } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';

/**
 * TarEntry is one member of a deterministic tar stream: every member is owned by 0:0 with mtime 0, so the same
 * entries always give the same bytes.
 */
export type TarEntry =
  | { type: 'dir'; path: string; mode?: number }
  | { type: 'file'; path: string; mode?: number; data: Buffer }
  | { type: 'symlink'; path: string; target: string };

const BLOCK = 512;

/**
 * tarChunks writes entries as a POSIX ustar stream (sorted by path, each parent directory before its children) and
 * returns the chunks to concatenate. Paths are relative, without a leading `./`; a path longer than ustar allows
 * (155 + 100 bytes split at a `/`) is an error naming it.
 */
export function tarChunks(entries: readonly TarEntry[]): Buffer[] {
  const seen = new Set<string>();
  const sorted = [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const chunks: Buffer[] = [];
  for (const e of sorted) {
    if (e.path.startsWith('/') || e.path.startsWith('./') || e.path === '' || e.path.split('/').includes('..'))
      throw new Error(`tar entry ${JSON.stringify(e.path)}: path must be relative, without "." or ".." parts`);
    if (seen.has(e.path)) throw new Error(`tar entry ${JSON.stringify(e.path)}: listed twice`);
    seen.add(e.path);
    const size = e.type === 'file' ? e.data.length : 0;
    chunks.push(tarHeader(e, size));
    if (e.type === 'file') {
      chunks.push(e.data);
      const pad = (BLOCK - (size % BLOCK)) % BLOCK;
      if (pad) chunks.push(Buffer.alloc(pad));
    }
  }
  chunks.push(Buffer.alloc(2 * BLOCK));
  return chunks;
}

/** tarBuffer is tarChunks joined into one buffer. */
export function tarBuffer(entries: readonly TarEntry[]): Buffer {
  return Buffer.concat(tarChunks(entries));
}

function tarHeader(e: TarEntry, size: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  const name = e.type === 'dir' ? `${e.path}/` : e.path;
  let prefix = '';
  let base = name;
  if (Buffer.byteLength(name) > 100) {
    let cut = -1;
    for (let j = name.indexOf('/'); j >= 0 && cut < 0; j = name.indexOf('/', j + 1)) {
      const rest = name.slice(j + 1);
      if (rest !== '' && Buffer.byteLength(rest) <= 100 && Buffer.byteLength(name.slice(0, j)) <= 155) cut = j;
    }
    if (cut < 0) throw new Error(`tar entry ${JSON.stringify(e.path)}: path too long for ustar`);
    prefix = name.slice(0, cut);
    base = name.slice(cut + 1);
  }
  const target = e.type === 'symlink' ? e.target : '';
  if (Buffer.byteLength(target) > 100) throw new Error(`tar entry ${JSON.stringify(e.path)}: link target too long`);
  const mode = e.type === 'symlink' ? 0o777 : (e.mode ?? (e.type === 'dir' ? 0o755 : 0o644));
  h.write(base, 0, 100, 'utf8');
  octal(h, 100, 8, mode);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size);
  octal(h, 136, 12, 0);
  h.fill(0x20, 148, 156);
  h.write(e.type === 'dir' ? '5' : e.type === 'symlink' ? '2' : '0', 156, 1, 'ascii');
  h.write(target, 157, 100, 'utf8');
  h.write('ustar\u000000', 257, 8, 'ascii');
  octal(h, 329, 8, 0);
  octal(h, 337, 8, 0);
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 8, 'ascii');
  return h;
}

function octal(h: Buffer, off: number, len: number, n: number): void {
  const s = n.toString(8).padStart(len - 1, '0');
  if (s.length > len - 1) throw new Error(`tar header: ${n} does not fit in ${len - 1} octal digits`);
  h.write(`${s}\u0000`, off, len, 'ascii');
}

/** withParents adds a directory entry for every parent of the given entries that is not listed itself. */
export function withParents(entries: readonly TarEntry[]): TarEntry[] {
  const have = new Set(entries.map((e) => e.path));
  const out = [...entries];
  for (const e of entries) {
    const parts = e.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      if (!have.has(p)) {
        have.add(p);
        out.push({ type: 'dir', path: p });
      }
    }
  }
  return out;
}

/** ImageSpec describes a one-layer image: its reference, its files and the process defaults of its config. */
export interface ImageSpec {
  /** fully qualified reference, e.g. `registry.k8s.io/pause:3.10` */
  ref: string;
  files: readonly TarEntry[];
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  workingDir?: string;
  /** the config's User (`uid:gid`); absent means root */
  user?: string;
  /** the history line of the one layer; defaults to the node toolchain's */
  createdBy?: string;
}

/** OciImage is an image as the blobs of an OCI image layout plus the digests that identify it. */
export interface OciImage {
  /** the archive's members: oci-layout, index.json and blobs/sha256/* */
  members: TarEntry[];
  manifestDigest: string;
  configDigest: string;
  layerDigest: string;
  /** sha256 of the uncompressed layer, as listed in the config's rootfs.diff_ids */
  diffId: string;
  /** bytes of the layer as stored and sent (gzipped) */
  layerSize: number;
  /** bytes of the layer uncompressed (the tar a runtime unpacks) */
  diffSize: number;
}

/** DEFAULT_PATH is the PATH of every image's config unless ImageSpec.env sets one. */
export const DEFAULT_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const sha256 = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/**
 * ociImage builds an OCI image layout holding one image with one gzipped layer. The manifest descriptor in
 * index.json carries `io.containerd.image.name` (the full reference, which `ctr images import` uses as the name) and
 * `org.opencontainers.image.ref.name` (the tag). The same spec always gives the same digests.
 */
export function ociImage(spec: ImageSpec): OciImage {
  const colon = spec.ref.lastIndexOf(':');
  if (colon <= spec.ref.lastIndexOf('/') || !spec.ref.includes('/'))
    throw new Error(`image ref ${JSON.stringify(spec.ref)}: must be fully qualified with a tag (registry/name:tag)`);
  const layer = tarBuffer(withParents(spec.files));
  const diffId = sha256(layer);
  const gz = gzipSync(layer, { level: 6 });
  const layerDigest = sha256(gz);
  const env = spec.env ?? [];
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: {
        Env: env.some((e) => e.startsWith('PATH=')) ? env : [DEFAULT_PATH, ...env],
        ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
        ...(spec.cmd ? { Cmd: spec.cmd } : {}),
        ...(spec.workingDir ? { WorkingDir: spec.workingDir } : {}),
        ...(spec.user ? { User: spec.user } : {}),
      },
      rootfs: { type: 'layers', diff_ids: [diffId] },
      history: [{ created_by: spec.createdBy ?? 'virtualcluster-ts node toolchain' }],
    }),
  );
  const configDigest = sha256(config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: configDigest, size: config.length },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: layerDigest, size: gz.length }],
    }),
  );
  const manifestDigest = sha256(manifest);
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: manifestDigest,
          size: manifest.length,
          annotations: {
            'io.containerd.image.name': spec.ref,
            'org.opencontainers.image.ref.name': spec.ref.slice(colon + 1),
          },
        },
      ],
    }),
  );
  const blob = (digest: string, data: Buffer): TarEntry => ({
    type: 'file',
    path: `blobs/sha256/${digest.slice('sha256:'.length)}`,
    data,
  });
  const members = withParents([
    { type: 'file', path: 'oci-layout', data: Buffer.from('{"imageLayoutVersion":"1.0.0"}') },
    { type: 'file', path: 'index.json', data: index },
    blob(configDigest, config),
    blob(layerDigest, gz),
    blob(manifestDigest, manifest),
  ]);
  return {
    members,
    manifestDigest,
    configDigest,
    layerDigest,
    diffId,
    layerSize: gz.length,
    diffSize: layer.length,
  };
}

/** writeOciArchive writes the image as a tar of its OCI layout to path (atomically) and returns the image. */
export function writeOciArchive(path: string, spec: ImageSpec): OciImage {
  const img = ociImage(spec);
  const tmp = `${path}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w', 0o644);
  try {
    for (const c of tarChunks(img.members)) writeSync(fd, c);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  return img;
}

/**
 * writeOciLayout writes an image's OCI layout (oci-layout, index.json, blobs/sha256/*) as a directory at dir,
 * replacing what was there: it is written next to dir first and renamed into place, so a reader never sees half.
 */
export function writeOciLayout(dir: string, img: OciImage): void {
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  for (const m of img.members) {
    if (m.type !== 'file') continue;
    const p = join(tmp, m.path);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, m.data);
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
}

/** fileEntry reads a file from disk into a tar entry at path, executable when the source is. */
export function fileEntry(path: string, source: string): TarEntry {
  const exec = (statSync(source).mode & 0o111) !== 0;
  return { type: 'file', path, mode: exec ? 0o755 : 0o644, data: readFileSync(source) };
}
