/**
 * A slow tenant (issue 12, "a slow tenant"): a tenant with cluster-admin on its own apiserver registers a validating
 * admission webhook that holds every `pods/binding` and `pods/status` request for 30 s, so each bind and each status
 * copy the syncer makes to it stalls. It must not hold the syncer's workers: the requests time out (counted per
 * tenant), the tenant holds at most its share of the workers, and another tenant's Pods get Running while the slow
 * tenant's requests are still held. Runs the real syncer against a real local super cluster, two tenant control
 * planes and a real webhook server on loopback.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { syncerMetrics } from '../../core/syncer/metrics.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, tenantFor } from '../harness.ts';
import { sharedTestSuper, type SharedTestSuper } from '../sharedsuper.ts';
import { startSlowWebhook, type SlowWebhook } from '../slowwebhook.ts';
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

/** WORKERS and CAP: with one worker per tenant, a slow tenant that could take both would stop the other outright. */
const WORKERS = 2;
const CAP = 1;
const SLOW_PODS = 4;
const QUIET_PODS = 3;

/** timeoutsOf reads vc_syncer_tenant_request_timeouts_total for one tenant, summed over plugins. */
async function timeoutsOf(tenant: string): Promise<number> {
  const m = await syncerMetrics.timeouts.get();
  return m.values.filter((v) => v.labels.tenant === tenant).reduce((sum, v) => sum + v.value, 0);
}

describe('a tenant whose admission webhook stalls the syncer’s writes', () => {
  const attempts = new Attempts();
  let t: SharedTestSuper;
  let cpSlow: LocalControlPlane;
  let cpQuiet: LocalControlPlane;
  let slow: KubeClient;
  let quiet: KubeClient;
  let slowTenant: Tenant;
  let quietTenant: Tenant;
  let syncer: Syncer;
  let webhook: SlowWebhook;
  let maxSlowInFlight = 0;
  let maxSlowLowInFlight = 0;
  let sampler: NodeJS.Timeout | undefined;

  const phases = async (c: KubeClient, names: string[]) =>
    Promise.all(names.map(async (n) => (await c.get<Pod>(R.pods, 'default', n)).status?.phase ?? ''));

  beforeAll(async () => {
    // Longer than the apiserver waits for a webhook (30 s): a held request is never allowed, it fails closed.
    webhook = await startSlowWebhook({ delayMs: 60_000 });
    t = await sharedTestSuper();
    [cpSlow, cpQuiet] = await Promise.all([
      t.sc.addControlPlane('tenant-slow', { controllers: TENANT_CONTROLLERS }),
      t.sc.addControlPlane('tenant-quiet', { controllers: TENANT_CONTROLLERS }),
    ]);
    [slow, quiet] = await Promise.all([cpSlow.client(), cpQuiet.client()]);
    const extra = { pluginConfig: { nodes: { vnAgent: { port: 10550 } } } };
    slowTenant = tenantFor(cpSlow, 'team-slow', 'slow', randomUUID(), extra);
    quietTenant = tenantFor(cpQuiet, 'team-quiet', 'quiet', randomUUID(), extra);
    await webhook.register(slow);
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({
      superClient: t.client,
      host,
      registry: new MutableTenantRegistry([slowTenant, quietTenant]),
      patrolIntervalMs: 0,
      workers: WORKERS,
      maxInFlightPerTenant: CAP,
      tenantRequestTimeoutMs: 2_000,
    });
    await syncer.start();
    await eventually(() =>
      expect(syncer.tenantReady(slowTenant.key) && syncer.tenantReady(quietTenant.key)).toBe(true),
    );
    sampler = setInterval(() => {
      // Its own objects' keys count against the cap; its copied events ride the low lane, at most one at a time.
      const n = syncer.inFlightByTenant().find(([k]) => k === slowTenant.key)?.[1] ?? 0;
      const low = syncer.lowInFlightByTenant().find(([k]) => k === slowTenant.key)?.[1] ?? 0;
      maxSlowInFlight = Math.max(maxSlowInFlight, n - low);
      maxSlowLowInFlight = Math.max(maxSlowLowInFlight, low);
    }, 20);
    // Pods wait for each tenant's default ServiceAccount, which its controller-manager creates shortly after start.
    await eventually(() => slow.get(R.serviceaccounts, 'default', 'default'));
    await eventually(() => quiet.get(R.serviceaccounts, 'default', 'default'));
  }, 240_000);

  afterAll(async () => {
    clearInterval(sampler);
    attempts.report('slow tenant');
    await syncer?.stop();
    await webhook?.close();
    await t?.stop();
  });

  it('runs the quiet tenant’s Pods while the slow tenant’s binds are held, and times those requests out', async () => {
    await attempts.attempt('a 30 s admission webhook on pods/binding and pods/status holds the syncer', async () => {
      for (let i = 0; i < SLOW_PODS; i++) await slow.create(R.pods, pod(`slow-${i}`));
      // The slow tenant is stuck: the syncer's bind of one of its Pods is held by its webhook.
      await eventually(() => expect(webhook.holding()).toBeGreaterThan(0), 90_000);
      expect(webhook.seen.some((s) => s.subResource === 'binding')).toBe(true);

      const quietNames = Array.from({ length: QUIET_PODS }, (_, i) => `quiet-${i}`);
      for (const n of quietNames) await quiet.create(R.pods, pod(n));
      await eventually(
        async () => expect(await phases(quiet, quietNames)).toEqual(quietNames.map(() => 'Running')),
        90_000,
      );

      // ... while the slow tenant is still blocked: none of its Pods got bound, and the syncer keeps retrying its
      // binds, which the webhook keeps holding.
      const seenWhenQuietRan = webhook.seen.length;
      await eventually(() => expect(webhook.seen.length).toBeGreaterThan(seenWhenQuietRan), 30_000, 20);
      await eventually(() => expect(webhook.holding()).toBeGreaterThan(0), 30_000, 20);
      const slowPods = await slow.list<Pod>(R.pods, { namespace: 'default' });
      expect(slowPods.items).toHaveLength(SLOW_PODS);
      expect(slowPods.items.map((p) => p.spec?.nodeName ?? '')).toEqual(slowPods.items.map(() => ''));
      // The slow tenant's requests ended by the syncer's timeout, and it never held more than its share.
      await eventually(async () => expect(await timeoutsOf(slowTenant.key)).toBeGreaterThan(0), 30_000);
      expect(await timeoutsOf(quietTenant.key)).toBe(0);
      expect(maxSlowInFlight).toBeGreaterThan(0);
      expect(maxSlowInFlight).toBeLessThanOrEqual(CAP);
      expect(maxSlowLowInFlight).toBeLessThanOrEqual(1);
      const timedOut = await timeoutsOf(slowTenant.key);
      return (
        `quiet tenant's ${QUIET_PODS} Pods Running while the slow tenant's binds were held and retried; ` +
        `${timedOut} slow-tenant requests timed out; slow tenant held at most ${maxSlowInFlight} of ${WORKERS} workers ` +
        `(and ${maxSlowLowInFlight} for its events)`
      );
    });
  });

  it('runs the slow tenant’s Pods too once its webhook answers: the timed-out keys were retried, not lost', async () => {
    webhook.setDelay(0);
    webhook.releaseAll();
    const names = Array.from({ length: SLOW_PODS }, (_, i) => `slow-${i}`);
    await eventually(async () => expect(await phases(slow, names)).toEqual(names.map(() => 'Running')), 120_000);
  });
});
