import { describe, expect, it } from 'vitest';
import { stampOwnership, superNamespace, tenantNaming } from '../names/names.ts';
import type { SuperPod } from './superview.ts';
import { tenantUsagePods, usageKindOf } from './usageroute.ts';

const A = 'vc-a';
const B = 'vc-b';

/** superPod builds a super Pod the syncer stamped for `tenant` (null: unstamped) from tenant Pod ns/name. */
function superPod(
  tenant: string | null,
  ns: string,
  name: string,
  o: { superNs?: string; superName?: string; node?: string; uid?: string } = {},
): SuperPod {
  const p: SuperPod = {
    metadata: {
      namespace: o.superNs ?? superNamespace(tenant ?? A, ns),
      name: o.superName ?? name,
      uid: o.uid ?? `s-${name}`,
    },
    spec: o.node === undefined ? { nodeName: 'n1' } : o.node ? { nodeName: o.node } : {},
  };
  if (tenant)
    stampOwnership(
      p,
      { key: tenant, vcName: tenant, vcNamespace: 'x' },
      { metadata: { namespace: ns, name, uid: `t-${name}` } },
    );
  return p;
}

describe('usageKindOf', () => {
  it.each([
    ['/stats/summary', 'statsSummary'],
    ['/stats/summary?only_cpu_and_memory=true', 'statsSummary'],
    ['/metrics/resource', 'metricsResource'],
    ['/metrics/resource/', undefined],
    ['/metrics', undefined],
    ['/metrics/cadvisor', undefined],
    ['/stats/summary/../../pods', undefined],
    ['/stats/Summary', undefined],
    ['/stats', undefined],
  ])('%s is %s', (path, kind) => {
    expect(usageKindOf(path)).toBe(kind);
  });
});

describe('tenantUsagePods', () => {
  const t = { key: A, names: tenantNaming(A) };

  it.each([
    ['its own Pod', superPod(A, 'default', 'web'), { namespace: 'default', name: 'web', uid: 't-web' }],
    ['another tenant', superPod(B, 'default', 'web'), undefined],
    ['an unstamped Pod in its super namespace', superPod(null, 'default', 'web'), undefined],
    [
      "a Pod stamped for it in another tenant's super namespace",
      superPod(A, 'default', 'web', { superNs: superNamespace(B, 'default') }),
      undefined,
    ],
    [
      'a Pod whose provenance names another tenant namespace than its super namespace',
      superPod(A, 'other', 'web', { superNs: superNamespace(A, 'default') }),
      undefined,
    ],
    ['a Pod whose super name is not the tenant name', superPod(A, 'default', 'web', { superName: 'web2' }), undefined],
  ])('%s', (_what, p, want) => {
    const ns = p.metadata!.namespace!;
    const name = p.metadata!.name!;
    expect(tenantUsagePods([p], t).lookup(ns, name)).toEqual(want);
  });

  it('checks the super uid when one is asked for', () => {
    const { lookup } = tenantUsagePods([superPod(A, 'default', 'web', { uid: 'u1' })], t);
    const ns = superNamespace(A, 'default');
    expect(lookup(ns, 'web', 'u1')).toBeDefined();
    expect(lookup(ns, 'web', 'u2')).toBeUndefined();
  });

  it("lists the nodes of the tenant's Pods only, once each, sorted", () => {
    const pods = [
      superPod(A, 'default', 'a', { node: 'n2' }),
      superPod(A, 'default', 'b', { node: 'n1' }),
      superPod(A, 'default', 'c', { node: 'n2' }),
      superPod(A, 'default', 'pending', { node: '' }),
      superPod(B, 'default', 'x', { node: 'n3' }),
    ];
    expect(tenantUsagePods(pods, t).nodes).toEqual(['n1', 'n2']);
  });
});
