import { describe, expect, it } from 'vitest';
import { planApply } from './applier.ts';
import { objectKey } from './objects.ts';
import { checkOwner, checkScope, scopeOf, type LiveOwner, type ScopePolicy, type SourceScope } from './scope.ts';
import { validate } from '../../schemas/validate.ts';
import { cvDoc, makeArtifact, vcDoc, vcEntry } from './testing.ts';

const source = { namespace: 'team-a', name: 'tenants' };
const vc = (namespace: string, name = 'dev') => ({ kind: 'VirtualCluster', namespace, name });
const cv = { kind: 'ClusterVersion', name: 'v1-36' };

describe('scopeOf', () => {
  const cases: Array<{ name: string; policy?: ScopePolicy; want: SourceScope }> = [
    {
      name: 'no policy: own namespace only',
      want: { namespaces: ['team-a'], clusterScoped: false, adoptHandMade: false, adoptFromOtherSources: false },
    },
    {
      name: 'a policy entry adds namespaces and cluster-scoped kinds',
      policy: { sources: { 'team-a/tenants': { targetNamespaces: ['team-a', 'team-b'], clusterScoped: true } } },
      want: {
        namespaces: ['team-a', 'team-b'],
        clusterScoped: true,
        adoptHandMade: false,
        adoptFromOtherSources: false,
      },
    },
    {
      name: 'another source’s entry does not apply',
      policy: {
        sources: { 'team-b/tenants': { targetNamespaces: ['*'], clusterScoped: true, adopt: { handMade: true } } },
      },
      want: { namespaces: ['team-a'], clusterScoped: false, adoptHandMade: false, adoptFromOtherSources: false },
    },
    {
      name: 'a platform source may write cluster-scoped kinds by default',
      policy: { platformSources: ['team-a/tenants'] },
      want: { namespaces: ['team-a'], clusterScoped: true, adoptHandMade: false, adoptFromOtherSources: false },
    },
    {
      name: 'the policy can take that away from a platform source, and opt in to adoption',
      policy: {
        platformSources: ['team-a/tenants'],
        sources: { 'team-a/tenants': { clusterScoped: false, adopt: { handMade: true, otherSources: true } } },
      },
      want: { namespaces: ['team-a'], clusterScoped: false, adoptHandMade: true, adoptFromOtherSources: true },
    },
  ];
  it.each(cases)('$name', (c) => expect(scopeOf(source, c.policy)).toEqual(c.want));
});

describe('checkScope', () => {
  const own = scopeOf(source);
  const wide = scopeOf(source, { sources: { 'team-a/tenants': { targetNamespaces: ['*'], clusterScoped: true } } });
  const cases: Array<{
    name: string;
    ref: { kind: string; namespace?: string; name: string };
    namespaced: boolean;
    scope: SourceScope;
    pointer?: string;
    message?: RegExp;
  }> = [
    { name: 'own namespace', ref: vc('team-a'), namespaced: true, scope: own },
    {
      name: 'another namespace',
      ref: vc('kube-system'),
      namespaced: true,
      scope: own,
      pointer: '/metadata/namespace',
      message:
        /namespace "kube-system" is outside the scope of GitSource team-a\/tenants, which may write only into team-a/,
    },
    {
      name: 'no namespace',
      ref: { kind: 'VirtualCluster', name: 'dev' },
      namespaced: true,
      scope: own,
      pointer: '/metadata/namespace',
    },
    {
      name: 'a cluster-scoped kind',
      ref: cv,
      namespaced: false,
      scope: own,
      pointer: '/kind',
      message: /ClusterVersion is cluster-scoped and GitSource team-a\/tenants may not write cluster-scoped kinds/,
    },
    { name: 'every namespace and cluster-scoped kinds when allowed', ref: vc('team-z'), namespaced: true, scope: wide },
    { name: 'cluster-scoped allowed', ref: cv, namespaced: false, scope: wide },
  ];
  it.each(cases)('$name', (c) => {
    const v = checkScope(c.ref, c.namespaced, source, c.scope);
    expect(v?.pointer).toBe(c.pointer);
    if (c.message) expect(v?.message).toMatch(c.message);
  });
});

describe('checkOwner', () => {
  const own = scopeOf(source);
  const adopting = scopeOf(source, {
    sources: { 'team-a/tenants': { adopt: { handMade: true, otherSources: true } } },
  });
  const cases: Array<{ name: string; live: LiveOwner | null; scope: SourceScope; refused?: RegExp }> = [
    { name: 'a missing object is created', live: null, scope: own },
    { name: 'its own object', live: { source: 'team-a.tenants' }, scope: own },
    {
      name: 'a hand-made object',
      live: {},
      scope: own,
      refused: /VirtualCluster team-a\/dev exists and was not made by a GitSource/,
    },
    {
      name: 'another source’s object',
      live: { source: 'team-b.tenants' },
      scope: own,
      refused: /belongs to GitSource team-b\.tenants/,
    },
    { name: 'a hand-made object when the platform opts in', live: {}, scope: adopting },
    { name: 'another source’s object when the platform opts in', live: { source: 'team-b.tenants' }, scope: adopting },
  ];
  it.each(cases)('$name', (c) => {
    const refused = checkOwner(vc('team-a'), c.live, source, c.scope);
    if (c.refused) expect(refused).toMatch(c.refused);
    else expect(refused).toBeUndefined();
  });
});

describe('planApply within a scope', () => {
  const scope = scopeOf(source);
  it('refuses a document in another namespace, naming file, object and field, applies the rest and prunes nothing', () => {
    const artifact = makeArtifact({
      'tenants/a.yaml': [vcDoc('team-a', 'dev')],
      'tenants/evil.yaml': [vcDoc('team-b', 'prod')],
    });
    const plan = planApply(artifact, [vcEntry('team-a', 'old')], source, { scope });
    expect(plan.apply.map((d) => d.key)).toEqual(['VirtualCluster/team-a/dev']);
    expect(plan.errors).toMatchObject([
      {
        reason: 'OutOfScope',
        file: 'tenants/evil.yaml',
        object: 'VirtualCluster team-b/prod',
        pointer: '/metadata/namespace',
      },
    ]);
    expect(plan.errors[0]!.message).toMatch(
      /^tenants\/evil\.yaml: VirtualCluster team-b\/prod: \/metadata\/namespace namespace "team-b" is outside the scope/,
    );
    expect(plan.pruneBlocked).toMatchObject({ reason: 'OutOfScope', stalled: true });
    expect(plan.pruneBlocked!.message).toContain('tenants/evil.yaml');
  });

  it('refuses a ClusterVersion from an unmarked source', () => {
    const plan = planApply(makeArtifact({ 'versions.yaml': [cvDoc('v1-36')] }), [], source, { scope });
    expect(plan.apply).toEqual([]);
    expect(plan.errors).toMatchObject([{ reason: 'OutOfScope', pointer: '/kind', object: 'ClusterVersion v1-36' }]);
  });

  it('refuses to take over objects that are not its own, and never prunes the refused keys', () => {
    const artifact = makeArtifact({
      'tenants/a.yaml': [vcDoc('team-a', 'mine'), vcDoc('team-a', 'hand'), vcDoc('team-a', 'theirs')],
    });
    const owners = new Map<string, LiveOwner | null>([
      [objectKey(vc('team-a', 'mine')), { source: 'team-a.tenants' }],
      [objectKey(vc('team-a', 'hand')), {}],
      [objectKey(vc('team-a', 'theirs')), { source: 'team-b.tenants' }],
    ]);
    const plan = planApply(artifact, [vcEntry('team-a', 'hand')], source, { scope, owners });
    expect(plan.apply.map((d) => d.ref.name)).toEqual(['mine']);
    expect(plan.errors.map((e) => [e.reason, e.object])).toEqual([
      ['NotOwned', 'VirtualCluster team-a/hand'],
      ['NotOwned', 'VirtualCluster team-a/theirs'],
    ]);
    expect(plan.prune).toEqual([]);
    expect(plan.pruneBlocked).toMatchObject({ reason: 'NotOwned', stalled: true });
  });

  it('without a scope checks content only, as vc validate does', () => {
    const plan = planApply(
      makeArtifact({ 'versions.yaml': [cvDoc('v1-36')], 'a.yaml': [vcDoc('x', 'y')] }),
      [],
      source,
    );
    expect(plan.errors).toEqual([]);
    expect(plan.apply).toHaveLength(2);
  });
});

describe('the gitops section of the manager configuration schema', () => {
  const config = (gitops: Record<string, unknown>) => ({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'ManagerConfiguration',
    gitops,
  });
  it('accepts the platform policy, limits, interval floor and address allowance', () => {
    const gitops = {
      allowPrivateAddresses: ['127.0.0.0/8', '::1/128'],
      minIntervalSeconds: 30,
      limits: { maxFetchBytes: 1 << 20, maxFiles: 10, maxFileBytes: 1024, maxTotalBytes: 4096, maxHistoryCommits: 50 },
      policy: {
        sources: {
          'team-a/tenants': {
            targetNamespaces: ['team-b'],
            clusterScoped: true,
            adopt: { handMade: true, otherSources: false },
          },
        },
      },
    };
    expect(validate('managerConfig', config(gitops))).toEqual([]);
    expect(validate('managerConfig', config({ allowPrivateAddresses: true }))).toEqual([]);
  });
  it.each([
    ['a policy key that is not namespace/name', { policy: { sources: { tenants: {} } } }],
    ['an unknown policy field', { policy: { sources: { 'a/b': { namespaces: ['x'] } } } }],
    ['an address that is not a CIDR', { allowPrivateAddresses: ['localhost'] }],
    ['a zero interval floor', { minIntervalSeconds: 0 }],
  ])('refuses %s', (_, gitops) => expect(validate('managerConfig', config(gitops)).length).toBeGreaterThan(0));
});
