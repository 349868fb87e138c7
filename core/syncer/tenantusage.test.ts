import { describe, expect, it } from 'vitest';
import { registry } from '../metrics/registry.ts';
import { stampOwnership } from '../names/names.ts';
import { watchCaches } from './metrics.ts';
import { cores, mebibytes, tenantUsage, topRow, withWrites, type UsagePod } from './tenantusage.ts';

/** pod builds a super Pod stamped for `tenant` (null: not stamped) with container requests. */
function pod(
  tenant: string | null,
  name: string,
  requests: Array<Record<string, string>>,
  o: { phase?: string; uid?: string; ns?: string } = {},
): UsagePod {
  const p: UsagePod = {
    metadata: { namespace: o.ns ?? `${tenant ?? 'x'}-default`, name, uid: o.uid ?? `u-${name}` },
    spec: { nodeName: 'n1', containers: requests.map((r) => ({ resources: { requests: r } })) },
    status: { phase: o.phase ?? 'Running' },
  };
  if (tenant)
    stampOwnership(p, { key: tenant, vcName: tenant, vcNamespace: 'x' }, { metadata: { namespace: 'default', name } });
  return p;
}

/** stats is a summary PodStats for a super Pod. */
const stats = (ns: string, name: string, uid: string, nano: number, bytes: number) => ({
  podRef: { namespace: ns, name, uid },
  cpu: { usageNanoCores: nano },
  memory: { workingSetBytes: bytes },
});

describe('tenantUsage', () => {
  const pods = [
    pod('a', 'web', [{ cpu: '100m', memory: '64Mi' }, { cpu: '0.5' }]),
    pod('a', 'db', [{ memory: '1Gi' }]),
    pod('a', 'done', [{ cpu: '4' }], { phase: 'Succeeded' }),
    pod('b', 'web', [{ cpu: '1', memory: 'not-a-quantity' }]),
    pod(null, 'platform', [{ cpu: '8' }]),
  ];
  const summary = {
    pods: [
      stats('a-default', 'web', 'u-web', 20_000_000, 10 * 1024 * 1024),
      stats('a-default', 'db', 'u-db', 5_000_000, 100 * 1024 * 1024),
      stats('b-default', 'web', 'u-web', 300_000_000, 1),
      // a Pod of the same name with another uid (deleted and made again, or planted) is nobody's
      stats('a-default', 'web', 'other-uid', 999_000_000_000, 999),
      stats('x-default', 'platform', 'u-platform', 1, 1),
      stats('a-default', 'done', 'u-done', 7, 7),
    ],
  };

  it('counts live stamped Pods, their requests and the usage of exactly those Pods, per tenant', () => {
    expect(tenantUsage(pods, [summary, 'garbage', { pods: 'x' }], new Map([['a', 'team-a/a']]))).toEqual([
      {
        tenant: 'a',
        name: 'team-a/a',
        pods: 2,
        cpuRequests: 600n,
        memoryRequests: (64n + 1024n) * 1024n * 1024n * 1000n,
        cpuNanoCores: 25_000_000,
        memoryWorkingSetBytes: 110 * 1024 * 1024,
      },
      {
        tenant: 'b',
        pods: 1,
        cpuRequests: 1000n,
        memoryRequests: 0n,
        cpuNanoCores: 300_000_000,
        memoryWorkingSetBytes: 1,
      },
    ]);
  });

  it('leaves usage unknown when no kubelet reported the Pods', () => {
    expect(tenantUsage([pod('a', 'web', [{ cpu: '1' }])], [])).toEqual([
      { tenant: 'a', pods: 1, cpuRequests: 1000n, memoryRequests: 0n },
    ]);
  });

  it.each([
    [undefined, '-'],
    [0, '0m'],
    [25_000_000, '25m'],
    [1_500_000_000, '1500m'],
  ])('cores(%s) is %s', (n, want) => expect(cores(n)).toBe(want));

  it.each([
    [undefined, '-'],
    [110 * 1024 * 1024, '110Mi'],
  ])('mebibytes(%s) is %s', (n, want) => expect(mebibytes(n)).toBe(want));

  it('writes a row as kubectl top does', () => {
    const [row] = tenantUsage(
      [pod('a', 'web', [{ cpu: '250m', memory: '128Mi' }])],
      [{ pods: [stats('a-default', 'web', 'u-web', 12_000_000, 34 * 1024 * 1024)] }],
    );
    expect(topRow(row!)).toEqual(['a', '-', '1', '12m', '34Mi', '250m', '128Mi']);
  });

  it("adds the syncer's API writes per tenant: 0 for a tenant without, a row for one with writes and no Pod", () => {
    const rows = tenantUsage([pod('a', 'web', [{ cpu: '250m', memory: '128Mi' }])], []);
    const out = withWrites(rows, new Map([['z', 4]]));
    expect(out.map((r) => [r.tenant, r.pods, r.apiWrites])).toEqual([
      ['a', 1, 0],
      ['z', 0, 4],
    ]);
    expect(topRow(out[1]!, true)).toEqual(['z', '-', '0', '-', '-', '0m', '0Mi', '4']);
    expect(topRow(rows[0]!, true).at(-1)).toBe('-');
    expect(withWrites(rows, new Map([['a', 9]]))[0]!.apiWrites).toBe(9);
  });
});

describe('per-tenant usage gauges', () => {
  it("read each syncer's cached super Pods at scrape time: Pods and requests per super cluster and tenant", async () => {
    const pods = [
      pod('a', 'web', [{ cpu: '100m', memory: '64Mi' }, { cpu: '0.5' }]),
      pod('a', 'done', [{ cpu: '4' }], { phase: 'Failed' }),
      pod('b', 'web', [{ memory: '1Gi' }]),
      pod(null, 'platform', [{ cpu: '8' }]),
    ];
    const stop = watchCaches({
      superCluster: 's1',
      cachesSynced: () => ({ super: true, tenants: [] }),
      superPods: () => pods,
    });
    try {
      const text = (
        await Promise.all(
          ['vc_tenant_pods', 'vc_tenant_cpu_requests_cores', 'vc_tenant_memory_requests_bytes'].map((m) =>
            registry.getSingleMetricAsString(m),
          ),
        )
      ).join('\n');
      const lines = text.split('\n').filter((l) => l.startsWith('vc_tenant_'));
      expect(lines.sort()).toEqual(
        [
          'vc_tenant_pods{super_cluster="s1",tenant="a"} 1',
          'vc_tenant_pods{super_cluster="s1",tenant="b"} 1',
          'vc_tenant_cpu_requests_cores{super_cluster="s1",tenant="a"} 0.6',
          'vc_tenant_cpu_requests_cores{super_cluster="s1",tenant="b"} 0',
          `vc_tenant_memory_requests_bytes{super_cluster="s1",tenant="a"} ${64 * 1024 * 1024}`,
          `vc_tenant_memory_requests_bytes{super_cluster="s1",tenant="b"} ${1024 * 1024 * 1024}`,
        ].sort(),
      );
    } finally {
      stop();
    }
    expect(await registry.getSingleMetricAsString('vc_tenant_pods')).not.toMatch(/tenant="a"/);
  });
});
