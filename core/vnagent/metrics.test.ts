import { describe, expect, it } from 'vitest';
import { registry } from '../metrics/registry.ts';
import { addUsageSource, forgetGoneTenants, tenantUsageMetrics, vnAgentMetrics } from './metrics.ts';

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

  it('add up the tenant usage of every agent of the process at scrape time, and leave out what no kubelet reported', async () => {
    let reads = 0;
    const removeA = addUsageSource(async () => {
      reads++;
      return [
        { tenant: 't1', cpuCores: 0.25, memoryWorkingSetBytes: 1000 },
        { tenant: 't2', memoryWorkingSetBytes: 10 },
      ];
    });
    const removeB = addUsageSource(async () => [{ tenant: 't1', cpuCores: 0.5, memoryWorkingSetBytes: 24 }]);
    const failing = addUsageSource(() => Promise.reject(new Error('kubelet gone')));
    const text = (await registry.metrics()).split('\n').filter((l) => l.startsWith('vc_vnagent_tenant_'));
    expect(text.sort()).toEqual([
      'vc_vnagent_tenant_cpu_usage_cores{tenant="t1"} 0.75',
      'vc_vnagent_tenant_memory_working_set_bytes{tenant="t1"} 1024',
      'vc_vnagent_tenant_memory_working_set_bytes{tenant="t2"} 10',
    ]);
    // both gauges of one scrape read the kubelets once
    expect(reads).toBe(1);
    for (const undo of [removeA, removeB, failing]) undo();
    await new Promise((r) => setTimeout(r, 1100));
    expect((await tenantUsageMetrics.cpu.get()).values).toEqual([]);
    expect((await tenantUsageMetrics.memory.get()).help).toMatch(/Bounded: one series per tenant/);
  });
});
