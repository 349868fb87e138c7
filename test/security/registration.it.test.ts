/**
 * Hostile definition author against the super cluster registry (issue 31): a registered super cluster takes other
 * tenants' namespaces, Pods and Secrets. The manager writes each VirtualCluster's admin kubeconfig as the Secret
 * `<vc>-kubeconfig`, Cluster API's name, with the key `value` when the VirtualCluster is labelled as a Cluster's. So an
 * author who can write a VirtualCluster and a Cluster (a GitSource may write both) labels the VirtualCluster, adds a
 * Cluster of its name, and, as admin of its own control plane, writes the `supercluster-info` that names it: without a
 * guard the registry would connect with the tenant's credentials and mark the tenant's control plane a ready super
 * cluster. The real VirtualCluster controller runs the tenant on real processes; the real registry reads the Clusters.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { ensureClusterCRD } from '../../core/dev/local/registration.ts';
import type { KubeObject, Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import type { Condition } from '../../core/controller/status.ts';
import { CLUSTERS, readyOf } from '../../core/superclusters/registration.ts';
import { SuperClusterRegistry } from '../../core/superclusters/registry.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { Attempts } from './attempts.ts';

const exec = promisify(execFile);
const clusters = CLUSTERS as Resource;

/** readyOfCluster reads the registry's condition on a Cluster of the meta cluster. */
const readyOfCluster = async (t: TestSuper, namespace: string, name: string) =>
  readyOf(
    (await t.client.get<KubeObject & { status?: { conditions?: Condition[] } }>(clusters, namespace, name)).status,
  );

describe('hostile author against the super cluster registry', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let stateDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  const registries: SuperClusterRegistry[] = [];

  /** registry starts a registry as the manager configures it, reading `namespace` (default: the platform's own). */
  const registry = async (namespace?: string) => {
    const r = new SuperClusterRegistry({
      meta: t.client,
      ...(namespace !== undefined && { namespace }),
      probeIntervalMs: 1000,
      connectTimeoutMs: 5000,
      fieldManager: 'vc-manager',
    });
    registries.push(r);
    await r.start();
    return r;
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    await ensureClusterCRD(t.client);
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'authors', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: { provisioners: { allowed: ['local'] } },
        },
        'test',
      ),
    );
    await eventually(() => t.client.list(clusters, { namespace: 'default' }));
    await t.client.apply(
      R.namespaces,
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'vc-system' } },
      'test',
    );
    stateDir = mkdtempSync(join(tmpdir(), 'vc-registration-'));
    local = new LocalProvisioner(stateDir, t.sc.etcd);
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants: new MutableTenantRegistry(),
      health: false,
    });
    await controller.start();
  }, 240_000);

  afterAll(async () => {
    attempts.report('super cluster registry');
    for (const r of registries) await r.stop();
    await controller?.stop();
    await local?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it("never registers a tenant's own control plane as a super cluster", async () => {
    // The author's tenant, labelled as Cluster API's Cluster "evil": its kubeconfig Secret gets the key `value`.
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'evil', namespace: 'default', labels: { 'cluster.x-k8s.io/cluster-name': 'evil' } },
      spec: { provisioner: { type: 'local' } },
    });
    const vc = await eventually(async () => {
      const v = await t.client.get<VirtualCluster>(R.virtualclusters, 'default', 'evil');
      expect(v.status?.phase, v.status?.message).toBe('Running');
      return v;
    }, 180_000);
    const secret = await t.client.get<KubeObject & { data: Record<string, string> }>(
      R.secrets,
      'default',
      vc.status!.kubeconfigSecretName!,
    );
    expect(secret.metadata?.name).toBe('evil-kubeconfig');
    expect(secret.data.value).toBeDefined();
    // As admin of its control plane it names it "evil", as a super cluster's supercluster-info does.
    const file = join(stateDir, 'evil.kubeconfig');
    writeFileSync(file, Buffer.from(secret.data.value!, 'base64'));
    await exec(binaryPath('kubectl'), [
      '--kubeconfig',
      file,
      'create',
      'configmap',
      'supercluster-info',
      '-n',
      'kube-system',
      '--from-literal=id=evil',
    ]);
    await t.client.create(clusters, {
      apiVersion: 'cluster.x-k8s.io/v1beta1',
      kind: 'Cluster',
      metadata: { name: 'evil', namespace: 'default' },
      spec: {},
    });

    await attempts.attempt("register a tenant's control plane by a Cluster beside its VirtualCluster", async () => {
      const platform = await registry();
      // The platform's own registration namespace is read (an empty list there), the author's is not.
      await new Promise((r) => setTimeout(r, 5000));
      expect(platform.list().map((x) => `${x.namespace}/${x.name}`)).toEqual([]);
      expect(await readyOfCluster(t, 'default', 'evil')).toBeUndefined();
      return 'not read: Clusters are registrations only in superClusterRegistry.namespace (vc-system)';
    });

    await attempts.attempt("register a tenant's control plane where the platform reads Clusters", async () => {
      // A platform that reads this namespace (or a GitSource that may write into the registry's) still gets no super
      // cluster from a tenant's kubeconfig Secret.
      const misconfigured = await registry('default');
      const condition = await eventually(async () => {
        const c = await readyOfCluster(t, 'default', 'evil');
        expect(c?.reason).toBe('TenantKubeconfig');
        return c!;
      }, 30_000);
      expect(condition.status).toBe('False');
      expect(condition.message).toContain('is the admin kubeconfig of VirtualCluster default/evil');
      const entry = misconfigured.list().find((x) => x.name === 'evil');
      expect(entry?.state).toBe('unreachable');
      expect(entry?.client).toBeUndefined();
      return `TenantKubeconfig: ${condition.message ?? ''}`;
    });
  });
});
