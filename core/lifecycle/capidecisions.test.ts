import { describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import {
  controlPlaneStatus,
  desiredVirtualCluster,
  isRefusal,
  pausedCondition,
  pausedStatus,
  pickClusterVersion,
  type ClusterVersionObject,
  type VirtualClusterControlPlane,
} from './capidecisions.ts';
import { capiKubeconfig } from './kubeconfigsecret.ts';

const cv = (name: string, kubernetesVersion: string): ClusterVersionObject => ({
  metadata: { name },
  spec: { kubernetesVersion },
});
const versions = [cv('b-136', 'v1.36.3'), cv('a-136', 'v1.36.3'), cv('old', 'v1.35.4')];
/** all grants every ClusterVersion of `versions`; the grant rows narrow it. */
const all = { policy: 'fleet', clusterVersions: ['a-136', 'b-136', 'old'] };

const cp = (spec: Partial<VirtualClusterControlPlane['spec']> = {}, status?: VirtualClusterControlPlane['status']) =>
  ({
    apiVersion: 'controlplane.tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualClusterControlPlane',
    metadata: { name: 'cp', namespace: 'fleet', uid: 'u-1', generation: 3 },
    spec: { version: 'v1.36.3', ...spec },
    ...(status && { status }),
  }) as VirtualClusterControlPlane;

describe('pickClusterVersion', () => {
  it.each([
    ['the first by name that offers the version', { version: 'v1.36.3' }, { name: 'a-136' }],
    [
      'the named one when it offers the version',
      { version: 'v1.36.3', clusterVersionName: 'b-136' },
      { name: 'b-136' },
    ],
    ['another version', { version: 'v1.35.4' }, { name: 'old' }],
    [
      'no ClusterVersion offers it',
      { version: 'v1.99.0' },
      {
        reason: 'UnknownVersion',
        message: 'spec.version: no ClusterVersion offers v1.99.0; offered: v1.35.4, v1.36.3',
      },
    ],
    [
      'the named one offers another version',
      { version: 'v1.36.3', clusterVersionName: 'old' },
      { reason: 'UnknownVersion', message: 'ClusterVersion old offers v1.35.4, not v1.36.3' },
    ],
    [
      'the named one does not exist',
      { version: 'v1.36.3', clusterVersionName: 'gone' },
      { reason: 'UnknownVersion', message: 'spec.clusterVersionName: ClusterVersion gone does not exist' },
    ],
  ])('%s', (_name, spec, want) => {
    expect(pickClusterVersion(spec, versions, all)).toEqual(want);
  });

  // What the provider picks for the author is granted, as what the author names is (issue 31 §1).
  it.each([
    [
      'the first granted one, past an ungranted one that sorts before it',
      { version: 'v1.36.3' },
      { policy: 'fleet', clusterVersions: ['b-136'] },
      { name: 'b-136' },
    ],
    [
      'a version only ungranted ClusterVersions offer',
      { version: 'v1.36.3' },
      { policy: 'fleet', clusterVersions: ['old'] },
      {
        reason: 'PolicyViolation',
        message:
          'spec.version: v1.36.3 is offered by a-136, b-136, none granted by TenantPolicy "fleet" ' +
          '(spec.grants.clusterVersions: old)',
      },
    ],
    [
      'no policy at all: nothing is granted',
      { version: 'v1.35.4' },
      { clusterVersions: [] },
      {
        reason: 'PolicyViolation',
        message:
          'spec.version: v1.35.4 is offered by old, none granted by the built-in defaults (no TenantPolicy applies) ' +
          '(spec.grants.clusterVersions: none)',
      },
    ],
    [
      'a named one that offers the version and is not granted',
      { version: 'v1.36.3', clusterVersionName: 'a-136' },
      { policy: 'fleet', clusterVersions: ['b-136'] },
      {
        reason: 'PolicyViolation',
        message:
          'spec.clusterVersionName: "a-136" is not granted by TenantPolicy "fleet" (spec.grants.clusterVersions)',
      },
    ],
    [
      'a version nobody offers stays UnknownVersion, granted or not',
      { version: 'v1.99.0' },
      { policy: 'fleet', clusterVersions: [] },
      {
        reason: 'UnknownVersion',
        message: 'spec.version: no ClusterVersion offers v1.99.0; offered: v1.35.4, v1.36.3',
      },
    ],
  ])('grants: %s', (_name, spec, grant, want) => {
    expect(pickClusterVersion(spec, versions, grant)).toEqual(want);
  });
});

describe('desiredVirtualCluster', () => {
  it('is named like the Cluster, labelled with it, controlled by the control plane, with the picked ClusterVersion', () => {
    const vc = desiredVirtualCluster(
      cp({ virtualCluster: { provisioner: { type: 'local' } } }),
      'team-a',
      versions,
      all,
    );
    expect(vc).toEqual({
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: {
        name: 'team-a',
        namespace: 'fleet',
        labels: { 'cluster.x-k8s.io/cluster-name': 'team-a', 'tenancy.x-k8s.io/managed-by': 'vc-manager-capi' },
        ownerReferences: [
          {
            apiVersion: 'controlplane.tenancy.x-k8s.io/v1alpha1',
            kind: 'VirtualClusterControlPlane',
            name: 'cp',
            uid: 'u-1',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: { provisioner: { type: 'local' }, clusterVersionName: 'a-136' },
    });
  }, 60_000); // the first schema check compiles every schema

  it.each([
    ['a ClusterVersion named in spec.virtualCluster', { clusterVersionName: 'old' }, 'InvalidSpec', /not allowed/],
    ['a field the VirtualCluster schema refuses', { weight: 'heavy' }, 'InvalidSpec', /spec\.virtualCluster: \/weight/],
    ['an unknown field', { colour: 'blue' }, 'InvalidSpec', /spec\.virtualCluster/],
  ])('refuses %s', (_name, virtualCluster, reason, message) => {
    const r = desiredVirtualCluster(cp({ virtualCluster }), 'team-a', versions, all);
    expect(isRefusal(r) && r.reason).toBe(reason);
    expect(isRefusal(r) && r.message).toMatch(message);
  });

  it('refuses a version no ClusterVersion offers', () => {
    const r = desiredVirtualCluster(cp({ version: 'v1.99.0' }), 'team-a', versions, all);
    expect(isRefusal(r) && r.reason).toBe('UnknownVersion');
  });
});

const vcIn = (
  phase: string | undefined,
  extra: Partial<VirtualCluster['status']> = {},
  generation = 1,
): VirtualCluster =>
  ({
    metadata: { name: 'team-a', namespace: 'fleet', generation },
    spec: { clusterVersionName: 'a-136' },
    status: { ...(phase && { phase }), observedGeneration: 1, ...extra },
  }) as VirtualCluster;

describe('controlPlaneStatus', () => {
  const now = new Date('2026-01-01T00:00:00Z');
  const policyRefused = {
    conditions: [
      {
        type: 'Ready',
        status: 'False' as const,
        reason: 'PolicyViolation',
        message: 'apiServer.extraArgs: not allowed',
        lastTransitionTime: '2025-12-31T00:00:00Z',
      },
    ],
  };
  const upgradeRefused = {
    observedGeneration: 2,
    conditions: [
      {
        type: 'SpecApplied',
        status: 'False' as const,
        reason: 'UpgradeRefused',
        message: 'ClusterVersion old spec.kubernetesVersion: from v1.36.3 to v1.35.4 is a downgrade',
        lastTransitionTime: '2025-12-31T00:00:00Z',
      },
    ],
  };
  it.each([
    [
      'no VirtualCluster yet',
      { cp: cp() },
      { initialized: false, ready: false, available: ['False', 'Provisioning'], version: undefined },
    ],
    [
      'a VirtualCluster provisioning',
      { cp: cp(), vc: vcIn('Provisioning'), vcVersion: 'v1.36.3' },
      { initialized: false, ready: false, available: ['False', 'Provisioning'], version: undefined },
    ],
    [
      'a Running VirtualCluster whose status is current',
      { cp: cp(), vc: vcIn('Running'), vcVersion: 'v1.36.3' },
      { initialized: true, ready: true, available: ['True', 'Available'], version: 'v1.36.3' },
    ],
    [
      'a Running VirtualCluster whose status is behind its spec (a roll to come)',
      { cp: cp({}, { version: 'v1.35.4' }), vc: vcIn('Running', {}, 2), vcVersion: 'v1.36.3' },
      { initialized: true, ready: true, available: ['True', 'Available'], version: 'v1.35.4' },
    ],
    [
      'a VirtualCluster its policy refuses',
      { cp: cp(), vc: vcIn('Error', policyRefused) },
      { initialized: false, ready: false, available: ['False', 'PolicyViolation'], version: undefined },
    ],
    [
      'bad input while the old control plane serves',
      {
        cp: cp({}, { version: 'v1.36.3', initialization: { controlPlaneInitialized: true } }),
        vc: vcIn('Running'),
        vcVersion: 'v1.36.3',
        refusal: { reason: 'UnknownVersion', message: 'spec.version: no ClusterVersion offers v1.99.0' },
      },
      { initialized: true, ready: true, available: ['False', 'UnknownVersion'], version: 'v1.36.3' },
    ],
    [
      'a version change the VirtualCluster controller refused (a downgrade): the old version serves on',
      {
        cp: cp({ version: 'v1.35.4' }, { version: 'v1.36.3', initialization: { controlPlaneInitialized: true } }),
        vc: vcIn('Running', upgradeRefused, 2),
        vcVersion: 'v1.35.4',
      },
      { initialized: true, ready: true, available: ['False', 'UpgradeRefused'], version: 'v1.36.3' },
    ],
    [
      'a version change waiting for its rollout is not a refusal',
      {
        cp: cp({}, { version: 'v1.35.4' }),
        vc: vcIn('Running', { conditions: [{ ...upgradeRefused.conditions[0]!, reason: 'RolloutWaiting' }] }, 2),
        vcVersion: 'v1.36.3',
      },
      { initialized: true, ready: true, available: ['True', 'Available'], version: 'v1.35.4' },
    ],
    [
      'an initialized control plane whose VirtualCluster stopped serving',
      { cp: cp({}, { initialization: { controlPlaneInitialized: true } }), vc: vcIn('Error') },
      { initialized: true, ready: false, available: ['False', 'Provisioning'], version: undefined },
    ],
  ])('%s', (_name, input, want) => {
    const s = controlPlaneStatus(input, now);
    expect(s.initialization?.controlPlaneInitialized).toBe(want.initialized);
    expect(s.initialized).toBe(want.initialized);
    expect(s.ready).toBe(want.ready);
    expect(s.externalManagedControlPlane).toBe(true);
    expect(s.version).toBe(want.version);
    expect(s.versions).toEqual(want.version ? [{ version: want.version }] : undefined);
    expect(s.conditions?.find((c) => c.type === 'Paused')).toMatchObject({ status: 'False', reason: 'NotPaused' });
    const a = s.conditions?.find((c) => c.type === 'Available');
    expect([a?.status, a?.reason]).toEqual(want.available);
    expect(a?.observedGeneration).toBe(3);
  });

  it('keeps the transition time of a condition whose status did not change', () => {
    const first = controlPlaneStatus({ cp: cp(), vc: vcIn('Running') }, now);
    const later = controlPlaneStatus({ cp: cp({}, first), vc: vcIn('Running') }, new Date('2026-02-01T00:00:00Z'));
    expect(later.conditions).toEqual(first.conditions);
  });

  it('says the control plane keeps serving when bad input comes while it serves', () => {
    const s = controlPlaneStatus(
      { cp: cp(), vc: vcIn('Running'), vcVersion: 'v1.36.3', refusal: { reason: 'UnknownVersion', message: 'x' } },
      now,
    );
    expect(s.conditions?.find((c) => c.type === 'Available')?.message).toBe(
      'x; the control plane keeps serving v1.36.3',
    );
  });
});

describe('pausedCondition', () => {
  const obj = (annotations?: Record<string, string>) => ({
    kind: 'VirtualClusterControlPlane',
    metadata: { name: 'cp', ...(annotations && { annotations }) },
  });
  it.each([
    ['neither', false, obj(), ['False', 'NotPaused', undefined]],
    ['another annotation', false, obj({ 'cluster.x-k8s.io/other': 'true' }), ['False', 'NotPaused', undefined]],
    ['the Cluster paused', true, obj(), ['True', 'Paused', 'Cluster spec.paused is set to true']],
    [
      'the annotation, of any value',
      false,
      obj({ 'cluster.x-k8s.io/paused': '' }),
      ['True', 'Paused', 'VirtualClusterControlPlane has the cluster.x-k8s.io/paused annotation'],
    ],
    [
      'both',
      true,
      obj({ 'cluster.x-k8s.io/paused': 'true' }),
      [
        'True',
        'Paused',
        'Cluster spec.paused is set to true, VirtualClusterControlPlane has the cluster.x-k8s.io/paused annotation',
      ],
    ],
  ])('%s', (_name, clusterPaused, o, want) => {
    const c = pausedCondition(clusterPaused, o);
    expect([c.status, c.reason, c.message]).toEqual(want);
  });

  it('a paused status keeps what was said and adds Paused, keeping its transition time while it holds', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const before = controlPlaneStatus({ cp: cp(), vc: vcIn('Running'), vcVersion: 'v1.36.3' }, now);
    const paused = pausedStatus(cp({}, before), pausedCondition(true, cp()), new Date('2026-01-02T00:00:00Z'));
    expect({ ...paused, conditions: undefined }).toEqual({ ...before, conditions: undefined });
    expect(paused.conditions?.map((c) => [c.type, c.status, c.lastTransitionTime])).toEqual([
      ['Available', 'True', '2026-01-01T00:00:00.000Z'],
      ['Ready', 'False', '2026-01-01T00:00:00.000Z'],
      ['Paused', 'True', '2026-01-02T00:00:00.000Z'],
    ]);
    const again = pausedStatus(cp({}, paused), pausedCondition(true, cp()), new Date('2026-01-03T00:00:00Z'));
    expect(again).toEqual(paused);
  });
});

describe('capiKubeconfig', () => {
  it.each([
    [
      'a VirtualCluster labelled with its own Cluster name',
      'team-a',
      { 'cluster.x-k8s.io/cluster-name': 'team-a' },
      true,
    ],
    ['a VirtualCluster without the label', 'team-a', undefined, false],
    ['a VirtualCluster labelled with another name', 'team-a', { 'cluster.x-k8s.io/cluster-name': 'team-b' }, false],
  ])('%s', (_name, vcName, labels, capi) => {
    const out = capiKubeconfig(vcName, labels, { kubeconfig: 'a2M=' });
    expect(out).toEqual(
      capi
        ? { labels: { 'cluster.x-k8s.io/cluster-name': vcName }, data: { value: 'a2M=' } }
        : { labels: {}, data: {} },
    );
  });
});
