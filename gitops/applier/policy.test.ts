import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY_ANNOTATION, type TenantPolicy } from '../../core/tenancy/policy.ts';
import { planApply } from './applier.ts';
import { policyErrors, withPolicies } from './policy.ts';
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
