import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { PLACEMENTS, SLICE, SUPER_CLUSTER } from '../../core/scheduler/annotations.ts';
import { NamespaceScheduler, PLACED_CONDITION } from '../../core/scheduler/controller.ts';
import { PlacementRecords } from '../../core/scheduler/placementrecord.ts';
import { SIGNATURE } from '../../core/scheduler/signature.ts';
import { StaticSuperClusters } from '../../core/scheduler/testing.ts';
import { STATE_CONFIGMAP, type SchedulerState } from '../../core/scheduler/state.ts';
import { CLUSTERS_RESOURCE, setDraining } from '../../core/programs/cli/drain.ts';
import { clusterState, type ClusterObject } from '../../core/superclusters/registration.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';

type Obj = KubeObject & {
  status?: { phase?: string; conditions?: Array<{ type: string; status: string; reason?: string }> };
};

// The smallest Cluster API Cluster CRD: enough to hold the DRAINING annotation (s1 ships the real one in deploy/).
const minimalClusterCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'clusters.cluster.x-k8s.io' },
  spec: {
    group: 'cluster.x-k8s.io',
    scope: 'Namespaced',
    names: { plural: 'clusters', singular: 'cluster', kind: 'Cluster', listKind: 'ClusterList' },
    versions: [
      {
        name: 'v1beta1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

const SLICE_DEMO = '{"cpu":"100m","memory":"100Mi"}';

// Two super clusters (r1: the harness's super cluster, r2: a second control plane with its own kwok node, on the
// same etcd) and two tenant control planes: t1 with controllers (quota, Deployments), t2 pinned to r2.
describe('namespace scheduler over two super clusters', () => {
  let t: TestSuper;
  let r2: LocalControlPlane;
  let cp1: LocalControlPlane;
  let cp2: LocalControlPlane;
  let t1: KubeClient;
  let t2: KubeClient;
  let r2Client: KubeClient;
  let tenant1: Tenant;
  let tenant2: Tenant;
  let supers: StaticSuperClusters;
  let registry: MutableTenantRegistry;
  let scheduler: NamespaceScheduler;
  const key = randomBytes(32);

  const newScheduler = () =>
    new NamespaceScheduler({
      tenants: registry,
      supers,
      signingKey: key,
      publish: { client: t.client, namespace: 'default' },
      records: new PlacementRecords(t.client, 'default'),
      publishIntervalMs: 200,
      startupGraceMs: 10_000,
    });
  // A kwok node's allocatable can reach the cache after the scheduler starts (a loaded machine registers r2's node
  // late); until then r2 holds nothing and spread rightly places everything on r1. The cases need both counted.
  const capacityKnown = () =>
    eventually(async () => {
      const c = scheduler.capacity();
      for (const name of ['r1', 'r2']) expect(c.get(name)?.allocatable.cpu ?? 0n, name).toBeGreaterThan(0n);
    }, 60_000);
  const annotation = async (c: KubeClient, ns: string, name?: string, a = PLACEMENTS) =>
    name === undefined
      ? (await c.get(R.namespaces, undefined, ns)).metadata?.annotations?.[a]
      : (await c.get(R.pods, ns, name)).metadata?.annotations?.[SUPER_CLUSTER];
  const placed = (c: KubeClient, ns: string, want: string) =>
    eventually(async () => expect(await annotation(c, ns)).toBe(want), 30_000);
  const slicedNamespace = async (c: KubeClient, name: string, slice: string, hard: Record<string, string>) => {
    await c.create(R.namespaces, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, annotations: { [SLICE]: slice } },
    });
    await c.create(R.resourcequotas, {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'quota', namespace: name },
      spec: { hard },
    } as KubeObject);
  };
  const pod = (ns: string, name: string, cpu: string, memory: string) =>
    ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns },
      spec: { containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu, memory } } }] },
    }) as KubeObject;
  // The quota controller must have counted the quota before admission lets Pods in.
  const createPod = (c: KubeClient, p: KubeObject) => eventually(() => c.create(R.pods, p), 30_000);
  const events = async (c: KubeClient, ns: string, name: string) =>
    (
      await c.list<KubeObject & { reason?: string; message?: string; involvedObject?: { name?: string } }>(R.events, {
        namespace: ns,
      })
    ).items.filter((e) => e.involvedObject?.name === name);
  const allPlacements = async (c: KubeClient) =>
    Object.fromEntries(
      (await c.list(R.namespaces)).items.map((n) => [n.metadata!.name!, n.metadata?.annotations?.[PLACEMENTS]]),
    );
  const podPlacements = async (c: KubeClient, ns: string) =>
    Object.fromEntries(
      (await c.list<Obj>(R.pods, { namespace: ns })).items.map((p) => [
        p.metadata!.name!,
        p.metadata?.annotations?.[SUPER_CLUSTER],
      ]),
    );

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    [r2, cp1, cp2] = await Promise.all([
      t.sc.addControlPlane('r2', { kwokNodes: 1, controllerManager: false }),
      t.sc.addControlPlane('t1', { controllers: TENANT_CONTROLLERS }),
      t.sc.addControlPlane('t2', { controllerManager: false }),
    ]);
    [r2Client, t1, t2] = await Promise.all([r2.client(), cp1.client(), cp2.client()]);
    tenant1 = tenantFor(cp1, 'team-a', 'one', '11111111-aaaa-4aaa-8aaa-000000000001');
    tenant2 = tenantFor(cp2, 'team-b', 'two', '22222222-bbbb-4bbb-8bbb-000000000002', { superCluster: 'r2' });
    supers = new StaticSuperClusters([
      { name: 'r1', state: 'ready', client: t.client },
      { name: 'r2', state: 'ready', client: r2Client },
    ]);
    registry = new MutableTenantRegistry([tenant1, tenant2]);
    scheduler = newScheduler();
    await scheduler.start();
    await capacityKnown();
  }, 120_000);

  afterAll(async () => {
    await scheduler?.stop();
    for (const c of [t1, t2, r2Client]) c?.close();
    await t?.stop();
  });

  it('the demo: slice 100m/100Mi, quota 200m/200Mi → {"r1":1,"r2":1}; a Deployment scaled to 2 gets r1 then r2', async () => {
    await slicedNamespace(t1, 'demo', SLICE_DEMO, { cpu: '200m', memory: '200Mi' });
    await placed(t1, 'demo', '{"r1":1,"r2":1}');
    const ns = await t1.get<Obj>(R.namespaces, undefined, 'demo');
    expect(ns.metadata?.annotations?.[SIGNATURE]).toMatch(/^v1\./);
    await eventually(async () => {
      const c = (await t1.get<Obj>(R.namespaces, undefined, 'demo')).status?.conditions ?? [];
      expect(c.find((x) => x.type === PLACED_CONDITION)?.status).toBe('True');
    });
    const deploy = (replicas: number) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'demo' },
      spec: {
        replicas,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: '100m', memory: '100Mi' } } }],
          },
        },
      },
    });
    await eventually(() => t1.create(R.deployments, deploy(1) as KubeObject), 30_000);
    await eventually(async () => expect(Object.values(await podPlacements(t1, 'demo'))).toEqual(['r1']), 30_000);
    await t1.patch(R.deployments, 'demo', 'web', { spec: { replicas: 2 } }, 'merge');
    await eventually(
      async () => expect(Object.values(await podPlacements(t1, 'demo')).sort()).toEqual(['r1', 'r2']),
      30_000,
    );
  });

  it('a Pod that fits no free slice stays Pending with an Event and PodScheduled=False', async () => {
    await slicedNamespace(t1, 'frag', SLICE_DEMO, { cpu: '200m', memory: '200Mi' });
    await placed(t1, 'frag', '{"r1":1,"r2":1}');
    for (const n of ['a', 'b']) {
      await createPod(t1, pod('frag', n, '60m', '60Mi'));
      await eventually(async () => expect(await annotation(t1, 'frag', n)).toMatch(/^r[12]$/));
    }
    expect(new Set(Object.values(await podPlacements(t1, 'frag')))).toEqual(new Set(['r1', 'r2']));
    await createPod(t1, pod('frag', 'c', '60m', '60Mi'));
    await eventually(async () => {
      const e = await events(t1, 'frag', 'c');
      expect(e.map((x) => x.reason)).toContain('NoFreeSlice');
      const p = await t1.get<Obj>(R.pods, 'frag', 'c');
      expect(p.status?.conditions?.find((x) => x.type === 'PodScheduled')?.status).toBe('False');
    });
    expect(await annotation(t1, 'frag', 'c')).toBeUndefined();
  });

  it('a quota that fits nowhere leaves the namespace unplaced with an Event and a condition', async () => {
    await slicedNamespace(t1, 'huge', '{"cpu":"10"}', { cpu: '100' });
    await eventually(async () => {
      expect((await events(t1, 'huge', 'huge')).map((x) => x.reason)).toContain('NoRoom');
      const c = (await t1.get<Obj>(R.namespaces, undefined, 'huge')).status?.conditions ?? [];
      expect(c.find((x) => x.type === PLACED_CONDITION)).toMatchObject({ status: 'False', reason: 'NoRoom' });
    });
    expect(await annotation(t1, 'huge')).toBeUndefined();
  });

  it('spec.superCluster pins every namespace of a tenant, sliced or whole', async () => {
    await t2.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'plain' } });
    await slicedNamespace(t2, 'sliced', SLICE_DEMO, { cpu: '200m', memory: '200Mi' });
    await placed(t2, 'plain', '{"r2":1}');
    await placed(t2, 'sliced', '{"r2":2}');
    const all = await allPlacements(t2);
    for (const [ns, p] of Object.entries(all)) expect(p, ns).toBe(ns === 'sliced' ? '{"r2":2}' : '{"r2":1}');
  });

  it('publishes the per-cluster summary in the meta cluster', async () => {
    await eventually(async () => {
      const cm = await t.client.get<KubeObject & { data?: Record<string, string> }>(
        R.configmaps,
        'default',
        STATE_CONFIGMAP.name,
      );
      const s = JSON.parse(cm.data![STATE_CONFIGMAP.key]!) as SchedulerState;
      expect(s.clusters.r1!.placedSlices).toBe(2); // demo and frag
      expect(s.clusters.r2!.placedSlices).toBe(4); // demo, frag and t2's sliced
      expect(s.clusters.r1!.free.cpu).toBe('31800m');
    });
  });

  it('a restarted scheduler keeps every placement and moves nothing', async () => {
    const before = { t1: await allPlacements(t1), t2: await allPlacements(t2), demo: await podPlacements(t1, 'demo') };
    const frag = await podPlacements(t1, 'frag');
    await scheduler.stop();
    scheduler = newScheduler();
    await scheduler.start();
    await capacityKnown();
    await eventually(() => expect(scheduler.tenantReady(tenant1.key) && scheduler.tenantReady(tenant2.key)).toBe(true));
    // The pending Pod is tried again (and is still pending): the restarted scheduler has looked at everything.
    await eventually(() => expect(scheduler.stats.pending).toBeGreaterThan(0));
    await new Promise((r) => setTimeout(r, 1000));
    expect(scheduler.stats.placementWrites).toBe(0);
    expect(await allPlacements(t1)).toEqual(before.t1);
    expect(await allPlacements(t2)).toEqual(before.t2);
    expect(await podPlacements(t1, 'demo')).toEqual(before.demo);
    expect(await podPlacements(t1, 'frag')).toEqual(frag);
  });

  it('an unreachable super cluster gets nothing new; its placements stay', async () => {
    supers.setState('r2', 'unreachable');
    await slicedNamespace(t1, 'later', SLICE_DEMO, { cpu: '200m', memory: '200Mi' });
    await placed(t1, 'later', '{"r1":2}');
    await t2.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'stuck' } });
    await eventually(async () =>
      expect((await events(t2, 'stuck', 'stuck')).map((x) => x.reason)).toContain('PinnedUnavailable'),
    );
    expect(await annotation(t1, 'demo')).toBe('{"r1":1,"r2":1}');
    supers.setState('r2', 'ready');
    await placed(t2, 'stuck', '{"r2":1}');
  });

  it('drain moves slices where room allows and evicts the Pods left there; the Deployment comes back on r1', async () => {
    // `vc superclusters drain r2` annotates the registered Cluster; the registry reads it as the draining state.
    await t.client.create(R.crds, minimalClusterCrd as KubeObject);
    await eventually(() => t.client.list(CLUSTERS_RESOURCE, { namespace: 'default' }), 30_000);
    await t.client.create(CLUSTERS_RESOURCE, {
      apiVersion: 'cluster.x-k8s.io/v1beta1',
      kind: 'Cluster',
      metadata: { name: 'r2', namespace: 'default' },
    });
    expect(await setDraining(t.client, 'r2', undefined, true)).toBe('default/r2');
    const cluster = await t.client.get<KubeObject & ClusterObject>(CLUSTERS_RESOURCE, 'default', 'r2');
    supers.setState('r2', clusterState(cluster, true));
    await placed(t1, 'demo', '{"r1":2}');
    await placed(t1, 'frag', '{"r1":2}');
    await eventually(async () => {
      const pods = (await t1.list<Obj>(R.pods, { namespace: 'demo' })).items.filter(
        (p) => !p.metadata?.deletionTimestamp,
      );
      expect(pods.map((p) => p.metadata?.annotations?.[SUPER_CLUSTER])).toEqual(['r1', 'r1']);
    }, 45_000);
    for (const [ns, p] of Object.entries(await allPlacements(t1))) expect(p ?? '', ns).not.toContain('r2');
    // t2 is pinned to r2: nothing of it can move, and it says so.
    expect(await annotation(t2, 'sliced')).toBe('{"r2":2}');
    await eventually(async () =>
      expect((await events(t2, 'sliced', 'sliced')).map((x) => x.reason)).toContain('DrainBlocked'),
    );
  });
});
