import { describe, expect, it } from 'vitest';
import type { KubeObject } from './client.ts';
import { slim } from './informer.ts';

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
      name: 'leaves an object without either alone',
      in: { metadata: { name: 'a', annotations: {} } },
      out: { metadata: { name: 'a', annotations: {} } },
    },
  ])('$name', (c) => {
    expect(slim(c.in as KubeObject)).toEqual(c.out);
  });
});
