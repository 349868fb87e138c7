import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { localProvisioners } from '../../core/dev/provisioner/offer.ts';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { readCatalog, requestBackupAction } from '../../core/programs/cli/backup.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { startManager, type Manager } from '../../core/programs/manager/manager.ts';
import { readRetained } from '../../core/lifecycle/retained.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { GITSOURCES, type GitSource } from '../../gitops/applier/gitsource.ts';
import { startGitServer, type GitServer } from '../git/server.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { demoDeployment } from '../tenants.ts';
import type { Node, Pod } from '@virtualcluster-ts/plugin-sdk/pods';
import { runningTenant } from '../tenants.ts';

const NAME = 'gamma';
const FILE = `tenants/${NAME}.yaml`;
const vcYaml = (spec: Record<string, unknown> = {}) =>
  stringify({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { name: NAME, namespace: 'default' },
    spec: { provisioner: { type: 'local' }, ...spec },
  });
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');
/**
 * EVERY_S is the policy's snapshot interval here: the first two cases wait for the next scheduled snapshot (after a
 * revision, then a second one), each up to this long.
 */
const EVERY_S = 5;
/**
 * GRACE is how long the grace case keeps a deleted tenant's data: it reads the record as soon as the tenant is gone
 * (the record is written before the control plane is torn down, which takes seconds), then waits it out.
 */
const GRACE = '20s';

/**
 * Automatic snapshots and retained deletion through GitOps, on real processes: a git server, the manager (GitOps
 * applier, VirtualCluster and backup controllers, syncer) and local tenants on a real super cluster. The TenantPolicy
 * sets a short schedule; each git revision that changes the tenant gets a snapshot recorded with it; a tenant removed
 * from git is kept and comes back as it was when its file returns; with Delete, or after the grace, it goes for good.
 */
describe('schedules, per-revision snapshots and retained deletion, driven from git', () => {
  let t: TestSuper;
  let git: GitServer;
  let dir: string;
  let manager: Manager;

  const vc = () => t.client.getOrNull<VirtualCluster>(R.virtualclusters, 'default', NAME);
  const catalog = () => readCatalog(t.client, { namespace: 'default', name: NAME });
  const applied = (rev: string) =>
    eventually(async () => {
      const gs = await t.client.get<GitSource>(GITSOURCES, 'default', 'tenants');
      expect(gs.status?.lastAppliedRevision).toBe(rev);
    }, 60_000);
  const gone = () => eventually(async () => expect(await vc()).toBeNull(), 120_000);
  /** running waits for the tenant to run and returns its uid and a client of its apiserver */
  const running = async () => {
    const k = await runningTenant(t.client, NAME, 180_000);
    return { uid: (await vc())!.metadata!.uid!, root: k.root, client: await KubeClient.fromString(k.kubeconfig) };
  };
  /** contents reads the ConfigMaps the test wrote into the tenant's namespace app, by name */
  const contents = async (c: KubeClient) => {
    const list = await c.list<KubeObject & { data?: Record<string, string> }>(R.configmaps, { namespace: 'app' });
    return Object.fromEntries(
      list.items.filter((o) => o.metadata!.name!.startsWith('obj-')).map((o) => [o.metadata!.name!, o.data]),
    );
  };
  /**
   * runningPods waits for the two Pods of Deployment web in tenant namespace app to run, each on a vNode of its node,
   * and returns their nodes by Pod name; given the super namespace, each Pod's super copy must run there on that node
   * with the IP the tenant shows, so a tenant status restored from a snapshot cannot pass for a running Pod.
   */
  const runningPods = (c: KubeClient, superNs?: string) =>
    eventually(async () => {
      const pods = (await c.list<Pod>(R.pods, { namespace: 'app', labelSelector: 'app=web' })).items;
      const running = pods.filter((p) => p.status?.phase === 'Running' && p.spec?.nodeName);
      expect(running).toHaveLength(2);
      const nodes = [...new Set(running.map((p) => p.spec!.nodeName!))].sort();
      const vNodes = (await c.list<Node>(R.nodes)).items;
      expect(vNodes.map((n) => n.metadata!.name).sort()).toEqual(nodes);
      for (const n of vNodes)
        expect(n.status?.conditions?.find((x) => x.type === 'Ready')?.status, n.metadata!.name).toBe('True');
      if (superNs) {
        const copies = (await t.client.list<Pod>(R.pods, { namespace: superNs, labelSelector: 'app=web' })).items;
        for (const p of running) {
          const s = copies.find((x) => x.metadata!.name === p.metadata!.name);
          expect(s?.status?.phase, p.metadata!.name).toBe('Running');
          expect(s!.spec?.nodeName).toBe(p.spec!.nodeName);
          expect(s!.status?.podIP).toBe(p.status?.podIP);
        }
      }
      return Object.fromEntries(running.map((p) => [p.metadata!.name!, p.spec!.nodeName!]));
    }, 180_000);
  const policy = (retainFor: string, backup: Record<string, unknown> = {}) =>
    t.client.apply(
      R.tenantpolicies,
      {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'TenantPolicy',
        metadata: { name: 'backups', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
        spec: {
          provisioners: { allowed: ['local'] },
          backup: { schedule: { every: `${EVERY_S}s` }, retention: { count: 30 }, retainFor, ...backup },
        },
      },
      'test',
    );

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    await eventually(() => policy('10m'));
    dir = mkdtempSync(join(tmpdir(), 'vc-retained-it-'));
    git = await startGitServer();
    await git.initRepo('tenants');
    // Another object keeps the path holding one when gamma goes: a path with none never prunes (EmptyPath). An
    // infrastructure object of Cluster API starts nothing without a Cluster naming it.
    const keep = stringify({
      apiVersion: 'infrastructure.tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualClusterInfraCluster',
      metadata: { name: 'keep', namespace: 'default' },
    });
    await git.commitFiles(
      'tenants',
      { [FILE]: vcYaml(), 'tenants/keep.yaml': keep, 'README.md': 'tenants\n' },
      'gamma',
    );
    await t.client.create(GITSOURCES, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      metadata: { name: 'tenants', namespace: 'default' },
      spec: {
        url: git.url('tenants'),
        ref: { branch: 'main' },
        path: 'tenants',
        interval: '2s',
        safety: { maxDeletes: 5, maxDeletePercent: 100 },
      },
    });
    const file = join(dir, 'manager.yaml');
    writeFileSync(
      file,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [{ name: 'default', kubeconfig: t.sc.kubeconfigPath }],
        virtualClusters: { enabled: true, local: { stateDir: join(dir, 'tenants'), etcdEndpoint: t.sc.etcd.endpoint } },
        gitops: {
          enabled: true,
          cacheDir: join(dir, 'git-cache'),
          allowPrivateAddresses: ['127.0.0.0/8'],
          minIntervalSeconds: 1,
        },
        backups: { directory: join(dir, 'store'), retainedCheckSeconds: 1 },
        syncer: { patrolIntervalSeconds: 5 },
      }),
    );
    const cfg = loadManagerConfig(file);
    manager = await startManager(cfg, file, { provisioners: localProvisioners(cfg) });
  }, 240_000);

  afterAll(async () => {
    await manager?.stop();
    await git?.close();
    await t?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('snapshots each applied revision that changes the tenant, recorded with it, and none for one that does not', async () => {
    const { uid, client } = await running();
    client.close();
    const rev1 = await git.revParse('tenants', 'main');
    await eventually(async () => {
      const s = (await catalog()).filter((e) => e.reason === 'revision');
      expect(s.map((e) => [e.gitRevision, e.tenant.uid])).toEqual([[rev1, uid]]);
    }, 120_000);
    const rev2 = await git.commitFiles('tenants', { [FILE]: vcYaml({ weight: 2 }) }, 'gamma weight 2');
    await eventually(async () => {
      const s = (await catalog()).filter((e) => e.reason === 'revision');
      expect(s.map((e) => e.gitRevision)).toEqual([rev1, rev2]);
      expect((s[1]!.spec as VirtualCluster['spec'])?.weight).toBe(2);
    }, 120_000);
    const rev3 = await git.commitFiles('tenants', { 'README.md': 'tenants, nothing else\n' }, 'readme only');
    await applied(rev3);
    // The next scheduled snapshot comes after rev3 was applied and records it; no revision snapshot does.
    const scheduled = await eventually(async () => {
      const s = (await catalog()).filter((e) => e.reason === 'schedule' && e.gitRevision === rev3);
      expect(s.length).toBeGreaterThan(0);
      return s;
    }, 120_000);
    expect((await catalog()).filter((e) => e.reason === 'revision').map((e) => e.gitRevision)).toEqual([rev1, rev2]);
    expect(scheduled[0]!.tenant.uid).toBe(uid);
  }, 400_000);

  it('takes scheduled snapshots no closer together than the policy says', async () => {
    const all = await eventually(async () => {
      const s = (await catalog()).filter((e) => e.reason === 'schedule' || e.reason === 'revision');
      expect(s.filter((e) => e.reason === 'schedule').length).toBeGreaterThanOrEqual(2);
      return s;
    }, 120_000);
    const times = all.map((e) => Date.parse(e.createdAt)).sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++)
      if (all.find((e) => Date.parse(e.createdAt) === times[i])!.reason === 'schedule')
        expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(EVERY_S * 1000);
  }, 200_000);

  let before: Record<string, unknown>;

  it('a tenant removed from git is kept, shown Deleted (retained until ...), and comes back as it was', async () => {
    const first = await running();
    await first.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'app' } });
    for (let i = 0; i < 10; i++)
      await first.client.create(R.configmaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `obj-${i}`, namespace: 'app' },
        data: { i: String(i) },
      } as KubeObject);
    await demoDeployment(first.client, 'app');
    const placedBefore = await runningPods(first.client);
    before = await contents(first.client);
    first.client.close();
    expect(Object.keys(before)).toHaveLength(10);
    await git.commitFiles('tenants', { [FILE]: null }, 'remove gamma');
    await gone();
    const kept = (await readRetained(t.client, 'default', NAME))!;
    expect(kept.record.uid).toBe(first.uid);
    const deletion = (await catalog()).filter((e) => e.reason === 'deletion' && e.tenant.uid === first.uid);
    expect(deletion.map((e) => e.id)).toEqual([kept.record.snapshot]);
    const shown = await promisify(execFile)(process.execPath, [vcBin, 'get', '--kubeconfig', t.sc.kubeconfigPath]);
    const line = shown.stdout.split('\n').find((l) => l.includes(`Deleted (retained until ${kept.record.until})`));
    expect(line?.split(/\s+/).slice(0, 2)).toEqual(['default', NAME]);

    await git.commitFiles('tenants', { [FILE]: vcYaml({ weight: 2 }) }, 'gamma is back');
    const again = await running();
    expect(again.uid).not.toBe(first.uid);
    await eventually(async () => expect(await contents(again.client)).toEqual(before), 180_000);
    again.client.close();
    await eventually(async () => expect(await readRetained(t.client, 'default', NAME)).toBeUndefined(), 30_000);
    // The syncer copies what came back into the new tenant's super namespace.
    await eventually(async () => {
      const s = await t.client.list(R.configmaps, { namespace: `${again.root}-app` });
      expect(s.items.map((o) => o.metadata!.name).filter((n) => n!.startsWith('obj-'))).toHaveLength(10);
    }, 120_000);
    // The Deployment that came back runs again from the new super namespace, and the vNodes of its nodes reappear.
    // Its restored Pods were bound to nodes but have no super Pod in the new namespace: the syncer deletes them
    // (SuperPodGone) and the ReplicaSet makes new ones, of other names.
    const client = await KubeClient.fromString((await runningTenant(t.client, NAME)).kubeconfig);
    const placedAfter = await runningPods(client, `${again.root}-app`);
    expect(Object.keys(placedAfter)).toHaveLength(Object.keys(placedBefore).length);
    client.close();
  }, 600_000);

  it('with spec.deletionPolicy Delete, a tenant removed from git goes for good: nothing kept, nothing back', async () => {
    await git.commitFiles('tenants', { [FILE]: vcYaml({ weight: 2, deletionPolicy: 'Delete' }) }, 'gamma: Delete');
    const { uid } = await eventually(async () => {
      const v = await vc();
      expect(v?.spec?.deletionPolicy).toBe('Delete');
      return { uid: v!.metadata!.uid! };
    }, 60_000);
    await git.commitFiles('tenants', { [FILE]: null }, 'remove gamma');
    await gone();
    expect(await readRetained(t.client, 'default', NAME)).toBeUndefined();
    expect((await catalog()).filter((e) => e.reason === 'deletion' && e.tenant.uid === uid)).toEqual([]);
    await git.commitFiles('tenants', { [FILE]: vcYaml() }, 'a new gamma');
    const fresh = await running();
    // Its first revision snapshot is taken after the reconcile that would have restored retained data.
    await eventually(async () => {
      expect((await catalog()).some((e) => e.reason === 'revision' && e.tenant.uid === fresh.uid)).toBe(true);
    }, 120_000);
    expect(await fresh.client.getOrNull(R.namespaces, undefined, 'app')).toBeNull();
    fresh.client.close();
  }, 600_000);

  it('after the grace the retained data goes for good, and a tenant made again starts empty', async (ctx) => {
    // The cases after this one use the tenant again: where this one fails with the tenant out of git, it goes back.
    ctx.onTestFailed(async () => {
      if (!(await vc())) await git.commitFiles('tenants', { [FILE]: vcYaml() }, 'gamma back after a failed case');
    });
    await policy(GRACE);
    const first = await running();
    await first.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'app' } });
    first.client.close();
    await git.commitFiles('tenants', { [FILE]: null }, 'remove gamma');
    // The record is read as soon as it is written, before the teardown: on a busy host the control plane's teardown
    // can outlast the grace, after which the record is gone (ci62: read after the tenant was gone, it was).
    const kept = await eventually(async () => {
      const r = await readRetained(t.client, 'default', NAME);
      expect(r?.record.uid).toBe(first.uid);
      return r!;
    }, 120_000);
    await gone();
    await eventually(async () => expect(await readRetained(t.client, 'default', NAME)).toBeUndefined(), 60_000);
    expect((await catalog()).map((e) => e.id)).not.toContain(kept.record.snapshot);
    await git.commitFiles('tenants', { [FILE]: vcYaml() }, 'gamma after the grace');
    const fresh = await running();
    await eventually(async () => {
      expect((await catalog()).some((e) => e.reason === 'revision' && e.tenant.uid === fresh.uid)).toBe(true);
    }, 120_000);
    expect(await fresh.client.getOrNull(R.namespaces, undefined, 'app')).toBeNull();
    fresh.client.close();
  }, 600_000);

  it('after a restore in place the syncer removes the super copies of objects the snapshot does not hold', async () => {
    const { root, client } = await running();
    const superNames = async () =>
      (await t.client.list(R.configmaps, { namespace: `${root}-app` })).items
        .map((o) => o.metadata!.name!)
        .filter((n) => n.startsWith('obj-'))
        .sort();
    const cm = (name: string) =>
      ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'app' }, data: { v: name } }) as KubeObject;
    await client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'app' } });
    await client.create(R.configmaps, cm('obj-kept'));
    await eventually(async () => expect(await superNames()).toEqual(['obj-kept']), 60_000);
    const tenant = { namespace: 'default', name: NAME };
    const { snapshot } = await requestBackupAction(t.client, tenant, { action: 'create' }, 120_000);
    await client.create(R.configmaps, cm('obj-late'));
    await client.delete(R.configmaps, 'app', 'obj-kept');
    await eventually(async () => expect(await superNames()).toEqual(['obj-late']), 60_000);
    client.close();
    await requestBackupAction(t.client, tenant, { action: 'restore', snapshot: snapshot! }, 180_000);
    const after = await running();
    await eventually(async () => expect(Object.keys(await contents(after.client))).toEqual(['obj-kept']), 60_000);
    after.client.close();
    await eventually(async () => expect(await superNames()).toEqual(['obj-kept']), 120_000);
  }, 400_000);

  it('takes scheduled snapshots at the times of a cron expression, and retention by age drops the old ones', async () => {
    const { uid } = await running();
    const earlier = (await catalog()).map((e) => e.id);
    expect(earlier.length).toBeGreaterThan(0);
    const from = Date.now();
    await policy('10m', { schedule: { cron: '*/5 * * * * *' }, retention: { maxAgeSeconds: 20 } });
    // Every scheduled snapshot seen since the change, read as they come: retention removes each 20 s after a newer
    // one, and on a busy host a snapshot can take seconds, so the count is of all seen, not of those in one read.
    const seen = new Map<string, number>();
    const taken = await eventually(async () => {
      for (const e of await catalog())
        if (e.reason === 'schedule' && e.tenant.uid === uid && Date.parse(e.createdAt) >= from)
          seen.set(e.id, Date.parse(e.createdAt));
      const times = [...seen.values()];
      expect(times.length).toBeGreaterThanOrEqual(4);
      expect(Math.max(...times) - from).toBeGreaterThan(25_000);
      return times;
    }, 150_000);
    // At most one snapshot per 5-second slot of the expression.
    const slots = taken.map((at) => Math.floor(at / 5000));
    expect(new Set(slots).size).toBe(slots.length);
    // Everything older than 20 seconds when the newest was taken is gone, the earlier cases' snapshots among them. A
    // snapshot is in the catalog before the old ones it expires are deleted (it is stored first, so a tenant is never
    // without one), so a read between the two sees them both: read until one falls between two scheduled snapshots.
    await eventually(async () => {
      const kept = await catalog();
      const newest = Math.max(...kept.map((e) => Date.parse(e.createdAt)));
      expect(kept.filter((e) => newest - Date.parse(e.createdAt) > 20_000)).toEqual([]);
      expect(kept.map((e) => e.id).filter((id) => earlier.includes(id))).toEqual([]);
    }, 30_000);
  }, 240_000);

  it('a sleeping tenant in git: a revision that changes its spec wakes it and is applied, said by an event', async () => {
    await policy('10m', { schedule: { every: '1h' } });
    const withSleep = await git.commitFiles(
      'tenants',
      { [FILE]: vcYaml({ weight: 2, sleep: { afterIdle: '1h' } }) },
      'gamma sleeps when idle',
    );
    await applied(withSleep);
    await eventually(
      async () =>
        expect((await vc())?.status?.conditions).toContainEqual(
          expect.objectContaining({ type: 'Exposed', reason: 'FrontDoor' }),
        ),
      120_000,
    );
    const run = (...args: string[]) =>
      promisify(execFile)(process.execPath, [vcBin, ...args, '--kubeconfig', t.sc.kubeconfigPath], {
        timeout: 180_000,
      });
    const slept = await run('sleep', NAME);
    expect(slept.stdout + slept.stderr).toContain('is Sleeping');
    await eventually(async () => expect((await vc())?.status?.phase).toBe('Sleeping'), 60_000);

    const changed = await git.commitFiles(
      'tenants',
      { [FILE]: vcYaml({ weight: 3, sleep: { afterIdle: '1h' } }) },
      'gamma weight 3 while asleep',
    );
    await applied(changed);
    const woken = await eventually(async () => {
      const v = await vc();
      expect(v?.status?.phase).toBe('Running');
      expect(v?.status?.observedGeneration).toBe(v?.metadata?.generation);
      return v!;
    }, 180_000);
    expect(woken.spec.weight).toBe(3);
    // a pass writes its status first and records its events after it (core/lifecycle/steps.ts): read them until then
    await eventually(async () => {
      const events = (
        await t.client.list<KubeObject & { reason?: string; message?: string; involvedObject?: { name?: string } }>(
          R.events,
          { namespace: 'default' },
        )
      ).items.filter((e) => e.involvedObject?.name === NAME);
      expect(events.map((e) => `${e.reason}: ${e.message}`)).toContain('Woken: the spec changed: woken to apply it');
    }, 30_000);
  }, 400_000);
});
