import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { registry as metricsRegistry } from '../../core/metrics/registry.ts';
import { superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { syncerMetrics } from '../../core/syncer/metrics.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';

/**
 * A syncer standing by (warm): its caches follow the super cluster and the tenant registry while it writes nothing;
 * a leadership term starts its workers over them, and once the term ends (or its Lease is not surely held) nothing
 * more is written, while the caches stay warm for the next term. One syncer, in this process, over a real super
 * cluster and two tenant control planes.
 */

interface Pod extends KubeObject {
  spec: { containers: Array<{ name: string; image: string }>; nodeName?: string };
  status?: { phase?: string };
}

const pod = (name: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { containers: [{ name: 'c', image: 'nginx' }] },
});

/** writesOf sums vc_syncer_writes_total of one tenant by `plugin op`, leaving out copied events (best effort). */
async function writesOf(tenant: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await syncerMetrics.writes.get()).values) {
    if (v.labels.tenant !== tenant || v.labels.op === 'event' || !v.value) continue;
    const k = `${v.labels.plugin} ${v.labels.op}`;
    out[k] = (out[k] ?? 0) + v.value;
  }
  return out;
}

/** delta lists what grew from `before` to `after`. */
function delta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v !== (before[k] ?? 0)) out[k] = v - (before[k] ?? 0);
  return out;
}

/** cacheSynced reads vc_syncer_cache_synced from the process's /metrics text: `side tenant` -> value. */
async function cacheSynced(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const line of (await metricsRegistry.metrics()).split('\n')) {
    const m = /^vc_syncer_cache_synced\{(.*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const l = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (l.super_cluster === 'standby') out[`${l.side} ${l.tenant}`.trim()] = Number(m[2]);
  }
  return out;
}

/** quiet lets a moment pass in which a write that should not happen would. */
const quiet = () => new Promise((r) => setTimeout(r, 3000));

describe('a syncer standing by keeps its caches warm and writes only within a leadership term', () => {
  let t: TestSuper;
  let cps: LocalControlPlane[];
  let a: KubeClient;
  let b: KubeClient;
  let tenantA: Tenant;
  let tenantB: Tenant;
  let registry: MutableTenantRegistry;
  let syncer: Syncer;

  const superPod = (tenant: Tenant, name: string) =>
    t.client.getOrNull<Pod>(R.pods, superNamespace(tenant.key, 'default'), name);
  const superImage = async (tenant: Tenant, name: string) => (await superPod(tenant, name))?.spec.containers[0]?.image;
  /** settled: nothing queued or being reconciled, after `check` holds */
  const settled = (check: () => Promise<void>) =>
    eventually(async () => {
      await check();
      expect(syncer.queueLength()).toBe(0);
      expect(syncer.inFlightByTenant().every(([, n]) => n === 0)).toBe(true);
    }, 90_000);

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    cps = await Promise.all([
      t.sc.addControlPlane('standby-a', { controllers: TENANT_CONTROLLERS }),
      t.sc.addControlPlane('standby-b', { controllers: TENANT_CONTROLLERS }),
    ]);
    [a, b] = await Promise.all(cps.map((cp) => cp.client()));
    tenantA = tenantFor(cps[0]!, 'team', 'sa', '33333333-aaaa-4aaa-8aaa-000000000003');
    tenantB = tenantFor(cps[1]!, 'team', 'sb', '44444444-bbbb-4bbb-8bbb-000000000004');
    for (const c of [a!, b!]) await eventually(() => c.get(R.serviceaccounts, 'default', 'default'), 60_000);
    registry = new MutableTenantRegistry([tenantA]);
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({ superClient: t.client, host, registry, patrolIntervalMs: 0, workers: 4, name: 'standby' });
  });

  afterAll(async () => {
    await syncer?.stop();
    a?.close();
    b?.close();
    await t?.stop();
  });

  it('syncs its caches while standing by, following tenants added and removed, and writes nothing', async () => {
    await a.create(R.pods, pod('p-1'));
    await syncer.warm();
    await eventually(async () => expect(await cacheSynced()).toEqual({ super: 1, [`tenant ${tenantA.key}`]: 1 }));
    // A tenant reported while standing by gets its caches; one removed loses them.
    registry.upsert(tenantB);
    await eventually(async () =>
      expect(await cacheSynced()).toEqual({ super: 1, [`tenant ${tenantA.key}`]: 1, [`tenant ${tenantB.key}`]: 1 }),
    );
    registry.remove(tenantB.key);
    await eventually(async () => expect(await cacheSynced()).toEqual({ super: 1, [`tenant ${tenantA.key}`]: 1 }));
    registry.upsert(tenantB);
    await b.create(R.pods, pod('q-1'));
    await eventually(() => expect(syncer.tenantReady(tenantB.key)).toBe(true));
    await quiet();
    expect(syncer.serving()).toBe(false);
    expect(syncer.queueLength()).toBe(0);
    expect([await writesOf(tenantA.key), await writesOf(tenantB.key)]).toEqual([{}, {}]);
    expect(await superPod(tenantA, 'p-1')).toBeNull();
  });

  it('serves a term from the warm caches, and after it ends writes nothing while its caches stay warm', async () => {
    const term = new AbortController();
    await syncer.start({ signal: term.signal });
    expect(syncer.serving()).toBe(true);
    await settled(async () => {
      expect(await superImage(tenantA, 'p-1')).toBe('nginx');
      expect(await superImage(tenantB, 'q-1')).toBe('nginx');
    });
    const wroteA = await writesOf(tenantA.key);
    expect(wroteA['pods createSuper']).toBe(1);

    term.abort();
    expect(syncer.serving()).toBe(false);
    await syncer.standDown();
    const before = [await writesOf(tenantA.key), await writesOf(tenantB.key)];
    await a.patch(
      R.pods,
      'default',
      'p-1',
      [{ op: 'replace', path: '/spec/containers/0/image', value: 'nginx:2' }],
      'json',
    );
    await a.create(R.pods, pod('p-2'));
    await quiet();
    expect([await writesOf(tenantA.key), await writesOf(tenantB.key)]).toEqual(before);
    expect(await superImage(tenantA, 'p-1')).toBe('nginx');
    expect(await superPod(tenantA, 'p-2')).toBeNull();
    expect(await cacheSynced()).toEqual({ super: 1, [`tenant ${tenantA.key}`]: 1, [`tenant ${tenantB.key}`]: 1 });
  });

  it('syncs in the next term only what changed meanwhile', async () => {
    const before = [await writesOf(tenantA.key), await writesOf(tenantB.key)] as const;
    await syncer.start({ signal: new AbortController().signal });
    await settled(async () => {
      expect(await superImage(tenantA, 'p-1')).toBe('nginx:2');
      expect(await superImage(tenantA, 'p-2')).toBe('nginx');
    });
    // Quiet for a moment more: a late write (a token, a status) would show up here.
    await quiet();
    const grewA = delta(before[0], await writesOf(tenantA.key));
    expect(grewA['pods patchSuper']).toBe(1);
    expect(grewA['pods createSuper']).toBe(1);
    // Tenant B changed nothing: no write for it at all.
    expect(delta(before[1], await writesOf(tenantB.key))).toEqual({});
  });

  it('sends no write while its Lease is not surely held, and catches up once it is', async () => {
    await syncer.standDown();
    let held: true | string = 'no renewal of the lease within the renew deadline';
    await syncer.start({ holds: () => held });
    const before = await writesOf(tenantA.key);
    await a.patch(
      R.pods,
      'default',
      'p-2',
      [{ op: 'replace', path: '/spec/containers/0/image', value: 'nginx:3' }],
      'json',
    );
    await quiet();
    expect(syncer.serving()).toBe(true);
    expect(await superImage(tenantA, 'p-2')).toBe('nginx');
    expect(await writesOf(tenantA.key)).toEqual(before);
    held = true;
    await settled(async () => expect(await superImage(tenantA, 'p-2')).toBe('nginx:3'));
  });
});
