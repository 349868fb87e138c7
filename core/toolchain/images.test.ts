import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PATH, ociImage, tarBuffer, withParents, type ImageSpec, type TarEntry } from './images.ts';

/** readTar parses a ustar stream back into entries (the reader of the test, independent of the writer). */
function readTar(
  buf: Buffer,
): Array<{ name: string; type: string; mode: number; size: number; link: string; data: Buffer }> {
  const out = [];
  let off = 0;
  while (off + 512 <= buf.length) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const str = (o: number, n: number): string =>
      h
        .subarray(o, o + n)
        .toString('utf8')
        .replace(/\0.*$/s, '');
    const num = (o: number, n: number): number => parseInt(str(o, n).trim() || '0', 8);
    const sum = [...h].reduce((a, b, i) => a + (i >= 148 && i < 156 ? 0x20 : b), 0);
    expect(num(148, 8)).toBe(sum);
    expect(str(257, 6)).toBe('ustar');
    expect([num(108, 8), num(116, 8), num(136, 12)]).toEqual([0, 0, 0]);
    const prefix = str(345, 155);
    const name = prefix ? `${prefix}/${str(0, 100)}` : str(0, 100);
    const size = num(124, 12);
    out.push({
      name,
      type: str(156, 1),
      mode: num(100, 8),
      size,
      link: str(157, 100),
      data: buf.subarray(off + 512, off + 512 + size),
    });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  expect(buf.length % 512).toBe(0);
  return out;
}

const sha = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const file = (path: string, text: string, mode?: number): TarEntry => ({
  type: 'file',
  path,
  data: Buffer.from(text),
  mode,
});

describe('tarBuffer', () => {
  const long = `${'d'.repeat(120)}/${'f'.repeat(90)}`;
  it.each([
    {
      name: 'sorts by path, marks directories with a trailing slash, keeps modes and link targets',
      entries: [
        file('b', 'bee', 0o755),
        { type: 'dir', path: 'a' } as TarEntry,
        { type: 'symlink', path: 'a/sh', target: '/bin/busybox' } as TarEntry,
      ],
      want: [
        { name: 'a/', type: '5', mode: 0o755, size: 0, link: '' },
        { name: 'a/sh', type: '2', mode: 0o777, size: 0, link: '/bin/busybox' },
        { name: 'b', type: '0', mode: 0o755, size: 3, link: '' },
      ],
    },
    {
      name: 'splits a path longer than 100 bytes into prefix and name',
      entries: [file(long, 'x')],
      want: [{ name: long, type: '0', mode: 0o644, size: 1, link: '' }],
    },
    {
      name: 'pads file data to 512 bytes',
      entries: [file('big', 'z'.repeat(513))],
      want: [{ name: 'big', type: '0', mode: 0o644, size: 513, link: '' }],
    },
  ])('$name', ({ entries, want }) => {
    const got = readTar(tarBuffer(entries)).map(({ data: _d, ...rest }) => rest);
    expect(got).toEqual(want);
  });

  it.each([
    { path: '/abs', err: /must be relative/ },
    { path: './x', err: /must be relative/ },
    { path: 'a/../b', err: /must be relative/ },
    { path: `${'x'.repeat(101)}`, err: /too long for ustar/ },
  ])('rejects the path $path', ({ path, err }) => {
    expect(() => tarBuffer([file(path, '')])).toThrow(err);
  });

  it('rejects a path listed twice', () => {
    expect(() => tarBuffer([file('a', '1'), file('a', '2')])).toThrow(/"a": listed twice/);
  });

  it('withParents adds each missing parent directory once', () => {
    const got = withParents([
      file('usr/local/bin/etcd', ''),
      file('usr/local/bin/x', ''),
      { type: 'dir', path: 'usr', mode: 0o700 },
    ]);
    expect(got.filter((e) => e.type === 'dir').map((e) => [e.path, e.mode])).toEqual([
      ['usr', 0o700],
      ['usr/local', undefined],
      ['usr/local/bin', undefined],
    ]);
  });
});

describe('ociImage', () => {
  const spec: ImageSpec = {
    ref: 'registry.k8s.io/pause:3.10',
    files: [file('pause', '#!pause', 0o755), { type: 'dir', path: 'tmp', mode: 0o1777 }],
    entrypoint: ['/pause'],
  };
  const members = (img: ReturnType<typeof ociImage>) => readTar(tarBuffer(img.members));
  const blob = (img: ReturnType<typeof ociImage>, digest: string): Buffer =>
    members(img).find((m) => m.name === `blobs/sha256/${digest.slice(7)}`)!.data;

  it('lays out oci-layout, index.json and content-addressed blobs', () => {
    const img = ociImage(spec);
    const m = members(img);
    expect(m.map((x) => x.name)).toEqual([
      'blobs/',
      'blobs/sha256/',
      ...[img.configDigest, img.layerDigest, img.manifestDigest].map((d) => `blobs/sha256/${d.slice(7)}`).sort(),
      'index.json',
      'oci-layout',
    ]);
    expect(JSON.parse(m.find((x) => x.name === 'oci-layout')!.data.toString())).toEqual({
      imageLayoutVersion: '1.0.0',
    });
    for (const x of m.filter((x) => x.name.startsWith('blobs/sha256/') && x.type === '0'))
      expect(sha(x.data)).toBe(`sha256:${x.name.slice('blobs/sha256/'.length)}`);
  });

  it('names the image in index.json with io.containerd.image.name and the tag', () => {
    const img = ociImage(spec);
    const index = JSON.parse(
      members(img)
        .find((x) => x.name === 'index.json')!
        .data.toString(),
    );
    expect(index.manifests).toEqual([
      {
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        digest: img.manifestDigest,
        size: blob(img, img.manifestDigest).length,
        annotations: {
          'io.containerd.image.name': 'registry.k8s.io/pause:3.10',
          'org.opencontainers.image.ref.name': '3.10',
        },
      },
    ]);
  });

  it('lists the sha256 of the uncompressed layer as diff_id, and the layer holds the files with parents', () => {
    const img = ociImage({ ...spec, files: [file('usr/local/bin/etcd', 'etcd', 0o755)], cmd: ['etcd'] });
    const manifest = JSON.parse(blob(img, img.manifestDigest).toString());
    expect(manifest.layers).toEqual([
      {
        mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip',
        digest: img.layerDigest,
        size: blob(img, img.layerDigest).length,
      },
    ]);
    expect(manifest.config.digest).toBe(img.configDigest);
    const layer = gunzipSync(blob(img, img.layerDigest));
    const config = JSON.parse(blob(img, img.configDigest).toString());
    expect(config.rootfs).toEqual({ type: 'layers', diff_ids: [sha(layer)] });
    expect(img.diffId).toBe(sha(layer));
    expect(config.config).toEqual({ Env: [DEFAULT_PATH], Entrypoint: ['/pause'], Cmd: ['etcd'] });
    expect([config.os, config.architecture]).toEqual(['linux', 'amd64']);
    expect(readTar(layer).map((e) => `${e.name} ${e.mode.toString(8)}`)).toEqual([
      'usr/ 755',
      'usr/local/ 755',
      'usr/local/bin/ 755',
      'usr/local/bin/etcd 755',
    ]);
  });

  it('gives the same digests for the same input, whatever the order of files, and new ones when a byte changes', () => {
    const a = ociImage(spec);
    const b = ociImage({ ...spec, files: [...spec.files].reverse() });
    expect(b).toEqual(a);
    expect(tarBuffer(b.members).equals(tarBuffer(a.members))).toBe(true);
    const c = ociImage({ ...spec, files: [file('pause', '#!pausE', 0o755), spec.files[1]!] });
    expect(c.layerDigest).not.toBe(a.layerDigest);
    expect(c.manifestDigest).not.toBe(a.manifestDigest);
    const d = ociImage({ ...spec, ref: 'registry.k8s.io/pause:3.11' });
    expect(d.layerDigest).toBe(a.layerDigest);
    expect(d.manifestDigest).toBe(a.manifestDigest);
  });

  it.each(['pause:3.10', 'registry.k8s.io/pause', 'registry.k8s.io:5000/pause'])(
    'rejects the short or untagged ref %s',
    (ref) => {
      expect(() => ociImage({ ...spec, ref })).toThrow(/must be fully qualified with a tag/);
    },
  );
});
