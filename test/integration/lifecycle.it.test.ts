import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { ImportProvisioner } from '../../core/provisioners/import/provisioner.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { ANN, LABEL, rootNamespace } from '../../core/names/names.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry, type TenantEvent } from '../../core/tenancy/tenant.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, startTestSuper, TENANT_START_MS, type TestSuper } from '../harness.ts';

const exec = promisify(execFile);
const crdDir = join(import.meta.dirname, '../../deploy/crds');

const vcObject = (name: string, spec: Record<string, unknown> = {}, namespace = 'default') => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name, namespace },
  spec: { provisioner: { type: 'local' }, ...spec },
});

describe('VirtualCluster lifecycle on a real super cluster', () => {
  let t: TestSuper;
  let stateDir: string;
  let tenants: MutableTenantRegistry;
  const seen = new Map<string, TenantEvent>();
  let local: LocalProvisioner;
  let controller: VirtualClusterController;

  const startManager = () => {
    local = new LocalProvisioner(stateDir, t.sc.etcd);
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local, import: new ImportProvisioner(t.client) },
      tenants,
    });
    return controller.start();
  };
  const stopManager = async () => {
    await controller.stop();
    await local.stop();
  };
  const getVC = (name: string) => t.client.get<VirtualCluster>(R.virtualclusters, 'default', name);
  const running = (name: string, timeout = TENANT_START_MS) =>
    eventually(async () => {
      const vc = await getVC(name);
      expect(vc.status?.phase, vc.status?.message).toBe('Running');
      return vc;
    }, timeout);
  const tenantClient = async (vc: VirtualCluster) => {
    const s = await t.client.get<{ data: { kubeconfig: string } }>(
      R.secrets,
      'default',
      vc.status!.kubeconfigSecretName!,
    );
    return KubeClient.fromString(Buffer.from(s.data.kubeconfig, 'base64').toString());
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    for (const f of ['virtualclusters.yaml', 'clusterversions.yaml', 'tenantpolicies.yaml']) {
      for (const d of parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    }
    await eventually(() => t.client.list(R.virtualclusters));
    // The platform's default policy for these tenants: the flags the roll test sets, and the import provisioner.
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'lifecycle', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: {
            controlPlane: {
              tenantSettableArgs: {
                apiServer: ['max-requests-inflight'],
                controllerManager: ['concurrent-deployment-syncs'],
              },
            },
            provisioners: { allowed: ['local', 'import'] },
            grants: { importSecrets: [{ namespace: 'default', name: 'existing-kubeconfig-src' }] },
          },
        },
        'test',
      ),
    );
    stateDir = mkdtempSync(join(tmpdir(), 'vc-lifecycle-'));
    tenants = new MutableTenantRegistry();
    tenants.subscribe((e) => seen.set(e.type === 'upsert' ? e.tenant.key : e.key, e));
    await startManager();
  });

  afterAll(async () => {
    await stopManager();
    await t?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('brings a local VirtualCluster to Running with a kubeconfig kubectl can use, and hands it to the syncer', async () => {
    await t.client.create(R.virtualclusters, vcObject('alpha', { pkiExpireDays: 30, weight: 3 }));
    const vc = await running('alpha');
    const root = rootNamespace('default', 'alpha', vc.metadata!.uid!);
    expect(vc.status!.clusterNamespace).toBe(root);
    expect(vc.status!.kubeletClientCertFingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(vc.status!.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Running' });
    expect(vc.metadata!.finalizers).toContain('tenancy.x-k8s.io/virtualcluster');
    expect(await t.client.getOrNull(R.namespaces, undefined, root)).not.toBeNull();

    const s = await t.client.get<{ data: { kubeconfig: string } }>(
      R.secrets,
      'default',
      vc.status!.kubeconfigSecretName!,
    );
    const file = join(stateDir, 'alpha.kubeconfig');
    writeFileSync(file, Buffer.from(s.data.kubeconfig, 'base64'));
    const out = await exec(binaryPath('kubectl'), ['--kubeconfig', file, 'get', 'namespaces', '-o', 'name']);
    expect(out.stdout).toContain('namespace/kube-system');

    const handed = seen.get(root);
    expect(handed?.type).toBe('upsert');
    expect(handed?.type === 'upsert' && handed.tenant.weight).toBe(3);
  });

  it('gives two tenants their own namespaces and CRDs of the same name without seeing each other', async () => {
    await t.client.create(R.virtualclusters, vcObject('beta'));
    const [a, b] = await Promise.all([running('alpha'), running('beta')]);
    const ca = await tenantClient(a);
    const cb = await tenantClient(b);
    const crd = (desc: string) => ({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: { type: 'object', description: desc, 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        ],
      },
    });
    await ca.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shared-name' } });
    await cb.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shared-name' } });
    await ca.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'only-alpha' } });
    await ca.create(R.crds, crd('alpha'));
    await cb.create(R.crds, crd('beta'));
    expect(await cb.getOrNull(R.namespaces, undefined, 'only-alpha')).toBeNull();
    const da = await ca.get<
      KubeObject & { spec: { versions: Array<{ schema: { openAPIV3Schema: { description: string } } }> } }
    >(R.crds, undefined, 'widgets.example.com');
    const db = await cb.get<
      KubeObject & { spec: { versions: Array<{ schema: { openAPIV3Schema: { description: string } } }> } }
    >(R.crds, undefined, 'widgets.example.com');
    expect(da.spec.versions[0]!.schema.openAPIV3Schema.description).toBe('alpha');
    expect(db.spec.versions[0]!.schema.openAPIV3Schema.description).toBe('beta');
    expect(await t.client.getOrNull(R.crds, undefined, 'widgets.example.com')).toBeNull();
    ca.close();
    cb.close();
  });

  it('restarts a crashed tenant apiserver', async () => {
    const vc = await running('alpha');
    const cp = local.controlPlane(vc.status!.clusterNamespace!)!;
    const before = cp.apiserver.pid;
    cp.apiserver.kill();
    await eventually(() => expect(cp.apiserver.pid && cp.apiserver.pid !== before).toBeTruthy(), 30_000);
    const c = await tenantClient(vc);
    await eventually(() => c.get(R.namespaces, undefined, 'only-alpha'), 60_000);
    c.close();
  });

  it('rolls the control plane when the spec changes', async () => {
    const vc = await running('alpha');
    const cp = local.controlPlane(vc.status!.clusterNamespace!)!;
    const before = cp.apiserver.pid;
    const spec = {
      apiServer: { extraArgs: { 'max-requests-inflight': '123' } },
      controllerManager: { extraArgs: { 'concurrent-deployment-syncs': '7' } },
    };
    await t.client.patch(R.virtualclusters, 'default', 'alpha', { spec }, 'merge');
    await eventually(async () => {
      const now = local.controlPlane(vc.status!.clusterNamespace!);
      expect(now?.apiserver.pid).toBeDefined();
      expect(now!.apiserver.pid).not.toBe(before);
      expect(readFileSync(`/proc/${now!.apiserver.pid}/cmdline`, 'utf8')).toContain('--max-requests-inflight=123');
      expect(readFileSync(`/proc/${now!.controllerManager!.pid}/cmdline`, 'utf8')).toContain(
        '--concurrent-deployment-syncs=7',
      );
      const v = await getVC('alpha');
      expect(v.status?.observedGeneration).toBe(v.metadata?.generation);
      expect(v.status?.phase).toBe('Running');
    }, 60_000);
  });

  it('refuses at the door what the CRD can check, naming the field', async () => {
    const err = await t.client
      .create(R.virtualclusters, vcObject('refused', { provisioner: { type: 'import' } }))
      .catch((e: unknown) => e);
    expect(String(err)).toMatch(/spec\.provisioner.*import/);
  });

  it('gives a VirtualCluster the CRD admits but the schema refuses an Error condition naming the field, disturbing nothing else', async () => {
    // Flag names in extraArgs are checked by the JSON Schema (propertyNames), which a structural CRD cannot express.
    await t.client.create(R.virtualclusters, vcObject('broken', { apiServer: { extraArgs: { 'Bad Flag!': 'x' } } }));
    const vc = await eventually(async () => {
      const v = await getVC('broken');
      expect(v.status?.phase).toBe('Error');
      return v;
    });
    expect(vc.status!.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'InvalidSpec',
    });
    expect(vc.status!.message).toMatch(/VirtualCluster default\/broken: \/spec\/apiServer\/extraArgs/);
    expect(local.controlPlane(rootNamespace('default', 'broken', vc.metadata!.uid!))).toBeUndefined();
    expect((await getVC('alpha')).status?.phase).toBe('Running');
    expect((await getVC('beta')).status?.phase).toBe('Running');
    await t.client.delete(R.virtualclusters, 'default', 'broken');
    await eventually(async () => expect(await t.client.getOrNull(R.virtualclusters, 'default', 'broken')).toBeNull());
  });

  it('imports an existing cluster given by a kubeconfig Secret', async () => {
    // An apiserver is all the import reaches (a namespace is created through it): no controller manager.
    const existing = await t.sc.addControlPlane('existing', { controllerManager: false });
    await t.client.create(R.secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'existing-kubeconfig-src', namespace: 'default' },
      data: { kubeconfig: Buffer.from(readFileSync(existing.kubeconfigPath, 'utf8')).toString('base64') },
    });
    await t.client.create(
      R.virtualclusters,
      vcObject('imported', {
        provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: 'existing-kubeconfig-src' } } },
      }),
    );
    const vc = await running('imported');
    const c = await tenantClient(vc);
    await c.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'via-import' } });
    expect(await (await existing.client()).getOrNull(R.namespaces, undefined, 'via-import')).not.toBeNull();
    c.close();
    await t.client.delete(R.virtualclusters, 'default', 'imported');
    await eventually(async () => expect(await t.client.getOrNull(R.virtualclusters, 'default', 'imported')).toBeNull());
    // Import never deletes the cluster it was given.
    expect(await (await existing.client()).getOrNull(R.namespaces, undefined, 'via-import')).not.toBeNull();
  });

  it('deletes everything: control plane, data, root and prefixed namespaces, kubeconfig Secret', async () => {
    const vc = await running('beta');
    const root = vc.status!.clusterNamespace!;
    // beta is deleted before the manager restart below: restarting it would start its processes again for nothing.
    const cp = await eventually(() => {
      const c = local.controlPlane(root);
      expect(c?.apiserver.pid).toBeDefined();
      return c!;
    }, 60_000);
    const pids = cp.processes().map((p) => p.pid!);
    // A prefixed namespace as the syncer would have made it.
    await t.client.create(R.namespaces, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: `${root}-default`,
        labels: { [LABEL.managedBy]: 'vc-syncer', [LABEL.cluster]: root },
        annotations: { [ANN.cluster]: root, [ANN.namespace]: '', [ANN.name]: 'default' },
      },
    });
    await t.client.delete(R.virtualclusters, 'default', 'beta');
    await eventually(
      async () => expect(await t.client.getOrNull(R.virtualclusters, 'default', 'beta')).toBeNull(),
      90_000,
    );
    expect(
      (await t.client.list(R.namespaces, { labelSelector: `${LABEL.cluster}=${root}` })).items.filter(
        (n) => !n.metadata?.deletionTimestamp,
      ),
    ).toHaveLength(0);
    expect(await t.client.getOrNull(R.secrets, 'default', vc.status!.kubeconfigSecretName!)).toBeNull();
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
    expect(existsSync(join(stateDir, root))).toBe(false);
    const range = await fetch(`${t.sc.etcd.endpoint}/v3/kv/range`, {
      method: 'POST',
      body: JSON.stringify({
        key: Buffer.from(`/${root}/`).toString('base64'),
        range_end: Buffer.from(`/${root}0`).toString('base64'),
        count_only: true,
      }),
    });
    expect(Number(((await range.json()) as { count?: string }).count ?? 0)).toBe(0);
    expect(seen.get(root)?.type).toBe('remove');
  });

  it('finishes provisioning after the manager is killed mid-way, and keeps tenant data across the restart', async () => {
    await t.client.create(R.virtualclusters, vcObject('gamma'));
    await eventually(async () => expect((await getVC('gamma')).status?.phase).toBe('Provisioning'), 30_000);
    await stopManager();
    const alpha = await getVC('alpha');
    await startManager();
    await running('gamma');
    const again = await running('alpha');
    expect(again.status!.kubeletClientCertFingerprint).toBe(alpha.status!.kubeletClientCertFingerprint);
    const c = await tenantClient(again);
    await eventually(() => c.get(R.namespaces, undefined, 'only-alpha'), 30_000);
    c.close();
  });
});
