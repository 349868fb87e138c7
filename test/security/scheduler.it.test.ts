/**
 * Hostile tenants against the namespace scheduler (issue 14): a tenant with cluster-admin on its own apiserver writes
 * the scheduler's annotations itself, on its namespaces and Pods, to get placement it was not given (more slices, a
 * super cluster it is not pinned to, a Pod on a super cluster of its choice). The scheduler owns PLACEMENTS and
 * SUPER_CLUSTER: only values it signed count (signature.ts), and it replaces or removes any other. Each attempt must
 * end with the scheduler's own value (or none) on the object, the forged value not verifying, and a Warning Event.
 * Runs the real scheduler against two real super clusters and two tenant control planes.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { PLACEMENTS, SLICE, SUPER_CLUSTER } from '../../core/scheduler/annotations.ts';
import { NamespaceScheduler } from '../../core/scheduler/controller.ts';
import { PlacementRecords, parseRecord, recordName } from '../../core/scheduler/placementrecord.ts';
import { SIGNATURE, signedValue } from '../../core/scheduler/signature.ts';
import { StaticSuperClusters } from '../../core/scheduler/testing.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import { Attempts } from './attempts.ts';

interface Event extends KubeObject {
  involvedObject?: { name?: string; uid?: string };
  reason?: string;
  message?: string;
}

const SLICE_DEMO = '{"cpu":"100m","memory":"100Mi"}';

describe('hostile tenants writing the scheduler annotations', () => {
  const attempts = new Attempts();
  const key = randomBytes(32);
  let t: TestSuper;
  let r2: LocalControlPlane;
  let cp1: LocalControlPlane;
  let cp2: LocalControlPlane;
  let r2Client: KubeClient;
  let t1: KubeClient;
  let t2: KubeClient;
  let tenant1: Tenant;
  let tenant2: Tenant;
  let scheduler: NamespaceScheduler;
  let supers: StaticSuperClusters;
  /** the scheduler's options, to start it again as a restarted manager would */
  let options: ConstructorParameters<typeof NamespaceScheduler>[0];

  const namespace = async (c: KubeClient, name: string, annotations: Record<string, string>, hard?: object) => {
    await c.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations } });
    if (hard)
      await c.create(R.resourcequotas, {
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'quota', namespace: name },
        spec: { hard },
      } as KubeObject);
  };
  const pod = (name: string, cpu: string, annotations: Record<string, string> = {}) =>
    ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'demo', annotations },
      spec: { containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu, memory: '100Mi' } } }] },
    }) as KubeObject;
  const reasons = async (c: KubeClient, ns: string, name: string) =>
    (await c.list<Event>(R.events, { namespace: ns })).items
      .filter((e) => e.involvedObject?.name === name)
      .map((e) => `${e.reason}: ${e.message}`);
  const annotations = async (c: KubeClient, ns: string, podName?: string) =>
    (podName ? await c.get(R.pods, ns, podName) : await c.get(R.namespaces, undefined, ns)).metadata?.annotations ?? {};
  /** trusted is what a syncer would act on: the annotation's value only when its signature verifies. */
  const trusted = async (c: KubeClient, tenant: Tenant, ns: string, podName?: string) =>
    podName
      ? signedValue(key, tenant.key, await c.get(R.pods, ns, podName), SUPER_CLUSTER, 'Pod')
      : signedValue(key, tenant.key, await c.get(R.namespaces, undefined, ns), PLACEMENTS, 'Namespace');

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    [r2, cp1, cp2] = await Promise.all([
      t.sc.addControlPlane('r2', { kwokNodes: 1, controllerManager: false }),
      t.sc.addControlPlane('t1', { controllers: TENANT_CONTROLLERS }),
      t.sc.addControlPlane('t2', { controllerManager: false }),
    ]);
    [r2Client, t1, t2] = await Promise.all([r2.client(), cp1.client(), cp2.client()]);
    // t1 is pinned to r1: any placement on r2 is one it was not given.
    tenant1 = tenantFor(cp1, 'team-a', 'one', '11111111-aaaa-4aaa-8aaa-000000000001', { superCluster: 'r1' });
    tenant2 = tenantFor(cp2, 'team-b', 'two', '22222222-bbbb-4bbb-8bbb-000000000002');
    supers = new StaticSuperClusters([
      { name: 'r1', state: 'ready', client: t.client },
      { name: 'r2', state: 'ready', client: r2Client },
    ]);
    options = {
      tenants: new MutableTenantRegistry([tenant1, tenant2]),
      supers,
      signingKey: key,
      startupGraceMs: 10_000,
      records: new PlacementRecords(t.client, 'kube-system'),
    };
    scheduler = new NamespaceScheduler(options);
    await scheduler.start();
    await namespace(t1, 'demo', { [SLICE]: SLICE_DEMO }, { cpu: '300m', memory: '300Mi' });
    await eventually(async () => expect(await trusted(t1, tenant1, 'demo')).toBe('{"r1":3}'), 30_000);
  }, 120_000);

  afterAll(async () => {
    attempts.report('scheduler annotations');
    await scheduler?.stop();
    for (const c of [t1, t2, r2Client]) c?.close();
    await t?.stop();
  });

  it('placements written by the tenant are replaced or removed', async () => {
    await attempts.attempt('PLACEMENTS on a namespace whose quota fits nowhere', async () => {
      await namespace(t1, 'greedy', { [SLICE]: '{"cpu":"10"}', [PLACEMENTS]: '{"r1":100}' }, { cpu: '1000' });
      await eventually(async () => expect((await annotations(t1, 'greedy'))[PLACEMENTS]).toBeUndefined());
      expect(await trusted(t1, tenant1, 'greedy')).toBeUndefined();
      const e = await eventually(async () => {
        const r = await reasons(t1, 'greedy', 'greedy');
        expect(r.join('\n')).toContain('PlacementsOverwritten');
        return r;
      });
      return e.find((x) => x.startsWith('PlacementsOverwritten'))!;
    });

    await attempts.attempt('PLACEMENTS of a placed namespace raised to add r2, signature kept', async () => {
      await t1.patch(
        R.namespaces,
        undefined,
        'demo',
        { metadata: { annotations: { [PLACEMENTS]: '{"r1":3,"r2":5}' } } },
        'merge',
      );
      await eventually(async () => expect((await annotations(t1, 'demo'))[PLACEMENTS]).toBe('{"r1":3}'));
      expect(await trusted(t1, tenant1, 'demo')).toBe('{"r1":3}');
      return (
        await eventually(async () => {
          const r = (await reasons(t1, 'demo', 'demo')).filter((x) => x.startsWith('PlacementsOverwritten'));
          expect(r.length).toBeGreaterThan(0);
          return r;
        })
      )[0]!;
    });

    await attempts.attempt("a placed namespace's PLACEMENTS and SIGNATURE copied onto another namespace", async () => {
      const a = await annotations(t1, 'demo');
      await namespace(t1, 'copy', { [SLICE]: SLICE_DEMO, [PLACEMENTS]: a[PLACEMENTS]!, [SIGNATURE]: a[SIGNATURE]! });
      await eventually(async () => expect((await annotations(t1, 'copy'))[PLACEMENTS]).toBeUndefined());
      expect(await trusted(t1, tenant1, 'copy')).toBeUndefined();
      return (await reasons(t1, 'copy', 'copy')).join('; ');
    });

    await attempts.attempt("another tenant copies a same-named namespace's placements and signature", async () => {
      const a = await annotations(t1, 'demo');
      await namespace(
        t2,
        'demo',
        { [SLICE]: SLICE_DEMO, [PLACEMENTS]: a[PLACEMENTS]!, [SIGNATURE]: a[SIGNATURE]! },
        { cpu: '1000', memory: '1000Gi' },
      );
      expect(await trusted(t2, tenant2, 'demo')).toBeUndefined();
      await eventually(async () => expect((await annotations(t2, 'demo'))[PLACEMENTS]).toBeUndefined());
      return (await reasons(t2, 'demo', 'demo')).join('; ');
    });
  });

  it('super clusters written by the tenant on its Pods are replaced, restored or removed', async () => {
    await attempts.attempt('a Pod created with SUPER_CLUSTER r2 in a namespace placed on r1 only', async () => {
      await eventually(() => t1.create(R.pods, pod('a', '100m', { [SUPER_CLUSTER]: 'r2' })), 30_000);
      await eventually(async () => expect(await trusted(t1, tenant1, 'demo', 'a')).toBe('r1'));
      expect((await annotations(t1, 'demo', 'a'))[SUPER_CLUSTER]).toBe('r1');
      return (
        await eventually(async () => {
          const r = (await reasons(t1, 'demo', 'a')).filter((x) => x.startsWith('PlacementOverwritten'));
          expect(r.length).toBeGreaterThan(0);
          return r;
        })
      )[0]!;
    });

    await attempts.attempt("a placed Pod's SUPER_CLUSTER edited to r2", async () => {
      await t1.patch(R.pods, 'demo', 'a', { metadata: { annotations: { [SUPER_CLUSTER]: 'r2' } } }, 'merge');
      await eventually(async () => expect((await annotations(t1, 'demo', 'a'))[SUPER_CLUSTER]).toBe('r1'));
      expect(await trusted(t1, tenant1, 'demo', 'a')).toBe('r1');
      return (await reasons(t1, 'demo', 'a')).filter((x) => x.includes('restored'))[0] ?? 'restored to r1';
    });

    await attempts.attempt(
      "a placed Pod's SUPER_CLUSTER and SIGNATURE copied onto a Pod larger than a slice",
      async () => {
        const a = await annotations(t1, 'demo', 'a');
        await t1.create(R.pods, pod('big', '150m', { [SUPER_CLUSTER]: a[SUPER_CLUSTER]!, [SIGNATURE]: a[SIGNATURE]! }));
        expect(await trusted(t1, tenant1, 'demo', 'big')).toBeUndefined();
        await eventually(async () => expect((await annotations(t1, 'demo', 'big'))[SUPER_CLUSTER]).toBeUndefined());
        return (
          await eventually(async () => {
            const r = (await reasons(t1, 'demo', 'big')).filter((x) => x.startsWith('LargerThanSlice'));
            expect(r.length).toBeGreaterThan(0);
            return r;
          })
        )[0]!;
      },
    );
    expect(attempts.summary()).toBe('attempts 7, refused 7, succeeded 0');
  });

  it('a placement written back after the scheduler moved the namespace is put back, also by a restarted scheduler', async () => {
    /** recorded is the namespace's placements in the scheduler's record of tenant2, in the meta cluster. */
    const recorded = async (ns: string) =>
      parseRecord(await t.client.get(R.configmaps, 'kube-system', recordName(tenant2.key))).get(ns)?.placements;
    await namespace(t2, 'moving', { [SLICE]: SLICE_DEMO }, { cpu: '100m', memory: '100Mi' });
    const first = await eventually(async () => {
      const v = await trusted(t2, tenant2, 'moving');
      expect(v).toMatch(/^\{"r[12]":1\}$/);
      return v!;
    }, 30_000);
    const from = first.includes('r1') ? 'r1' : 'r2';
    const to = from === 'r1' ? 'r2' : 'r1';
    const kept = await annotations(t2, 'moving');
    supers.setState(from, 'draining');
    await eventually(async () => expect(await trusted(t2, tenant2, 'moving')).toBe(`{"${to}":1}`), 30_000);
    supers.setState(from, 'ready');
    expect(await recorded('moving')).toBe(`{"${to}":1}`);
    const writeBack = () =>
      t2.patch(
        R.namespaces,
        undefined,
        'moving',
        { metadata: { annotations: { [PLACEMENTS]: kept[PLACEMENTS]!, [SIGNATURE]: kept[SIGNATURE]! } } },
        'merge',
      );

    await attempts.attempt(`PLACEMENTS ${first} and its signature written back after the move to ${to}`, async () => {
      await writeBack();
      await eventually(async () => expect(await trusted(t2, tenant2, 'moving')).toBe(`{"${to}":1}`));
      expect(await recorded('moving')).toBe(`{"${to}":1}`);
      return `the record says ${to}: the annotation was written back to it`;
    });

    await attempts.attempt(`the same written back while the scheduler was down, before it started again`, async () => {
      await scheduler.stop();
      await writeBack();
      expect(await trusted(t2, tenant2, 'moving')).toBe(first);
      scheduler = new NamespaceScheduler(options);
      await scheduler.start();
      await eventually(async () => expect(await trusted(t2, tenant2, 'moving')).toBe(`{"${to}":1}`), 30_000);
      expect(await recorded('moving')).toBe(`{"${to}":1}`);
      return `the restarted scheduler counted the namespace from its record (${to}), not from the annotation`;
    });
    expect(attempts.summary()).toBe('attempts 9, refused 9, succeeded 0');
  });
});
