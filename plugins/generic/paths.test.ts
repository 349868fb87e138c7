import { describe, expect, it } from 'vitest';
import { copyPath, dropPath, mapPath, parsePath } from './paths.ts';

describe('parsePath', () => {
  it.each([
    ['spec', [{ field: 'spec', each: false }]],
    [
      'spec.targets[].namespace',
      [
        { field: 'spec', each: false },
        { field: 'targets', each: true },
        { field: 'namespace', each: false },
      ],
    ],
  ])('%s parses', (path, want) => {
    expect(parsePath(path)).toEqual(want);
  });

  it.each([
    ['', 'empty'],
    ['metadata.namespace', 'belongs to the syncer'],
    ['metadata', 'belongs to the syncer'],
    ['kind', 'belongs to the syncer'],
    ['spec..x', 'is not a field name'],
    ['spec.a[0]', 'is not a field name'],
    ['spec.__proto__.x', 'not allowed'],
  ])('%s is refused (%s)', (path, why) => {
    expect(() => parsePath(path)).toThrow(why);
  });
});

describe('copyPath', () => {
  it.each([
    ['copies a nested field, creating parents', { spec: { a: { b: 1 } } }, {}, 'spec.a.b', { spec: { a: { b: 1 } } }],
    ['removes a field the source lacks', { spec: {} }, { spec: { a: 1, c: 2 } }, 'spec.a', { spec: { c: 2 } }],
    ['creates no parents for an absent field', {}, {}, 'spec.a', {}],
    ['replaces a whole subtree', { spec: { x: 1 } }, { spec: { y: 2 } }, 'spec', { spec: { x: 1 } }],
  ])('%s', (_, src, dst, path, want) => {
    const out = structuredClone(dst) as Record<string, unknown>;
    copyPath(src, out, parsePath(path));
    expect(out).toEqual(want);
  });

  it('copies by value: changing the copy leaves the source as it was', () => {
    const src = { spec: { list: [1] } };
    const dst: Record<string, unknown> = {};
    copyPath(src, dst, parsePath('spec'));
    (dst.spec as { list: number[] }).list.push(2);
    expect(src.spec.list).toEqual([1]);
  });
});

describe('dropPath', () => {
  it.each([
    ['a field', { spec: { a: 1, b: 2 } }, 'spec.a', { spec: { b: 2 } }],
    [
      'a field of every item',
      { spec: { t: [{ a: 1, b: 1 }, { a: 2 }] } },
      'spec.t[].a',
      { spec: { t: [{ b: 1 }, {}] } },
    ],
    ['the items of a list', { spec: { t: [1, 2] } }, 'spec.t[]', { spec: { t: [] } }],
    ['nothing when absent', { spec: {} }, 'spec.a.b', { spec: {} }],
  ])('%s', (_, obj, path, want) => {
    const out = structuredClone(obj);
    dropPath(out, parsePath(path));
    expect(out).toEqual(want);
  });
});

describe('mapPath', () => {
  const fn = (v: string) => (v.startsWith('bad') ? undefined : `x-${v}`);
  it.each([
    ['a string field', { spec: { ns: 'a' } }, 'spec.ns', { spec: { ns: 'x-a' } }, []],
    ['a refused field is removed', { spec: { ns: 'bad' } }, 'spec.ns', { spec: {} }, ['bad']],
    [
      'a field of every item',
      { spec: { t: [{ ns: 'a' }, { ns: 'bad1' }] } },
      'spec.t[].ns',
      { spec: { t: [{ ns: 'x-a' }, {}] } },
      ['bad1'],
    ],
    ['the strings of a list', { spec: { l: ['a', 'bad', 'b'] } }, 'spec.l[]', { spec: { l: ['x-a', 'x-b'] } }, ['bad']],
    ['not a string: left alone', { spec: { ns: 3 } }, 'spec.ns', { spec: { ns: 3 } }, []],
  ])('%s', (_, obj, path, want, refused) => {
    const out = structuredClone(obj);
    expect(mapPath(out, parsePath(path), fn)).toEqual(refused);
    expect(out).toEqual(want);
  });
});
