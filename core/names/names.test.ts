import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ANN, fitName, LABEL, MANAGER, namespaceOwnerIn, ownedBy, pickUp, provenanceOf, rootNamespace, stampOwnership, stripDown, superNamespace, tenantNaming } from './names.ts';
import type { KubeObject } from '../kube/client.ts';

const tenant = { key: 'team-a-1a2b3c-dev', vcName: 'dev', vcNamespace: 'team-a' };

describe('names', () => {
  it('builds the root namespace from the VirtualCluster namespace, 6 hex of sha256(uid) and name', () => {
    const uid = '6f1c2a4e-1111-2222-3333-444455556666';
    const hex = createHash('sha256').update(uid).digest('hex').slice(0, 6);
    expect(rootNamespace('team-a', 'dev', uid)).toBe(`team-a-${hex}-dev`);
  });

  it.each([
    ['short', 'a-b', 'a-b'],
    ['exactly 63', 'x'.repeat(63), 'x'.repeat(63)],
  ])('keeps %s names', (_, input, want) => {
    expect(fitName(input)).toBe(want);
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
      ['another tenant\'s name, no lookup', undefined, undefined, [], undefined],
      ['a hashed name, no lookup (cannot be told from a cut one)', 'hashed', undefined, [], undefined],
      ['a hashed name the lookup knows as this tenant\'s', 'hashed', 'lookup', [nsObj(hashed, { cluster: key, namespace: longNs })], longNs],
      ['a name the lookup knows as another tenant\'s', 'default', 'lookup', [nsObj(superNamespace(key, 'default'), { cluster: 'other', namespace: 'default' })], undefined],
      ['a name the lookup knows as not managed', 'default', 'lookup', [nsObj(superNamespace(key, 'default'))], undefined],
    ] as const)('maps back %s', (_, which, withLookup, objs, want) => {
      const sns = which === 'hashed' ? hashed : which === 'default' ? superNamespace(key, 'default') : 'team-b-4d5e6f-prod-default';
      const n = tenantNaming(key, withLookup ? lookupOver([...objs]) : undefined);
      expect(n.tenantNamespace(sns)).toBe(want);
    });

    it('maps every short tenant namespace there and back', () => {
      const n = tenantNaming(key);
      for (const ns of ['default', 'kube-system', 'a', 'x'.repeat(63 - key.length - 1)]) expect(n.tenantNamespace(n.superNamespace(ns))).toBe(ns);
    });
  });
});
