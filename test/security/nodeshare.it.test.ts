/**
 * Hostile tenant against a node's Pod slots (issue 31, §3): a tenant creates more Pods than its policy's per-node
 * share (pods.maxPodsPerNode) on a super cluster of two nodes. Its super Pods spread to at most the share on each node,
 * and the one beyond both shares stays Pending in the super cluster, its required node affinity naming the full nodes,
 * instead of taking another tenant's slots. Runs the real syncer and super scheduler on a real local super cluster.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, tenantFor } from '../harness.ts';
import { sharedTestSuper, type SharedTestSuper } from '../sharedsuper.ts';
import { Attempts } from './attempts.ts';

interface Pod extends KubeObject {
  spec: { nodeName?: string; affinity?: unknown };
}

const SHARE = 2;

const pod = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { containers: [{ name: 'c', image: 'nginx' }] },
});

describe('hostile tenant against the Pod slots of a node', () => {
  const attempts = new Attempts();
  let t: SharedTestSuper;
  let a: KubeClient;
  let tenant: Tenant;
  let syncer: Syncer;

  const superPod = (name: string) => t.client.get<Pod>(R.pods, superNamespace(tenant.key, 'default'), name);

  beforeAll(async () => {
    t = await sharedTestSuper();
    const cp = await t.sc.addControlPlane('tenant-share', { controllers: TENANT_CONTROLLERS });
    a = await cp.client();
    tenant = tenantFor(cp, 'team-s', 's', randomUUID(), {
      pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
      pods: { maxPodsPerNode: SHARE },
    });
    syncer = new Syncer({
      superClient: t.client,
      host: await PluginHost.load({ process: 'manager', builtins: builtinPlugins }),
      registry: new MutableTenantRegistry([tenant]),
      patrolIntervalMs: 0,
      workers: 4,
    });
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenant.key)).toBe(true));
    await eventually(() => a.get(R.serviceaccounts, 'default', 'default'), 60_000);
  }, 240_000);

  afterAll(async () => {
    attempts.report('node Pod slots');
    await syncer?.stop();
    await t?.stop();
  });

  it('spreads the tenant to its share on each node and leaves the Pod beyond every share Pending', async () => {
    await attempts.attempt('more Pods than its per-node share on every node', async () => {
      const nodes: string[] = [];
      // One at a time: the share is decided when the super Pod is created, from the Pods already bound.
      for (let i = 0; i < 2 * SHARE; i++) {
        await a.create(R.pods, pod(`p-${i}`));
        const bound = await eventually(async () => {
          const p = await superPod(`p-${i}`);
          expect(p.spec.nodeName).toBeTruthy();
          return p.spec.nodeName!;
        }, 60_000);
        nodes.push(bound);
      }
      const perNode = new Map<string, number>();
      for (const n of nodes) perNode.set(n, (perNode.get(n) ?? 0) + 1);
      expect([...perNode.values()]).toEqual([SHARE, SHARE]);
      await a.create(R.pods, pod('beyond'));
      const beyond = await eventually(() => superPod('beyond'), 60_000);
      expect(JSON.stringify(beyond.spec.affinity)).toContain('"operator":"NotIn"');
      // The scheduler has looked at it and found no node: it stays unbound.
      const reason = await eventually(async () => {
        const p = await superPod('beyond');
        const c = (
          p.status as { conditions?: Array<{ type: string; status: string; message?: string }> } | undefined
        )?.conditions?.find((x) => x.type === 'PodScheduled');
        expect(c?.status).toBe('False');
        expect(p.spec.nodeName).toBeUndefined();
        return c?.message ?? '';
      }, 60_000);
      return `Pending in the super cluster: ${reason}`;
    });
  });
});
