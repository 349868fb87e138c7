import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { formatObjects } from './output.ts';

const vcs = [{ metadata: { name: 'a', namespace: 'default' } }, { metadata: { name: 'b', namespace: 't' } }];
const base = {
  resource: 'virtualclusters',
  group: 'tenancy.x-k8s.io',
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
};

describe('formatObjects', () => {
  it('prints a list as kubectl does: a v1 List whose items carry apiVersion and kind', () => {
    const doc = JSON.parse(formatObjects(vcs, { ...base, format: 'json', single: false })!) as Record<string, unknown>;
    expect(doc).toMatchObject({ apiVersion: 'v1', kind: 'List' });
    expect(doc.items).toEqual([
      { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster', metadata: vcs[0]!.metadata },
      { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster', metadata: vcs[1]!.metadata },
    ]);
    expect(parse(formatObjects(vcs, { ...base, format: 'yaml', single: false })!)).toEqual(doc);
  });

  it('prints one object alone, and names as resource.group/name', () => {
    const one = JSON.parse(formatObjects([vcs[0]!], { ...base, format: 'json', single: true })!) as object;
    expect(one).toMatchObject({ kind: 'VirtualCluster', metadata: { name: 'a' } });
    expect(formatObjects(vcs, { ...base, format: 'name', single: false })).toBe(
      'virtualcluster.tenancy.x-k8s.io/a\nvirtualcluster.tenancy.x-k8s.io/b\n',
    );
    expect(formatObjects(vcs, { ...base, format: 'table', single: false })).toBeUndefined();
  });
});
