/**
 * Tenants through Cluster API (issue 37) on real processes: Cluster API's own core manager (built from
 * sigs.k8s.io/cluster-api at the pinned version, with its CRDs) and the project's manager with the VirtualCluster
 * controller, GitOps and the Cluster API provider, on a real super cluster. A Cluster with a VirtualClusterControlPlane
 * and a VirtualClusterInfraCluster comes from git; Cluster API reports it Available; its `<cluster>-kubeconfig` Secret
 * runs a workload; clusterctl (built from the same module version) describes it; bad input shows on the Cluster's
 * conditions, or on the GitSource where the applier refuses it (a ClusterVersion not granted); a version change in
 * git upgrades a tenant through the day-two rollout, Cluster API's pause (the Cluster's spec.paused, the annotation)
 * holds it back, and a skipped minor or a downgrade is refused with the tenant untouched
 * (the upgrade needs the older minor's binaries, an optional build as the Cluster API manager is); a Cluster that
 * leaves git takes its tenant with it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
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
import { isMinorComplete, kubernetesMinorDir, previousKubernetes } from '../../core/toolchain/minors.ts';
import { pinnedVersions } from '../../core/toolchain/toolchain.ts';
import {
  capiCRDFiles,
  ensureCapiToolchain,
  ensureClusterctl,
  isCapiToolchainComplete,
  startCapiManager,
  type CapiManager,
} from '../../core/toolchain/capi.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { GITSOURCES, type GitSource } from '../../gitops/applier/gitsource.ts';
import { startGitServer, type GitServer } from '../git/server.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const NS = 'default';
const execP = promisify(execFile);
/** run runs a program to its end and returns what it printed; a failure carries its stderr */
const run = async (file: string, args: string[], o: { env: NodeJS.ProcessEnv }) =>
  (await execP(file, args, { env: o.env, timeout: 60_000 })).stdout;
const OLD = previousKubernetes()!;
const NEW = pinnedVersions().kubernetes;
/** SKIP is a version two minors above OLD: no binaries exist for it, and the skew policy refuses it before they matter. */
const SKIP = 'v1.37.2';

type Condition = { type: string; status: string; reason?: string; message?: string };
type Cluster = KubeObject & {
  spec?: { controlPlaneEndpoint?: { host?: string; port?: number } };
  status?: {
    phase?: string;
    conditions?: Condition[];
    initialization?: { controlPlaneInitialized?: boolean };
    controlPlane?: { versions?: { version: string }[] };
  };
};
type ControlPlane = KubeObject & {
  status?: { version?: string; conditions?: (Condition & { observedGeneration?: number })[] };
};

/** TenantOptions vary a tenant's files: a named ClusterVersion, Cluster API's pause on the Cluster or the annotation. */
interface TenantOptions {
  clusterVersionName?: string;
  paused?: boolean;
  pausedAnnotation?: boolean;
}

/** tenantFiles is what a platform team commits for one tenant: the Cluster and the provider objects it names. */
const tenantFiles = (name: string, version: string, o: TenantOptions = {}): string =>
  [
    {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Cluster',
      metadata: { name, namespace: NS },
      spec: {
        controlPlaneRef: { apiGroup: 'controlplane.tenancy.x-k8s.io', kind: 'VirtualClusterControlPlane', name },
        infrastructureRef: { apiGroup: 'infrastructure.tenancy.x-k8s.io', kind: 'VirtualClusterInfraCluster', name },
        ...(o.paused && { paused: true }),
      },
    },
    {
      apiVersion: 'controlplane.tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualClusterControlPlane',
      metadata: {
        name,
        namespace: NS,
        ...(o.pausedAnnotation && { annotations: { 'cluster.x-k8s.io/paused': '' } }),
      },
      spec: {
        version,
        ...(o.clusterVersionName && { clusterVersionName: o.clusterVersionName }),
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
const haveMinor = optionalBuild(
  `Kubernetes ${previousKubernetes()} (the older minor)`,
  isMinorComplete(kubernetesMinorDir(previousKubernetes() ?? '')),
);

describe.skipIf(!haveCapi)('a Cluster API control-plane provider: Clusters from git become tenants', () => {
  let t: TestSuper;
  let capi: CapiManager | undefined;
  let git: GitServer;
  let dir: string;
  let manager: Manager;
  let clusterctl: string;
  const cluster = (name: string) => t.client.getOrNull<Cluster>(R.capiclusters, NS, name);
  const condition = (c: Cluster | null, type: string) => c?.status?.conditions?.find((x) => x.type === type);
  const applied = (rev: string) =>
    eventually(async () => {
      const gs = await t.client.get<GitSource>(GITSOURCES, NS, 'fleet');
      expect(gs.status?.lastAttemptedRevision).toBe(rev);
    }, 60_000);

  beforeAll(async () => {
    const toolchain = await ensureCapiToolchain();
    clusterctl = await ensureClusterctl();
    t = await startTestSuper({ nodes: 1 });
    // Cluster API's CRDs first: the project's own CRD set then finds a Cluster CRD and adds no minimal one.
    for (const f of capiCRDFiles(toolchain))
      for (const d of parseAllDocuments(readFileSync(f, 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'capi-test');
    await applyCRDs(t.sc);
    await eventually(async () => expect(await t.client.list(R.capiclusters)).toBeTruthy(), 30_000);
    await eventually(async () => expect(await t.client.list(R.virtualclustercontrolplanes)).toBeTruthy(), 30_000);
    capi = await startCapiManager({ kubeconfig: t.sc.kubeconfigPath, toolchain });
    // The pinned version, the older minor (for the upgrade) and one a minor beyond the pinned one (a skip from it).
    for (const [name, kubernetesVersion] of [
      ['v1-36', NEW],
      ['v1-36-ungranted', NEW],
      ['v1-35', OLD],
      ['v1-37', SKIP],
    ])
      await t.client.create(R.clusterversions, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ClusterVersion',
        metadata: { name },
        spec: { kubernetesVersion, apiServer: { replicas: 1 }, etcd: { storageSize: '1Gi' } },
      });
    // The platform's default policy: local tenants, of the one ClusterVersion it grants.
    await t.client.create(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'fleet', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
      spec: { provisioners: { allowed: ['local'] }, grants: { clusterVersions: ['v1-36', 'v1-35', 'v1-37'] } },
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
    expect(c.status?.controlPlane?.versions).toEqual([{ version: NEW }]);
    expect(condition(c, 'Paused')).toMatchObject({ status: 'False' });
    // Nothing to scale: the control plane is external (no Machines), and Cluster API made none.
    for (const kind of ['machines', 'machinesets', 'machinedeployments'])
      expect(
        (await t.client.request<{ items: unknown[] }>('GET', `/apis/cluster.x-k8s.io/v1beta2/namespaces/${NS}/${kind}`))
          .items,
      ).toEqual([]);
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

  it("reports bad input: a version no ClusterVersion offers on the Cluster's conditions, an ungranted one in git", async () => {
    const rev = await git.commitFiles(
      'fleet',
      {
        'clusters/team-b.yaml': tenantFiles('team-b', 'v1.99.0'),
        'clusters/team-c.yaml': tenantFiles('team-c', 'v1.36.3', { clusterVersionName: 'v1-36-ungranted' }),
      },
      'team-b, team-c',
    );
    await applied(rev);
    await eventually(
      async () => {
        const b = condition(await cluster('team-b'), 'ControlPlaneAvailable');
        expect(b).toMatchObject({ status: 'False', reason: 'UnknownVersion' });
        expect(b?.message).toContain('no ClusterVersion offers v1.99.0');
      },
      120_000,
      1000,
    );
    expect(await t.client.getOrNull(R.virtualclusters, NS, 'team-b')).toBeNull();
    // A ClusterVersion its policy does not grant is refused by the applier, as for a VirtualCluster: the control plane
    // is not applied, and the GitSource names the file, the object and the grant.
    const gs = await t.client.get<GitSource>(GITSOURCES, NS, 'fleet');
    const ready = gs.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'ValidationFailed' });
    expect(ready?.message).toContain(
      'clusters/team-c.yaml: VirtualClusterControlPlane default/team-c: spec.clusterVersionName: "v1-36-ungranted" is ' +
        'not granted by TenantPolicy "fleet"',
    );
    expect(await t.client.getOrNull(R.virtualclustercontrolplanes, NS, 'team-c')).toBeNull();
    expect(await t.client.getOrNull(R.virtualclusters, NS, 'team-c')).toBeNull();
    // An invalid definition blocks pruning: team-c leaves git, so that the tests below can prune.
    await applied(await git.commitFiles('fleet', { 'clusters/team-c.yaml': null }, 'team-c goes'));
  });

  it('clusterctl describe cluster shows the tenant as Cluster API sees it, and the bad input', async () => {
    const describeCluster = (name: string) =>
      run(clusterctl, ['describe', 'cluster', name, '-n', NS, '--kubeconfig', t.sc.kubeconfigPath], {
        // clusterctl looks for a newer release on GitHub unless told not to, and keeps state under $HOME.
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, CLUSTERCTL_DISABLE_VERSIONCHECK: 'true' },
      });
    // Rows: the Cluster, then its control plane (with spec.version) and infrastructure, each with the STATUS, REASON
    // and MESSAGE of its Available condition (Ready where it has none).
    const a = await describeCluster('team-a');
    expect(a).toMatch(/^NAME\s+REPLICAS\s+AVAILABLE\s+READY\s+UP TO DATE\s+STATUS\s+REASON\s+SINCE\s+MESSAGE/m);
    expect(a).toMatch(/^Cluster default\/team-a\s+True\s+Available\s/m);
    expect(a).toMatch(
      new RegExp(
        `^├─VirtualClusterControlPlane default/team-a, ${NEW}\\s+True\\s+Available\\s.*VirtualCluster team-a is Running`,
        'm',
      ),
    );
    expect(a).toMatch(/^└─VirtualClusterInfraCluster default\/team-a\s+True\s+Provisioned\s/m);
    // Bad input: the control plane's Available condition, with the provider's reason and message.
    const b = await describeCluster('team-b');
    expect(b).toMatch(
      /^├─VirtualClusterControlPlane default\/team-b, v1\.99\.0\s+False\s+UnknownVersion\s.*no ClusterVersion offers v1\.99\.0/m,
    );
  });

  describe.skipIf(!haveMinor)(`a version change in git upgrades the tenant ${OLD} -> ${NEW}`, () => {
    let tenant: KubeClient;
    let before: Record<string, string>;
    let started: string;
    const commit = async (files: string, what: string) =>
      applied(await git.commitFiles('fleet', { 'clusters/team-u.yaml': files }, what));
    const cp = () => t.client.get<ControlPlane>(R.virtualclustercontrolplanes, NS, 'team-u');
    const vc = () => t.client.get<VirtualCluster>(R.virtualclusters, NS, 'team-u');
    const version = async () => (await tenant.request<{ gitVersion: string }>('GET', '/version')).gitVersion;
    /** startTime is when the tenant's apiserver process started, by its own metric: a restart changes it */
    const startTime = async () =>
      /^process_start_time_seconds (\S+)$/m.exec((await tenant.getText('/metrics')).text)?.[1] ?? 'none';
    /** objects are the tenant's ConfigMaps of namespace app, by name, with their uids */
    const objects = async () =>
      Object.fromEntries(
        (await tenant.list(R.configmaps, { namespace: 'app' })).items.map((o) => [o.metadata!.name!, o.metadata!.uid!]),
      );
    /** refused waits for the Cluster to show the VirtualCluster controller's refusal, and checks nothing restarted */
    const refused = async (message: RegExp, running: string) => {
      await eventually(
        async () => {
          const c = condition(await cluster('team-u'), 'ControlPlaneAvailable');
          expect(c).toMatchObject({ status: 'False', reason: 'UpgradeRefused' });
          expect(c?.message).toMatch(message);
          expect(c?.message).toContain(`the control plane keeps serving ${running}`);
        },
        120_000,
        1000,
      );
      expect((await cp()).status?.version).toBe(running);
      expect((await cluster('team-u'))?.status?.controlPlane?.versions).toEqual([{ version: running }]);
      expect((await vc()).status?.phase).toBe('Running');
      expect(await version()).toBe(running);
      expect(await startTime()).toBe(started);
      expect(await objects()).toEqual(before);
    };

    beforeAll(async () => {
      await commit(tenantFiles('team-u', OLD), 'team-u');
      await eventually(
        async () => expect(condition(await cluster('team-u'), 'Available')).toMatchObject({ status: 'True' }),
        240_000,
        1000,
      );
      const secret = await t.client.get<KubeObject & { data?: Record<string, string> }>(
        R.secrets,
        NS,
        'team-u-kubeconfig',
      );
      tenant = await KubeClient.fromString(Buffer.from(secret.data!.value!, 'base64').toString('utf8'));
      await tenant.create(R.namespaces, { metadata: { name: 'app' } });
      for (let i = 0; i < 10; i++)
        await tenant.create(R.configmaps, { metadata: { name: `obj-${i}`, namespace: 'app' }, data: { i: String(i) } });
      before = await objects();
      started = await startTime();
    }, 300_000);

    afterAll(() => tenant?.close());

    it(`runs ${OLD} and Cluster API reports it`, async () => {
      expect(await version()).toBe(OLD);
      expect((await cp()).status?.version).toBe(OLD);
      expect((await cluster('team-u'))?.status?.controlPlane?.versions).toEqual([{ version: OLD }]);
      expect((await vc()).spec.clusterVersionName).toBe('v1-35');
    });

    it(`refuses ${SKIP}, which skips a minor, on the Cluster; the tenant runs on untouched`, async () => {
      await commit(tenantFiles('team-u', SKIP), `team-u to ${SKIP}`);
      await refused(new RegExp(`from ${OLD} to ${SKIP} skips 1 minor`), OLD);
    });

    it('changes nothing while the Cluster is paused, or the control plane carries the paused annotation', async () => {
      const pausedBy = async (message: string) => {
        const c = await eventually(
          async () => {
            const c = await cp();
            const p = c.status?.conditions?.find((x) => x.type === 'Paused');
            expect(p).toMatchObject({ status: 'True', reason: 'Paused', message });
            // seen at the control plane's current spec, so its reconcile saw the new version and left it alone
            expect(p?.observedGeneration).toBe(c.metadata?.generation);
            return c;
          },
          60_000,
          1000,
        );
        expect((await vc()).spec.clusterVersionName).toBe('v1-37');
        expect(await version()).toBe(OLD);
        return c;
      };
      await commit(tenantFiles('team-u', SKIP, { paused: true }), 'pause team-u');
      await pausedBy('Cluster spec.paused is set to true');
      await eventually(async () => {
        expect(condition(await cluster('team-u'), 'Paused')).toMatchObject({ status: 'True' });
        // The infrastructure cluster is paused with it.
        const ic = await t.client.get<ControlPlane>(R.virtualclusterinfraclusters, NS, 'team-u');
        expect(ic.status?.conditions?.find((x) => x.type === 'Paused')).toMatchObject({
          status: 'True',
          message: 'Cluster spec.paused is set to true',
        });
      });
      await commit(tenantFiles('team-u', NEW, { paused: true }), `team-u to ${NEW}, paused`);
      const c = await pausedBy('Cluster spec.paused is set to true');
      expect(c.metadata?.annotations?.['cluster.x-k8s.io/paused']).toBeUndefined();
      // The annotation first, then the Cluster's pause goes: the control plane is paused throughout.
      await commit(tenantFiles('team-u', NEW, { paused: true, pausedAnnotation: true }), 'annotate team-u');
      await commit(tenantFiles('team-u', NEW, { pausedAnnotation: true }), 'unpause the Cluster of team-u');
      await pausedBy('VirtualClusterControlPlane has the cluster.x-k8s.io/paused annotation');
      expect(await startTime()).toBe(started);
    });

    it(`upgrades to ${NEW} once unpaused: Cluster API reports the version, every object kept`, async () => {
      await commit(tenantFiles('team-u', NEW), 'unpause team-u');
      const c = await eventually(
        async () => {
          const c = await cluster('team-u');
          expect(c?.status?.controlPlane?.versions, JSON.stringify(c?.status?.conditions)).toEqual([{ version: NEW }]);
          return c!;
        },
        240_000,
        1000,
      );
      expect(condition(c, 'Available')).toMatchObject({ status: 'True' });
      expect(condition(c, 'ControlPlaneAvailable')).toMatchObject({ status: 'True' });
      expect(condition(c, 'Paused')).toMatchObject({ status: 'False' });
      expect((await cp()).status?.version).toBe(NEW);
      expect((await cp()).status?.conditions?.find((x) => x.type === 'Paused')).toMatchObject({ status: 'False' });
      const ic = await t.client.get<ControlPlane>(R.virtualclusterinfraclusters, NS, 'team-u');
      expect(ic.status?.conditions?.find((x) => x.type === 'Paused')).toMatchObject({ status: 'False' });
      expect((await vc()).spec.clusterVersionName).toBe('v1-36');
      expect(await version()).toBe(NEW);
      expect(await objects()).toEqual(before);
      started = await startTime();
    });

    it(`refuses a downgrade to ${OLD} on the Cluster; the tenant runs on untouched`, async () => {
      await commit(tenantFiles('team-u', OLD), `team-u back to ${OLD}`);
      await refused(new RegExp(`from ${NEW} to ${OLD} is a downgrade`), NEW);
    });
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
