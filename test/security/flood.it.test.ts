/**
 * A flooding tenant (issue 15, "a quiet tenant's p99 during another tenant's flood"): the super cluster's scheduler
 * takes Pods in arrival order, whoever they belong to, so a tenant that creates hundreds of Pods at once would queue
 * every other tenant's next Pod behind all of them. The syncer lets at most `schedulingWindow` Pods of a tenant wait
 * for the super scheduler; its further creates wait in the syncer. Here the super scheduler is stopped, so nothing
 * leaves the window: the flooding tenant gets exactly its window of super Pods, another tenant's Pod still gets its
 * super Pod at once, and when the scheduler comes back every Pod of both runs, none lost. Then the platform gives the
 * flooding tenant a create rate (what its TenantPolicy's pods.createRate does): its next flood reaches the super
 * cluster no faster than that rate, while the other tenant's Pod is created at once; and while the other tenant
 * creates Pods at its own pace, the flood yields (a quarter of its rate).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { provenanceOf } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { syncerMetrics } from '../../core/syncer/metrics.ts';
import { DEFAULT_YIELD_SHARE } from '../../core/syncer/pacer.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import { Attempts } from './attempts.ts';

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string };
}

const pod = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { containers: [{ name: 'c', image: 'nginx' }] },
});

const WINDOW = 3;
const FLOOD = 10;

/** parkedOf reads vc_syncer_skips_total{reason} (WaitingForSchedulingWindow by default) for one tenant. */
async function parkedOf(tenant: string, reason = 'WaitingForSchedulingWindow'): Promise<number> {
  const m = await syncerMetrics.skips.get();
  return m.values
    .filter((v) => v.labels.tenant === tenant && v.labels.reason === reason)
    .reduce((sum, v) => sum + v.value, 0);
}

/** yielding reads vc_syncer_create_yielding: the tenants whose create rate is lowered now. */
async function yielding(): Promise<string[]> {
  const m = await syncerMetrics.createYielding.get();
  return m.values.filter((v) => v.value === 1).map((v) => String(v.labels.tenant));
}

const PACED = 12;
const RATE = { perSecond: 2, burst: 3 };
const YIELD_FLOOD = 16;
const YIELD_RATE = { perSecond: 4, burst: 2 };

describe('a tenant flooding the super scheduler', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let cpFlood: LocalControlPlane;
  let cpQuiet: LocalControlPlane;
  let flood: KubeClient;
  let quiet: KubeClient;
  let floodTenant: Tenant;
  let quietTenant: Tenant;
  let syncer: Syncer;
  let registry: MutableTenantRegistry;

  const superPodsOf = async (tenant: Tenant) =>
    (await t.client.list<Pod>(R.pods)).items.filter((p) => provenanceOf(p)?.cluster === tenant.key);
  const phases = async (c: KubeClient) =>
    (await c.list<Pod>(R.pods, { namespace: 'default' })).items.map((p) => p.status?.phase ?? '');

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    [cpFlood, cpQuiet] = await Promise.all([
      t.sc.addControlPlane('tenant-flood', { controllers: TENANT_CONTROLLERS }),
      t.sc.addControlPlane('tenant-quiet', { controllers: TENANT_CONTROLLERS }),
    ]);
    [flood, quiet] = await Promise.all([cpFlood.client(), cpQuiet.client()]);
    const extra = { pluginConfig: { nodes: { vnAgent: { port: 10550 } } } };
    floodTenant = tenantFor(cpFlood, 'team-flood', 'flood', '55555555-eeee-4eee-8eee-0000000000e5', extra);
    quietTenant = tenantFor(cpQuiet, 'team-quiet', 'quiet', '66666666-ffff-4fff-8fff-0000000000f6', extra);
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({
      superClient: t.client,
      host,
      registry: (registry = new MutableTenantRegistry([floodTenant, quietTenant])),
      patrolIntervalMs: 0,
      workers: 4,
      schedulingWindow: WINDOW,
    });
    await syncer.start();
    await eventually(() =>
      expect(syncer.tenantReady(floodTenant.key) && syncer.tenantReady(quietTenant.key)).toBe(true),
    );
    await eventually(() => flood.get(R.serviceaccounts, 'default', 'default'));
    await eventually(() => quiet.get(R.serviceaccounts, 'default', 'default'));
  }, 240_000);

  afterAll(async () => {
    attempts.report('flooding tenant');
    await syncer?.stop();
    await t?.stop();
  });

  it('gives a flooding tenant its window of Pods waiting for the super scheduler, and another tenant its Pod at once', async () => {
    await attempts.attempt(`${FLOOD} Pods at once ahead of another tenant's Pod in the super scheduler`, async () => {
      await t.sc.cluster.scheduler!.stop();
      await Promise.all(Array.from({ length: FLOOD }, (_, i) => flood.create(R.pods, pod(`flood-${i}`))));
      // Every flood key was planned: the window's worth created, the rest parked.
      await eventually(async () => expect(await parkedOf(floodTenant.key)).toBeGreaterThanOrEqual(FLOOD - WINDOW));
      expect(await superPodsOf(floodTenant)).toHaveLength(WINDOW);
      await quiet.create(R.pods, pod('quiet-0'));
      await eventually(async () => expect(await superPodsOf(quietTenant)).toHaveLength(1));
      // The flood is still held: its parked creates wait for the scheduler, not for a retry loop.
      expect(await superPodsOf(floodTenant)).toHaveLength(WINDOW);
      return `${WINDOW} of ${FLOOD} flood Pods in the super scheduler's queue, the other tenant's Pod created beside them`;
    });
  });

  it('runs every Pod of both tenants once the scheduler binds: the parked creates were woken, none lost', async () => {
    t.sc.cluster.scheduler!.start();
    await eventually(async () => expect(await phases(flood)).toEqual(Array(FLOOD).fill('Running')), 120_000);
    await eventually(async () => expect(await phases(quiet)).toEqual(['Running']), 60_000);
    expect(await superPodsOf(floodTenant)).toHaveLength(FLOOD);
  });

  it("paces a tenant the platform gave a create rate, and still creates another tenant's Pod at once", async () => {
    await attempts.attempt(`${PACED} Pods at once from a tenant paced at ${RATE.perSecond}/s`, async () => {
      // A tenant's settings change while it is served (its policy changed): the rate applies to its next creates.
      registry.upsert({ ...floodTenant, podCreateRate: RATE });
      const quietParkedBefore = await parkedOf(quietTenant.key, 'WaitingForCreateRate');
      await Promise.all(Array.from({ length: PACED }, (_, i) => flood.create(R.pods, pod(`paced-${i}`))));
      await quiet.create(R.pods, pod('quiet-1'));
      const superCreated = async (tenant: Tenant, prefix: string) =>
        (await superPodsOf(tenant))
          .filter((p) => p.metadata!.name!.startsWith(prefix))
          .map((p) => Date.parse(p.metadata!.creationTimestamp!));
      await eventually(async () => expect(await superCreated(quietTenant, 'quiet-1')).toHaveLength(1), 30_000);
      await eventually(async () => expect(await superCreated(floodTenant, 'paced-')).toHaveLength(PACED), 60_000);
      const paced = (await superCreated(floodTenant, 'paced-')).sort((a, b) => a - b);
      const [quietAt] = await superCreated(quietTenant, 'quiet-1');
      // After the burst, one create per 1/perSecond: the last at least (PACED - burst) / perSecond after the first
      // (timestamps have whole seconds: one second of slack). Unpaced, all twelve were created within a second.
      const spanS = (paced.at(-1)! - paced[0]!) / 1000;
      expect(spanS).toBeGreaterThanOrEqual((PACED - RATE.burst) / RATE.perSecond - 1);
      // The other tenant's Pod did not wait for the paced flood.
      expect(quietAt!).toBeLessThan(paced.at(-1)!);
      // How many creates waited depends on how fast the tenant's apiserver delivered them (a loaded host spreads
      // them out, and tokens refill meanwhile): the span above is the pacing itself; some did wait.
      expect(await parkedOf(floodTenant.key, 'WaitingForCreateRate')).toBeGreaterThan(0);
      expect(await parkedOf(quietTenant.key, 'WaitingForCreateRate')).toBe(quietParkedBefore);
      await eventually(async () => expect(await phases(flood)).toEqual(Array(FLOOD + PACED).fill('Running')), 120_000);
      return `${PACED} paced Pods created over ${spanS} s, the other tenant's Pod created before the last of them`;
    });
  });

  it('slows a flood to a quarter of its rate while another tenant creates Pods at its own pace', async () => {
    await attempts.attempt(`${YIELD_FLOOD} Pods at once while another tenant creates one every 250 ms`, async () => {
      registry.upsert({ ...floodTenant, podCreateRate: YIELD_RATE });
      const quietParkedBefore = await parkedOf(quietTenant.key, 'WaitingForCreateRate');
      const created = async (tenant: Tenant, prefix: string) =>
        (await superPodsOf(tenant)).filter((p) => p.metadata!.name!.startsWith(prefix)).length;
      const started = performance.now();
      await Promise.all(Array.from({ length: YIELD_FLOOD }, (_, i) => flood.create(R.pods, pod(`yield-${i}`))));
      // The other tenant creates a Pod every 250 ms for 3 s: never faster than its own rate, so never parked.
      const seenYielding = new Set<string>();
      for (let i = 0; i < 12; i++) {
        await quiet.create(R.pods, pod(`steady-${i}`));
        await new Promise((r) => setTimeout(r, 250));
        for (const k of await yielding()) seenYielding.add(k);
      }
      // At its whole rate the flood would have its burst and 4 more a second by now (all 14 after the burst in 3.5
      // s); at a quarter of it, about one a second. The loop above takes 3 s on a quiet host and longer on a busy
      // one (ci62: 14 of them at load average 15, in a case of 11 s), so the bound is of the seconds it took, with
      // four to spare, and always short of the whole flood.
      const during = await created(floodTenant, 'yield-');
      const seconds = (performance.now() - started) / 1000;
      const quarter = YIELD_RATE.burst + Math.ceil(seconds * YIELD_RATE.perSecond * DEFAULT_YIELD_SHARE) + 4;
      expect(during).toBeGreaterThanOrEqual(YIELD_RATE.burst);
      expect(during, `${during} created in ${seconds.toFixed(1)} s`).toBeLessThanOrEqual(
        Math.min(quarter, YIELD_FLOOD - 1),
      );
      await eventually(async () => expect(await created(quietTenant, 'steady-')).toBe(12), 30_000);
      expect(await parkedOf(quietTenant.key, 'WaitingForCreateRate')).toBe(quietParkedBefore);
      // The operator sees which tenant yielded: the flooding one, never the other.
      expect([...seenYielding]).toEqual([floodTenant.key]);
      // Once the other tenant is done, the flood has its whole rate back and every Pod of both runs.
      await eventually(async () => expect(await created(floodTenant, 'yield-')).toBe(YIELD_FLOOD), 60_000);
      await eventually(
        async () => expect(await phases(flood)).toEqual(Array(FLOOD + PACED + YIELD_FLOOD).fill('Running')),
        120_000,
      );
      await eventually(async () => expect(await phases(quiet)).toEqual(Array(14).fill('Running')), 60_000);
      return `${during} of ${YIELD_FLOOD} flood Pods created in the ${seconds.toFixed(1)} s the other tenant created 12`;
    });
  });
});
