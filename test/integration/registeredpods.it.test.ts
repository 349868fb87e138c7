/**
 * The fence of a confined local control plane (core/dev/local/netconfine.ts) lets it reach only its own tenant's Pods,
 * whose addresses SuperPodAddresses follows. A super cluster registered at run time runs the tenant's Pods too: the
 * manager follows its Pods while it is registered (RegisteredPods, fed by the real SuperClusterRegistry) and leaves
 * them, telling the tenant, when its registration goes. Real super clusters, registered as a user registers them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject, Resource } from '../../core/kube/client.ts';
import { InformerFactory } from '../../core/kube/factory.ts';
import { R } from '../../core/kube/resources.ts';
import { REGISTRATION_NAMESPACE } from '../../core/dev/local/registration.ts';
import { superPodsOf } from '../../core/programs/manager/lifecycle.ts';
import { RegisteredPods } from '../../core/programs/manager/registered.ts';
import { SuperPodAddresses } from '../../core/provisioners/podaddresses.ts';
import { CLUSTERS } from '../../core/superclusters/registration.ts';
import { SuperClusterRegistry } from '../../core/superclusters/registry.ts';
import { LABEL, MANAGER } from '../../plugins/sdk/src/names.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const ROOT = 'tenant-fenced-1a2b3c';

interface Pod extends KubeObject {
  status?: { podIP?: string; phase?: string };
}

/** tenantPod is a Pod as the syncer writes it for tenant ROOT, on the super cluster's first kwok node. */
const tenantPod = (name: string, node: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: ROOT } },
  spec: {
    nodeName: node,
    containers: [{ name: 'c', image: 'busybox' }],
    tolerations: [{ operator: 'Exists' }],
  } as Pod['spec'],
});

describe('the fence follows the Pods of a super cluster registered at run time', () => {
  let t: TestSuper;
  let r2: KubeClient;
  let feed: SuperPodAddresses;
  let registry: SuperClusterRegistry;
  let pods: RegisteredPods;
  const told: string[] = [];
  const factories = new WeakMap<KubeClient, InformerFactory>();

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1, superClusters: 2 });
    r2 = await t.supers[1]!.cp.client();
    // As the manager: r1 (the meta cluster here) is configured, and only registrations of other names are followed.
    feed = new SuperPodAddresses([superPodsOf(new InformerFactory(t.client, 'super'))]);
    feed.subscribe((root) => told.push(root));
    feed.start();
    registry = new SuperClusterRegistry({ meta: t.client, reserved: ['r1'], probeIntervalMs: 2000 });
    pods = new RegisteredPods(feed, (client) => {
      let f = factories.get(client);
      if (!f) factories.set(client, (f = new InformerFactory(client, 'super')));
      return superPodsOf(f);
    });
    registry.onChange((list) => void pods.apply(list));
    await registry.start();
  }, 240_000);

  afterAll(async () => {
    await pods?.stop();
    await registry?.stop();
    await feed?.stop();
    r2?.close();
    await t?.stop();
  });

  it('lets the tenant reach its Pod on the registered super cluster, and no longer once the registration goes', async () => {
    await eventually(() => expect(feed.following()).toEqual(['r2']), 60_000);
    const node = (await r2.list(R.nodes)).items[0]!.metadata!.name!;
    // the super cluster's default ServiceAccount comes with its controller manager, a moment after it is up
    await eventually(() => r2.create(R.pods, tenantPod('fenced', node)), 60_000);
    const ip = await eventually(async () => {
      const p = await r2.get<Pod>(R.pods, 'default', 'fenced');
      expect(p.status?.podIP).toBeTruthy();
      return p.status!.podIP!;
    }, 90_000);
    await eventually(() => expect(feed.of(ROOT)).toEqual([ip]), 30_000);
    expect(told).toContain(ROOT);

    told.length = 0;
    await t.client.delete(CLUSTERS as Resource, REGISTRATION_NAMESPACE, 'r2');
    await eventually(() => {
      expect(feed.following()).toEqual([]);
      expect(feed.of(ROOT)).toEqual([]);
      expect(told).toContain(ROOT);
    }, 60_000);
    await r2.delete(R.pods, 'default', 'fenced', { gracePeriodSeconds: 0 });
  });
});
