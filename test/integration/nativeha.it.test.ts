import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { NativeProvisioner } from '../../core/provisioners/native/provisioner.ts';
import { MEMBERS_CHANGE_REFUSED } from '../../core/provisioners/native/version.ts';
import { ProvisionRefused } from '../../core/provisioners/provisioner.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { rootNamespace } from '../../core/names/names.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const crdDir = join(import.meta.dirname, '../../deploy/crds');

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string };
}
interface Node extends KubeObject {
  spec?: { taints?: Array<{ key: string; effect: string }> };
}
interface StatefulSet extends KubeObject {
  spec: {
    replicas: number;
    template: { spec: { hostAliases?: Array<{ ip: string; hostnames: string[] }> } };
  };
}
interface Service extends KubeObject {
  spec: { clusterIP?: string };
}

/**
 * A native tenant of three members on a real super cluster of three kwok nodes (kwok runs no container, so this file
 * holds what the super cluster does with the objects; test/realnode/nativeha.ts runs them): the super
 * cluster accepts them, each member's Service gets a ClusterIP that every control-plane Pod maps its member's name
 * to, the scheduler puts the three members of each component on three nodes (the preferred anti-affinity), and a
 * change of the member count of the running tenant is refused with nothing applied.
 */
describe('a native tenant of three members on a super cluster of three nodes', () => {
  let t: TestSuper;
  let native: NativeProvisioner;
  let vc: VirtualCluster;
  let root: string;

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 3 });
    // A new Node carries node.kubernetes.io/not-ready:NoSchedule from its admission until the node lifecycle controller
    // sees it Ready and lifts it; the scheduler leaves a tainted node out, and the spread below is only preferred.
    await eventually(async () => {
      const nodes = (await t.client.list<Node>(R.nodes)).items;
      expect(nodes).toHaveLength(3);
      for (const n of nodes)
        expect(n.spec?.taints?.filter((x) => x.effect === 'NoSchedule') ?? [], n.metadata!.name).toEqual([]);
    }, 60_000);
    for (const f of readdirSync(crdDir).filter((f) => f.endsWith('.yaml'))) {
      for (const d of parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    }
    await eventually(() => t.client.list(R.virtualclusters));
    // etcd's data in a host directory: no volume provisioner here, and kwok creates nothing on the host
    native = new NativeProvisioner(t.client, { etcdHostPathDir: '/nonexistent/vc-nativeha' });
    vc = await t.client.create<VirtualCluster>(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'ha', namespace: 'default' },
      spec: { provisioner: { type: 'native' }, controlPlane: { replicas: 3 } },
    });
    root = rootNamespace('default', 'ha', vc.metadata!.uid!);
  }, 300_000);

  afterAll(async () => {
    await t?.stop();
  });

  it('maps each member name to its own Service and spreads each component over the three nodes', async () => {
    const first = await native.ensure(vc, root);
    expect(first.ready).toBe(false);
    const ips: string[] = [];
    for (const i of [0, 1, 2]) {
      const svc = await t.client.get<Service>(R.services, root, `etcd-${i}`);
      expect(svc.spec.clusterIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      ips.push(svc.spec.clusterIP!);
    }
    for (const c of ['etcd', 'apiserver', 'controller-manager']) {
      const sts = await t.client.get<StatefulSet>(R.statefulsets, root, c);
      expect(sts.spec.template.spec.hostAliases, c).toEqual(
        expect.arrayContaining(ips.map((ip, i) => ({ ip, hostnames: [`etcd-${i}.etcd.${root}.svc`] }))),
      );
    }
    expect((await t.client.get<StatefulSet>(R.statefulsets, root, 'etcd')).spec.replicas).toBe(3);
    expect((await t.client.get<StatefulSet>(R.statefulsets, root, 'apiserver')).spec.replicas).toBe(3);
    expect((await t.client.get<StatefulSet>(R.statefulsets, root, 'controller-manager')).spec.replicas).toBe(2);

    const placed = await eventually(
      async () => {
        const pods = (await t.client.list<Pod>(R.pods, { namespace: root })).items;
        expect(pods.filter((p) => p.status?.phase === 'Running')).toHaveLength(8);
        return pods;
      },
      120_000,
      500,
    );
    const nodesOf = (component: string) =>
      new Set(placed.filter((p) => p.metadata!.name!.startsWith(`${component}-`)).map((p) => p.spec?.nodeName));
    expect(nodesOf('etcd').size).toBe(3);
    expect(nodesOf('apiserver').size).toBe(3);
    expect(nodesOf('controller-manager').size).toBe(2);
  });

  it('refuses a change of the member count with the field and reason, and applies nothing', async () => {
    const before = await t.client.get<StatefulSet>(R.statefulsets, root, 'etcd');
    const smaller = { ...vc, spec: { ...vc.spec, controlPlane: { replicas: 1 as const } } };
    const e = await native.ensure(smaller, root).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ProvisionRefused);
    expect((e as ProvisionRefused).reason).toBe(MEMBERS_CHANGE_REFUSED);
    expect((e as ProvisionRefused).message).toMatch(
      /^spec\.controlPlane\.replicas: the tenant's etcd runs 3 member\(s\) and keeps that count \(asked: 1\)/,
    );
    const after = await t.client.get<StatefulSet>(R.statefulsets, root, 'etcd');
    // The generation moves with the spec only (the StatefulSet controller's status writes move the resourceVersion).
    expect(after.metadata?.generation).toBe(before.metadata?.generation);
    expect(after.spec.replicas).toBe(3);
  });
});
