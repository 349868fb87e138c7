import { describe, expect, it } from 'vitest';
import { routedRegistry, routesTo, type TenantRouting } from './routing.ts';
import { MutableTenantRegistry, tenantFrom, type TenantEvent } from './tenant.ts';

const r = (cluster: string, everywhere = false): TenantRouting => ({ cluster, home: 'r1', everywhere });

describe('routesTo', () => {
  it.each([
    ['unpinned, home, scheduling off', undefined, r('r1'), true],
    ['unpinned, not home, scheduling off', undefined, r('r2'), false],
    ['unpinned, not home, scheduling on', undefined, r('r2', true), true],
    ['pinned here', 'r2', r('r2'), true],
    ['pinned elsewhere, even with scheduling on', 'r2', r('r1', true), false],
    ['pinned to a super cluster nobody serves', 'r9', r('r1', true), false],
  ])('%s', (_name, superCluster, routing, want) => {
    expect(routesTo({ superCluster }, routing)).toBe(want);
  });
});

describe('routedRegistry', () => {
  it('forwards the tenants routed here and removes one whose pin moved away', () => {
    const t = (superCluster?: string) =>
      tenantFrom({ vcNamespace: 'ns', vcName: 'a', vcUid: 'u', settings: superCluster ? { superCluster } : {} });
    const src = new MutableTenantRegistry([t()]);
    const seen: string[] = [];
    const show = (e: TenantEvent) => seen.push(e.type === 'upsert' ? `+${e.tenant.superCluster ?? '-'}` : '-');
    const unsub = routedRegistry(src, r('r1')).subscribe(show);
    src.upsert(t('r1'));
    src.upsert(t('r2'));
    src.upsert(t('r2'));
    src.remove(t().key);
    src.upsert(t());
    src.remove(t().key);
    unsub();
    expect(seen).toEqual(['+-', '+r1', '-', '+-', '-']);
  });
});
