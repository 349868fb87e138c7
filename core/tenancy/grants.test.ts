import { describe, expect, it } from 'vitest';
import type { VirtualClusterSpec } from '../api/virtualcluster.ts';
import { LABEL } from '../names/names.ts';
import { grantViolations, importSecretGranted, subjectOf, type GrantSubject, type GrantsSpec } from './grants.ts';
import { checkPolicies, DEFAULT_POLICY_ANNOTATION, type TenantPolicy } from './policy.ts';

const policy = (name: string, grants?: GrantsSpec, isDefault = false): TenantPolicy => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'TenantPolicy',
  metadata: { name, ...(isDefault && { annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } }) },
  spec: grants ? { grants } : {},
});

const gold = policy('gold', {
  subjects: [
    { kind: 'Namespace', name: 'team-a' },
    { kind: 'Namespace', selector: { matchLabels: { tier: 'gold', zone: 'eu' } } },
    { kind: 'GitSource', namespace: 'platform', name: 'tenants' },
  ],
  superClusters: ['east'],
  clusterVersions: ['v1-36'],
  importSecrets: [{ namespace: 'team-a', name: 'legacy' }],
});
const teamA: GrantSubject = { namespace: 'team-a', namespaceLabels: {} };
const teamB: GrantSubject = { namespace: 'team-b', namespaceLabels: { tier: 'gold' } };
const importing = (name: string): VirtualClusterSpec => ({
  provisioner: { type: 'import', import: { kubeconfigSecretRef: { name } } },
});

describe('grantViolations', () => {
  it.each<[string, VirtualClusterSpec, TenantPolicy | undefined, GrantSubject, string[]]>([
    ['naming nothing needs no grant', {}, undefined, teamB, []],
    ['the granted namespace names the policy', { policyName: 'gold' }, gold, teamA, []],
    [
      'another namespace names the policy',
      { policyName: 'gold' },
      gold,
      teamB,
      ['spec.policyName: TenantPolicy "gold" is not granted to namespace "team-b" (its spec.grants.subjects)'],
    ],
    [
      'a namespace whose labels match every selector label',
      { policyName: 'gold' },
      gold,
      { namespace: 'team-c', namespaceLabels: { tier: 'gold', zone: 'eu', x: 'y' } },
      [],
    ],
    [
      'labels not read: the selector cannot match',
      { policyName: 'gold' },
      gold,
      { namespace: 'team-c' },
      [
        'spec.policyName: TenantPolicy "gold" is not granted to namespace "team-c" (its labels not read here) (its spec.grants.subjects)',
      ],
    ],
    [
      'the granted GitSource applies it anywhere',
      { policyName: 'gold' },
      gold,
      { namespace: 'x', gitSource: 'platform.tenants' },
      [],
    ],
    [
      'another GitSource',
      { policyName: 'gold' },
      gold,
      { namespace: 'x', namespaceLabels: {}, gitSource: 'platform.other' },
      [
        'spec.policyName: TenantPolicy "gold" is not granted to namespace "x" or GitSource "platform.other" (its spec.grants.subjects)',
      ],
    ],
    [
      'a policy without grants is nobody’s',
      { policyName: 'bare' },
      policy('bare'),
      teamA,
      ['spec.policyName: TenantPolicy "bare" is not granted to namespace "team-a" (its spec.grants.subjects)'],
    ],
    ['the default policy is everyone’s', { policyName: 'std' }, policy('std', undefined, true), teamB, []],
    [
      'a granted super cluster and version',
      { policyName: 'gold', superCluster: 'east', clusterVersionName: 'v1-36' },
      gold,
      teamA,
      [],
    ],
    [
      'a super cluster and version beyond the grant',
      { policyName: 'gold', superCluster: 'west', clusterVersionName: 'wide-open' },
      gold,
      teamA,
      [
        'spec.superCluster: "west" is not granted by TenantPolicy "gold" (spec.grants.superClusters)',
        'spec.clusterVersionName: "wide-open" is not granted by TenantPolicy "gold" (spec.grants.clusterVersions)',
      ],
    ],
    [
      'no TenantPolicy grants no super cluster',
      { superCluster: 'east' },
      undefined,
      teamA,
      [
        'spec.superCluster: "east" is not granted by the built-in defaults (no TenantPolicy applies) (spec.grants.superClusters)',
      ],
    ],
    ['the granted import Secret', { policyName: 'gold', ...importing('legacy') }, gold, teamA, []],
    [
      'an import Secret not granted',
      { policyName: 'gold', ...importing('platform-admin') },
      gold,
      teamA,
      [
        'spec.provisioner.import.kubeconfigSecretRef.name: Secret team-a/platform-admin is not granted to the import ' +
          'provisioner by TenantPolicy "gold" (spec.grants.importSecrets)',
      ],
    ],
    [
      'a granted Secret name in another namespace',
      { policyName: 'gold', ...importing('legacy') },
      gold,
      { namespace: 'team-c', namespaceLabels: { tier: 'gold', zone: 'eu' } },
      [
        'spec.provisioner.import.kubeconfigSecretRef.name: Secret team-c/legacy is not granted to the import ' +
          'provisioner by TenantPolicy "gold" (spec.grants.importSecrets)',
      ],
    ],
  ])('%s', (_name, spec, p, who, want) => {
    const got = grantViolations({ spec }, p, p?.metadata?.annotations?.[DEFAULT_POLICY_ANNOTATION] === 'true', who);
    expect(got.map((v) => `${v.field}: ${v.message}`)).toEqual(want);
  });

  it('importSecretGranted matches namespace and name both', () => {
    expect(importSecretGranted(gold, 'team-a', 'legacy')).toBe(true);
    expect(importSecretGranted(gold, 'team-b', 'legacy')).toBe(false);
    expect(importSecretGranted(undefined, 'team-a', 'legacy')).toBe(false);
  });
});

describe('subjectOf and checkPolicies', () => {
  it('takes the namespace and the GitSource label from the stored object', () => {
    const vc = { metadata: { namespace: 'x', labels: { [LABEL.gitSource]: 'platform.tenants' } } };
    expect(subjectOf(vc)).toEqual({ namespace: 'x', gitSource: 'platform.tenants' });
    expect(subjectOf({ metadata: { namespace: 'y' } }, { a: 'b' })).toEqual({
      namespace: 'y',
      namespaceLabels: { a: 'b' },
    });
  });

  it('refuses an ungranted choice at every entry point that calls it, with the policy settings otherwise', () => {
    const vc = (namespace: string, spec: VirtualClusterSpec) => ({ metadata: { namespace, name: 'dev' }, spec });
    expect(checkPolicies(vc('team-a', { policyName: 'gold' }), [gold])).toHaveProperty('effective.policyName', 'gold');
    const r = checkPolicies(vc('team-b', { policyName: 'gold', superCluster: 'west' }), [gold]);
    expect('violations' in r && r.violations.map((v) => v.field)).toEqual(['spec.policyName', 'spec.superCluster']);
    expect(checkPolicies(vc('team-b', { policyName: 'gold' }), [gold], {}, teamB)).toHaveProperty('violations');
  });
});
