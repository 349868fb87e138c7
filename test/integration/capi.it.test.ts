/**
 * Tenants through Cluster API (issue 37) on real processes: Cluster API's own core manager (built from
 * sigs.k8s.io/cluster-api at the pinned version, with its CRDs) and the project's manager with the VirtualCluster
 * controller, GitOps and the Cluster API provider, on a real super cluster. A Cluster with a VirtualClusterControlPlane
 * and a VirtualClusterInfraCluster comes from git; Cluster API reports it Available; its `<cluster>-kubeconfig` Secret
 * runs a workload; bad input shows on the Cluster's conditions; a Cluster that leaves git takes its tenant with it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { localProvisioners } from '../../core/dev/provisioner/offer.ts';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { startManager, type Manager } from '../../core/programs/manager/manager.ts';
import { optionalBuild } from '../optionalbuilds.ts';
import {
  capiCRDFiles,
  ensureCapiToolchain,
  isCapiToolchainComplete,
  startCapiManager,
  type CapiManager,
} from '../../core/toolchain/capi.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { GITSOURCES, type GitSource } from '../../gitops/applier/gitsource.ts';
import { startGitServer, type GitServer } from '../git/server.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const NS = 'default';

type Condition = { type: string; status: string; reason?: string; message?: string };
type Cluster = KubeObject & {
  spec?: { controlPlaneEndpoint?: { host?: string; port?: number } };
  status?: { phase?: string; conditions?: Condition[]; initialization?: { controlPlaneInitialized?: boolean } };
};

/** tenantFiles is what a platform team commits for one tenant: the Cluster and the provider objects it names. */
const tenantFiles = (name: string, version: string, clusterVersionName?: string): string =>
  [
    {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Cluster',
      metadata: { name, namespace: NS },
      spec: {
        controlPlaneRef: { apiGroup: 'controlplane.tenancy.x-k8s.io', kind: 'VirtualClusterControlPlane', name },
        infrastructureRef: { apiGroup: 'infrastructure.tenancy.x-k8s.io', kind: 'VirtualClusterInfraCluster', name },
      },
    },
    {
      apiVersion: 'controlplane.tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualClusterControlPlane',
      metadata: { name, namespace: NS },
      spec: {
        version,
        ...(clusterVersionName && { clusterVersionName }),
        virtualCluster: { provisioner: { type: 'local' } },
      },
    },
    {
      apiVersion: 'infrastructure.tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualClusterInfraCluster',
      metadata: { name, namespace: NS },
      spec: {},
    },
  ]
    .map((o) => stringify(o))
    .join('---\n');

const haveCapi = optionalBuild('the Cluster API manager', isCapiToolchainComplete());

describe.skipIf(!haveCapi)('a Cluster API control-plane provider: Clusters from git become tenants', () => {
  let t: TestSuper;
  let capi: CapiManager | undefined;
  let git: GitServer;
  let dir: string;
  let manager: Manager;
  const cluster = (name: string) => t.client.getOrNull<Cluster>(R.capiclusters, NS, name);
  const condition = (c: Cluster | null, type: string) => c?.status?.conditions?.find((x) => x.type === type);
  const applied = (rev: string) =>
    eventually(async () => {
      const gs = await t.client.get<GitSource>(GITSOURCES, NS, 'fleet');
      expect(gs.status?.lastAttemptedRevision).toBe(rev);
    }, 60_000);

  beforeAll(async () => {
    const toolchain = await ensureCapiToolchain();
    t = await startTestSuper({ nodes: 1 });
    // Cluster API's CRDs first: the project's own CRD set then finds a Cluster CRD and adds no minimal one.
    for (const f of capiCRDFiles(toolchain))
      for (const d of parseAllDocuments(readFileSync(f, 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'capi-test');
    await applyCRDs(t.sc);
    await eventually(async () => expect(await t.client.list(R.capiclusters)).toBeTruthy(), 30_000);
    await eventually(async () => expect(await t.client.list(R.virtualclustercontrolplanes)).toBeTruthy(), 30_000);
    capi = await startCapiManager({ kubeconfig: t.sc.kubeconfigPath, toolchain });
    for (const name of ['v1-36', 'v1-36-ungranted'])
      await t.client.create(R.clusterversions, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ClusterVersion',
        metadata: { name },
        spec: { kubernetesVersion: 'v1.36.3', apiServer: { replicas: 1 }, etcd: { storageSize: '1Gi' } },
      });
    // The platform's default policy: local tenants, of the one ClusterVersion it grants.
    await t.client.create(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'fleet', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
      spec: { provisioners: { allowed: ['local'] }, grants: { clusterVersions: ['v1-36'] } },
    });
    git = await startGitServer();
    await git.initRepo('fleet');
    await git.commitFiles('fleet', { 'clusters/team-a.yaml': tenantFiles('team-a', 'v1.36.3') }, 'team-a');
    await t.client.create(GITSOURCES, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      metadata: { name: 'fleet', namespace: NS },
      spec: {
        url: git.url('fleet'),
        ref: { branch: 'main' },
        path: 'clusters',
        interval: '5s',
        safety: { maxDeletes: 10, maxDeletePercent: 100 },
      },
    });
    dir = mkdtempSync(join(tmpdir(), 'vc-capi-it-'));
    const file = join(dir, 'manager.yaml');
    writeFileSync(
      file,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [{ name: 'default', kubeconfig: t.sc.kubeconfigPath }],
        virtualClusters: { enabled: true, local: { stateDir: join(dir, 'tenants'), etcdEndpoint: t.sc.etcd.endpoint } },
        clusterApi: { enabled: true },
        gitops: {
          enabled: true,
          cacheDir: join(dir, 'git-cache'),
          allowPrivateAddresses: ['127.0.0.0/8'],
          minIntervalSeconds: 5,
        },
        syncer: { patrolIntervalSeconds: 0 },
      }),
    );
    const cfg = loadManagerConfig(file);
    manager = await startManager(cfg, file, { provisioners: localProvisioners(cfg) });
  }, 3_600_000);

  afterAll(async () => {
    await manager?.stop();
    await capi?.stop();
    await git?.close();
    await t?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('provisions a Cluster from git as a tenant that Cluster API reports Available', async () => {
    const c = await eventually(
      async () => {
        const c = await cluster('team-a');
        expect(condition(c, 'Available'), capi?.logs().slice(-3000)).toMatchObject({ status: 'True' });
        return c!;
      },
      240_000,
      1000,
    );
    expect(c.status?.initialization?.controlPlaneInitialized).toBe(true);
    expect(condition(c, 'ControlPlaneAvailable')).toMatchObject({ status: 'True' });
    expect(condition(c, 'InfrastructureReady')).toMatchObject({ status: 'True' });
    expect(condition(c, 'RemoteConnectionProbe')).toMatchObject({ status: 'True' });
    expect(c.spec?.controlPlaneEndpoint?.host).toBe('127.0.0.1');
    const vc = await t.client.get<VirtualCluster>(R.virtualclusters, NS, 'team-a');
    expect(vc.status?.phase).toBe('Running');
    expect(vc.spec.clusterVersionName).toBe('v1-36');
    const cp = await t.client.get<KubeObject & { status?: Record<string, unknown> }>(
      R.virtualclustercontrolplanes,
      NS,
      'team-a',
    );
    expect(cp.status).toMatchObject({
      ready: true,
      initialized: true,
      version: 'v1.36.3',
      externalManagedControlPlane: true,
    });
  }, 300_000);

  it("runs a workload with the Cluster's kubeconfig Secret", async () => {
    const secret = await t.client.get<KubeObject & { data?: Record<string, string> }>(
      R.secrets,
      NS,
      'team-a-kubeconfig',
    );
    expect(secret.metadata?.labels?.['cluster.x-k8s.io/cluster-name']).toBe('team-a');
    const tenant = await KubeClient.fromString(Buffer.from(secret.data!.value!, 'base64').toString('utf8'));
    try {
      await tenant.create(R.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web', namespace: 'default' },
        // A public registry name: `.local` and other names only a private resolver answers are refused for images.
        spec: { containers: [{ name: 'web', image: 'registry.example.com/web:1' }] },
      });
      await eventually(async () => {
        const pod = await tenant.get<KubeObject & { status?: { phase?: string } }>(R.pods, 'default', 'web');
        expect(pod.status?.phase, JSON.stringify(pod.status)).toBe('Running');
      }, 120_000);
    } finally {
      tenant.close();
    }
  });

  it("reports bad input on the Cluster's conditions: a version no ClusterVersion offers, a policy refusal", async () => {
    const rev = await git.commitFiles(
      'fleet',
      {
        'clusters/team-b.yaml': tenantFiles('team-b', 'v1.99.0'),
        'clusters/team-c.yaml': tenantFiles('team-c', 'v1.36.3', 'v1-36-ungranted'),
      },
      'team-b, team-c',
    );
    await applied(rev);
    await eventually(
      async () => {
        const b = condition(await cluster('team-b'), 'ControlPlaneAvailable');
        expect(b).toMatchObject({ status: 'False', reason: 'UnknownVersion' });
        expect(b?.message).toContain('no ClusterVersion offers v1.99.0');
        const c = condition(await cluster('team-c'), 'ControlPlaneAvailable');
        expect(c).toMatchObject({ status: 'False', reason: 'PolicyViolation' });
        expect(c?.message).toContain('v1-36-ungranted');
      },
      120_000,
      1000,
    );
    expect(await t.client.getOrNull(R.virtualclusters, NS, 'team-b')).toBeNull();
  });

  it('removes the tenant, its Secret and its super namespaces when its Cluster leaves git', async () => {
    const vc = await t.client.get<VirtualCluster>(R.virtualclusters, NS, 'team-a');
    const root = vc.status!.clusterNamespace!;
    const rev = await git.commitFiles('fleet', { 'clusters/team-a.yaml': null }, 'team-a goes');
    await applied(rev);
    await eventually(
      async () => {
        expect(await cluster('team-a')).toBeNull();
        expect(await t.client.getOrNull(R.virtualclusters, NS, 'team-a')).toBeNull();
        expect(await t.client.getOrNull(R.virtualclustercontrolplanes, NS, 'team-a')).toBeNull();
        expect(await t.client.getOrNull(R.secrets, NS, 'team-a-kubeconfig')).toBeNull();
        expect(await t.client.getOrNull(R.namespaces, undefined, root)).toBeNull();
      },
      240_000,
      1000,
    );
  });
});
