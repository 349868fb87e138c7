import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { checkOutput, formatData, formatObjects, formatTable } from './output.ts';

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

describe('-o formats', () => {
  it('accepts the formats a command offers, jsonpath=TEMPLATE included, and names them when refusing', () => {
    expect(checkOutput('jsonpath={.a}', ['table', 'jsonpath'])).toBe('jsonpath={.a}');
    expect(() => checkOutput('wide', ['table', 'json', 'jsonpath'])).toThrow(
      '--output wide: not a format of this command; use one of table, json, jsonpath=TEMPLATE',
    );
  });

  it('prints data as json, yaml or a template, and a bad template as an error naming --output', () => {
    expect(formatData({ a: [1, 2] }, 'jsonpath={.a[*]}')).toBe('1 2');
    expect(parse(formatData({ a: [1, 2] }, 'yaml')!)).toEqual({ a: [1, 2] });
    expect(formatData({ a: 1 }, 'table')).toBeUndefined();
    expect(() => formatData({}, 'jsonpath={.a')).toThrow(/^--output jsonpath=\{\.a: unclosed action at column 1/);
  });

  it('aligns a table under its headers', () => {
    expect(
      formatTable(
        ['NAME', 'PHASE'],
        [
          ['a-long-name', 'Running'],
          ['b', ''],
        ],
      ),
    ).toBe('NAME         PHASE\na-long-name  Running\nb\n');
  });
});
