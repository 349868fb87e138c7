import { describe, expect, it } from 'vitest';
import { folderGraph, isProdSource, stronglyConnected, type FileEdge } from './importgraph.ts';

const e = (from: string, to: string): FileEdge => ({ from, to });

describe('isProdSource', () => {
  it.each([
    ['core/syncer/syncer.ts', true],
    ['core/syncer/syncer.test.ts', false],
    ['test/harness.ts', false],
    ['schemas/virtualcluster.schema.json', false],
    ['node_modules/yaml/dist/index.d.ts', false],
  ])('%s: %s', (path, want) => {
    expect(isProdSource(path)).toBe(want);
  });
});

describe('folderGraph', () => {
  it('keeps folder-to-folder imports of production files only', () => {
    const g = folderGraph([
      e('core/a/x.ts', 'core/b/y.ts'),
      e('core/a/x.ts', 'core/a/z.ts'),
      e('core/a/x.test.ts', 'core/c/y.ts'),
      e('core/b/y.ts', 'test/harness.ts'),
    ]);
    expect(Object.fromEntries([...g].map(([k, v]) => [k, [...v]]))).toEqual({ 'core/a': ['core/b'], 'core/b': [] });
  });
});

describe('stronglyConnected', () => {
  it.each<[string, FileEdge[], string[][]]>([
    ['a chain has none', [e('a/1.ts', 'b/1.ts'), e('b/1.ts', 'c/1.ts')], []],
    ['a mutual pair is one', [e('a/1.ts', 'b/1.ts'), e('b/2.ts', 'a/2.ts')], [['a', 'b']]],
    [
      'a ring through three folders and a separate pair',
      [
        e('c/1.ts', 'a/1.ts'),
        e('a/1.ts', 'b/1.ts'),
        e('b/1.ts', 'c/1.ts'),
        e('x/1.ts', 'y/1.ts'),
        e('y/1.ts', 'x/1.ts'),
      ],
      [
        ['a', 'b', 'c'],
        ['x', 'y'],
      ],
    ],
    ['a file importing its own folder is not a cycle', [e('a/1.ts', 'a/2.ts'), e('a/2.ts', 'a/1.ts')], []],
    [
      'a tail into a cycle stays outside it',
      [e('t/1.ts', 'a/1.ts'), e('a/1.ts', 'b/1.ts'), e('b/1.ts', 'a/1.ts')],
      [['a', 'b']],
    ],
  ])('%s', (_name, edges, want) => {
    expect(stronglyConnected(folderGraph(edges))).toEqual(want);
  });
});
