import { describe, expect, it } from 'vitest';
import type { Artifact } from '../artifact.ts';
import { planApply, type ApplyPlan, type PlanOptions } from './applier.ts';
import { objectKey, SOURCE_LABEL, type InventoryEntry } from './objects.ts';
import { REV1, REV2, cvDoc, cvEntry, makeArtifact, vcDoc, vcEntry } from './testing.ts';

const source = { namespace: 'platform', name: 'tenants' };
const five = ['a', 'b', 'c', 'd', 'e'].map((n) => vcEntry('team', n));
const fiveDocs = (names = ['a', 'b', 'c', 'd', 'e']) => ({ 'tenants/team.yaml': names.map((n) => vcDoc('team', n)) });

interface Case {
  name: string;
  artifact: Artifact;
  inventory?: InventoryEntry[];
  options?: PlanOptions;
  apply: string[];
  prune: string[];
  blocked?: string;
  errors?: string[];
  check?: (p: ApplyPlan) => void;
}

const keys = (xs: Array<{ kind: string; namespace?: string; name: string }>) => xs.map((x) => objectKey(x));
const vcKey = (ns: string, n: string) => `VirtualCluster/${ns}/${n}`;

const cases: Case[] = [
  {
    name: 'adding: new objects are applied, ClusterVersions first',
    artifact: makeArtifact({
      'tenants/a.yaml': [vcDoc('team-a', 'dev', { clusterVersionName: 'v1-36' })],
      'versions.yaml': [cvDoc('v1-36')],
    }),
    apply: ['ClusterVersion//v1-36', vcKey('team-a', 'dev')],
    prune: [],
  },
  {
    name: 'editing: a changed object is applied again, nothing pruned',
    artifact: makeArtifact({ 'tenants/a.yaml': [vcDoc('team-a', 'dev', { weight: 7 })] }),
    inventory: [vcEntry('team-a', 'dev')],
    apply: [vcKey('team-a', 'dev')],
    prune: [],
    check: (p) => expect(p.apply[0]!.object.spec).toMatchObject({ weight: 7 }),
  },
  {
    name: 'removing: an entry the artifact no longer names is pruned within the limits',
    artifact: makeArtifact(fiveDocs(['a', 'b', 'c', 'd'])),
    inventory: five,
    apply: ['a', 'b', 'c', 'd'].map((n) => vcKey('team', n)),
    prune: [vcKey('team', 'e')],
    check: (p) => expect(p.safety).toMatchObject({ allowed: true, deletes: 1, total: 5 }),
  },
  {
    name: 'invalid YAML file: valid objects are applied, nothing is pruned',
    artifact: makeArtifact(fiveDocs(['a', 'b', 'c', 'd']), {
      parseErrors: [{ file: 'tenants/broken.yaml', line: 3, column: 7, message: 'bad indentation' }],
    }),
    inventory: five,
    apply: ['a', 'b', 'c', 'd'].map((n) => vcKey('team', n)),
    prune: [vcKey('team', 'e')],
    blocked: 'ParseFailed',
    errors: ['tenants/broken.yaml:3:7: cannot be parsed as YAML: bad indentation'],
  },
  {
    name: 'schema error: the message names the file, the object and the field',
    artifact: makeArtifact({
      'tenants/a.yaml': [vcDoc('team-a', 'dev', { weight: 5000 })],
      'tenants/b.yaml': [vcDoc('team-b', 'dev')],
    }),
    inventory: [vcEntry('team-a', 'dev'), vcEntry('team-b', 'old')],
    apply: [vcKey('team-b', 'dev')],
    prune: [vcKey('team-b', 'old')],
    blocked: 'ValidationFailed',
    errors: ['tenants/a.yaml: VirtualCluster team-a/dev: /spec/weight must be <= 1000'],
    check: (p) =>
      expect(p.errors[0]).toMatchObject({
        file: 'tenants/a.yaml',
        object: 'VirtualCluster team-a/dev',
        pointer: '/spec/weight',
      }),
  },
  {
    name: 'schema error in a multi-document file: the document is numbered',
    artifact: makeArtifact({
      'tenants/all.yaml': [vcDoc('team-a', 'dev'), vcDoc('team-a', 'prod', { podSecurityLevel: 'open' })],
    }),
    apply: [vcKey('team-a', 'dev')],
    prune: [],
    blocked: 'ValidationFailed',
    errors: [
      'tenants/all.yaml (document 2): VirtualCluster team-a/prod: /spec/podSecurityLevel must be one of "privileged", "baseline", "restricted"',
    ],
  },
  {
    name: 'empty path: nothing is pruned',
    artifact: makeArtifact({}),
    inventory: [vcEntry('team-a', 'dev')],
    apply: [],
    prune: [vcKey('team-a', 'dev')],
    blocked: 'EmptyPath',
  },
  {
    name: 'empty path confirmed for this revision: everything is pruned',
    artifact: makeArtifact({}),
    inventory: [vcEntry('team-a', 'dev')],
    options: { confirmation: REV1 },
    apply: [],
    prune: [vcKey('team-a', 'dev')],
    check: (p) => expect(p.confirmation).toBe(REV1),
  },
  {
    name: 'delete-all beyond the limits is refused, with counts and names',
    artifact: makeArtifact({ 'versions.yaml': [cvDoc('v1-36')] }),
    inventory: five,
    apply: ['ClusterVersion//v1-36'],
    prune: ['a', 'b', 'c', 'd', 'e'].map((n) => vcKey('team', n)),
    blocked: 'DeletionLimitExceeded',
    check: (p) => {
      expect(p.pruneBlocked!.message).toContain('would delete 5 of 5 VirtualClusters');
      expect(p.pruneBlocked!.message).toContain('team/a, team/b, team/c, team/d, team/e');
      expect(p.pruneBlocked!.message).toContain(`tenancy.x-k8s.io/confirm-deletion=${REV1}`);
    },
  },
  {
    name: 'percent rule: 2 of 4 is over 25% though under maxDeletes',
    artifact: makeArtifact(fiveDocs(['a', 'b'])),
    inventory: five.slice(0, 4),
    apply: [vcKey('team', 'a'), vcKey('team', 'b')],
    prune: [vcKey('team', 'c'), vcKey('team', 'd')],
    blocked: 'DeletionLimitExceeded',
    check: (p) =>
      expect(p.safety).toMatchObject({ allowed: false, deletes: 2, total: 4, maxDeletes: 3, maxDeletePercent: 25 }),
  },
  {
    name: 'percent rule: 1 of 4 is exactly 25%, allowed',
    artifact: makeArtifact(fiveDocs(['a', 'b', 'c'])),
    inventory: five.slice(0, 4),
    apply: ['a', 'b', 'c'].map((n) => vcKey('team', n)),
    prune: [vcKey('team', 'd')],
  },
  {
    name: 'maxDeletes: 4 of 5 under a 100% rule is still over 3',
    artifact: makeArtifact(fiveDocs(['a'])),
    inventory: five,
    options: { safety: { maxDeletePercent: 100 } },
    apply: [vcKey('team', 'a')],
    prune: ['b', 'c', 'd', 'e'].map((n) => vcKey('team', n)),
    blocked: 'DeletionLimitExceeded',
  },
  {
    name: 'confirmation annotation for this revision allows the deletion',
    artifact: makeArtifact(fiveDocs(['a'])),
    inventory: five,
    options: { confirmation: REV1 },
    apply: [vcKey('team', 'a')],
    prune: ['b', 'c', 'd', 'e'].map((n) => vcKey('team', n)),
    check: (p) => {
      expect(p.safety).toMatchObject({ allowed: true, confirmed: true });
      expect(p.confirmation).toBe(REV1);
    },
  },
  {
    name: 'confirmation annotation for another revision does not',
    artifact: makeArtifact(fiveDocs(['a']), { revision: REV2 }),
    inventory: five,
    options: { confirmation: REV1 },
    apply: [vcKey('team', 'a')],
    prune: ['b', 'c', 'd', 'e'].map((n) => vcKey('team', n)),
    blocked: 'DeletionLimitExceeded',
    check: (p) => {
      expect(p.pruneBlocked!.message).toContain(`names revision ${REV1}, not this one`);
      expect(p.confirmation).toBeUndefined();
    },
  },
  {
    name: 'duplicate object: both files named, neither applied',
    artifact: makeArtifact({
      'tenants/a.yaml': [vcDoc('team-a', 'dev')],
      'tenants/b.yaml': [vcDoc('team-a', 'dev', { weight: 2 })],
      'tenants/c.yaml': [vcDoc('team-c', 'dev')],
    }),
    inventory: [vcEntry('team-a', 'dev')],
    apply: [vcKey('team-c', 'dev')],
    prune: [],
    blocked: 'ValidationFailed',
    errors: [
      'VirtualCluster team-a/dev is defined more than once: in tenants/a.yaml and tenants/b.yaml; none of them is applied',
    ],
  },
  {
    name: 'non-tenant kind refused, naming file and kind',
    artifact: makeArtifact({
      'tenants/a.yaml': [vcDoc('team-a', 'dev')],
      'tenants/cm.yaml': [
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'kube-system' }, data: {} },
      ],
    }),
    apply: [vcKey('team-a', 'dev')],
    prune: [],
    blocked: 'ValidationFailed',
    errors: [
      'tenants/cm.yaml: ConfigMap kube-system/x: kind ConfigMap is refused: only tenant definitions ' +
        '(ClusterVersion, VirtualCluster, VirtualClusterControlPlane, VirtualClusterInfraCluster, Cluster) may come from a GitSource',
    ],
  },
  {
    name: 'a document without kind is refused',
    artifact: makeArtifact({ 'tenants/x.yaml': [{ metadata: { name: 'x' } }] }),
    apply: [],
    prune: [],
    blocked: 'ValidationFailed',
    errors: [
      'tenants/x.yaml: document has no kind: only ClusterVersion, VirtualCluster, VirtualClusterControlPlane, ' +
        'VirtualClusterInfraCluster and Cluster objects may come from a GitSource',
    ],
  },
  {
    name: 'a namespaced ClusterVersion is refused',
    artifact: makeArtifact({
      'versions.yaml': [{ ...cvDoc('v1-36'), metadata: { name: 'v1-36', namespace: 'default' } }],
    }),
    apply: [],
    prune: [],
    blocked: 'ValidationFailed',
    errors: [
      'versions.yaml: ClusterVersion default/v1-36: /metadata/namespace must not be set: ClusterVersion is cluster-scoped',
    ],
  },
  {
    name: 'ClusterVersion deletions do not count against the limits',
    artifact: makeArtifact(fiveDocs()),
    inventory: [...five, cvEntry('v1'), cvEntry('v2'), cvEntry('v3'), cvEntry('v4')],
    apply: ['a', 'b', 'c', 'd', 'e'].map((n) => vcKey('team', n)),
    prune: ['v1', 'v2', 'v3', 'v4'].map((n) => `ClusterVersion//${n}`),
  },
  {
    name: 'prune off: nothing is refused for deleting too much',
    artifact: makeArtifact(fiveDocs(['a'])),
    inventory: five,
    options: { prune: false },
    apply: [vcKey('team', 'a')],
    prune: ['b', 'c', 'd', 'e'].map((n) => vcKey('team', n)),
    check: (p) => expect(p.pruneEnabled).toBe(false),
  },
];

describe('Applier.plan', () => {
  it.each(cases)('$name', (c) => {
    const plan = planApply(c.artifact, c.inventory ?? [], source, c.options);
    expect(keys(plan.apply.map((a) => a.ref))).toEqual(c.apply);
    expect(keys(plan.prune)).toEqual(c.prune);
    expect(plan.pruneBlocked?.reason).toBe(c.blocked);
    if (c.blocked) expect(plan.pruneBlocked!.stalled).toBe(true);
    if (c.errors) expect(plan.errors.map((e) => e.message)).toEqual(c.errors);
    else expect(plan.errors).toEqual([]);
    for (const e of c.errors ?? []) expect(plan.pruneBlocked!.message).toContain(e);
    c.check?.(plan);
  });

  it('labels applied objects with their source and keeps only what apply may set', () => {
    const doc = {
      ...vcDoc('team-a', 'dev'),
      metadata: { name: 'dev', namespace: 'team-a', uid: 'stale', labels: { team: 'a' } },
      status: { phase: 'Running' },
    };
    const plan = planApply(makeArtifact({ 'a.yaml': [doc] }), [], source);
    expect(plan.errors).toEqual([]);
    expect(plan.apply[0]!.object).toEqual({
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'dev', namespace: 'team-a', labels: { team: 'a', [SOURCE_LABEL]: 'platform.tenants' } },
      spec: { provisioner: { type: 'local' } },
    });
  });

  it('is pure: the same input gives the same plan', () => {
    const a = makeArtifact(fiveDocs(['a', 'b']));
    expect(planApply(a, five, source)).toEqual(planApply(a, five, source));
  });
});
