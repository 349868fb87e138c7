import { describe, expect, it } from 'vitest';
import { ANN, LABEL, superNamespace } from '../../core/names/names.ts';
import { compareCopies, type CompareInput, type CopyFindings, findingsTotal, type SuperObject } from './compare.ts';

const A = 'team-a-1a2b3c';
const B = 'team-b-4d5e6f';
const nsA = superNamespace(A, 'default');
const nsB = superNamespace(B, 'default');

/** copy is the super copy the syncer makes of tenant object key/default/name with uid. */
const copy = (key: string, name: string, uid: string, over: Partial<SuperObject> = {}): SuperObject => ({
  namespace: superNamespace(key, 'default'),
  name,
  annotations: { [ANN.cluster]: key, [ANN.namespace]: 'default', [ANN.name]: name, [ANN.uid]: uid },
  ...over,
});

const namespaces = [
  { name: nsA, labels: { [LABEL.cluster]: A } },
  { name: nsB, labels: { [LABEL.cluster]: B } },
  { name: 'kube-system' },
];
const tenants = [
  {
    key: A,
    objects: [
      { namespace: 'default', name: 'p1', uid: 'a1' },
      { namespace: 'default', name: 'p2', uid: 'a2' },
    ],
  },
  { key: B, objects: [{ namespace: 'default', name: 'p1', uid: 'b1' }] },
];
const good = [copy(A, 'p1', 'a1'), copy(A, 'p2', 'a2'), copy(B, 'p1', 'b1')];
const none: CopyFindings = { missing: [], duplicates: [], orphans: [], wrongOwner: [] };

const cases: Array<{ name: string; input: Partial<CompareInput>; want: Partial<CopyFindings> }> = [
  { name: 'every object has its one copy', input: {}, want: {} },
  {
    name: 'platform objects in namespaces of no tenant are not looked at',
    input: { superObjects: [...good, { namespace: 'kube-system', name: 'coredns' }] },
    want: {},
  },
  {
    name: 'a tenant object without super copy is missing',
    input: { superObjects: [copy(A, 'p1', 'a1'), copy(B, 'p1', 'b1')] },
    want: { missing: [`${A} default/p2 has no super copy ${nsA}/p2`] },
  },
  {
    name: 'a tenant object copied twice (another name, same uid) is a duplicate, and the extra copy an orphan',
    input: { superObjects: [...good, copy(A, 'p1-again', 'a1')] },
    want: {
      duplicates: [`uid a1: ${nsA}/p1, ${nsA}/p1-again`],
      orphans: [`${nsA}/p1-again (tenant ${A} has no default/p1-again)`],
    },
  },
  {
    name: 'a super copy whose tenant object is gone is an orphan',
    input: { superObjects: [...good, copy(B, 'gone', 'b9')] },
    want: { orphans: [`${nsB}/gone (tenant ${B} has no default/gone)`] },
  },
  {
    name: 'an orphan in a tenant super namespace is found by the namespace label even without annotations',
    input: { superObjects: [...good, { namespace: nsB, name: 'stray' }] },
    want: { orphans: [`${nsB}/stray (tenant ${B} has no ?/?)`] },
  },
  {
    name: 'a copy of an object recreated under the same name (old uid) has the wrong owner',
    input: { superObjects: [copy(A, 'p1', 'a1-old'), copy(A, 'p2', 'a2'), copy(B, 'p1', 'b1')] },
    want: { wrongOwner: [`${nsA}/p1: uid a1-old != a1`] },
  },
  {
    name: "a copy annotated with another tenant sits in this tenant's namespace: wrong owner",
    input: {
      superObjects: [copy(A, 'p1', 'a1', { annotations: { ...copy(B, 'p1', 'a1').annotations } }), good[1]!, good[2]!],
    },
    want: { wrongOwner: [`${nsA}/p1: cluster ${B} != ${A}`] },
  },
  {
    name: 'nothing of a deleted tenant may remain: its namespaces and objects are orphans',
    input: {
      tenants: [tenants[0]!],
      deletedTenants: [B],
      superObjects: good,
    },
    want: {
      orphans: [`namespace ${nsB} of deleted tenant ${B}`, `${nsB}/p1 of deleted tenant ${B}`],
    },
  },
  {
    name: 'a deleted tenant that left nothing, and the other tenant intact',
    input: {
      tenants: [tenants[0]!],
      deletedTenants: [B],
      superObjects: good.slice(0, 2),
      superNamespaces: namespaces.filter((n) => n.name !== nsB),
    },
    want: {},
  },
  {
    name: "a deleted tenant took another tenant's object with it: missing",
    input: {
      tenants: [tenants[0]!],
      deletedTenants: [B],
      superObjects: [good[0]!],
      superNamespaces: namespaces.filter((n) => n.name !== nsB),
    },
    want: { missing: [`${A} default/p2 has no super copy ${nsA}/p2`] },
  },
];

describe('compareCopies', () => {
  it.each(cases)('$name', ({ input, want }) => {
    const got = compareCopies({ tenants, superObjects: good, superNamespaces: namespaces, ...input });
    expect(got).toStrictEqual({ ...none, ...want });
    expect(findingsTotal(got)).toBe(Object.values(want).reduce((s, x) => s + x.length, 0));
  });
});
