import { describe, expect, it } from 'vitest';
import { deepEqual, desiredLeaves, differingFields, escapePointer, ownedLeaves, pointerGet } from './fields.ts';

const desired = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name: 'dev', namespace: 'team-a', labels: { 'tenancy.x-k8s.io/gitsource': 'platform.tenants' } },
  spec: { weight: 2, plugins: { enable: ['sandbox'] }, pluginConfig: {} },
};

const live = {
  ...desired,
  metadata: {
    ...desired.metadata,
    uid: 'u1',
    labels: { 'tenancy.x-k8s.io/gitsource': 'platform.tenants', 'added-by-hand': 'x' },
    managedFields: [
      {
        manager: 'vc-gitops',
        operation: 'Apply',
        fieldsV1: {
          'f:metadata': { 'f:labels': { 'f:tenancy.x-k8s.io/gitsource': {} } },
          'f:spec': { 'f:weight': {}, 'f:podSecurityLevel': {}, 'f:plugins': { 'f:enable': { 'v:"sandbox"': {} } } },
        },
      },
      { manager: 'vc-gitops', operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': { 'f:phase': {} } } },
      {
        manager: 'kubectl-patch',
        operation: 'Update',
        fieldsV1: { 'f:metadata': { 'f:labels': { 'f:added-by-hand': {} } } },
      },
    ],
  },
  spec: { weight: 2, plugins: { enable: ['sandbox'] }, podSecurityLevel: 'restricted', clusterDomain: 'cluster.local' },
};

describe('fields', () => {
  it('escapes and reads JSON pointers', () => {
    expect(escapePointer('a/b~c')).toBe('a~1b~0c');
    expect(pointerGet(live, '/metadata/labels/tenancy.x-k8s.io~1gitsource')).toBe('platform.tenants');
    expect(pointerGet(live, '/spec/plugins/enable/0')).toBe('sandbox');
    expect(pointerGet(live, '/spec/missing/deeper')).toBeUndefined();
  });

  it('compares JSON values regardless of key order', () => {
    expect(deepEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true);
    expect(deepEqual({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(deepEqual([1, 2], [2, 1])).toBe(false);
  });

  it('lists the fields an apply sets: labels, annotations and spec leaves, empty maps setting nothing', () => {
    expect(desiredLeaves(desired)).toEqual([
      '/metadata/labels/tenancy.x-k8s.io~1gitsource',
      '/spec/plugins/enable',
      '/spec/weight',
    ]);
  });

  it('reads the fields vc-gitops owns by apply on the main resource, lists as one field', () => {
    expect(ownedLeaves(live)).toEqual([
      '/metadata/labels/tenancy.x-k8s.io~1gitsource',
      '/spec/plugins/enable',
      '/spec/podSecurityLevel',
      '/spec/weight',
    ]);
    expect(ownedLeaves(live, 'kubectl-patch')).toEqual([]);
  });

  it('reports changed desired fields and owned fields no longer desired, not defaults or foreign fields', () => {
    expect(differingFields(desired, live, ownedLeaves(live))).toEqual(['/spec/podSecurityLevel']);
    const edited = { ...live, spec: { ...live.spec, weight: 9 } };
    expect(differingFields(desired, edited, [])).toEqual(['/spec/weight']);
    const unlabelled = { ...live, metadata: { ...live.metadata, labels: {} } };
    expect(differingFields(desired, unlabelled, [])).toEqual(['/metadata/labels/tenancy.x-k8s.io~1gitsource']);
  });
});
