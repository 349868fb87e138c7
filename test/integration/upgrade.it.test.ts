/**
 * Kubernetes upgrades of tenants (issue 33, §3) on real processes: a local tenant on the older pinned minor moves to
 * the current one when its ClusterVersion names it: a snapshot (reason upgrade) first, then etcd, kube-apiserver and
 * kube-controller-manager in the skew policy's order, each health-checked; every object it had is there after, with
 * the same uid. A skipped minor and a downgrade are refused with the object, field and reason, and the running tenant
 * is left as it was (same processes, same version). A syncer runs over the tenants as the manager's does: a tenant Pod
 * synced to a kwok node of the super cluster keeps running through the upgrade (its super copy is never recreated, its
 * vNode stays). A restore follows the same rules (issue 34 §2): the snapshot of the older minor goes into the tenant on
 * the newer one, and one of the newer minor into a tenant on the older is refused before anything stops. The older
 * minor's binaries are built on first use (ensureKubernetesMinor), so a cold run of this file includes that build.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { BackupController, snapshotBeforeUpgrade } from '../../core/lifecycle/backups.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { DirectoryStore } from '../../core/backup/store.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import {
  ensureKubernetesMinor,
  isMinorComplete,
  kubernetesMinorDir,
  previousKubernetes,
} from '../../core/toolchain/minors.ts';
import { optionalBuild } from '../optionalbuilds.ts';
import { runVc } from '../vccli.ts';
import { pinnedVersions } from '../../core/toolchain/toolchain.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const NS = 'default';
const OLD = previousKubernetes()!;
const NEW = pinnedVersions().kubernetes;

interface Pod extends KubeObject {
  spec: { containers: Array<{ name: string; image: string }>; nodeName?: string };
  status?: { phase?: string };
}

/** Workload is where a tenant Pod stands: its uid and phase in the tenant and in the super cluster, and its vNode. */
interface Workload {
  tenantUid: string;
  tenantPhase?: string;
  nodeName?: string;
  vNodeUid?: string;
  superUid?: string;
  superPhase?: string;
}

const clusterVersion = (name: string, kubernetesVersion: string) => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'ClusterVersion',
  metadata: { name },
  spec: { kubernetesVersion },
});

/** exe is the executable a process runs. */
const exe = (pid: number | undefined) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];

const haveMinor = optionalBuild(
  `Kubernetes ${previousKubernetes()} (the older minor)`,
  isMinorComplete(kubernetesMinorDir(previousKubernetes() ?? '')),
);

describe('upgrading a tenant across Kubernetes minors', () => {
  let t: TestSuper;
  let stateDir: string;
  let store: DirectoryStore;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  let backups: BackupController;
  const vc = (args: string[]) => runVc(t.sc.kubeconfigPath, stateDir, args);
  let syncer: Syncer;
  const get = (name: string) => t.client.get<VirtualCluster>(R.virtualclusters, NS, name);
  const root = (vc: VirtualCluster) => vc.status!.clusterNamespace!;
  const condition = (vc: VirtualCluster, type: string) => vc.status?.conditions?.find((c) => c.type === type);
  const events = async (name: string) =>
    (
      await t.client.list<KubeObject & { reason?: string; type?: string; message?: string }>(R.events, {
        namespace: NS,
      })
    ).items
      .filter((e) => (e as { involvedObject?: { name?: string } }).involvedObject?.name === name)
      .map((e) => `${e.type}/${e.reason}: ${e.message}`);
  /** tenantClient is a client of the tenant's own apiserver */
  const tenantClient = async (name: string): Promise<KubeClient> => local.controlPlane(root(await get(name)))!.client();
  /** objects are the tenant's namespaces, ConfigMaps and Secrets of namespace "app", by kind and name, with uids */
  const objects = async (c: KubeClient) => {
    const out: Record<string, string> = {};
    for (const n of (await c.list(R.namespaces)).items) out[`namespace/${n.metadata!.name}`] = n.metadata!.uid!;
    for (const r of [R.configmaps, R.secrets])
      for (const o of (await c.list(r, { namespace: 'app' })).items)
        out[`${r.resource}/${o.metadata!.name}`] = o.metadata!.uid!;
    return out;
  };
  const version = async (c: KubeClient) => (await c.request<{ gitVersion: string }>('GET', '/version')).gitVersion;

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'upgrade', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: {
            provisioners: { allowed: ['local'] },
            grants: { clusterVersions: ['k8s-tenant', 'k8s-old', 'k8s-new', 'k8s-bogus'] },
          },
        },
        'test',
      ),
    );
    for (const [name, v] of [
      ['k8s-tenant', OLD],
      ['k8s-old', OLD],
      ['k8s-new', NEW],
      ['k8s-bogus', 'v1.36.99'],
    ] as const)
      await t.client.create(R.clusterversions, clusterVersion(name, v));
    stateDir = mkdtempSync(join(tmpdir(), 'vc-upgrade-it-'));
    store = new DirectoryStore(join(stateDir, 'store'));
    local = new LocalProvisioner(join(stateDir, 'tenants'), t.sc.etcd);
    const provisioners = { local };
    const backupOptions = { meta: t.client, provisioners, defaultProvisioner: 'local' as const, store };
    const tenants = new MutableTenantRegistry();
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({ superClient: t.client, host, registry: tenants, patrolIntervalMs: 0, workers: 4 });
    await syncer.start();
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners,
      tenants,
      health: { intervalMs: 1000, timeoutMs: 1500 },
      beforeUpgrade: (vc, from) => snapshotBeforeUpgrade(backupOptions, vc, from),
    });
    // vc backup and vc restore are answered by the backup controller, on the same store.
    backups = new BackupController({ ...backupOptions, retention: { count: 10 } });
    await controller.start();
    await backups.start();
  }, 240_000);

  afterAll(async () => {
    await backups?.stop();
    await controller?.stop();
    await syncer?.stop();
    await local?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  const create = (name: string, clusterVersionName: string) =>
    t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name, namespace: NS },
      spec: { provisioner: { type: 'local' }, clusterVersionName },
    });

  it(`refuses a downgrade ${NEW} -> ${OLD} by ClusterVersion reference; the tenant keeps running`, async () => {
    await create('cur', 'k8s-new');
    await eventually(async () => expect((await get('cur')).status?.phase).toBe('Running'), 120_000);
    const pid = local.controlPlane(root(await get('cur')))!.apiserver.pid;
    await t.client.patch(R.virtualclusters, NS, 'cur', { spec: { clusterVersionName: 'k8s-old' } }, 'merge');
    const vc = await eventually(async () => {
      const v = await get('cur');
      expect(v.status?.reason).toBe('UpgradeRefused');
      return v;
    }, 60_000);
    expect(vc.status?.phase).toBe('Running');
    expect(vc.status?.message).toMatch(
      new RegExp(`^ClusterVersion k8s-old spec.kubernetesVersion: from ${NEW} to ${OLD} is a downgrade`),
    );
    expect(condition(vc, 'SpecApplied')).toMatchObject({ status: 'False', reason: 'UpgradeRefused' });
    expect((await events('cur')).some((e) => e.startsWith('Warning/UpgradeRefused: ClusterVersion k8s-old'))).toBe(
      true,
    );
    expect(local.controlPlane(root(vc))!.apiserver.pid).toBe(pid);
    expect(await version(await tenantClient('cur'))).toBe(NEW);
    await t.client.delete(R.virtualclusters, NS, 'cur');
  });

  it('refuses to start a tenant whose ClusterVersion names a version with no binaries, naming the field', async () => {
    await create('bogus', 'k8s-bogus');
    const vc = await eventually(async () => {
      const v = await get('bogus');
      expect(v.status?.reason).toBe('UnknownKubernetesVersion');
      return v;
    }, 60_000);
    expect(vc.status?.message).toMatch(/^ClusterVersion k8s-bogus spec.kubernetesVersion: Kubernetes v1.36.99 is not/);
    expect(local.controlPlane(root(vc))).toBeUndefined();
    await t.client.delete(R.virtualclusters, NS, 'bogus');
  });

  let before: Record<string, string>;
  let workload: Workload;
  /** superPod is the super cluster's copy of tenant "up"'s Pod app/web, or null */
  const superPod = async () => t.client.getOrNull<Pod>(R.pods, superNamespace(root(await get('up')), 'app'), 'web');
  /** workloadState is where tenant "up"'s Pod app/web stands: in the tenant, in the super cluster, and its vNode */
  const workloadState = async (c: KubeClient): Promise<Workload> => {
    const p = await c.get<Pod>(R.pods, 'app', 'web');
    const s = await superPod();
    const node = p.spec.nodeName ? await c.getOrNull(R.nodes, undefined, p.spec.nodeName) : null;
    return {
      tenantUid: p.metadata!.uid!,
      tenantPhase: p.status?.phase,
      nodeName: p.spec.nodeName,
      vNodeUid: node?.metadata?.uid,
      superUid: s?.metadata?.uid,
      superPhase: s?.status?.phase,
    };
  };

  it.skipIf(!haveMinor)(
    `runs the older minor's binaries for a ClusterVersion that names ${OLD}`,
    async () => {
      // The older minor's kube-apiserver and kube-controller-manager: built here on a cold cache, then cached.
      await ensureKubernetesMinor();
      await create('up', 'k8s-tenant');
      await eventually(async () => expect((await get('up')).status?.phase).toBe('Running'), 120_000);
      const c = await tenantClient('up');
      expect(await version(c)).toBe(OLD);
      const cp = local.controlPlane(root(await get('up')))!;
      expect(exe(cp.apiserver.pid)).toContain(`k8s-tenant-${OLD}`);
      expect(exe(cp.controllerManager!.pid)).toContain(`k8s-tenant-${OLD}`);
      await c.create(R.namespaces, { metadata: { name: 'app' } });
      for (let i = 0; i < 20; i++) {
        await c.create(R.configmaps, { metadata: { name: `obj-${i}`, namespace: 'app' }, data: { i: String(i) } });
        await c.create(R.secrets, { metadata: { name: `obj-${i}`, namespace: 'app' }, stringData: { i: String(i) } });
      }
      // A workload: the syncer copies the Pod to the super cluster, kwok runs it, and the tenant sees it Running on
      // a vNode.
      await eventually(() => c.get(R.serviceaccounts, 'app', 'default'), 60_000);
      await c.create(R.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web', namespace: 'app' },
        spec: { containers: [{ name: 'c', image: 'nginx' }] },
      });
      workload = await eventually(async () => {
        const w = await workloadState(c);
        expect(w).toMatchObject({ tenantPhase: 'Running', superPhase: 'Running' });
        expect(w.vNodeUid).toBeTruthy();
        return w;
      }, 120_000);
      before = await objects(c);
      expect(Object.keys(before).length).toBeGreaterThan(40);
    },
    60 * 60_000,
  );

  it.skipIf(!haveMinor)(
    'refuses a ClusterVersion edit that skips a minor and leaves the tenant running as it was',
    async () => {
      const cp = local.controlPlane(root(await get('up')))!;
      const pid = cp.apiserver.pid;
      await t.client.patch(
        R.clusterversions,
        undefined,
        'k8s-tenant',
        { spec: { kubernetesVersion: 'v1.37.2' } },
        'merge',
      );
      const vc = await eventually(async () => {
        const v = await get('up');
        expect(v.status?.reason).toBe('UpgradeRefused');
        return v;
      }, 60_000);
      expect(vc.status?.phase).toBe('Running');
      expect(vc.status?.message).toMatch(
        new RegExp(`^ClusterVersion k8s-tenant spec.kubernetesVersion: from ${OLD} to v1.37.2 skips 1 minor`),
      );
      expect(condition(vc, 'SpecApplied')).toMatchObject({ status: 'False', reason: 'UpgradeRefused' });
      expect((await events('up')).some((e) => e.startsWith('Warning/UpgradeRefused: ClusterVersion k8s-tenant'))).toBe(
        true,
      );
      expect(local.controlPlane(root(vc))!.apiserver.pid).toBe(pid);
      expect(await version(await tenantClient('up'))).toBe(OLD);
    },
  );

  it.skipIf(!haveMinor)(
    `upgrades ${OLD} -> ${NEW} when the ClusterVersion names it: snapshot first, every object kept, its Pod never stops`,
    async () => {
      // The super copy of the tenant's Pod, read every half second through the roll: it must never go away or change.
      const seenSuper = new Set<string>();
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const p = await superPod();
          seenSuper.add(p ? `${p.metadata!.uid} ${p.status?.phase}` : 'absent');
          await new Promise((r) => setTimeout(r, 500));
        }
      })();
      await t.client.patch(R.clusterversions, undefined, 'k8s-tenant', { spec: { kubernetesVersion: NEW } }, 'merge');
      const vc = await eventually(async () => {
        const v = await get('up');
        expect(condition(v, 'SpecApplied')).toMatchObject({ status: 'True', reason: 'Applied' });
        expect(v.status?.phase).toBe('Running');
        return v;
      }, 180_000).finally(async () => {
        sampling = false;
        await sampler;
      });
      expect([...seenSuper]).toEqual([`${workload.superUid} Running`]);
      const c = await tenantClient('up');
      expect(await version(c)).toBe(NEW);
      const cp = local.controlPlane(root(vc))!;
      expect(exe(cp.apiserver.pid)).not.toContain('k8s-tenant-');
      expect(exe(cp.controllerManager!.pid)).not.toContain('k8s-tenant-');
      expect(await objects(c)).toEqual(before);
      // The workload kept running: the same tenant Pod on the same vNode, Running, and the same super copy.
      await eventually(async () => expect(await workloadState(c)).toEqual(workload), 60_000);
      // The snapshot was taken of the older version's data (the provisioner takes it before it restarts anything).
      const snaps = await store.list({ namespace: NS, name: 'up' });
      expect(snaps.map((s) => [s.reason, s.kubernetesVersion])).toEqual([['upgrade', OLD]]);
      const seen = await events('up');
      expect(seen).toContain(`Normal/UpgradeSnapshot: snapshot ${snaps[0]!.id} taken before ${OLD} -> ${NEW}`);
      expect(seen).toContain('Normal/Updating: rolling kube-apiserver, then kube-controller-manager to the new spec');
    },
  );

  it.skipIf(!haveMinor)(
    `restores the ${OLD} snapshot taken before the upgrade into the tenant now on ${NEW}: its objects come back`,
    async () => {
      const [snap] = await store.list({ namespace: NS, name: 'up' });
      const c = await tenantClient('up');
      for (let i = 0; i < 5; i++) await c.delete(R.configmaps, 'app', `obj-${i}`);
      await c.create(R.configmaps, { metadata: { name: 'later', namespace: 'app' }, data: { i: 'later' } });
      const r = await vc(['restore', 'up', '--from', snap!.id]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe(`virtualcluster ${NS}/up: restored from snapshot ${snap!.id} of ${NS}/up\n`);
      // The data of the older minor, read by the newer apiserver as an upgrade reads it: every object as it was.
      await eventually(async () => expect(await objects(await tenantClient('up'))).toEqual(before), 120_000);
      expect(await version(await tenantClient('up'))).toBe(NEW);
    },
    300_000,
  );

  it.skipIf(!haveMinor)(
    `refuses to restore a snapshot of ${NEW} into a tenant on ${OLD} (a downgrade), and stops nothing`,
    async () => {
      await create('old', 'k8s-old');
      const vcOld = await eventually(async () => {
        const v = await get('old');
        expect(v.status?.phase).toBe('Running');
        // The restore reads the version the health monitor saw.
        expect(v.status?.components?.find((x) => x.name === 'kube-apiserver')?.version).toBe(OLD);
        return v;
      }, 120_000);
      const pid = local.controlPlane(root(vcOld))!.apiserver.pid;
      const taken = await vc(['backup', 'create', 'up']);
      expect(taken.code, taken.stderr).toBe(0);
      const id = taken.stdout.trim();
      const r = await vc(['restore', 'up', '--from', id, '--as', 'old', '--wait', '120']);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`snapshot ${id} holds the data of Kubernetes ${NEW} and this tenant runs ${OLD}: `);
      expect(r.stderr).toContain('nothing was stopped');
      expect(local.controlPlane(root(await get('old')))!.apiserver.pid).toBe(pid);
      expect(await version(await tenantClient('old'))).toBe(OLD);
    },
    300_000,
  );
});
