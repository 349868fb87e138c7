import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { planDiff } from './diff.ts';
import { SOURCE_LABEL } from './objects.ts';
import { cvDoc, makeArtifact, vcDoc } from './testing.ts';

const source = { namespace: 'platform', name: 'tenants' };
const applied = (doc: Record<string, unknown>, extra: Record<string, unknown> = {}): KubeObject => {
  const meta = doc.metadata as Record<string, unknown>;
  return {
    ...doc,
    metadata: { ...meta, uid: `uid-${String(meta.name)}`, labels: { [SOURCE_LABEL]: 'platform.tenants' } },
    ...extra,
  };
};

describe('planDiff', () => {
  const artifact = makeArtifact({
    'tenants/a.yaml': [vcDoc('team-a', 'dev', { weight: 3 })],
    'tenants/b.yaml': [vcDoc('team-b', 'dev')],
    'tenants/c.yaml': [vcDoc('team-c', 'dev', { weight: 0 })],
    'versions.yaml': [cvDoc('v1-36')],
  });

  it('sorts desired objects into create and change, and names live ones the artifact dropped for deletion', () => {
    const live = [
      applied(vcDoc('team-a', 'dev', { weight: 1 })),
      applied(vcDoc('team-b', 'dev')),
      applied(vcDoc('team-c', 'dev')),
      applied(vcDoc('team-z', 'gone')),
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'unrelated', namespace: 'x' } },
    ];
    const d = planDiff(artifact, live, source);
    expect(d.create).toEqual([
      { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'ClusterVersion', name: 'v1-36', file: 'versions.yaml' },
    ]);
    expect(d.change).toEqual([
      {
        object: {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'VirtualCluster',
          namespace: 'team-a',
          name: 'dev',
          file: 'tenants/a.yaml',
        },
        fields: ['/spec/weight'],
      },
    ]);
    expect(d.delete).toEqual([
      { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster', namespace: 'team-z', name: 'gone' },
    ]);
    expect(d.errors.map((e) => e.message)).toEqual([
      'tenants/c.yaml: VirtualCluster team-c/dev: /spec/weight must be >= 1',
    ]);
  });

  it('compares the source label only when a source is given', () => {
    const live = [{ ...vcDoc('team-b', 'dev'), metadata: { name: 'dev', namespace: 'team-b' } }];
    const only = makeArtifact({ 'b.yaml': [vcDoc('team-b', 'dev')] });
    expect(planDiff(only, live).change).toEqual([]);
    expect(planDiff(only, live, source).change[0]!.fields).toEqual(['/metadata/labels/tenancy.x-k8s.io~1gitsource']);
  });

  it('changes nothing it is given', () => {
    const live = [applied(vcDoc('team-a', 'dev'))];
    const before = structuredClone(live);
    planDiff(artifact, live, source);
    expect(live).toEqual(before);
  });
});
