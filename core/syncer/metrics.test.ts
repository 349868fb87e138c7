import { describe, expect, it } from 'vitest';
import { pluginErrorsTotal } from '../plugins/failures.ts';
import { forgetTenant, syncerMetrics, TENANT_BOUND, tenantSyncerLag, watchCaches, watchDepth } from './metrics.ts';

const tenantsOf = async (m: { get(): Promise<{ values: Array<{ labels: Record<string, unknown> }> }> }) =>
  new Set((await m.get()).values.map((v) => v.labels.tenant));

describe('syncer metrics with a tenant label', () => {
  it('say their bound in their help', () => {
    for (const m of Object.values(syncerMetrics)) {
      const { labelNames, help, name } = m as unknown as { labelNames: string[]; help: string; name: string };
      if (labelNames.includes('tenant')) expect(help, name).toContain(TENANT_BOUND);
    }
  });

  it('drop the series of a tenant no longer synced, keeping the others', async () => {
    for (const tenant of ['forget-me', 'keep-me']) {
      syncerMetrics.errors.inc({ tenant, plugin: 'pods' });
      syncerMetrics.latency.observe({ tenant, plugin: 'pods' }, 0.01);
      syncerMetrics.tenantFailures.inc({ tenant, op: 'upsert' });
      pluginErrorsTotal.inc({ tenant, plugin: 'pods', hook: 'toSuper' });
    }
    await forgetTenant('forget-me');
    for (const m of [syncerMetrics.errors, syncerMetrics.latency, syncerMetrics.tenantFailures, pluginErrorsTotal]) {
      const left = await tenantsOf(m);
      expect(left.has('forget-me')).toBe(false);
      expect(left.has('keep-me')).toBe(true);
    }
  });
});

describe('tenantSyncerLag', () => {
  it('sums the syncers that serve a tenant, is unsynced if one is, and is undefined where none serves it', () => {
    const depth = (w: Array<[string, number]>, f: Array<[string, number]>) => ({
      depthByTenant: () => w,
      inFlightByTenant: () => f,
    });
    const caches = (tenants: Array<[string, boolean]>) => ({
      superCluster: 's',
      cachesSynced: () => ({ super: true, tenants }),
    });
    const offs = [
      watchDepth(
        depth(
          [
            ['a', 3],
            ['b', 1],
          ],
          [['a', 1]],
        ),
      ),
      watchDepth(depth([['a', 2]], [['a', 2]])),
      watchCaches(
        caches([
          ['a', true],
          ['b', true],
        ]),
      ),
      watchCaches(caches([['a', false]])),
    ];
    try {
      expect(tenantSyncerLag('a')).toEqual({ waiting: 5, inFlight: 3, synced: false });
      expect(tenantSyncerLag('b')).toEqual({ waiting: 1, inFlight: 0, synced: true });
      expect(tenantSyncerLag('c')).toBeUndefined();
    } finally {
      offs.forEach((off) => off());
    }
  });
});
