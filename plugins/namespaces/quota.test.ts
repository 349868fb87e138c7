import { describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import { testContext, testTenant } from '../../core/plugins/testing.ts';
import type { QuotaPolicyView, RouteContext } from '../sdk/src/index.ts';
import { namespacesPlugin } from './index.ts';
import { quotaEffect, quotaObjects, quotaWatches } from './quota.ts';

const quota: QuotaPolicyView = {
  resourceQuota: { pods: '10', 'requests.storage': '1Ti' },
  limitRange: [{ type: 'Container', defaultRequest: { cpu: '50m' } }],
  objects: { secrets: { count: 5 } },
};

describe('quotaObjects', () => {
  it.each<[string, QuotaPolicyView | undefined, boolean, boolean]>([
    ['both from the policy', quota, true, true],
    ['no ResourceQuota for an empty hard', { ...quota, resourceQuota: {} }, false, true],
    ['no LimitRange for empty limits', { ...quota, limitRange: [] }, true, false],
    ['none for a tenant without a quota section', undefined, false, false],
  ])('%s', (_name, q, rq, lr) => {
    const got = quotaObjects(testTenant(q ? { quota: q } : {}));
    if (rq)
      expect(got.resourceQuota).toEqual({
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'vc-tenant-quota' },
        spec: { hard: quota.resourceQuota },
      });
    else expect(got.resourceQuota).toBeNull();
    if (lr)
      expect(got.limitRange).toEqual({
        apiVersion: 'v1',
        kind: 'LimitRange',
        metadata: { name: 'vc-tenant-quota' },
        spec: { limits: quota.limitRange },
      });
    else expect(got.limitRange).toBeNull();
  });
});

describe('quotaEffect', () => {
  it('asks for the quota objects of a tenant with a quota section, and touches nothing for one without', () => {
    expect(quotaEffect('apps', testTenant({ quota }))).toEqual([
      { type: 'superQuota', namespace: 'apps', ...quotaObjects(testTenant({ quota })) },
    ]);
    expect(quotaEffect('apps', testTenant())).toEqual([]);
  });

  it('comes with every super namespace the namespaces plugin writes', () => {
    const ctx = testContext({ tenant: testTenant({ quota }) });
    const d = namespacesPlugin.toSuper(
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'apps', uid: 'u' } },
      undefined,
      ctx,
    );
    // after the tenant isolation NetworkPolicy (plugins/networkpolicies)
    expect(d.effects?.slice(1)).toEqual(quotaEffect('apps', ctx.tenant));
    expect(d.effects?.[0]?.type).toBe('superNetworkPolicy');
  });
});

describe('quotaWatches', () => {
  const route = {
    tenantOfNamespace: (ns: string) => (ns === 'root-apps' ? { tenant: 'root', namespace: 'apps' } : undefined),
  } as unknown as RouteContext;
  it.each(quotaWatches.map((w) => [w.resource.resource, w] as const))('%s requeue the tenant namespace', (_r, w) => {
    if (w.side !== 'super') throw new Error('super watch expected');
    const obj = (name: string, namespace: string) => ({ apiVersion: 'v1', kind: 'X', metadata: { name, namespace } });
    expect(w.map(obj('vc-tenant-quota', 'root-apps'), route)).toEqual([
      { tenant: 'root', namespace: '', name: 'apps' },
    ]);
    expect(w.map(obj('other', 'root-apps'), route)).toEqual([]);
    expect(w.map(obj('vc-tenant-quota', 'elsewhere'), route)).toEqual([]);
  });
  it('watches ResourceQuotas and LimitRanges', () => {
    expect(quotaWatches.map((w) => w.resource)).toEqual([R.resourcequotas, R.limitranges]);
  });
});
