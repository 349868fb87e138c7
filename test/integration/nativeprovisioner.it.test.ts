import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { NativeProvisioner } from '../../core/provisioners/native/provisioner.ts';
import { PKI_SECRET, PKI_SECRET_KEY } from '../../core/provisioners/native/pkistore.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { rootNamespace } from '../../core/names/names.ts';
import type { ControlPlanePKI } from '../../core/pki/pki.ts';
import {
  apiserverURL,
  NATIVE_SECRETS,
  renderNative,
  resourceFor,
  type ClusterVersion,
} from '../../core/provisioners/native/render.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const crdDir = join(import.meta.dirname, '../../deploy/crds');

const clusterVersion: ClusterVersion = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'ClusterVersion',
  metadata: { name: 'v1-36' },
  spec: { kubernetesVersion: 'v1.36.3', etcd: { storageSize: '1Gi' }, apiServer: { extraArgs: { v: '1' } } },
};

const vcObject = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name, namespace: 'default' },
  spec: { provisioner: { type: 'native' }, ...spec },
});

interface Pod extends KubeObject {
  status?: { phase?: string };
}
interface StatefulSet extends KubeObject {
  spec: { replicas: number; template: { spec: { containers: Array<{ args?: string[] }> } } };
  status?: { readyReplicas?: number };
}

describe('native provisioner on a real super cluster (kwok runs the Pods)', () => {
  let t: TestSuper;
  let native: NativeProvisioner;

  const createVC = (name: string, spec: Record<string, unknown> = {}) =>
    t.client.create<VirtualCluster>(R.virtualclusters, vcObject(name, spec));
  const rootOf = (vc: VirtualCluster) => rootNamespace(vc.metadata!.namespace!, vc.metadata!.name!, vc.metadata!.uid!);
  const readPKI = async (root: string): Promise<ControlPlanePKI> => {
    const s = await t.client.get<{ data: Record<string, string> }>(R.secrets, root, PKI_SECRET);
    return JSON.parse(Buffer.from(s.data[PKI_SECRET_KEY]!, 'base64').toString('utf8')) as ControlPlanePKI;
  };
  const resourceVersions = async (objs: KubeObject[]): Promise<Record<string, string | undefined>> => {
    const out: Record<string, string | undefined> = {};
    for (const o of objs) {
      const live = await t.client.get(resourceFor(o), o.metadata?.namespace, o.metadata!.name!);
      out[`${o.kind}/${o.metadata!.name}`] = live.metadata?.resourceVersion;
    }
    return out;
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    for (const f of readdirSync(crdDir).filter((f) => f.endsWith('.yaml'))) {
      for (const d of parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    }
    await eventually(() => Promise.all([t.client.list(R.virtualclusters), t.client.list(R.clusterversions)]));
    native = new NativeProvisioner(t.client);
  });

  afterAll(async () => {
    await t?.stop();
  });

  it('waits for a ClusterVersion that does not exist yet', async () => {
    const vc = await createVC('early', { clusterVersionName: 'not-yet' });
    expect(await native.ensure(vc, rootOf(vc))).toEqual({ ready: false, waitingFor: 'ClusterVersion not-yet' });
    await t.client.delete(R.virtualclusters, 'default', 'early');
  });

  it('applies every rendered object once, reuses its PKI, lets kwok run the Pods, and removes them', async () => {
    await t.client.create(R.clusterversions, clusterVersion);
    const vc = await createVC('dev', { clusterVersionName: clusterVersion.metadata!.name, pkiExpireDays: 30 });
    const root = rootOf(vc);

    const first = await native.ensure(vc, root);
    expect(first.ready).toBe(false);
    expect(!first.ready && first.waitingFor).toMatch(/apiserver/);
    expect(await t.client.getOrNull(R.namespaces, undefined, root)).not.toBeNull();

    // Everything renderNative makes from the stored PKI exists in the root namespace.
    const pki = await readPKI(root);
    const cv = await t.client.get<ClusterVersion>(R.clusterversions, undefined, clusterVersion.metadata!.name!);
    const objs = renderNative({ vc, clusterVersion: cv, pki, rootNamespace: root });
    expect(objs.map((o) => o.kind).sort()).toEqual(
      [
        'Namespace',
        ...Array(8).fill('Secret'),
        'Service',
        'Service',
        'Service',
        'NetworkPolicy', // the tenant's isolation
        'NetworkPolicy', // the apiserver's egress (core/provisioners/native/egress.ts)
        'StatefulSet',
        'StatefulSet',
        'StatefulSet',
      ].sort(),
    );
    for (const o of objs) {
      const live = await t.client.getOrNull(resourceFor(o), o.metadata?.namespace, o.metadata!.name!);
      expect(live, `${o.kind}/${o.metadata!.name}`).not.toBeNull();
      expect(live!.metadata?.namespace ?? root).toBe(root);
    }
    const tls = await t.client.get<{ data: Record<string, string> }>(R.secrets, root, NATIVE_SECRETS.apiserver);
    expect(Buffer.from(tls.data['tls.crt']!, 'base64').toString()).toBe(pki.apiserver.certPem);

    // A volume for etcd's claim, so the scheduler places all three Pods and kwok runs them.
    await t.client.create(R.persistentvolumes, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: `etcd-${root}`.slice(0, 63) },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        hostPath: { path: `/tmp/${root}` },
        claimRef: { namespace: root, name: 'data-etcd-0' },
      },
    });
    await eventually(async () => {
      const pods = (await t.client.list<Pod>(R.pods, { namespace: root })).items;
      expect(pods.map((p) => `${p.metadata!.name}=${p.status?.phase}`).sort()).toEqual([
        'apiserver-0=Running',
        'controller-manager-0=Running',
        'etcd-0=Running',
      ]);
      const sets = (await t.client.list<StatefulSet>(R.statefulsets, { namespace: root })).items;
      for (const s of sets) expect(s.status?.readyReplicas, s.metadata!.name).toBe(s.spec.replicas);
    }, 90_000);

    // With a ready apiserver Pod the only thing missing is an apiserver that answers: kwok runs no container,
    // and the in-cluster Service name does not resolve outside the super cluster.
    const settled = await native.ensure(vc, root);
    expect(settled.ready).toBe(false);
    expect(!settled.ready && settled.waitingFor).toContain(`the apiserver to answer at ${apiserverURL(root)}`);

    // Reconciling again writes nothing: same resourceVersions, same PKI.
    const pkiSecret = (await t.client.get(R.secrets, root, PKI_SECRET)).metadata?.resourceVersion;
    const before = await resourceVersions(objs);
    await native.ensure(vc, root);
    await native.ensure(vc, root);
    expect(await resourceVersions(objs)).toEqual(before);
    expect((await t.client.get(R.secrets, root, PKI_SECRET)).metadata?.resourceVersion).toBe(pkiSecret);
    expect((await readPKI(root)).kubeletClientFingerprint).toBe(pki.kubeletClientFingerprint);

    // The policy's quota.etcdBytes (ProvisionLimits) bounds the tenant's etcd in the super cluster.
    await native.ensure(vc, root, { etcdBytes: 268435456 });
    const etcd = await t.client.get<StatefulSet>(R.statefulsets, root, 'etcd');
    expect(etcd.spec.template.spec.containers[0]!.args).toContain('--quota-backend-bytes=268435456');

    await native.remove(vc, root);
    await eventually(async () => {
      for (const o of objs.filter((x) => x.kind !== 'Namespace')) {
        expect(
          await t.client.getOrNull(resourceFor(o), root, o.metadata!.name!),
          `${o.kind}/${o.metadata!.name}`,
        ).toBeNull();
      }
      expect(await t.client.getOrNull(R.secrets, root, PKI_SECRET)).toBeNull();
      expect((await t.client.list(R.pods, { namespace: root })).items).toEqual([]);
    }, 60_000);
    // Removing twice is not an error.
    await native.remove(vc, root);
    await t.client.delete(R.virtualclusters, 'default', 'dev');
  });

  it('under the VirtualClusterController, keeps the VirtualCluster Provisioning while the apiserver does not answer', async () => {
    const controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { native },
      tenants: new MutableTenantRegistry(),
    });
    await controller.start();
    try {
      // No clusterVersionName: the default ClusterVersion (the pinned Kubernetes version).
      const created = await createVC('managed');
      const root = rootOf(created);
      const get = () => t.client.get<VirtualCluster>(R.virtualclusters, 'default', 'managed');
      const vc = await eventually(async () => {
        const v = await get();
        expect(v.status?.message).toContain(`waiting for the apiserver to answer at ${apiserverURL(root)}`);
        return v;
      }, 90_000);
      expect(vc.status?.phase).toBe('Provisioning');
      expect(vc.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
        status: 'False',
        reason: 'Waiting',
      });
      const sts = await t.client.get<
        KubeObject & { spec: { template: { spec: { containers: Array<{ image: string }> } } } }
      >(R.statefulsets, root, 'apiserver');
      expect(sts.spec.template.spec.containers[0]!.image).toBe('registry.k8s.io/kube-apiserver:v1.36.3');
      // It stays there (requeued every 2 s) and never turns to Error.
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 1500));
        const v = await get();
        expect(v.status?.phase, v.status?.message).toBe('Provisioning');
      }

      await t.client.delete(R.virtualclusters, 'default', 'managed');
      await eventually(
        async () => expect(await t.client.getOrNull(R.virtualclusters, 'default', 'managed')).toBeNull(),
        90_000,
      );
      expect(await t.client.getOrNull(R.namespaces, undefined, root)).toBeNull();
    } finally {
      await controller.stop();
    }
  });

  it("refuses a ClusterVersion over the TenantPolicy's controlPlane.maxResources, naming both fields; a running tenant's StatefulSets stay", async () => {
    await t.client.create(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'sized' },
      spec: {
        provisioners: { allowed: ['native'] },
        grants: { subjects: [{ kind: 'Namespace', name: 'default' }], clusterVersions: ['sized-fits', 'sized-roomy'] },
        controlPlane: { maxResources: { etcd: { memory: '4Gi' }, apiServer: { cpu: '1', memory: '2Gi' } } },
      },
    });
    const cv = (name: string, spec: Record<string, unknown> = {}) =>
      t.client.create(R.clusterversions, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ClusterVersion',
        metadata: { name },
        spec: { kubernetesVersion: 'v1.36.3', ...spec },
      });
    await cv('sized-fits');
    await cv('sized-roomy', { etcd: { resources: { limits: { memory: '8Gi' } } } });
    const controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { native },
      tenants: new MutableTenantRegistry(),
    });
    await controller.start();
    const get = (name: string) => t.client.get<VirtualCluster>(R.virtualclusters, 'default', name);
    const refusedWith = (name: string, message: string) =>
      eventually(async () => {
        const v = await get(name);
        expect(v.status?.reason).toBe('ControlPlaneResourcesOverPolicy');
        expect(v.status?.message).toContain(message);
        return v;
      }, 90_000);
    const statefulSets = async (root: string) =>
      Object.fromEntries(
        (await t.client.list<StatefulSet>(R.statefulsets, { namespace: root })).items.map((s) => [
          s.metadata!.name!,
          { generation: s.metadata!.generation, containers: s.spec.template.spec.containers },
        ]),
      );
    try {
      // A new tenant over the bound: nothing of its control plane is made.
      const over = await createVC('oversized', { policyName: 'sized', clusterVersionName: 'sized-roomy' });
      await refusedWith(
        'oversized',
        'ClusterVersion sized-roomy spec.etcd.resources.limits.memory: 8Gi is more than the 4Gi TenantPolicy "sized" ' +
          'allows (controlPlane.maxResources.etcd.memory)',
      );
      expect(await statefulSets(rootOf(over))).toEqual({});

      // A tenant within the bound gets its StatefulSets; its ClusterVersion raised over the bound changes none.
      const fits = await createVC('fits', { policyName: 'sized', clusterVersionName: 'sized-fits' });
      const root = rootOf(fits);
      const before = await eventually(async () => {
        const sets = await statefulSets(root);
        expect(Object.keys(sets).sort()).toEqual(['apiserver', 'controller-manager', 'etcd']);
        return sets;
      }, 90_000);
      // The policy bounds the apiserver's CPU, which the ClusterVersion and the default leave unlimited: it runs limited
      // to the policy's maximum, not with no limit at all.
      const limitsOf = (c: unknown) => (c as { resources?: { limits?: Record<string, string> } }).resources?.limits;
      expect(limitsOf(before.apiserver!.containers[0])).toMatchObject({ cpu: '1', memory: '1280Mi' });
      expect(limitsOf(before['controller-manager']!.containers[0])).not.toHaveProperty('cpu');
      await t.client.patch(
        R.clusterversions,
        undefined,
        'sized-fits',
        { spec: { apiServer: { resources: { limits: { cpu: '4' } } } } },
        'merge',
      );
      await refusedWith(
        'fits',
        'ClusterVersion sized-fits spec.apiServer.resources.limits.cpu: 4 is more than the 1 TenantPolicy "sized" ' +
          'allows (controlPlane.maxResources.apiServer.cpu)',
      );
      expect(await statefulSets(root)).toEqual(before);

      for (const name of ['oversized', 'fits']) await t.client.delete(R.virtualclusters, 'default', name);
      await eventually(async () => {
        for (const name of ['oversized', 'fits'])
          expect(await t.client.getOrNull(R.virtualclusters, 'default', name)).toBeNull();
      }, 90_000);
    } finally {
      await controller.stop();
    }
  });
});
