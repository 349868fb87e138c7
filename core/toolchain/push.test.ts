import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ociImage, writeOciArchive, writeOciLayout, type ImageSpec } from './images.ts';
import { readLayoutImage } from './push.ts';

describe('readLayoutImage', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vc-layout-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const spec: ImageSpec = {
    ref: 'example.com/a/b:1',
    files: [{ type: 'file', path: 'deep/'.repeat(30) + 'f', data: Buffer.from('x') }],
  };

  it('reads the same image from a layout directory and from an archive', () => {
    const img = ociImage(spec);
    writeOciLayout(join(dir, 'layout'), img);
    writeOciArchive(join(dir, 'image.tar'), spec);
    for (const from of [join(dir, 'layout'), join(dir, 'image.tar')]) {
      const r = readLayoutImage(from);
      expect(r.digest).toBe(img.manifestDigest);
      expect(r.mediaType).toBe('application/vnd.oci.image.manifest.v1+json');
      expect(r.blobs.map((b) => b.digest)).toEqual([img.configDigest, img.layerDigest]);
    }
  });

  it('a blob that does not match its digest, or an index of two images, is an error naming the layout', () => {
    const img = ociImage(spec);
    const bad = join(dir, 'bad');
    writeOciLayout(bad, img);
    writeFileSync(join(bad, 'blobs/sha256', img.layerDigest.slice(7)), 'tampered');
    expect(() => readLayoutImage(bad)).toThrow(`${bad}: blob ${img.layerDigest} does not match its digest`);
    const two = join(dir, 'two');
    writeOciLayout(two, img);
    const index = JSON.parse(readFileSync(join(two, 'index.json'), 'utf8')) as { manifests: unknown[] };
    index.manifests.push(index.manifests[0]);
    writeFileSync(join(two, 'index.json'), JSON.stringify(index));
    expect(() => readLayoutImage(two)).toThrow(`${two}: index.json lists 2 images; push needs exactly one`);
  });
});
