import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY_ANNOTATION, type TenantPolicy } from '../../core/tenancy/policy.ts';
import { planApply } from './applier.ts';
import { policyErrors, simulatePolicies, withPolicies } from './policy.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { LABEL } from '../../core/names/names.ts';
import { REV1, makeArtifact, vcDoc, vcEntry } from './testing.ts';

const source = { namespace: 'platform', name: 'tenants' };
const gold: TenantPolicy = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'TenantPolicy',
  metadata: { name: 'gold' },
  spec: { weight: { max: 50 }, grants: { subjects: [{ kind: 'GitSource', namespace: 'platform', name: 'tenants' }] } },
};
const strict: TenantPolicy = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'TenantPolicy',
  metadata: { name: 'strict', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
  spec: { weight: { max: 2 } },
};

const plan = () =>
  planApply(
    makeArtifact({
      'tenants/a.yaml': [vcDoc('team-a', 'dev', { weight: 3 })],
      'tenants/b.yaml': [vcDoc('team-b', 'dev', { weight: 3, policyName: 'gold' })],
      'tenants/c.yaml': [
        vcDoc('team-c', 'dev', { apiServer: { extraArgs: { 'etcd-prefix': '/super' } }, policyName: 'gold' }),
      ],
    }),
    [vcEntry('team-a', 'dev')],
    source,
  );

describe('the TenantPolicy step of the GitOps plan', () => {
  it('names file, object and field of every definition that asks beyond its policy', () => {
    expect(policyErrors(plan().apply, [gold, strict]).map((e) => e.message)).toEqual([
      'tenants/a.yaml: VirtualCluster team-a/dev: spec.weight: weight 3 is above the ceiling 2 of policy "strict" (weight.max)',
      'tenants/c.yaml: VirtualCluster team-c/dev: spec.apiServer.extraArgs.etcd-prefix: --etcd-prefix is refused by the flag allow-list (etcd)',
    ]);
  });

  it('applies only what the policies allow, blocks pruning, and leaves the plan alone without readable policies', () => {
    const p = withPolicies(plan(), [gold, strict]);
    expect(p.apply.map((o) => o.key)).toEqual(['VirtualCluster/team-b/dev']);
    expect(p.pruneBlocked).toMatchObject({ reason: 'ValidationFailed', stalled: true });
    expect(p.pruneBlocked!.message).toContain(
      `Revision ${REV1}: 2 tenant definition(s) ask for more than their TenantPolicy allows`,
    );
    expect(p.errors.map((e) => e.pointer)).toEqual(['/spec/weight', '/spec/apiServer/extraArgs/etcd-prefix']);
    expect(withPolicies(plan(), undefined)).toEqual(plan());
  });
});

describe('the TenantPolicy step for Cluster API control planes', () => {
  const cpDoc = (ns: string, name: string, spec: Record<string, unknown>) => ({
    apiVersion: 'controlplane.tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualClusterControlPlane',
    metadata: { name, namespace: ns },
    spec: { version: 'v1.36.3', ...spec },
  });
  const wide: TenantPolicy = {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'TenantPolicy',
    metadata: { name: 'wide' },
    spec: { grants: { subjects: [{ kind: 'Namespace', name: 'team-a' }], clusterVersions: ['v1-36'] } },
  };
  const errorsOf = (docs: Array<Record<string, unknown>>) =>
    policyErrors(planApply(makeArtifact({ 'tenants/cp.yaml': docs }), [], source).apply, [wide, strict]).map((e) => [
      e.pointer,
      e.message,
    ]);

  it('checks the VirtualCluster a control plane stands for, with the ClusterVersion it names, by its namespace alone', () => {
    expect(
      errorsOf([
        cpDoc('team-a', 'ok', { clusterVersionName: 'v1-36', virtualCluster: { policyName: 'wide' } }),
        cpDoc('team-a', 'picked', { virtualCluster: { policyName: 'wide' } }),
        cpDoc('team-a', 'cv', { clusterVersionName: 'a-wide', virtualCluster: { policyName: 'wide' } }),
        cpDoc('team-b', 'policy', { virtualCluster: { policyName: 'wide' } }),
        cpDoc('team-a', 'weight', { virtualCluster: { weight: 3 } }),
      ]),
    ).toEqual([
      [
        '/spec/clusterVersionName',
        'tenants/cp.yaml: VirtualClusterControlPlane team-a/cv: spec.clusterVersionName: "a-wide" is not granted by ' +
          'TenantPolicy "wide" (spec.grants.clusterVersions)',
      ],
      [
        '/spec/virtualCluster/weight',
        'tenants/cp.yaml: VirtualClusterControlPlane team-a/weight: spec.virtualCluster.weight: weight 3 is above the ' +
          'ceiling 2 of policy "strict" (weight.max)',
      ],
      [
        '/spec/virtualCluster/policyName',
        'tenants/cp.yaml: VirtualClusterControlPlane team-b/policy: spec.virtualCluster.policyName: TenantPolicy ' +
          '"wide" is not granted to namespace "team-b" (its labels not read here) (its spec.grants.subjects)',
      ],
    ]);
  });
});

describe('simulating a TenantPolicy change against the existing tenants', () => {
  const tenant = (namespace: string, name: string, spec: Record<string, unknown>, labels?: Record<string, string>) =>
    ({
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { namespace, name, ...(labels && { labels }) },
      spec,
    }) as unknown as VirtualCluster;
  const tenants = [
    tenant('team-a', 'two', { weight: 2 }),
    tenant('team-b', 'ten', { weight: 10, policyName: 'gold' }, { [LABEL.gitSource]: 'platform.tenants' }),
    tenant('team-c', 'five', { weight: 5 }),
  ];
  const rows: Array<[string, TenantPolicy[], Array<[string, string]>]> = [
    ['the same policies change nothing', [], [['team-c/five', 'still-refused']]],
    [
      'a lower ceiling on the default policy refuses the tenant that used the old one',
      [{ ...strict, spec: { weight: { max: 1 } } }],
      [
        ['team-a/two', 'newly-refused'],
        ['team-c/five', 'still-refused'],
      ],
    ],
    [
      'a higher ceiling admits the tenant refused today',
      [{ ...strict, spec: { weight: { max: 5 } } }],
      [['team-c/five', 'now-admitted']],
    ],
    [
      'a grant taken away refuses the tenant that relied on it',
      [{ ...gold, spec: { weight: { max: 50 } } }],
      [
        ['team-b/ten', 'newly-refused'],
        ['team-c/five', 'still-refused'],
      ],
    ],
  ];
  it.each(rows)('%s', (_, proposed, want) => {
    const got = simulatePolicies(tenants, [gold, strict], proposed);
    expect(got.map((x) => [x.tenant, x.change])).toEqual(want);
    for (const x of got) expect(x.violations.length).toBeGreaterThan(0);
  });

  it('names the field and the policy in the refusal', () => {
    const [a] = simulatePolicies(tenants.slice(0, 1), [gold, strict], [{ ...strict, spec: { weight: { max: 1 } } }]);
    expect(a!.violations).toEqual(['spec.weight: weight 2 is above the ceiling 1 of policy "strict" (weight.max)']);
  });
});
