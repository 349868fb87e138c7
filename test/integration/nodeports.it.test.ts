/**
 * A tenant's node ports where its policy keeps them (services.nodePort.keepTenantPorts): the real syncer, a real
 * super cluster and two tenant control planes that allocate from the same node port range. Tenant A's NodePort
 * Service keeps the number its apiserver gave it in the super cluster; tenant B asking for the same number gets the
 * super cluster's pick after the one refused create, and its Service shows that number; a tenant whose policy does not
 * keep them gets the super cluster's numbers from the start.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, tenantFor } from '../harness.ts';
import { sharedTestSuper, type SharedTestSuper } from '../sharedsuper.ts';

interface Service extends KubeObject {
  spec?: { type?: string; ports?: Array<{ port: number; nodePort?: number }> };
}

const nodePortService = (name: string, nodePort?: number): Service =>
  ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default' },
    spec: { type: 'NodePort', selector: { app: name }, ports: [{ port: 80, ...(nodePort && { nodePort }) }] },
  }) as Service;

describe('node ports a tenant policy keeps', () => {
  let t: SharedTestSuper;
  const cps: LocalControlPlane[] = [];
  const clients: KubeClient[] = [];
  const tenants: Tenant[] = [];
  let syncer: Syncer;

  /** superPort waits for the super copy of a tenant's Service and returns its node port. */
  const superPort = (i: number, name: string) =>
    eventually(async () => {
      const s = await t.client.get<Service>(R.services, superNamespace(tenants[i]!.key, 'default'), name);
      expect(s.spec?.ports?.[0]?.nodePort).toBeTruthy();
      return s.spec!.ports![0]!.nodePort!;
    });
  const tenantPort = async (i: number, name: string) =>
    (await clients[i]!.get<Service>(R.services, 'default', name)).spec?.ports?.[0]?.nodePort;

  beforeAll(async () => {
    t = await sharedTestSuper();
    for (const [i, keepTenantPorts] of [true, true, false].entries()) {
      const cp = await t.sc.addControlPlane(`tenant-np${i}`, { controllers: TENANT_CONTROLLERS });
      cps.push(cp);
      clients.push(await cp.client());
      tenants.push(
        tenantFor(cp, `team-np${i}`, `np${i}`, randomUUID(), {
          services: { nodePort: { allowed: true, max: 5, keepTenantPorts } },
          pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
        }),
      );
    }
    syncer = new Syncer({
      superClient: t.client,
      host: await PluginHost.load({ process: 'manager', builtins: builtinPlugins }),
      registry: new MutableTenantRegistry(tenants),
      patrolIntervalMs: 0,
      workers: 4,
    });
    await syncer.start();
    await eventually(() => expect(tenants.every((x) => syncer.tenantReady(x.key))).toBe(true));
  }, 180_000);

  afterAll(async () => {
    await syncer?.stop();
    await t?.stop();
  });

  it('keeps the number the tenant apiserver gave, in the super cluster', async () => {
    const created = await clients[0]!.create<Service>(R.services, nodePortService('web'));
    const own = created.spec!.ports![0]!.nodePort!;
    expect(own).toBeGreaterThan(0);
    expect(await superPort(0, 'web')).toBe(own);
    expect(await tenantPort(0, 'web')).toBe(own);
  });

  it("gives another tenant asking for a taken number the super cluster's pick, and shows it to that tenant", async () => {
    const taken = await superPort(0, 'web');
    await clients[1]!.create<Service>(R.services, nodePortService('web', taken));
    const picked = await superPort(1, 'web');
    expect(picked).not.toBe(taken);
    await eventually(async () => expect(await tenantPort(1, 'web')).toBe(picked));
    // tenant A's copy was not touched
    expect(await superPort(0, 'web')).toBe(taken);
  });

  it("does not keep them where the policy does not: the super cluster's numbers, shown to the tenant", async () => {
    // the tenant's own number; the super cluster picks at random from 2,768, so the same one by chance is rare
    const created = await clients[2]!.create<Service>(R.services, nodePortService('web'));
    const asked = created.spec!.ports![0]!.nodePort!;
    const picked = await superPort(2, 'web');
    await eventually(async () => expect(await tenantPort(2, 'web')).toBe(picked));
    expect(picked).not.toBe(asked);
  });
});
