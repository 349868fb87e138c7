/**
 * A node's tenant cluster IP translation follows the super cluster (core/vnagent/clusteriptranslator.ts): against a
 * real apiserver with kwok nodes, the table it writes holds the syncer's Pods of its own node and the syncer's Service
 * copies, gains and loses them as they come and go, ignores objects the syncer did not make and Pods of other nodes,
 * and is deleted when the translator stops. The scripts are captured where they would go to nft (the data path is
 * shown on a real node, test/realnode/dns.it.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../../core/names/names.ts';
import { ClusterIPTranslator } from '../../core/vnagent/clusteriptranslator.ts';
import { tenantChain } from '../../core/vnagent/clusterips.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

interface Pod extends KubeObject {
  status?: { podIP?: string; phase?: string };
}
interface Service extends KubeObject {
  spec?: { clusterIP?: string };
}

const synced = (tenant: string) => ({ [LABEL.managedBy]: MANAGER, [LABEL.cluster]: tenant });

const pod = (name: string, node: string, labels: Record<string, string>): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', labels },
  spec: {
    nodeName: node,
    containers: [{ name: 'c', image: 'busybox' }],
    tolerations: [{ operator: 'Exists' }],
  } as Pod['spec'],
});

const service = (name: string, labels: Record<string, string>, tenantIP: string): Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default', labels, annotations: { [ANN.tenantClusterIP]: tenantIP } },
  spec: { ports: [{ port: 80 }] } as Service['spec'],
});

describe('the cluster IP translation of a node follows its Pods and the Service copies', () => {
  let t: TestSuper;
  let nodes: string[];
  let translator: ClusterIPTranslator;
  const calls: Array<{ args: string[]; script?: string }> = [];
  const lastScript = () => calls.filter((c) => c.script !== undefined).at(-1)?.script ?? '';

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 2 });
    nodes = (await t.client.list(R.nodes)).items.map((n) => n.metadata!.name!).sort();
    expect(nodes).toHaveLength(2);
    translator = new ClusterIPTranslator({
      client: t.client,
      nodeName: nodes[0]!,
      table: 'vc-test-cluster-ips',
      debounceMs: 20,
      nft: async (args, script) => void calls.push({ args, script }),
    });
    await translator.start();
    // the ServiceAccount admission of a fresh cluster waits for the default ServiceAccount
    await eventually(() => t.client.get(R.serviceaccounts, 'default', 'default'), 60_000);
  }, 180_000);

  afterAll(async () => {
    await translator?.stop().catch(() => undefined);
    await t?.stop();
  });

  it('writes the tenant Pods of its node with their tenant cluster IPs, and nothing of others', async () => {
    expect(translator.plan).toEqual([]);
    await t.client.create(R.pods, pod('a-web', nodes[0]!, synced('tenant-a')));
    await t.client.create(R.pods, pod('a-elsewhere', nodes[1]!, synced('tenant-a')));
    await t.client.create(R.pods, pod('platform', nodes[0]!, {}));
    const copy = await t.client.create<Service>(R.services, service('a-web', synced('tenant-a'), '10.96.0.10'));
    await t.client.create(R.services, service('forged', {}, '10.96.0.11'));
    const ip = (name: string) =>
      eventually(async () => {
        const p = await t.client.get<Pod>(R.pods, 'default', name);
        expect(p.status?.podIP).toBeTruthy();
        return p.status!.podIP!;
      }, 60_000);
    const webIP = await ip('a-web');
    await ip('platform');
    await eventually(
      () =>
        expect(translator.plan).toEqual([
          { key: 'tenant-a', podIPs: [webIP], services: [['10.96.0.10', copy.spec!.clusterIP]] },
        ]),
      30_000,
    );
    const script = lastScript();
    expect(script).toContain(`${webIP} : jump ${tenantChain('tenant-a')}`);
    expect(script).toContain(`${copy.spec!.clusterIP} : 10.96.0.10`);
    expect(script).not.toContain('10.96.0.11');
  });

  it('drops a Pod that is deleted and a copy that goes, and keeps one table write per change', async () => {
    const writes = translator.writes;
    await t.client.delete(R.services, 'default', 'a-web');
    await eventually(() => expect(translator.plan).toEqual([]), 30_000);
    expect(lastScript()).not.toMatch(/elements|chain tenant-/);
    expect(translator.writes).toBe(writes + 1);
    // a status-only change of a Pod that does not change the plan writes nothing
    await t.client.create(R.services, service('a-web', synced('tenant-a'), '10.96.0.10'));
    await eventually(() => expect(translator.plan).toHaveLength(1), 30_000);
    const after = translator.writes;
    await t.client.patch(R.pods, 'default', 'platform', { metadata: { labels: { touched: 'yes' } } }, 'merge');
    await new Promise((r) => setTimeout(r, 500));
    expect(translator.writes).toBe(after);
    await t.client.delete(R.pods, 'default', 'a-web', { gracePeriodSeconds: 0 });
    await eventually(() => expect(translator.plan).toEqual([]), 30_000);
  });

  it('retries a failed write after a pause, with what changed meanwhile, not on every event', async () => {
    const at: number[] = [];
    const second = new ClusterIPTranslator({
      client: t.client,
      nodeName: nodes[0]!,
      table: 'vc-test-retry',
      debounceMs: 20,
      nft: async (args, script) => {
        if (script === undefined) return;
        at.push(Date.now());
        if (at.length < 3) throw new Error('nft: Could not process rule: Operation not permitted');
      },
    });
    try {
      await second.start();
      // events in the meantime do not bring the retry forward
      for (let i = 0; i < 5; i++)
        await t.client.patch(R.pods, 'default', 'platform', { metadata: { labels: { n: String(i) } } }, 'merge');
      await eventually(() => expect(second.writes).toBe(1), 20_000);
      expect(at).toHaveLength(3);
      expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(900);
      expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(1900);
    } finally {
      await second.stop();
    }
  });

  it('deletes its table when it stops', async () => {
    await translator.stop();
    expect(calls.at(-1)).toEqual({ args: ['delete', 'table', 'ip', 'vc-test-cluster-ips'], script: undefined });
  });
});
