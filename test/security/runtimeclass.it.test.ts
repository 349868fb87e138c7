/**
 * RuntimeClasses within policy (issue 12): a tenant's own RuntimeClass is honoured (synced under a name of the
 * tenant's, its Pods scheduled and Running on the real local super), the platform's public classes appear in every
 * tenant, and a hostile tenant cannot use a handler its policy refuses, reach another tenant's or the platform's
 * private class, or leave the sandbox its policy requires. Runs the real syncer, as the manager identity deploy/
 * gives it (RBAC and admission policies), against a real local super cluster (kwok nodes, which accept any handler:
 * the super apiserver still checks at Pod admission that the class exists) and two tenant control planes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { LABEL, MANAGER, provenanceOf, superClusterName, superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { managerIdentity } from '../../core/dev/embedded/embedded.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import { refusedBy } from '../identities.ts';
import { Attempts } from './attempts.ts';

interface RuntimeClass extends KubeObject {
  handler: string;
  overhead?: { podFixed?: Record<string, string> };
  scheduling?: { tolerations?: Array<{ key?: string; operator?: string; effect?: string }> };
}

interface Pod extends KubeObject {
  spec: {
    runtimeClassName?: string;
    nodeName?: string;
    overhead?: Record<string, string>;
    tolerations?: Array<{ key?: string }>;
  };
  status?: { phase?: string; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

interface Event extends KubeObject {
  involvedObject: { name?: string; uid?: string };
  reason?: string;
  message?: string;
}

const runtimeClass = (
  name: string,
  handler: string,
  over: Partial<RuntimeClass> = {},
  labels?: Record<string, string>,
): RuntimeClass => ({
  apiVersion: 'node.k8s.io/v1',
  kind: 'RuntimeClass',
  metadata: { name, ...(labels && { labels }) },
  handler,
  ...over,
});

const pod = (name: string, runtimeClassName?: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { containers: [{ name: 'c', image: 'nginx' }], ...(runtimeClassName && { runtimeClassName }) },
});

describe('RuntimeClasses: tenant classes honoured within policy, public classes shared, sandboxes kept', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let cpA: LocalControlPlane;
  let cpB: LocalControlPlane;
  let a: KubeClient;
  let b: KubeClient;
  let tenantA: Tenant;
  let tenantB: Tenant;
  let syncer: Syncer;
  let manager: KubeClient;

  const superPod = (tenant: Tenant, name: string) =>
    t.client.getOrNull<Pod>(R.pods, superNamespace(tenant.key, 'default'), name);

  /** running waits for a tenant Pod to be Running on a vNode and returns its super Pod. */
  const running = async (c: KubeClient, tenant: Tenant, name: string): Promise<Pod> => {
    await eventually(async () => {
      const p = await c.get<Pod>(R.pods, 'default', name);
      expect(p.status?.phase).toBe('Running');
      expect(p.spec.nodeName).toBeTruthy();
    }, 90_000);
    return (await superPod(tenant, name))!;
  };

  /** podRefused waits for the tenant-visible refusal of a Pod naming a RuntimeClass; it returns the event message. */
  const podRefused = async (c: KubeClient, tenant: Tenant, name: string): Promise<string> => {
    const p = await eventually(async () => {
      const got = await c.get<Pod>(R.pods, 'default', name);
      const cond = got.status?.conditions?.find((x) => x.type === 'VCSynced');
      expect(cond).toMatchObject({ status: 'False', reason: 'PodPolicyViolation' });
      expect(cond?.message).toContain('spec.runtimeClassName');
      return got;
    });
    const event = await eventually(async () => {
      const e = (await c.list<Event>(R.events, { namespace: 'default' })).items.find(
        (x) => x.involvedObject.uid === p.metadata?.uid && x.reason === 'PodPolicyViolation',
      );
      expect(e).toBeDefined();
      return e!;
    });
    expect(await superPod(tenant, name)).toBeNull();
    return event.message ?? '';
  };

  /** classRefused waits for the Warning event on a tenant RuntimeClass and checks it has no super copy. */
  const classRefused = async (c: KubeClient, tenant: Tenant, name: string, field: string): Promise<string> => {
    const uid = (await c.get(R.runtimeclasses, undefined, name)).metadata?.uid;
    const event = await eventually(async () => {
      const e = (await c.list<Event>(R.events, { namespace: 'default' })).items.find(
        (x) => x.involvedObject.uid === uid && x.reason === 'RuntimeClassPolicyViolation',
      );
      expect(e?.message).toContain(field);
      return e!;
    });
    expect(await t.client.getOrNull(R.runtimeclasses, undefined, superClusterName(tenant.key, name))).toBeNull();
    return event.message ?? '';
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    // The platform's classes: a public sandbox (its toleration is added by the super apiserver, never shown to
    // tenants) and a private one no tenant may use.
    await t.client.create(
      R.runtimeclasses,
      runtimeClass(
        'kata',
        'kata',
        {
          overhead: { podFixed: { memory: '160Mi' } },
          scheduling: { tolerations: [{ key: 'sandbox.example.com/kata', operator: 'Exists', effect: 'NoSchedule' }] },
        },
        { [LABEL.public]: 'true' },
      ),
    );
    await t.client.create(R.runtimeclasses, runtimeClass('platform-private', 'privileged-runtime'));
    [cpA, cpB] = await Promise.all([
      t.sc.addControlPlane('tenant-a', { controllers: TENANT_CONTROLLERS }),
      t.sc.addControlPlane('tenant-b', { controllers: TENANT_CONTROLLERS }),
    ]);
    a = await cpA.client();
    b = await cpB.client();
    tenantA = tenantFor(cpA, 'team-a', 'a', '11111111-aaaa-4aaa-8aaa-0000000000c1', {
      pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
      runtimeClasses: { handlers: ['runc', 'runsc'] },
    });
    tenantB = tenantFor(cpB, 'team-b', 'b', '22222222-bbbb-4bbb-8bbb-0000000000c2', {
      pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
      runtimeClasses: { handlers: ['runc'], required: 'kata' },
    });
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    expect(host.failures).toEqual([]);
    manager = await KubeClient.fromString(await managerIdentity(t.sc, 'kube-system'));
    syncer = new Syncer({
      superClient: manager,
      host,
      registry: new MutableTenantRegistry([tenantA, tenantB]),
      patrolIntervalMs: 0,
      workers: 4,
    });
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenantA.key) && syncer.tenantReady(tenantB.key)).toBe(true));
    await Promise.all([
      eventually(() => a.get(R.serviceaccounts, 'default', 'default')),
      eventually(() => b.get(R.serviceaccounts, 'default', 'default')),
    ]);
  }, 240_000);

  afterAll(async () => {
    attempts.report('runtime classes');
    await syncer?.stop();
    await t?.stop();
  });

  it("runs a tenant Pod in the tenant's own RuntimeClass, synced under the tenant's name, overhead kept", async () => {
    await a.create(
      R.runtimeclasses,
      runtimeClass('gvisor', 'runsc', { overhead: { podFixed: { cpu: '100m', memory: '32Mi' } } }),
    );
    const superName = superClusterName(tenantA.key, 'gvisor');
    const copy = await eventually(() => t.client.get<RuntimeClass>(R.runtimeclasses, undefined, superName));
    expect(copy.handler).toBe('runsc');
    expect(copy.overhead).toEqual({ podFixed: { cpu: '100m', memory: '32Mi' } });
    expect(provenanceOf(copy)).toMatchObject({ cluster: tenantA.key, name: 'gvisor' });
    await eventually(() => a.create(R.pods, pod('sandboxed', 'gvisor')));
    const sp = await running(a, tenantA, 'sandboxed');
    expect(sp.spec.runtimeClassName).toBe(superName);
    expect(sp.spec.overhead).toEqual({ cpu: '100m', memory: '32Mi' });
  });

  it('shows the public sandbox in every tenant without its scheduling, and runs Pods in it', async () => {
    for (const c of [a, b]) {
      const mirror = await eventually(() => c.get<RuntimeClass>(R.runtimeclasses, undefined, 'kata'));
      expect(mirror.handler).toBe('kata');
      expect(mirror.overhead).toEqual({ podFixed: { memory: '160Mi' } });
      expect(mirror.scheduling).toBeUndefined();
      expect(mirror.metadata?.labels?.[LABEL.managedBy]).toBe(MANAGER);
    }
    expect((await a.getOrNull(R.runtimeclasses, undefined, 'platform-private')) ?? undefined).toBeUndefined();
    await a.create(R.pods, pod('in-kata', 'kata'));
    const sp = await running(a, tenantA, 'in-kata');
    expect(sp.spec.runtimeClassName).toBe('kata');
    expect(sp.spec.tolerations?.map((x) => x.key)).toContain('sandbox.example.com/kata');
    // Tenant B's policy requires the sandbox: a Pod naming no class runs in it.
    await eventually(() => b.create(R.pods, pod('plain')));
    expect((await running(b, tenantB, 'plain')).spec.runtimeClassName).toBe('kata');
  });

  it('refuses a tenant RuntimeClass with a handler the policy does not list, and Pods naming it', async () => {
    await attempts.attempt('RuntimeClass with handler privileged-runtime', async () => {
      await a.create(R.runtimeclasses, runtimeClass('escape', 'privileged-runtime'));
      const why = await classRefused(a, tenantA, 'escape', 'handler "privileged-runtime" is not allowed');
      await a.create(R.pods, pod('escapee', 'escape'));
      return `${why}; ${await podRefused(a, tenantA, 'escapee')}`;
    });
  });

  it('refuses a tenant RuntimeClass whose scheduling tolerates every taint', async () => {
    await attempts.attempt('RuntimeClass scheduling.tolerations [{operator: Exists}]', async () => {
      await a.create(
        R.runtimeclasses,
        runtimeClass('anywhere', 'runc', { scheduling: { tolerations: [{ operator: 'Exists' }] } }),
      );
      return classRefused(a, tenantA, 'anywhere', 'scheduling.tolerations[0]');
    });
  });

  it("keeps a tenant RuntimeClass named after another tenant's super class under its own name", async () => {
    await attempts.attempt("RuntimeClass named like tenant B's super copy", async () => {
      await b.create(R.runtimeclasses, runtimeClass('fast', 'runc'));
      const theirs = superClusterName(tenantB.key, 'fast');
      const before = await eventually(() => t.client.get<RuntimeClass>(R.runtimeclasses, undefined, theirs));
      await a.create(R.runtimeclasses, runtimeClass(theirs, 'runsc'));
      const mine = await eventually(() =>
        t.client.get<RuntimeClass>(R.runtimeclasses, undefined, superClusterName(tenantA.key, theirs)),
      );
      expect(provenanceOf(mine)?.cluster).toBe(tenantA.key);
      const after = await t.client.get<RuntimeClass>(R.runtimeclasses, undefined, theirs);
      expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
      expect(after.handler).toBe('runc');
      expect(provenanceOf(after)?.cluster).toBe(tenantB.key);
      return `synced as ${mine.metadata?.name}; tenant B's ${theirs} unchanged`;
    });
  });

  it("refuses a Pod naming the platform's private class through a forged mirror", async () => {
    await attempts.attempt('forged mirror of platform-private', async () => {
      await a.create(
        R.runtimeclasses,
        runtimeClass('platform-private', 'privileged-runtime', {}, { [LABEL.managedBy]: MANAGER }),
      );
      // The syncer removes a "mirror" of a class that is not public; a Pod created before that is refused.
      let reason: string;
      try {
        await a.create(R.pods, pod('forged', 'platform-private'));
        reason = await podRefused(a, tenantA, 'forged');
      } catch (e) {
        reason = e instanceof Error ? e.message : String(e);
        expect(reason).toContain('RuntimeClass');
      }
      await eventually(async () =>
        expect(await a.getOrNull(R.runtimeclasses, undefined, 'platform-private')).toBeNull(),
      );
      expect(await superPod(tenantA, 'forged')).toBeNull();
      return reason;
    });
  });

  it('refuses a Pod leaving the sandbox its policy requires', async () => {
    await attempts.attempt('Pod naming a runc class under runtimeClasses.required kata', async () => {
      await b.create(R.pods, pod('leaver', 'fast'));
      const why = await podRefused(b, tenantB, 'leaver');
      expect(why).toContain('runtimeClasses.required');
      return why;
    });
  });

  it("keeps the manager itself off the platform's RuntimeClasses", async () => {
    const OFF_LIMITS = /vc-manager may write only RuntimeClasses labelled tenancy\.x-k8s\.io\/cluster/;
    const kata = await t.client.get(R.runtimeclasses, undefined, 'kata');
    await attempts.attempt('manager relabels the public kata class as a tenant copy', () =>
      refusedBy(
        () =>
          manager.patch(
            R.runtimeclasses,
            undefined,
            'kata',
            { metadata: { labels: { [LABEL.cluster]: tenantA.key } } },
            'merge',
          ),
        OFF_LIMITS,
      ),
    );
    await attempts.attempt('manager deletes the platform-private class', () =>
      refusedBy(() => manager.delete(R.runtimeclasses, undefined, 'platform-private'), OFF_LIMITS),
    );
    await attempts.attempt('manager creates an unlabelled RuntimeClass', () =>
      refusedBy(() => manager.create(R.runtimeclasses, runtimeClass('kata-evil', 'runc')), OFF_LIMITS),
    );
    expect((await t.client.get(R.runtimeclasses, undefined, 'kata')).metadata?.resourceVersion).toBe(
      kata.metadata?.resourceVersion,
    );
  });

  it('counts every attempt refused', () => {
    expect(attempts.summary()).toBe('attempts 8, refused 8, succeeded 0');
  });
});
