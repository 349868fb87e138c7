import { describe, expect, it } from 'vitest';
import { forgetGoneTenants, vnAgentMetrics } from './metrics.ts';

const tenantsOf = async () =>
  [...new Set((await vnAgentMetrics.requests.get()).values.map((v) => String(v.labels.tenant)))].sort();

describe('vn-agent metrics', () => {
  it("drop the series of tenants no longer served, keeping the served ones' and the unauthenticated ones", async () => {
    for (const tenant of ['', 'served-1', 'gone-1'])
      vnAgentMetrics.requests.inc({ tenant, kind: 'containerLogs', result: 'ok' });
    vnAgentMetrics.bytes.inc({ tenant: 'gone-1', kind: 'exec', direction: 'to_client' }, 10);
    await forgetGoneTenants(new Set(['served-1']));
    expect(await tenantsOf()).toEqual(['', 'served-1']);
    expect((await vnAgentMetrics.bytes.get()).values.filter((v) => v.labels.tenant === 'gone-1')).toEqual([]);
  });

  it('say the bound of their tenant label in their help', async () => {
    for (const m of Object.values(vnAgentMetrics))
      expect((await m.get()).help).toMatch(/Bounded: one series per tenant/);
  });
});
