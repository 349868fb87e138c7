import { describe, expect, it } from 'vitest';
import type { KubeObject } from './client.ts';
import { compact, slim, StringPool } from './informer.ts';

const LAST = 'kubectl.kubernetes.io/last-applied-configuration';

describe('slim', () => {
  it.each([
    {
      name: 'drops managedFields and the last-applied annotation, keeping the others',
      in: { metadata: { name: 'a', managedFields: [{}], annotations: { [LAST]: '{}', keep: 'x' } } },
      out: { metadata: { name: 'a', annotations: { keep: 'x' } } },
    },
    {
      name: 'leaves out an annotations map it emptied, as the apiserver does',
      in: { metadata: { name: 'a', annotations: { [LAST]: '{}' } } },
      out: { metadata: { name: 'a' } },
    },
    {
      name: 'keeps an annotations map when it only drops managedFields',
      in: { metadata: { name: 'a', managedFields: [{}], annotations: { keep: 'x' } } },
      out: { metadata: { name: 'a', annotations: { keep: 'x' } } },
    },
    {
      name: 'leaves an object without either alone',
      in: { metadata: { name: 'a', annotations: {} } },
      out: { metadata: { name: 'a', annotations: {} } },
    },
  ])('$name', (c) => {
    expect(slim(c.in as KubeObject)).toEqual(c.out);
  });

  it('keeps every other field of metadata and of the object', () => {
    const o = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'a', namespace: 'n', uid: 'u', labels: { l: '1' }, managedFields: [{}] },
      spec: { nodeName: 'x' },
    };
    expect(slim(o as KubeObject)).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'a', namespace: 'n', uid: 'u', labels: { l: '1' } },
      spec: { nodeName: 'x' },
    });
  });
});

describe('StringPool', () => {
  // Two equal strings built at run time are distinct heap strings until a pool hands out one of them.
  const fresh = (s: string) => [...s].join('');

  it('hands out one copy of equal strings, in objects and arrays, leaving other values as they are', () => {
    const pool = new StringPool();
    const a = { spec: { image: fresh('nginx'), ports: [1, 2], tags: [fresh('x'), null, { k: fresh('v') }] }, n: null };
    const b = { spec: { image: fresh('nginx'), ports: [1, 2], tags: [fresh('x'), null, { k: fresh('v') }] }, n: null };
    pool.internAll(a);
    pool.internAll(b);
    expect(b).toEqual(a);
    expect(pool.size).toBe(3);
  });

  it('does not pool uids and resourceVersions, which no two objects share', () => {
    const pool = new StringPool();
    pool.internAll({ metadata: { uid: 'u-1', resourceVersion: '7', name: 'a' } });
    expect(pool.size).toBe(1);
  });

  it('starts again past its bound, so what it holds stays bounded', () => {
    const pool = new StringPool(3);
    for (const s of ['a', 'b', 'c', 'd', 'e']) pool.intern(s);
    expect(pool.size).toBeLessThanOrEqual(3);
    expect(pool.intern('e')).toBe('e');
  });

  it('compact slims, then pools: the object reads the same', () => {
    const o = { metadata: { name: 'p', managedFields: [{}] }, spec: { containers: [{ name: 'c', image: 'nginx' }] } };
    expect(compact(structuredClone(o) as KubeObject)).toEqual({
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'c', image: 'nginx' }] },
    });
  });
});
