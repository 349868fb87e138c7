import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { localProvisioners } from '../../core/dev/provisioner/offer.ts';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { readCatalog } from '../../core/programs/cli/backup.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { startManager, type Manager } from '../../core/programs/manager/manager.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { GITSOURCES } from '../../gitops/applier/gitsource.ts';
import { git as runGit, startGitServer, type GitServer } from '../git/server.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { runningTenant } from '../tenants.ts';
import { runVc } from '../vccli.ts';

const NAME = 'delta';
const FILE = `tenants/${NAME}.yaml`;
const vcYaml = (spec: Record<string, unknown> = {}) =>
  stringify({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { name: NAME, namespace: 'default' },
    spec: { provisioner: { type: 'local' }, ...spec },
  });

/** Objects is what a user put into a tenant: its own namespaces, and the data of every ConfigMap in them, by key. */
type Objects = Record<string, Record<string, string> | null>;

/**
 * `vc restore NAME --to-revision REV` on the real system: a git server whose history defines the tenant, the manager
 * (GitOps applier, VirtualCluster and backup controllers) with local tenants on a real super cluster, and the vc
 * program as a user runs it. Each revision that changes the tenant gets a snapshot recorded with it; the tenant's
 * objects are changed between revisions, and a restore by revision must bring back exactly the objects the tenant
 * held when that revision's snapshot was taken, by the revision itself, by a later commit with no snapshot of its own
 * through the history of a clone (--repo), and into a new tenant (--as).
 */
describe('vc restore --to-revision, from a GitSource history', () => {
  let t: TestSuper;
  let gitServer: GitServer;
  let dir: string;
  let manager: Manager;

  const vc = (args: string[]) => runVc(t.sc.kubeconfigPath, dir, args);

  const catalog = (name = NAME) => readCatalog(t.client, { namespace: 'default', name });
  /** revisionSnapshot waits for the snapshot recorded with git revision rev and returns its id */
  const revisionSnapshot = (rev: string) =>
    eventually(async () => {
      const s = (await catalog()).filter((e) => e.reason === 'revision' && e.gitRevision === rev);
      expect(s).toHaveLength(1);
      return s[0]!.id;
    }, 180_000);
  /** tenant waits for the tenant to run and returns a client of its apiserver (the caller closes it) */
  const tenant = async (name = NAME) =>
    KubeClient.fromString((await runningTenant(t.client, name, 240_000)).kubeconfig);
  const cm = (ns: string, name: string, data: Record<string, string>) =>
    ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data }) as KubeObject;
  const ns = (name: string) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }) as KubeObject;
  /** objects reads every namespace the test made (prefix `app-`) and each ConfigMap the test wrote in them */
  const objects = async (c: KubeClient): Promise<Objects> => {
    const out: Objects = {};
    const spaces = (await c.list(R.namespaces)).items.map((n) => n.metadata!.name!).filter((n) => n.startsWith('app-'));
    for (const space of spaces) {
      out[`namespace/${space}`] = null;
      const cms = await c.list<KubeObject & { data?: Record<string, string> }>(R.configmaps, { namespace: space });
      for (const o of cms.items)
        if (o.metadata!.name!.startsWith('obj-')) out[`configmap/${space}/${o.metadata!.name}`] = o.data ?? {};
    }
    return out;
  };
  /** restored waits until the tenant named serves exactly `want` again */
  const restored = (want: Objects, name = NAME) =>
    eventually(async () => {
      const c = await tenant(name);
      try {
        expect(await objects(c)).toEqual(want);
      } finally {
        c.close();
      }
    }, 240_000);

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 0 });
    await applyCRDs(t.sc);
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'local-only', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: { provisioners: { allowed: ['local'] }, backup: { retention: { count: 30 } } },
        },
        'test',
      ),
    );
    dir = mkdtempSync(join(tmpdir(), 'vc-restorerev-it-'));
    gitServer = await startGitServer();
    await gitServer.initRepo('tenants');
    await gitServer.commitFiles('tenants', { [FILE]: vcYaml(), 'README.md': 'tenants\n' }, 'delta');
    await t.client.create(GITSOURCES, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      metadata: { name: 'tenants', namespace: 'default' },
      spec: { url: gitServer.url('tenants'), ref: { branch: 'main' }, path: 'tenants', interval: '2s' },
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
        backups: { directory: join(dir, 'store') },
      }),
    );
    const cfg = loadManagerConfig(file);
    manager = await startManager(cfg, file, { provisioners: localProvisioners(cfg) });
  }, 300_000);

  afterAll(async () => {
    await manager?.stop();
    await gitServer?.close();
    await t?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  let rev2 = '';
  let rev3 = '';
  let rev4 = '';
  let at2: Objects = {};
  let at3: Objects = {};

  it('restores the objects the tenant held when the snapshot of that revision was taken, and says which it took', async () => {
    const rev1 = await gitServer.revParse('tenants', 'main');
    await revisionSnapshot(rev1);
    let c = await tenant();
    await c.create(R.namespaces, ns('app-a'));
    for (let i = 0; i < 5; i++) await c.create(R.configmaps, cm('app-a', `obj-${i}`, { v: '1', i: String(i) }));
    at2 = await objects(c);
    c.close();
    expect(Object.keys(at2)).toHaveLength(6);
    rev2 = await gitServer.commitFiles('tenants', { [FILE]: vcYaml({ weight: 2 }) }, 'delta weight 2');
    const snap2 = await revisionSnapshot(rev2);

    // Between revisions: one object deleted, one changed, one added, a namespace with its own objects made.
    c = await tenant();
    await c.delete(R.configmaps, 'app-a', 'obj-0');
    await c.patch(R.configmaps, 'app-a', 'obj-1', { data: { v: '2' } }, 'merge');
    await c.create(R.configmaps, cm('app-a', 'obj-5', { v: '2' }));
    await c.create(R.namespaces, ns('app-b'));
    await c.create(R.configmaps, cm('app-b', 'obj-b', { v: '2' }));
    at3 = await objects(c);
    c.close();
    expect(at3).not.toEqual(at2);
    rev3 = await gitServer.commitFiles('tenants', { [FILE]: vcYaml({ weight: 3 }) }, 'delta weight 3');
    await revisionSnapshot(rev3);

    // After the last snapshot: more changes, which a restore must undo.
    c = await tenant();
    for (const name of ['obj-1', 'obj-2', 'obj-3']) await c.delete(R.configmaps, 'app-a', name);
    await c.create(R.configmaps, cm('app-a', 'obj-6', { v: '3' }));
    const now = await objects(c);
    c.close();
    expect(now).not.toEqual(at3);

    const r = await vc(['restore', NAME, '--to-revision', rev2.slice(0, 12)]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toMatch(
      new RegExp(`^restoring snapshot ${snap2} \\(taken \\S+ at revision ${rev2.slice(0, 12)}\\)$`),
    );
    expect(lines.at(-1)).toBe(`virtualcluster default/${NAME}: restored from snapshot ${snap2} of default/${NAME}`);
    await restored(at2);
    // The spec stays git's: a restore brings back data, not the definition of an older revision.
    const vcNow = await t.client.get<KubeObject & { spec: { weight?: number } }>(R.virtualclusters, 'default', NAME);
    expect(vcNow.spec.weight).toBe(3);
  }, 900_000);

  it('a commit with no snapshot of its own is refused without --repo, and nothing that runs is touched', async () => {
    rev4 = await gitServer.commitFiles('tenants', { 'README.md': 'tenants, nothing else\n' }, 'readme only');
    await eventually(async () => {
      const gs = await t.client.get<KubeObject & { status?: { lastAppliedRevision?: string } }>(
        GITSOURCES,
        'default',
        'tenants',
      );
      expect(gs.status?.lastAppliedRevision).toBe(rev4);
    }, 60_000);
    expect((await catalog()).filter((e) => e.gitRevision === rev4)).toEqual([]);
    const r = await vc(['restore', NAME, '--to-revision', rev4]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      `VirtualCluster default/${NAME}: no snapshot was taken at ${rev4}; snapshots were taken`,
    );
    expect(r.stderr).toContain(rev3.slice(0, 12));
    expect(r.stderr).toContain('give --repo DIR');
    const c = await tenant();
    expect(await objects(c)).toEqual(at2);
    c.close();
  }, 300_000);

  it('with --repo, a commit with no snapshot takes the snapshot of its nearest ancestor that has one', async () => {
    const clone = join(dir, 'clone');
    await runGit(dir, ['clone', '--quiet', gitServer.url('tenants'), clone]);
    const r = await vc(['restore', NAME, '--to-revision', rev4.slice(0, 10), '--repo', clone]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.split('\n')[0]).toContain(`at revision ${rev3.slice(0, 12)})`);
    await restored(at3);
  }, 600_000);

  it('--as restores the snapshot of a revision into a new tenant made with the spec it recorded', async () => {
    const r = await vc(['restore', NAME, '--to-revision', rev2, '--as', `${NAME}-copy`]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`virtualcluster default/${NAME}-copy created with the spec of snapshot`);
    await restored(at2, `${NAME}-copy`);
    const copy = await t.client.get<KubeObject & { spec: { weight?: number } }>(
      R.virtualclusters,
      'default',
      `${NAME}-copy`,
    );
    expect(copy.spec.weight).toBe(2);
    // The tenant restored from stays as it was.
    const c = await tenant();
    expect(await objects(c)).toEqual(at3);
    c.close();
  }, 600_000);
});
