/**
 * Hostile definition author against the manager (issue 31, §3): whoever may write VirtualClusters in a namespace (or a
 * GitSource applying into it) asks for more control planes than the platform provisions per namespace. The real
 * VirtualCluster controller on a real super cluster provisions the oldest `maxPerNamespace` and gives the others
 * phase Pending (waiting for room), reason TooManyVirtualClusters and a Warning event; other namespaces are not counted. No provisioner is
 * configured here, so nothing is started: the count is decided before any provisioner is picked.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { TOO_MANY_VIRTUAL_CLUSTERS } from '../../core/lifecycle/count.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { Attempts } from './attempts.ts';

const crdDir = join(import.meta.dirname, '../../deploy/crds');
const MAX = 2;

interface Event extends KubeObject {
  involvedObject: { name?: string };
  reason?: string;
  message?: string;
}

const vcObject = (namespace: string, name: string): VirtualCluster => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { namespace, name },
  spec: {},
});

describe('hostile author against the count of VirtualClusters per namespace', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let controller: VirtualClusterController;

  const status = (ns: string, name: string) =>
    t.client.get<VirtualCluster>(R.virtualclusters, ns, name).then((v) => v.status);

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    for (const f of ['virtualclusters.yaml', 'clusterversions.yaml', 'tenantpolicies.yaml'])
      for (const d of parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    await eventually(() => t.client.list(R.virtualclusters));
    for (const name of ['crowd', 'alone'])
      await t.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: {},
      tenants: new MutableTenantRegistry(),
      maxPerNamespace: MAX,
    });
    await controller.start();
  }, 240_000);

  afterAll(async () => {
    attempts.report('VirtualClusters per namespace');
    await controller?.stop();
    await t?.stop();
  });

  it('provisions the oldest VirtualClusters of a namespace up to the count, and refuses the others', async () => {
    await attempts.attempt('more VirtualClusters in a namespace than the manager provisions', async () => {
      for (const name of ['vc-1', 'vc-2', 'vc-3', 'vc-4'])
        await t.client.create(R.virtualclusters, vcObject('crowd', name));
      await t.client.create(R.virtualclusters, vcObject('alone', 'vc-1'));
      for (const name of ['vc-3', 'vc-4'])
        await eventually(async () => expect((await status('crowd', name))?.reason).toBe(TOO_MANY_VIRTUAL_CLUSTERS));
      const refused = (await status('crowd', 'vc-4'))!;
      expect(refused.phase).toBe('Pending');
      expect(refused.message).toContain(
        `namespace crowd has 4 VirtualClusters and the manager provisions the ${MAX} oldest`,
      );
      // The first two, and the one of another namespace, went on to pick a provisioner (none is configured here).
      for (const [ns, name] of [
        ['crowd', 'vc-1'],
        ['crowd', 'vc-2'],
        ['alone', 'vc-1'],
      ] as const)
        await eventually(async () => {
          const s = await status(ns, name);
          expect(s?.reason).toBeDefined();
          expect(s?.reason).not.toBe(TOO_MANY_VIRTUAL_CLUSTERS);
        });
      const event = await eventually(async () => {
        const list = (await t.client.list<Event>(R.events, { namespace: 'crowd' })).items;
        const e = list.find((x) => x.reason === TOO_MANY_VIRTUAL_CLUSTERS && x.involvedObject.name === 'vc-4');
        expect(e).toBeDefined();
        return e!;
      });
      return event.message ?? '';
    });
  });
});
