/**
 * vNodes before the first Pod (issue 13): the platform's policy (nodes.view) decides whether a tenant sees only the
 * nodes its Pods run on (the default) or every Ready node its Pods may be placed on. Tenant A's policy shows the
 * schedulable nodes of its forced pool; tenant B has the default. A fresh A lists its pool's nodes before any Pod and
 * follows them as super nodes are relabelled, added and removed; B sees nothing until its first Pod. Hostile: neither
 * tenant widens its view by anything it writes, and A never learns a node outside its pool. Runs the real syncer
 * against a real local super cluster (kwok nodes) and two tenant control planes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { kwokNode, type LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { syncerMetrics } from '../../core/syncer/metrics.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import { Attempts } from './attempts.ts';

interface Node extends KubeObject {
  status?: { conditions?: Array<{ type: string; status: string }>; capacity?: Record<string, string> };
}

interface Pod extends KubeObject {
  spec: { nodeName?: string; [field: string]: unknown };
  status?: { phase?: string; conditions?: Array<{ type: string; status: string; reason?: string }> };
}

const POOL = 'pool.platform.example/name';

/** notOwnedSkips reads how often the syncer left a tenant's own Node alone (vc_syncer_skips_total, NotOwned). */
async function notOwnedSkips(tenant: string): Promise<number> {
  const m = await syncerMetrics.skips.get();
  return m.values.find((v) => v.labels.tenant === tenant && v.labels.reason === 'NotOwned')?.value ?? 0;
}

const pod = (name: string, spec: Record<string, unknown> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { containers: [{ name: 'c', image: 'nginx' }], ...spec },
});

describe('vNodes of the schedulable view, and a tenant that tries to see more nodes', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let cpA: LocalControlPlane;
  let cpB: LocalControlPlane;
  let a: KubeClient;
  let b: KubeClient;
  let tenantA: Tenant;
  let tenantB: Tenant;
  let syncer: Syncer;
  let gold: string[];
  let silver: string;

  const nodeNames = async (c: KubeClient): Promise<string[]> =>
    (await c.list(R.nodes)).items.map((n) => n.metadata!.name!).sort();
  const setPool = (node: string, pool: string) =>
    t.client.patch(R.nodes, undefined, node, { metadata: { labels: { [POOL]: pool } } }, 'merge');

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 3 });
    const names = (await t.client.list(R.nodes)).items.map((n) => n.metadata!.name!).sort();
    gold = names.slice(0, 2);
    silver = names[2]!;
    for (const n of gold) await setPool(n, 'gold');
    await setPool(silver, 'silver');
    [cpA, cpB] = await Promise.all([
      t.sc.addControlPlane('tenant-a', { controllers: TENANT_CONTROLLERS }),
      t.sc.addControlPlane('tenant-b', { controllers: TENANT_CONTROLLERS }),
    ]);
    a = await cpA.client();
    b = await cpB.client();
    tenantA = tenantFor(cpA, 'team-a', 'a', '11111111-aaaa-4aaa-8aaa-0000000000a3', {
      pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
      nodes: { view: 'schedulable' },
      pods: { forced: { nodeSelector: { [POOL]: 'gold' } } },
    });
    // B's VirtualCluster author asks for the wider view in the plugin settings it controls: not the policy's field.
    tenantB = tenantFor(cpB, 'team-b', 'b', '22222222-bbbb-4bbb-8bbb-0000000000b3', {
      pluginConfig: { nodes: { vnAgent: { port: 10550 }, view: 'schedulable' } },
    });
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({
      superClient: t.client,
      host,
      registry: new MutableTenantRegistry([tenantA, tenantB]),
      patrolIntervalMs: 0,
      workers: 4,
    });
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenantA.key) && syncer.tenantReady(tenantB.key)).toBe(true));
  }, 240_000);

  afterAll(async () => {
    attempts.report('nodes view');
    await syncer?.stop();
    await t?.stop();
  });

  it('a fresh tenant under the schedulable view lists the Ready nodes of its pool before any Pod', async () => {
    await eventually(async () => expect(await nodeNames(a)).toEqual(gold));
    expect((await a.list(R.pods)).items).toEqual([]);
    for (const n of (await a.list<Node>(R.nodes)).items) {
      expect(n.status?.conditions).toEqual([expect.objectContaining({ type: 'Ready', status: 'True' })]);
      // Scrubbed as every vNode: the platform's pool label is not in the allow-list.
      expect(n.metadata?.labels?.[POOL]).toBeUndefined();
      expect(n.metadata?.labels?.['tenancy.x-k8s.io/vnode']).toBe('true');
    }
  });

  it('the default view is unchanged: no Nodes before the first Pod, then exactly the node it runs on', async () => {
    await eventually(async () => expect(await nodeNames(a)).toEqual(gold));
    expect(await nodeNames(b)).toEqual([]);
    await eventually(() => b.get(R.serviceaccounts, 'default', 'default'));
    await b.create(R.pods, pod('first'));
    const p = await eventually(async () => {
      const got = await b.get<Pod>(R.pods, 'default', 'first');
      expect(got.status?.phase).toBe('Running');
      expect(got.spec.nodeName).toBeTruthy();
      return got;
    }, 90_000);
    await eventually(async () => expect(await nodeNames(b)).toEqual([p.spec.nodeName]));
  });

  it('follows super nodes: out of the pool and back, a new node of the pool, a node removed', async () => {
    await setPool(gold[1]!, 'silver');
    await eventually(async () => expect(await nodeNames(a)).toEqual([gold[0]]));
    await setPool(gold[1]!, 'gold');
    await eventually(async () => expect(await nodeNames(a)).toEqual(gold));
    const extra = kwokNode('kwok-extra');
    (extra.metadata as { labels: Record<string, string> }).labels[POOL] = 'gold';
    await t.client.create(R.nodes, extra);
    await eventually(async () => {
      const n = await a.get<Node>(R.nodes, undefined, 'kwok-extra');
      expect(n.status?.conditions).toContainEqual(expect.objectContaining({ type: 'Ready', status: 'True' }));
    }, 60_000);
    await t.client.delete(R.nodes, undefined, 'kwok-extra');
    await eventually(async () => expect(await nodeNames(a)).toEqual(gold));
  });

  it('a tenant with the default view gets no more nodes from labels and annotations it writes', async () => {
    await attempts.attempt('namespace labels and annotations asking for every node', async () => {
      const ask = {
        metadata: {
          labels: { 'tenancy.x-k8s.io/nodes-view': 'schedulable', 'nodes.view': 'schedulable' },
          annotations: { 'tenancy.x-k8s.io/nodes': 'schedulable', 'tenancy.x-k8s.io/nodes-view': 'schedulable' },
        },
      };
      for (const ns of ['default', 'kube-system']) await b.patch(R.namespaces, undefined, ns, ask, 'merge');
      const before = await nodeNames(b);
      // A change the syncer must carry down after the labels: once it is there, the syncer has seen them.
      await b.create(R.configmaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'after-labels', namespace: 'default' },
      });
      await eventually(() => t.client.get(R.configmaps, superNamespace(tenantB.key, 'default'), 'after-labels'));
      await new Promise((r) => setTimeout(r, 2000));
      expect(before).toHaveLength(1);
      expect(await nodeNames(b)).toEqual(before);
      return `still only the node of its Pod (${before.join(', ')}) of 3 super nodes`;
    });
    await attempts.attempt("spec.pluginConfig.nodes.view of the tenant's own settings", async () => {
      expect(tenantB.pluginConfig).toMatchObject({ nodes: { view: 'schedulable' } });
      expect((await nodeNames(b)).length).toBe(1);
      return 'the view is the policy field nodes.view; pluginConfig.nodes.view is ignored (and refused by the schema)';
    });
    const forged = { 'tenancy.x-k8s.io/managed-by': 'vc-syncer', 'tenancy.x-k8s.io/vnode': 'true' };
    for (const [how, labels] of [
      ['', undefined],
      [" with the syncer's labels forged", forged],
    ] as const)
      await attempts.attempt(
        `create a Node named after a super node it has no Pod on${how} (withPods view)`,
        async () => {
          const mine = await nodeNames(b);
          const other = (await t.client.list(R.nodes)).items
            .map((n) => n.metadata!.name!)
            .find((n) => !mine.includes(n))!;
          const handled = await notOwnedSkips(tenantB.key);
          const made = await b.create(R.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: other, labels } });
          // Its creation queues the key; an adopted Node would get the super node's data for the 120 s grace period.
          // Read until the syncer has handled it: skipped as not its own, or (labels forged) marked empty, which it is
          // only once the node has stayed empty for the settle time (15 s), with the time the syncer first saw it.
          const reads: Node[] = [];
          let markedAt = 0;
          await eventually(async () => {
            const n = await b.get<Node>(R.nodes, undefined, other);
            reads.push(n);
            if (labels) {
              expect(n.metadata?.annotations?.['tenancy.x-k8s.io/empty-since']).toBeDefined();
              markedAt = Date.now();
            } else expect(await notOwnedSkips(tenantB.key)).toBeGreaterThan(handled);
          });
          if (labels) {
            const since = Date.parse(reads.at(-1)!.metadata!.annotations!['tenancy.x-k8s.io/empty-since']!);
            expect(since).toBeGreaterThanOrEqual(Date.parse(made.metadata!.creationTimestamp!));
            expect(markedAt - since).toBeGreaterThanOrEqual(15_000);
          }
          for (const n of reads) {
            expect(n.status?.capacity).toBeUndefined();
            expect(n.status?.conditions).toBeUndefined();
            expect(n.metadata?.labels).toEqual(labels);
          }
          await b.delete(R.nodes, undefined, other);
          return `none of the super node's data in ${reads.length} reads until the syncer had handled it`;
        },
      );
  });

  it('a tenant never learns a node its placement excludes', async () => {
    await eventually(async () => expect(await nodeNames(a)).toEqual(gold));
    await attempts.attempt('create a Node named after the excluded node', async () => {
      await a.create(R.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: silver } });
      // Its creation queues the key; the syncer leaves a Node it did not write alone, and must fill in nothing.
      const reads: Node[] = [];
      const until = Date.now() + 5000;
      while (Date.now() < until) {
        reads.push(await a.get<Node>(R.nodes, undefined, silver));
        await new Promise((r) => setTimeout(r, 100));
      }
      for (const n of reads) {
        expect(n.status?.capacity).toBeUndefined();
        expect(n.status?.conditions).toBeUndefined();
        expect(n.metadata?.labels?.['tenancy.x-k8s.io/vnode']).toBeUndefined();
      }
      await a.delete(R.nodes, undefined, silver);
      return `none of the super node's data in ${reads.length} reads over 5 s (the syncer deletes only vNodes it wrote)`;
    });
    await attempts.attempt('a Pod selecting the excluded pool', async () => {
      await eventually(() => a.get(R.serviceaccounts, 'default', 'default'));
      await a.create(R.pods, pod('to-silver', { nodeSelector: { [POOL]: 'silver' } }));
      const c = await eventually(async () => {
        const got = await a.get<Pod>(R.pods, 'default', 'to-silver');
        const cond = got.status?.conditions?.find((x) => x.type === 'VCSynced');
        expect(cond).toMatchObject({ status: 'False', reason: 'PodPolicyViolation' });
        return cond!;
      });
      expect(await nodeNames(a)).toEqual(gold);
      return `refused (${c.reason}); the excluded node stays unseen`;
    });
    await attempts.attempt('a Pod naming the excluded node in spec.nodeName', async () => {
      await a.create(R.pods, pod('on-silver', { nodeName: silver }));
      await new Promise((r) => setTimeout(r, 2000));
      expect(await t.client.getOrNull(R.pods, superNamespace(tenantA.key, 'default'), 'on-silver')).toBeNull();
      expect(await nodeNames(a)).toEqual(gold);
      return 'not synced (a tenant Pod cannot choose its node); the excluded node stays unseen';
    });
    expect(attempts.summary()).toMatch(/succeeded 0$/);
  });

  it('a Pod bound by name to its own node passes no taint or cordon the scheduler would have kept it from', async () => {
    // B's first Pod runs on a node; the platform then taints that node for another team, or cordons it to drain it.
    // spec.nodeName skips the scheduler and the kubelet checks neither, so only the syncer can refuse.
    const node = (await b.get<Pod>(R.pods, 'default', 'first')).spec.nodeName!;
    const superNode = await t.client.get<Node & { spec?: { taints?: object[] } }>(R.nodes, undefined, node);
    const taints = superNode.spec?.taints ?? [];
    // The syncer decides from its cache of super nodes; B's vNode mirrors that node's taints, so once it shows (or no
    // longer shows) a taint the syncer has seen the change. An attack racing the platform's own write is not one.
    const vNodeTainted = (key: string, present: boolean) =>
      eventually(async () => {
        const v = await b.get<Node & { spec?: { taints?: Array<{ key: string }> } }>(R.nodes, undefined, node);
        expect((v.spec?.taints ?? []).some((x) => x.key === key)).toBe(present);
      });
    const refusedByName = async (name: string): Promise<string> => {
      await b.create(R.pods, pod(name, { nodeName: node }));
      const c = await eventually(async () => {
        const got = await b.get<Pod>(R.pods, 'default', name);
        const cond = got.status?.conditions?.find((x) => x.type === 'VCSynced');
        expect(cond).toMatchObject({ status: 'False', reason: 'NodeNameRefused' });
        return cond!;
      });
      expect(await t.client.getOrNull(R.pods, superNamespace(tenantB.key, 'default'), name)).toBeNull();
      await b.delete(R.pods, 'default', name);
      return `refused (${c.reason})`;
    };
    await attempts.attempt("spec.nodeName to the tenant's node after it was tainted for another team", async () => {
      const dedicated = { key: 'dedicated', value: 'team-a', effect: 'NoSchedule' };
      await t.client.patch(R.nodes, undefined, node, { spec: { taints: [...taints, dedicated] } }, 'merge');
      try {
        await vNodeTainted('dedicated', true);
        return await refusedByName('by-name-tainted');
      } finally {
        await t.client.patch(R.nodes, undefined, node, { spec: { taints } }, 'merge');
        await vNodeTainted('dedicated', false);
      }
    });
    await attempts.attempt("spec.nodeName to the tenant's node while it is cordoned", async () => {
      await t.client.patch(R.nodes, undefined, node, { spec: { unschedulable: true } }, 'merge');
      try {
        // The super cluster's node lifecycle controller taints a cordoned node; the vNode mirrors that taint.
        await vNodeTainted('node.kubernetes.io/unschedulable', true);
        return await refusedByName('by-name-cordoned');
      } finally {
        await t.client.patch(R.nodes, undefined, node, { spec: { unschedulable: null } }, 'merge');
      }
    });
    expect(attempts.summary()).toMatch(/succeeded 0$/);
  });
});
