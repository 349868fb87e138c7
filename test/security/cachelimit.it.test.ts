/**
 * Hostile tenant against the manager's memory (issue 31, §3): a tenant may keep far more objects in its own etcd than
 * its caps let into the super cluster, and the syncer caches every object of every kind it syncs. A tenant that
 * creates objects past the manager's per-tenant cache limit, by count or by bytes, is no longer served: its informers
 * stop growing, its session goes, the platform reads why on the VirtualCluster (Warning event TenantCacheExceeded) and
 * in vc_syncer_tenant_cache_exceeded_total, its super objects stay as they were, and the other tenant goes on. Runs
 * the real syncer on a real local super cluster with three real tenant control planes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import {
  cacheCondition,
  reportCacheExceeded,
  TENANT_CACHE_EXCEEDED,
  TenantCacheStates,
} from '../../core/lifecycle/cachelimit.ts';
import { provenanceOf } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { syncerMetrics } from '../../core/syncer/metrics.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, tenantFor } from '../harness.ts';
import { sharedTestSuper, type SharedTestSuper } from '../sharedsuper.ts';
import { Attempts } from './attempts.ts';

/** OBJECTS and BYTES are the syncer's cache limit per tenant here: small, so a test reaches them in seconds. */
const OBJECTS = 300;
const BYTES = 4 * 1024 * 1024;

interface Event extends KubeObject {
  involvedObject: { kind?: string; name?: string; uid?: string };
  reason?: string;
  message?: string;
}

const configMap = (name: string, chars: number): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace: 'default', name },
  data: { blob: 'x'.repeat(chars) },
});

/** vcNamespace is tenant n's VirtualCluster namespace: a name no other file on the shared super cluster uses. */
const vcNamespace = (n: string): string => `cachelimit-${n}`;

describe('hostile tenant against the manager cache', () => {
  const attempts = new Attempts();
  let t: SharedTestSuper;
  const clients: Record<string, KubeClient> = {};
  const tenants: Record<string, Tenant> = {};
  let syncer: Syncer;
  let registry: MutableTenantRegistry;
  const refused = new Map<string, string>();
  const states = new TenantCacheStates(60 * 60_000);

  const superConfigMaps = async (tenant: Tenant): Promise<string[]> =>
    (await t.client.list(R.configmaps)).items
      .map((o) => provenanceOf(o))
      .filter((p) => p?.cluster === tenant.key)
      .map((p) => `${p!.namespace}/${p!.name}`);

  const exceededCount = async (tenant: Tenant): Promise<number> =>
    (await syncerMetrics.tenantCacheExceeded.get()).values
      .filter((v) => v.labels.tenant === tenant.key)
      .reduce((s, v) => s + v.value, 0);

  /** vcEvent waits for the Warning event on the tenant's VirtualCluster in the meta (here: the super) cluster. */
  const vcEvent = (tenant: Tenant): Promise<string> =>
    eventually(async () => {
      const list = (await t.client.list<Event>(R.events, { namespace: tenant.vcNamespace })).items;
      const e = list.find((x) => x.reason === TENANT_CACHE_EXCEEDED && x.involvedObject.uid === tenant.vcUid);
      expect(e?.message).toContain(`the caches of tenant ${tenant.key} would hold`);
      return e!.message!;
    });

  beforeAll(async () => {
    t = await sharedTestSuper();
    const names = ['count', 'bytes', 'quiet'] as const;
    const cps = await Promise.all(names.map((n) => t.sc.addControlPlane(`tenant-${n}`)));
    const uids = [
      '77777777-aaaa-4aaa-8aaa-0000000000a7',
      '88888888-bbbb-4bbb-8bbb-0000000000b8',
      '99999999-cccc-4ccc-8ccc-0000000000c9',
    ];
    for (const [i, n] of names.entries()) {
      clients[n] = await cps[i]!.client();
      tenants[n] = tenantFor(cps[i]!, vcNamespace(n), n, uids[i]!);
      // The VirtualCluster's namespace in the meta cluster, where its events go.
      await t.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: vcNamespace(n) } });
    }
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({
      superClient: t.client,
      host,
      registry: (registry = new MutableTenantRegistry(Object.values(tenants))),
      patrolIntervalMs: 0,
      workers: 4,
      tenantCache: { objects: OBJECTS, bytes: BYTES },
      // As the manager wires it (core/programs/manager): the VirtualCluster gets the reason.
      onTenantCacheExceeded: (tenant, reason) => {
        refused.set(tenant.key, reason);
        states.exceeded(tenant, reason);
        void reportCacheExceeded(t.client, tenant, reason);
      },
      onTenantServed: (tenant) => states.served(tenant),
    });
    await syncer.start();
    await eventually(() => expect(Object.values(tenants).every((x) => syncer.tenantReady(x.key))).toBe(true));
  }, 240_000);

  afterAll(async () => {
    attempts.report('manager cache');
    states.clear();
    await syncer?.stop();
    for (const n of Object.keys(tenants)) await t.client.delete(R.namespaces, undefined, vcNamespace(n));
    await t?.stop();
  });

  it('stops serving a tenant whose objects pass the cache limit by count; its super objects stay, the others go on', async () => {
    await attempts.attempt('more objects than the manager caches per tenant', async () => {
      const c = clients.count!;
      const tenant = tenants.count!;
      await c.create(R.configmaps, configMap('before', 10));
      await eventually(async () => expect(await superConfigMaps(tenant)).toContain('default/before'));
      for (let i = 0; i < OBJECTS + 20; i += 20)
        await Promise.all(Array.from({ length: 20 }, (_, j) => c.create(R.configmaps, configMap(`f-${i + j}`, 10))));
      await eventually(() => expect(syncer.tenantReady(tenant.key)).toBe(false));
      expect(refused.get(tenant.key)).toMatch(/would hold \d+ objects, over the limit of 300; they are stopped/);
      expect(await exceededCount(tenant)).toBe(1);
      // The VirtualCluster controller's CacheWithinLimit condition reads this state.
      expect(cacheCondition(states.refusal(tenant.key))).toMatchObject({
        status: 'False',
        reason: TENANT_CACHE_EXCEEDED,
      });
      expect(cacheCondition(states.refusal(tenants.quiet!.key)).status).toBe('True');
      const message = await vcEvent(tenant);
      // Reported again (every reconcile of a Running VirtualCluster does), it is not listed again at once.
      registry.upsert({ ...tenant });
      await new Promise((r) => setTimeout(r, 1000));
      expect(syncer.tenantReady(tenant.key)).toBe(false);
      expect(await exceededCount(tenant)).toBe(1);
      // Nothing was planned from a cut cache: what was copied before stays.
      expect(await superConfigMaps(tenant)).toContain('default/before');
      // The other tenants are served.
      await clients.quiet!.create(R.configmaps, configMap('after', 10));
      await eventually(async () => expect(await superConfigMaps(tenants.quiet!)).toContain('default/after'));
      return message;
    });
  });

  it('stops serving a tenant whose objects pass the cache limit by bytes', async () => {
    await attempts.attempt('more bytes than the manager caches per tenant', async () => {
      const tenant = tenants.bytes!;
      for (let i = 0; i < 6; i++) await clients.bytes!.create(R.configmaps, configMap(`big-${i}`, 900 * 1024));
      await eventually(() => expect(syncer.tenantReady(tenant.key)).toBe(false));
      expect(refused.get(tenant.key)).toMatch(/would hold \d+ bytes, over the limit of 4194304; they are stopped/);
      const message = await vcEvent(tenant);
      expect(syncer.tenantReady(tenants.quiet!.key)).toBe(true);
      return message;
    });
  });
});
