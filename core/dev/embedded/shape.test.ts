import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveShape, shapeOf, type EmbeddedShape } from './shape.ts';

describe('shapeOf', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  /** stateWith makes a state directory holding the named clusters' directories. */
  const stateWith = (...clusters: string[]) => {
    const d = mkdtempSync(join(tmpdir(), 'vc-shape-'));
    dirs.push(d);
    for (const c of clusters) mkdirSync(join(d, 'clusters', c), { recursive: true });
    return d;
  };

  it.each<[string[], EmbeddedShape | undefined]>([
    [[], undefined],
    [['super'], { meta: false, superClusters: 1 }],
    [['super', 'r2'], { meta: false, superClusters: 2 }],
    [['super', 'r2', 'r3'], { meta: false, superClusters: 3 }],
    [['super', 'r1'], { meta: true, superClusters: 1 }],
    [['super', 'r1', 'r2'], { meta: true, superClusters: 2 }],
    // other control planes' directories are no super clusters
    [['super', 'r2', 'tenant-a', 'r10'], { meta: false, superClusters: 2 }],
  ])('clusters %j read as %j', (clusters, want) => {
    expect(shapeOf(stateWith(...clusters))).toEqual(want);
  });

  it('a state directory that does not exist is never started', () => {
    expect(shapeOf(join(tmpdir(), 'vc-shape-none', 'state'))).toBeUndefined();
  });
});

describe('resolveShape', () => {
  const plain = { meta: false, superClusters: 2 };
  const apart = { meta: true, superClusters: 2 };

  it.each<[{ meta?: boolean; superClusters?: number }, EmbeddedShape | undefined, EmbeddedShape]>([
    [{}, undefined, { meta: false, superClusters: 1 }],
    [{ meta: true }, undefined, { meta: true, superClusters: 1 }],
    [{ superClusters: 3 }, undefined, { meta: false, superClusters: 3 }],
    // a restart without the options runs what the state directory ran
    [{}, apart, apart],
    [{}, plain, plain],
    [{ meta: true }, apart, apart],
    // and may add super clusters
    [{ superClusters: 3 }, apart, { meta: true, superClusters: 3 }],
    [{ superClusters: 2 }, { meta: false, superClusters: 1 }, plain],
  ])('%j on %j runs %j', (asked, recorded, want) => {
    expect(resolveShape(asked, recorded, '/s')).toEqual(want);
  });

  it.each<[{ meta?: boolean; superClusters?: number }, EmbeddedShape, string]>([
    [
      { meta: true },
      plain,
      '--meta: /s was started without --meta, so its first cluster is the meta cluster and super',
    ],
    [{ meta: false }, apart, '--meta: /s was started with --meta, so its meta cluster holds no node'],
    [{ superClusters: 1 }, apart, '--super-clusters 1: /s runs 2 super clusters (r1..r2)'],
    [{ superClusters: 1 }, plain, 'give --super-clusters 2 or more (or leave it out), or another --state-dir'],
  ])('%j on %j is refused naming the option and the state directory', (asked, recorded, msg) => {
    expect(() => resolveShape(asked, recorded, '/s')).toThrow(msg);
  });
});
