import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  ANN,
  fitName,
  LABEL,
  ROOT_MAX,
  MANAGER,
  namespaceOwnerIn,
  ownedBy,
  pickUp,
  provenanceOf,
  rootNamespace,
  stampOwnership,
  stripDown,
  superClusterName,
  superNamespace,
  tenantNaming,
  superNodeName,
  vNodeName,
} from './names.ts';
import type { KubeObject } from '../kube/client.ts';

const tenant = { key: rootNamespace('team-a', 'dev', 'u-dev'), vcName: 'dev', vcNamespace: 'team-a' };

describe('names', () => {
  it('builds the root namespace from a fixed prefix, 16 hex of sha256(uid), the VirtualCluster namespace and name', () => {
    const uid = '6f1c2a4e-1111-2222-3333-444455556666';
    const hex = createHash('sha256').update(uid).digest('hex').slice(0, 16);
    expect(rootNamespace('team-a', 'dev', uid)).toBe(`vc-${hex}-team-a-dev`);
  });

  it('cuts a long root to ROOT_MAX characters, keeping the hash and no trailing dash', () => {
    const root = rootNamespace('n'.repeat(30), 'x'.repeat(30), 'u1');
    expect(root).toHaveLength(ROOT_MAX);
    expect(root.slice(0, 20)).toMatch(/^vc-[0-9a-f]{16}-$/);
    expect(rootNamespace('n'.repeat(19), 'x', 'u1')).not.toMatch(/-$/);
  });

  it.each([
    ['same namespace, names that share a prefix', ['team', 'a', 'u1'], ['team', 'a-b', 'u2'], 'b-c', 'c'],
    ['namespace and name split differently', ['team-a', 'dev', 'u1'], ['team', 'a-dev', 'u2'], 'default', 'default'],
    ["a namespace that embeds the other tenant's root", ['team', 'a', 'u1'], ['x', 'y', 'u2'], 'x', 'x'],
    ['the same names, recreated with a new uid', ['team', 'a', 'u1'], ['team', 'a', 'u2'], 'default', 'default'],
  ] as const)('never maps two tenants to one super namespace: %s', (_, a, b, nsA, nsB) => {
    const rootA = rootNamespace(a[0], a[1], a[2]);
    const rootB = rootNamespace(b[0], b[1], b[2]);
    const ns = new Set([
      'default',
      'kube-system',
      nsA,
      nsB,
      `${rootB.slice(3)}-default`,
      'y'.repeat(63),
      `z-${'0'.repeat(16)}`,
    ]);
    const seen = new Map<string, string>();
    for (const [root, who] of [
      [rootA, 'a'],
      [rootB, 'b'],
    ] as const) {
      for (const n of ns) {
        const s = superNamespace(root, n);
        expect(s).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
        expect(s.length).toBeLessThanOrEqual(63);
        expect(seen.get(s), `${s} from ${who}/${n}`).toBeUndefined();
        seen.set(s, `${who}/${n}`);
      }
    }
  });

  it("keeps every super namespace inside its tenant: the first 19 characters are the root's hash", () => {
    const root = rootNamespace('team-a', 'dev', 'u1');
    for (const n of ['a', 'n'.repeat(63), `x-${'f'.repeat(16)}`])
      expect(superNamespace(root, n).slice(0, 19)).toBe(root.slice(0, 19));
  });

  it.each([
    ['short', 'a-b', 'a-b'],
    ['exactly 63', 'x'.repeat(63), 'x'.repeat(63)],
    ['ending in a shorter hex run', `a-${'f'.repeat(15)}`, `a-${'f'.repeat(15)}`],
  ])('keeps %s names', (_, input, want) => {
    expect(fitName(input)).toBe(want);
  });

  it.each([
    ['63 characters ending like a cut name', `${'x'.repeat(46)}-${'0'.repeat(16)}`],
    ['a short name ending like a cut name', `x-${'a'.repeat(16)}`],
  ])('cuts and hashes %s, so no kept name equals a cut one', (_, input) => {
    const out = fitName(input);
    expect(out).not.toBe(input);
    expect(out).toMatch(/-[0-9a-f]{16}$/);
  });

  it('never maps a kept name and a cut name to one string', () => {
    const long = 'l'.repeat(80);
    const cut = fitName(long);
    expect(fitName(cut)).not.toBe(cut);
  });

  it('cuts long names to 63 characters with a hash, and keeps them valid DNS labels', () => {
    const long = `${'tenant-'.repeat(10)}x`;
    const out = fitName(long);
    expect(out).toHaveLength(63);
    expect(out).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(out).not.toMatch(/--/);
  });

  it('never maps two different long names that share a 63-character prefix to one name', () => {
    const base = 'a'.repeat(70);
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) seen.add(fitName(`${base}-${i}`));
    expect(seen.size).toBe(2000);
  });

  it('maps tenant namespaces under the root, fitting long ones', () => {
    expect(superNamespace(tenant.key, 'default')).toBe(`${tenant.key}-default`);
    const longNs = 'n'.repeat(60);
    expect(superNamespace(tenant.key, longNs)).toHaveLength(63);
    expect(superNamespace(tenant.key, longNs)).not.toBe(superNamespace(tenant.key, `${longNs}x`));
  });

  it('stamps and reads provenance, and checks ownership by cluster and uid', () => {
    const superObj = { metadata: { name: 'p', namespace: 'x', annotations: { keep: 'me' } } };
    const tenantObj = { metadata: { name: 'p', namespace: 'default', uid: 'u-1' } };
    stampOwnership(superObj, tenant, tenantObj);
    expect(superObj.metadata.annotations.keep).toBe('me');
    expect(provenanceOf(superObj)).toEqual({ cluster: tenant.key, namespace: 'default', name: 'p', uid: 'u-1' });
    expect((superObj.metadata as { labels?: Record<string, string> }).labels?.[LABEL.managedBy]).toBe(MANAGER);
    expect(ownedBy(superObj, tenant, tenantObj)).toBe(true);
    expect(ownedBy(superObj, tenant, { metadata: { uid: 'u-2' } })).toBe(false);
    expect(ownedBy(superObj, { ...tenant, key: 'other' }, tenantObj)).toBe(false);
  });

  it('ignores ownership annotations without the managed-by label (a tenant cannot forge provenance)', () => {
    expect(provenanceOf({ metadata: { annotations: { [ANN.cluster]: tenant.key, [ANN.uid]: 'u' } } })).toBeNull();
  });

  it.each([
    ['reserved domain', { [ANN.uid]: 'forged', [ANN.cluster]: 'other' }, [], undefined],
    ['reserved subdomain', { 'transparency.tenancy.x-k8s.io/clusterIP': '1.2.3.4' }, [], undefined],
    ['opaque prefix', { 'secret.example.com/x': '1', app: 'web' }, ['secret.example.com/'], { app: 'web' }],
    ['ordinary keys', { app: 'web', 'example.com/tier': 'fe' }, [], { app: 'web', 'example.com/tier': 'fe' }],
  ])('strips %s going down', (_, input, opaque, want) => {
    expect(stripDown(input, opaque)).toEqual(want);
  });

  it('copies only transparent prefixes up', () => {
    expect(pickUp({ 'up.example.com/a': '1', other: '2' }, ['up.example.com/'])).toEqual({ 'up.example.com/a': '1' });
  });

  describe('tenantNaming', () => {
    const key = tenant.key;
    const longNs = `team-${'x'.repeat(60)}`;
    const hashed = superNamespace(key, longNs);
    const nsObj = (name: string, owner?: { cluster: string; namespace: string }): KubeObject => ({
      metadata: {
        name,
        ...(owner && {
          labels: { [LABEL.managedBy]: MANAGER },
          annotations: { [ANN.cluster]: owner.cluster, [ANN.namespace]: '', [ANN.name]: owner.namespace },
        }),
      },
    });
    const lookupOver = (objs: KubeObject[]) => namespaceOwnerIn((n) => objs.find((o) => o.metadata?.name === n));

    it('cuts and hashes a long namespace name to 63 characters', () => {
      expect(hashed).toHaveLength(63);
      expect(tenantNaming(key).superNamespace(longNs)).toBe(hashed);
    });

    it.each([
      ['a short name, no lookup', 'default', undefined, [], 'default'],
      ['a short name the lookup does not know', 'default', 'lookup', [], 'default'],
      ["another tenant's name, no lookup", undefined, undefined, [], undefined],
      ['a hashed name, no lookup (cannot be told from a cut one)', 'hashed', undefined, [], undefined],
      [
        "a hashed name the lookup knows as this tenant's",
        'hashed',
        'lookup',
        [nsObj(hashed, { cluster: key, namespace: longNs })],
        longNs,
      ],
      [
        "a name the lookup knows as another tenant's",
        'default',
        'lookup',
        [nsObj(superNamespace(key, 'default'), { cluster: 'other', namespace: 'default' })],
        undefined,
      ],
      [
        'a name the lookup knows as not managed',
        'default',
        'lookup',
        [nsObj(superNamespace(key, 'default'))],
        undefined,
      ],
    ] as const)('maps back %s', (_, which, withLookup, objs, want) => {
      const sns =
        which === 'hashed'
          ? hashed
          : which === 'default'
            ? superNamespace(key, 'default')
            : `${rootNamespace('team-b', 'prod', 'u-prod')}-default`;
      const n = tenantNaming(key, withLookup ? lookupOver([...objs]) : undefined);
      expect(n.tenantNamespace(sns)).toBe(want);
    });

    it('maps every short tenant namespace there and back', () => {
      const n = tenantNaming(key);
      for (const ns of ['default', 'kube-system', 'a', 'x'.repeat(63 - key.length - 1)])
        expect(n.tenantNamespace(n.superNamespace(ns))).toBe(ns);
    });
  });

  describe('superClusterName', () => {
    const rootA = rootNamespace('team-a', 'dev', 'u-dev');
    const rootB = rootNamespace('team-b', 'prod', 'u-prod');

    it('prefixes the tenant name with the root, like a super namespace', () => {
      expect(superClusterName(rootA, 'gvisor')).toBe(`${rootA}-gvisor`);
    });

    it("never lands on another tenant's name, whatever name a tenant picks", () => {
      const theirs = superClusterName(rootB, 'gvisor');
      for (const mine of ['gvisor', theirs, theirs.slice(rootA.length + 1), 'y'.repeat(253)])
        expect(superClusterName(rootA, mine)).not.toBe(theirs);
    });

    it('fits a long name into 63 characters, keeping the root and staying one-to-one', () => {
      const long = superClusterName(rootA, 'k'.repeat(100));
      expect(long).toHaveLength(63);
      expect(long.startsWith(rootA)).toBe(true);
      expect(superClusterName(rootA, 'k'.repeat(101))).not.toBe(long);
    });

    it('cuts a dotted name into a valid DNS subdomain', () => {
      const dotted = superClusterName(rootA, `${'x'.repeat(46 - rootA.length - 2)}.sandbox.example.com`);
      expect(dotted).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);
      expect(dotted).toHaveLength(46 - 1 + 1 + 16);
    });
  });
});

describe('vNodeName and superNodeName', () => {
  it.each([
    ['one super cluster keeps the node name', 'node-0', undefined, 'node-0'],
    ['several: the super cluster first', 'node-0', 'r1', 'r1.node-0'],
    [
      'a dotted node name stays whole after the first dot',
      'ip-10-0-0-1.ec2.internal',
      'r2',
      'r2.ip-10-0-0-1.ec2.internal',
    ],
  ])('%s', (_, node, superCluster, vNode) => {
    expect(vNodeName(node, superCluster)).toBe(vNode);
    expect(superNodeName(vNode, superCluster)).toBe(node);
  });

  it('two super clusters with the same node name give two vNodes, each mapping back only on its own', () => {
    expect(vNodeName('node-0', 'r1')).not.toBe(vNodeName('node-0', 'r2'));
    expect(superNodeName('r1.node-0', 'r2')).toBeUndefined();
    expect(superNodeName('node-0', 'r1')).toBeUndefined();
    expect(superNodeName('r1.', 'r1')).toBeUndefined();
  });
});
