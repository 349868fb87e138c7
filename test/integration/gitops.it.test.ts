import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { R } from '../../core/kube/resources.ts';
import { formatMicroTime } from '../../core/leader/election.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { localProvisioners } from '../../core/dev/provisioner/offer.ts';
import { startManager, type Manager } from '../../core/programs/manager/manager.ts';
import { GITSOURCE_FINALIZER, GITSOURCES, type GitSource } from '../../gitops/applier/gitsource.ts';
import { validate } from '../../schemas/validate.ts';
import { makeSshKey, sshKeygenAvailable, startGitServer, type GitServer } from '../git/server.ts';
import { eventually, startTestSuper, TENANT_START_MS, type TestSuper } from '../harness.ts';

const vcYaml = (name: string, spec: Record<string, unknown> = {}) =>
  stringify({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { name, namespace: 'default' },
    spec: { provisioner: { type: 'local' }, ...spec },
  });

const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');

/** vcCli runs the CLI as a user would, returning its exit code and output instead of throwing. */
async function vcCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(process.execPath, [vcBin, ...args], { timeout: 180_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : 1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

const cvYaml = (name: string) =>
  stringify({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'ClusterVersion',
    metadata: { name },
    spec: { kubernetesVersion: 'v1.36.3', apiServer: { replicas: 1 }, etcd: { storageSize: '1Gi' } },
  });

/** apiserverPids are the pids of the kube-apiservers whose command line names a path under `dir`: local tenants'. */
function apiserverPids(under: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
        return cmd.includes('kube-apiserver') && cmd.includes(under) ? [Number(d)] : [];
      } catch {
        return []; // the process ended while listed
      }
    })
    .sort((a, b) => a - b);
}

describe('GitOps: tenant definitions in git, reconciled into Running tenants', () => {
  let t: TestSuper;
  let git: GitServer;
  let dir: string;
  let manager: Manager;

  const source = () => t.client.get<GitSource>(GITSOURCES, 'default', 'tenants');
  const vc = (name: string) => t.client.getOrNull<VirtualCluster>(R.virtualclusters, 'default', name);
  const poke = async (name = 'tenants') => {
    const body = JSON.stringify({ ref: 'refs/heads/main' });
    const sig = createHmac('sha256', 's3cret').update(body).digest('hex');
    // The webhook is served by the leading manager's GitOps controller: a loaded host can make the manager miss a
    // renewal and lead again a term later (as in production), so the poke waits for a leader.
    const gitops = await eventually(() => {
      expect(manager.gitops, 'a GitOps controller: the manager leads').toBeDefined();
      return manager.gitops!;
    }, 120_000);
    const res = await fetch(gitops.webhookURL('default', name)!, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-signature': `sha256=${sig}` },
    });
    expect(res.status).toBeLessThan(300);
  };
  const condition = (gs: GitSource, type: string) => gs.status?.conditions?.find((c) => c.type === type);
  const appliedRevision = (rev: string) =>
    eventually(async () => {
      const gs = await source();
      expect(gs.status?.lastAttemptedRevision).toBe(rev);
      return gs;
    }, 60_000);

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    dir = mkdtempSync(join(tmpdir(), 'vc-gitops-'));
    git = await startGitServer();
    await git.initRepo('tenants');
    await git.commitFiles(
      'tenants',
      { 'tenants/alpha.yaml': vcYaml('alpha'), 'README.md': 'tenant definitions\n' },
      'alpha',
    );
    await t.client.create(R.secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'hook', namespace: 'default' },
      stringData: { token: 's3cret' },
    });
    await t.client.create(GITSOURCES, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      metadata: { name: 'tenants', namespace: 'default' },
      spec: {
        url: git.url('tenants'),
        ref: { branch: 'main' },
        path: 'tenants',
        interval: '1h',
        webhook: { kind: 'generic', secretRef: { name: 'hook' } },
        safety: { maxDeletes: 1, maxDeletePercent: 50 },
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
        // The test git server listens on 127.0.0.1, which git sources may reach only when the platform allows it.
        gitops: {
          enabled: true,
          cacheDir: join(dir, 'git-cache'),
          allowPrivateAddresses: ['127.0.0.0/8'],
          // The health and dependency cases' sources write ClusterVersions, a cluster-scoped kind the platform must allow.
          policy: {
            sources: {
              'default/platform': { clusterScoped: true },
              'default/after': { clusterScoped: true },
              'default/health': { clusterScoped: true },
              'default/notified': { clusterScoped: true },
              'default/unreached': { clusterScoped: true },
            },
          },
        },
        syncer: { patrolIntervalSeconds: 0 },
        // Leader election as in production (default durations), so the last test can take leadership away.
        leaderElection: { enabled: true },
      }),
    );
    const cfg = loadManagerConfig(file);
    manager = await startManager(cfg, file, { provisioners: localProvisioners(cfg) });
  });

  afterAll(async () => {
    await manager?.stop();
    await git?.close();
    await t?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('turns a tenant file into a Running tenant and records what it applied', async () => {
    await eventually(async () => expect((await vc('alpha'))?.status?.phase).toBe('Running'), 90_000);
    // Ready once the tenant it applied runs: the source hears of the tenant's status write a moment later.
    const gs = await eventually(async () => {
      const g = await source();
      expect(condition(g, 'Ready')).toMatchObject({ status: 'True', reason: 'Succeeded' });
      return g;
    }, 30_000);
    expect(gs.status?.lastAppliedRevision).toBe(await git.revParse('tenants', 'main'));
    expect(gs.status?.inventory?.map((e) => `${e.kind}/${e.name} ${e.health}`)).toEqual([
      'VirtualCluster/alpha Healthy',
    ]);
  });

  it('serves reconcile and queue metrics of the GitSource, VirtualCluster and syncer controllers on /metrics', async () => {
    // The syncer's first reconcile of the new tenant can trail its Running phase by a moment: poll for it.
    await eventually(async () => {
      const text = await (await fetch(`http://127.0.0.1:${manager.opsPort}/metrics`)).text();
      for (const controller of ['gitops', 'virtualcluster', 'syncer']) {
        expect(text).toMatch(
          new RegExp(`vc_controller_reconcile_total\\{controller="${controller}",result="[a-z_]+"\\} [1-9]`),
        );
        expect(text).toMatch(
          new RegExp(`vc_controller_reconcile_duration_seconds_count\\{controller="${controller}"\\} [1-9]`),
        );
        expect(text).toMatch(new RegExp(`vc_workqueue_adds_total\\{name="${controller}"\\} [1-9]`));
        expect(text).toMatch(new RegExp(`vc_workqueue_depth\\{name="${controller}"\\} \\d+`));
      }
    }, 30_000);
  });

  it('follows a push announced by the webhook without waiting for the interval: add and edit', async () => {
    const rev = await git.commitFiles(
      'tenants',
      { 'tenants/beta.yaml': vcYaml('beta'), 'tenants/alpha.yaml': vcYaml('alpha', { weight: 5 }) },
      'beta; alpha weight 5',
    );
    await poke();
    await appliedRevision(rev);
    expect((await vc('alpha'))?.spec.weight).toBe(5);
    await eventually(async () => expect((await vc('beta'))?.status?.phase).toBe('Running'), 90_000);
  });

  it('stalls on invalid YAML or a schema error, naming file and field, and deletes nothing', async () => {
    const bad = await git.commitFiles(
      'tenants',
      { 'tenants/beta.yaml': null, 'tenants/broken.yaml': 'kind: [\n' },
      'broken yaml and beta removed',
    );
    await poke();
    let gs = await appliedRevision(bad);
    expect(condition(gs, 'Ready')).toMatchObject({ status: 'False', reason: 'ParseFailed' });
    expect(condition(gs, 'Ready')!.message).toMatch(/tenants\/broken\.yaml:\d+:\d+: cannot be parsed as YAML/);
    expect(await vc('beta')).not.toBeNull();
    const invalid = await git.commitFiles(
      'tenants',
      { 'tenants/broken.yaml': vcYaml('gamma', { weight: 0 }) },
      'schema error',
    );
    await poke();
    gs = await appliedRevision(invalid);
    expect(condition(gs, 'Ready')).toMatchObject({ status: 'False', reason: 'ValidationFailed' });
    expect(condition(gs, 'Ready')!.message).toMatch(
      /tenants\/broken\.yaml: VirtualCluster default\/gamma: \/spec\/weight must be >= 1/,
    );
    expect(await vc('beta')).not.toBeNull();
    expect(await vc('gamma')).toBeNull();
    expect((await vc('alpha'))?.status?.phase).toBe('Running');
  });

  it('prunes a removed tenant once the revision is clean', async () => {
    const rev = await git.commitFiles('tenants', { 'tenants/broken.yaml': null }, 'fix');
    await poke();
    await appliedRevision(rev);
    await eventually(async () => expect(await vc('beta')).toBeNull(), 90_000);
    expect((await source()).status?.lastAppliedRevision).toBe(rev);
  });

  it('stops a vanished path, an empty path and a delete-all instead of deleting, until that revision is confirmed', async () => {
    // delta and epsilon name a plugin the manager does not load, so they stay in phase Error and start no control
    // plane: this case reads which definitions are deleted, never a tenant's apiserver.
    const idle = { pluginConfig: { nosuchplugin: {} } };
    await git.commitFiles(
      'tenants',
      { 'tenants/delta.yaml': vcYaml('delta', idle), 'tenants/epsilon.yaml': vcYaml('epsilon', idle) },
      'two more',
    );
    await poke();
    await eventually(async () => expect((await source()).status?.inventory).toHaveLength(3), 60_000);
    // git keeps no empty directories: removing every file removes the path itself.
    await git.commitFiles(
      'tenants',
      { 'tenants/alpha.yaml': null, 'tenants/delta.yaml': null, 'tenants/epsilon.yaml': null },
      'oops',
    );
    await poke();
    await eventually(
      async () => expect(condition(await source(), 'Ready')).toMatchObject({ status: 'False', reason: 'PathNotFound' }),
      60_000,
    );
    expect(await vc('delta')).not.toBeNull();
    const empty = await git.commitFiles(
      'tenants',
      { 'tenants/NOTES.md': 'no tenants for now\n' },
      'path without definitions',
    );
    await poke();
    const gs = await appliedRevision(empty);
    expect(condition(gs, 'Ready')).toMatchObject({ status: 'False', reason: 'EmptyPath' });
    expect(await vc('alpha')).not.toBeNull();
    const most = await git.commitFiles(
      'tenants',
      { 'tenants/alpha.yaml': vcYaml('alpha', { weight: 5 }) },
      'remove two of three',
    );
    await poke();
    const gs2 = await appliedRevision(most);
    expect(condition(gs2, 'Ready')).toMatchObject({ status: 'False', reason: 'DeletionLimitExceeded' });
    expect(await vc('delta')).not.toBeNull();
    expect(await vc('epsilon')).not.toBeNull();
    await t.client.patch(
      GITSOURCES,
      'default',
      'tenants',
      { metadata: { annotations: { 'tenancy.x-k8s.io/confirm-deletion': most } } },
      'merge',
    );
    await eventually(async () => {
      expect(await vc('delta')).toBeNull();
      expect(await vc('epsilon')).toBeNull();
    }, 90_000);
    await eventually(async () => expect(condition(await source(), 'Ready')).toMatchObject({ status: 'True' }), 60_000);
  });

  it('puts back a hand edit and a hand deletion', async () => {
    await t.client.patch(R.virtualclusters, 'default', 'alpha', { spec: { weight: 9 } }, 'merge');
    await eventually(async () => expect((await vc('alpha'))?.spec.weight).toBe(5), 60_000);
    const before = (await vc('alpha'))!.metadata!.uid;
    await t.client.delete(R.virtualclusters, 'default', 'alpha');
    await eventually(async () => {
      const again = await vc('alpha');
      expect(again?.metadata?.uid).toBeDefined();
      expect(again!.metadata!.uid).not.toBe(before);
      expect(again!.status?.phase).toBe('Running');
      // the deleted tenant's control plane is torn down and a new one started
    }, TENANT_START_MS);
  }, 420_000);

  it('refuses a force-pushed, rewritten history until that revision is allowed, then follows it', async () => {
    const rev = await git.forcePush('tenants', { 'tenants/alpha.yaml': vcYaml('alpha', { weight: 7 }) }, 'rewritten');
    await poke();
    await eventually(async () => {
      const gs = await source();
      expect(condition(gs, 'Stalled')).toMatchObject({ status: 'True', reason: 'NotDescendant' });
      expect(condition(gs, 'Stalled')!.message).toContain(`revision ${rev} does not descend from last applied`);
    }, 60_000);
    expect((await vc('alpha'))?.spec.weight).toBe(5);
    await t.client.patch(
      GITSOURCES,
      'default',
      'tenants',
      { metadata: { annotations: { 'tenancy.x-k8s.io/allow-revision': rev } } },
      'merge',
    );
    await appliedRevision(rev);
    expect((await vc('alpha'))?.spec.weight).toBe(7);
  });

  it('reports a git server that is down and changes nothing, then recovers', async () => {
    await git.stop();
    try {
      await poke();
      await eventually(async () => {
        const gs = await source();
        expect(condition(gs, 'Ready')).toMatchObject({ status: 'False', reason: 'FetchFailed' });
      }, 60_000);
      expect((await vc('alpha'))?.status?.phase).toBe('Running');
    } finally {
      // the cases after this one fetch from the same server
      await git.start();
    }
    await poke();
    await eventually(async () => expect(condition(await source(), 'Ready')).toMatchObject({ status: 'True' }), 60_000);
  });

  it('refuses an unsigned commit when signature verification is on', async () => {
    if (!(await sshKeygenAvailable())) throw new Error('ssh-keygen is needed for this test (openssh-client)');
    const key = await makeSshKey(dir, 'trusted');
    await git.initRepo('signed');
    // The signed revision holds an object that starts nothing (no Cluster names it): what matters is whether it is
    // applied, and a tenant would start a control plane that nothing here reads.
    const zeta = stringify({
      apiVersion: 'infrastructure.tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualClusterInfraCluster',
      metadata: { name: 'zeta', namespace: 'default' },
    });
    const signed = await git.commitFiles('signed', { 'tenants/zeta.yaml': zeta }, 'signed', {
      sign: { format: 'ssh', keyFile: key.keyFile },
    });
    await t.client.create(R.secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'trusted-keys', namespace: 'default' },
      stringData: { key: key.publicKey },
    });
    await t.client.create(GITSOURCES, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      metadata: { name: 'signed', namespace: 'default' },
      spec: {
        url: git.url('signed'),
        ref: { branch: 'main' },
        path: 'tenants',
        interval: '1h',
        verify: { mode: 'head', secretRef: { name: 'trusted-keys' } },
        webhook: { kind: 'generic', secretRef: { name: 'hook' } },
      },
    });
    await eventually(
      async () =>
        expect((await t.client.get<GitSource>(GITSOURCES, 'default', 'signed')).status?.lastAppliedRevision).toBe(
          signed,
        ),
      60_000,
    );
    await git.commitFiles('signed', { 'tenants/eta.yaml': vcYaml('eta') }, 'unsigned');
    await poke('signed');
    await eventually(async () => {
      const gs = await t.client.get<GitSource>(GITSOURCES, 'default', 'signed');
      expect(condition(gs, 'Ready')).toMatchObject({ status: 'False', reason: 'VerificationFailed' });
      expect(condition(gs, 'Ready')!.message).toMatch(/not signed/);
    }, 60_000);
    expect(await vc('eta')).toBeNull();
    expect(await t.client.getOrNull(R.virtualclusterinfraclusters, 'default', 'zeta')).not.toBeNull();
  });

  describe('health, reconcile on request, suspend and resume, dependencies', () => {
    const kc = () => ['--kubeconfig', t.sc.kubeconfigPath];
    const named = (name: string) => t.client.get<GitSource>(GITSOURCES, 'default', name);
    const gitSource = (name: string, repo: string, spec: Record<string, unknown> = {}) => ({
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      metadata: { name, namespace: 'default' },
      spec: { url: git.url(repo), ref: { branch: 'main' }, interval: '1h', ...spec },
    });

    it('is not Ready while a tenant it applied fails, names it, and is Ready once the fix is applied on request', async () => {
      await git.initRepo('health');
      // Settings for a plugin the manager does not load: the VirtualCluster controller puts it in phase Error.
      // A ClusterVersion stays in the repository throughout, so that removing the tenant does not empty it.
      await git.commitFiles(
        'health',
        { 'keep.yaml': cvYaml('gitops-health'), 'stray.yaml': vcYaml('stray', { pluginConfig: { nosuchplugin: {} } }) },
        'stray',
      );
      await t.client.create(
        GITSOURCES,
        gitSource('health', 'health', { safety: { maxDeletes: 5, maxDeletePercent: 100 }, healthTimeout: '5m' }),
      );
      const failed = await eventually(async () => {
        const g = await named('health');
        expect(condition(g, 'Ready')).toMatchObject({ status: 'False', reason: 'HealthCheckFailed' });
        return g;
      }, 60_000);
      expect(condition(failed, 'Ready')!.message).toMatch(
        /failed: VirtualCluster default\/stray \(phase Error: .*nosuchplugin/,
      );
      expect(failed.status?.inventory).toEqual([
        expect.objectContaining({ kind: 'ClusterVersion', name: 'gitops-health', health: 'Healthy' }),
        expect.objectContaining({ kind: 'VirtualCluster', name: 'stray', health: 'Failed' }),
      ]);
      const list = await vcCli(['get', 'gitsources', ...kc()]);
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/default\s+health\s+[0-9a-f]{12}\s+False\s+False\s+HealthCheckFailed\s+1\/2/);
      expect(list.stdout).toMatch(/default\s+tenants\s+[0-9a-f]{12}\s+False\s+True\s+Succeeded/);

      // The fix is committed; no webhook, an interval of an hour: `vc reconcile` applies it now and says so.
      const fix = await git.commitFiles('health', { 'stray.yaml': null }, 'remove the stray tenant');
      const r = await vcCli(['reconcile', 'gitsource', 'health', ...kc()]);
      expect(r.stderr).toContain('reconcile of GitSource default/health requested');
      expect(r.stdout, r.stderr).toContain(
        `GitSource default/health: revision ${fix.slice(0, 12)}; Ready True (Succeeded)`,
      );
      expect(r.code).toBe(0);
      const done = await named('health');
      expect(done.status?.lastHandledReconcileAt).toBe(
        done.metadata.annotations?.['tenancy.x-k8s.io/reconcile-requested-at'],
      );
      await eventually(async () => expect(await vc('stray')).toBeNull(), 60_000);
    });

    it('suspends and resumes through vc, and refuses a reconcile request while suspended', async () => {
      const s = await vcCli(['suspend', 'gitsource', 'health', ...kc()]);
      expect(s).toMatchObject({ code: 0, stdout: 'GitSource default/health suspended\n' });
      await eventually(async () => {
        expect(condition(await named('health'), 'Ready')).toMatchObject({ status: 'Unknown', reason: 'Suspended' });
      }, 30_000);
      const later = await git.commitFiles(
        'health',
        { 'later.yaml': vcYaml('later', { pluginConfig: { nosuchplugin: {} } }) },
        'later',
      );
      const refused = await vcCli(['reconcile', 'gitsource', 'health', ...kc()]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('GitSource default/health is suspended: `vc resume gitsource health` first');
      expect(await vc('later')).toBeNull();
      // Resumed: the new revision is applied at once, and the command fails because the tenant it applied fails.
      const resumed = await vcCli(['resume', 'gitsource', 'health', ...kc()]);
      expect(await vc('later')).not.toBeNull();
      expect((await named('health')).status?.lastAppliedRevision).toBe(later);
      if (resumed.code === 0) {
        // The tenant's Error phase may come a moment after the apply: then the command saw it Progressing.
        expect(resumed.stdout).toMatch(/Ready (Unknown \(Progressing\)|False \(HealthCheckFailed\))/);
      } else {
        expect(resumed.stderr).toMatch(/Ready False \(HealthCheckFailed\): .*VirtualCluster default\/later/);
      }
      await git.commitFiles('health', { 'later.yaml': null }, 'remove later');
      const cleaned = await vcCli(['reconcile', 'gitsource', 'health', ...kc()]);
      expect(cleaned.code, cleaned.stderr).toBe(0);
      await eventually(async () => expect(await vc('later')).toBeNull(), 60_000);
    });

    it('is not Ready once a tenant it applied is still not Running after spec.healthTimeout, naming it', async () => {
      // A policy that lets this source's tenant name a super cluster no syncer serves: the tenant stays Pending,
      // neither Running nor failed.
      await t.client.create(R.tenantpolicies, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'TenantPolicy',
        metadata: { name: 'gitops-slow' },
        spec: {
          grants: {
            subjects: [{ kind: 'GitSource', namespace: 'default', name: 'slow' }],
            superClusters: ['nowhere'],
          },
        },
      });
      await git.initRepo('slow');
      await git.commitFiles(
        'slow',
        { 'slow.yaml': vcYaml('slow', { policyName: 'gitops-slow', superCluster: 'nowhere' }) },
        'slow',
      );
      await t.client.create(GITSOURCES, gitSource('slow', 'slow', { healthTimeout: '5s' }));
      const late = await eventually(async () => {
        const ready = condition(await named('slow'), 'Ready');
        expect(ready, ready?.message).toMatchObject({ status: 'False', reason: 'HealthCheckFailed' });
        return named('slow');
      }, 60_000);
      expect(condition(late, 'Ready')!.message).toMatch(
        /not healthy after 5s \(spec\.healthTimeout\): VirtualCluster default\/slow \(phase Pending/,
      );
      expect(late.status?.inventory).toEqual([
        expect.objectContaining({ kind: 'VirtualCluster', name: 'slow', health: 'Progressing' }),
      ]);
      expect((await vc('slow'))?.status?.phase).toBe('Pending');
      // A deleted source is gone once its manager has let it go (kubectl delete waits for that): from then on no
      // reconcile of it applies anything, so the tenant deleted next stays deleted, though this source re-checked it
      // every 5 s (its healthTimeout) and a reconcile may have been applying at the moment of the deletion.
      expect((await named('slow')).metadata.finalizers).toContain(GITSOURCE_FINALIZER);
      await t.client.delete(GITSOURCES, 'default', 'slow');
      await eventually(async () => expect(await t.client.getOrNull(GITSOURCES, 'default', 'slow')).toBeNull(), 60_000);
      await t.client.delete(R.virtualclusters, 'default', 'slow');
      await eventually(async () => expect(await vc('slow')).toBeNull(), 60_000);
      await sleep(6_000);
      expect(await vc('slow')).toBeNull();
      await t.client.delete(R.tenantpolicies, undefined, 'gitops-slow');
    });

    it('applies a source only once the sources it depends on are Ready, and stalls a cycle', async () => {
      await git.initRepo('platform');
      await git.commitFiles(
        'platform',
        { 'versions/v1.yaml': cvYaml('gitops-v1'), 'after/v2.yaml': cvYaml('gitops-v2') },
        'versions',
      );
      await t.client.create(
        GITSOURCES,
        gitSource('after', 'platform', { path: 'after', dependsOn: [{ name: 'platform' }] }),
      );
      await eventually(async () => {
        const g = await named('after');
        expect(condition(g, 'Ready')).toMatchObject({ status: 'False', reason: 'DependencyNotReady' });
        expect(condition(g, 'Ready')!.message).toBe(
          'waiting for spec.dependsOn: GitSource default/platform does not exist',
        );
        expect(condition(g, 'Reconciling')).toMatchObject({ status: 'True', reason: 'DependencyNotReady' });
      }, 30_000);
      expect(await t.client.getOrNull(R.clusterversions, undefined, 'gitops-v2')).toBeNull();
      // The dependency appears and becomes Ready: the dependent goes on by itself, without waiting for its interval.
      await t.client.create(GITSOURCES, gitSource('platform', 'platform', { path: 'versions' }));
      await eventually(async () => {
        expect(condition(await named('platform'), 'Ready')).toMatchObject({ status: 'True' });
        expect(condition(await named('after'), 'Ready')).toMatchObject({ status: 'True', reason: 'Succeeded' });
      }, 60_000);
      expect(await t.client.getOrNull(R.clusterversions, undefined, 'gitops-v2')).not.toBeNull();

      await t.client.create(GITSOURCES, gitSource('x', 'platform', { path: 'after', dependsOn: [{ name: 'y' }] }));
      await t.client.create(GITSOURCES, gitSource('y', 'platform', { path: 'after', dependsOn: [{ name: 'x' }] }));
      await eventually(async () => {
        for (const [n, cycle] of [
          ['x', 'default/x -> default/y -> default/x'],
          ['y', 'default/y -> default/x -> default/y'],
        ]) {
          const g = await named(n!);
          expect(condition(g, 'Stalled')).toMatchObject({ status: 'True', reason: 'DependencyCycle' });
          expect(condition(g, 'Stalled')!.message).toBe(`spec.dependsOn makes a cycle: ${cycle}`);
        }
      }, 30_000);
      // The cycle stops only its own members: a new revision of the same path is applied by the source outside it.
      const next = await git.commitFiles('platform', { 'after/v3.yaml': cvYaml('gitops-v3') }, 'another version');
      const r = await vcCli(['reconcile', 'gitsource', 'after', ...kc()]);
      expect(r.code, r.stderr).toBe(0);
      expect((await named('after')).status?.lastAppliedRevision).toBe(next);
      expect(await t.client.getOrNull(R.clusterversions, undefined, 'gitops-v3')).not.toBeNull();
      expect(condition(await named('x'), 'Stalled')).toMatchObject({ status: 'True', reason: 'DependencyCycle' });
      for (const n of ['x', 'y', 'after', 'platform']) await t.client.delete(GITSOURCES, 'default', n);
    });

    it('reports each revision to a webhook and as commit statuses: applied, healthy, refused', async () => {
      type Hook = { body: Record<string, unknown>; signature: string | undefined; raw: string };
      const hooks: Hook[] = [];
      const receiver = createServer((req, res) => {
        let raw = '';
        req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
        req.on('end', () => {
          hooks.push({
            body: JSON.parse(raw) as Record<string, unknown>,
            signature: req.headers['x-signature'] as string,
            raw,
          });
          res.writeHead(204).end();
        });
      });
      await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', ok));
      try {
        const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
        // Credentials the platform marked for these hosts; the webhook's Secret (hook) is not marked and is refused.
        await t.client.create(R.secrets, {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            name: 'notify',
            namespace: 'default',
            labels: { 'tenancy.x-k8s.io/git-credentials': 'true' },
            // plain http: each port named (the receiver's and the git server's, for the commit status)
            annotations: {
              'tenancy.x-k8s.io/git-hosts': [url, git.url('notified')].map((u) => new URL(u).host).join(','),
            },
          },
          stringData: { token: 'n0tify' },
        });
        await git.initRepo('notified');
        const good = await git.commitFiles('notified', { 'v.yaml': cvYaml('gitops-notified') }, 'a version');
        await t.client.create(
          GITSOURCES,
          gitSource('notified', 'notified', {
            notifications: [
              { type: 'webhook', url, secretRef: { name: 'notify' } },
              { type: 'commitStatus', secretRef: { name: 'notify' } },
              { type: 'webhook', url, secretRef: { name: 'hook' }, events: ['Healthy'], retries: 0 },
            ],
          }),
        );
        const context = 'virtualcluster-ts/default/notified';
        await eventually(() => {
          const states = git.statuses('notified', good).map((x) => [x.state, x.context]);
          expect(states).toEqual([
            ['success', context],
            ['pending', context],
          ]);
          expect(hooks.map((h) => [h.body.event, h.body.revision])).toEqual([
            ['Applied', good],
            ['Healthy', good],
          ]);
        }, 60_000);
        for (const h of hooks) {
          expect(validate('notification', h.body)).toEqual([]);
          expect(h.signature).toBe(`sha256=${createHmac('sha256', 'n0tify').update(h.raw).digest('hex')}`);
        }
        expect(hooks[1]!.body).toMatchObject({
          severity: 'info',
          gitSource: { namespace: 'default', name: 'notified', url: git.url('notified') },
          reason: 'Succeeded',
        });
        await eventually(async () => {
          const events = (
            await t.client.list<{ reason?: string; message?: string; involvedObject?: { name?: string } }>(R.events, {
              namespace: 'default',
            })
          ).items.filter((e) => e.reason === 'NotificationFailed' && e.involvedObject?.name === 'notified');
          expect(events[0]?.message).toMatch(
            /Healthy not delivered to webhook .*: Secret default\/hook .*lacks the label tenancy\.x-k8s\.io\/git-credentials/,
          );
        }, 30_000);

        // A revision that does not parse is refused: a failure status on that commit and a Refused webhook.
        const bad = await git.commitFiles('notified', { 'broken.yaml': 'kind: [\n' }, 'broken');
        expect((await vcCli(['reconcile', 'gitsource', 'notified', ...kc()])).code).toBe(1);
        await eventually(() => {
          const [last] = git.statuses('notified', bad);
          expect(last).toMatchObject({ state: 'failure', context });
          expect(last!.description).toMatch(/^refused: /);
          expect(hooks.at(-1)?.body).toMatchObject({
            event: 'Refused',
            revision: bad,
            severity: 'error',
            reason: 'ParseFailed',
          });
        }, 60_000);
        await t.client.delete(GITSOURCES, 'default', 'notified');
      } finally {
        await new Promise((ok) => receiver.close(ok));
      }
    });

    it('goes on reconciling while its webhook is down, says so, and delivers once the webhook is back', async () => {
      // A port that was just closed: nothing listens there, so every call is refused.
      const probe = createServer();
      await new Promise<void>((ok) => probe.listen(0, '127.0.0.1', ok));
      const port = (probe.address() as AddressInfo).port;
      await new Promise((ok) => probe.close(ok));
      const url = `http://127.0.0.1:${port}/hooks`;
      const metric = async (name: string, labels: string) => {
        const text = await (await fetch(`http://127.0.0.1:${manager.opsPort}/metrics`)).text();
        const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
        return line ? Number(line.split(' ')[1]) : 0;
      };
      const failedBefore = await metric(
        'vc_gitops_notifications_total',
        'type="webhook",event="Applied",result="failed"',
      );

      await git.initRepo('unreached');
      const first = await git.commitFiles('unreached', { 'v.yaml': cvYaml('gitops-unreached-1') }, 'a version');
      await t.client.create(
        GITSOURCES,
        gitSource('unreached', 'unreached', { notifications: [{ type: 'webhook', url, retries: 1 }] }),
      );
      // The revision is applied and healthy all the same; the failed delivery is a Warning naming the webhook.
      await eventually(async () => {
        const g = await named('unreached');
        expect(g.status?.lastAppliedRevision).toBe(first);
        expect(condition(g, 'Ready')).toMatchObject({ status: 'True', reason: 'Succeeded' });
      }, 60_000);
      expect(await t.client.getOrNull(R.clusterversions, undefined, 'gitops-unreached-1')).not.toBeNull();
      const failures = async () =>
        (
          await t.client.list<{ reason?: string; message?: string; involvedObject?: { name?: string } }>(R.events, {
            namespace: 'default',
          })
        ).items.filter((e) => e.reason === 'NotificationFailed' && e.involvedObject?.name === 'unreached');
      await eventually(async () => {
        expect((await failures()).map((e) => e.message)).toContainEqual(
          expect.stringMatching(new RegExp(`^Applied not delivered to webhook ${url}: connect ECONNREFUSED`)),
        );
        expect(
          await metric('vc_gitops_notifications_total', 'type="webhook",event="Applied",result="failed"'),
        ).toBeGreaterThan(failedBefore);
      }, 30_000);
      // The other sources were not held up.
      await eventually(
        async () => expect(condition(await source(), 'Ready')).toMatchObject({ status: 'True' }),
        90_000,
      );

      // More retries (1 s, 2 s, 4 s, ... 32 s): the next revision's delivery is refused and retried, and it lands
      // once the webhook listens again on its port.
      await t.client.patch(
        GITSOURCES,
        'default',
        'unreached',
        {
          spec: { notifications: [{ type: 'webhook', url, retries: 6 }] },
        },
        'merge',
      );
      const retriedBefore = await metric('vc_gitops_notification_retries_total', 'type="webhook",event="Applied"');
      const second = await git.commitFiles('unreached', { 'v.yaml': cvYaml('gitops-unreached-2') }, 'the next version');
      const r = await vcCli(['reconcile', 'gitsource', 'unreached', ...kc()]);
      expect(r.code, r.stderr).toBe(0);
      expect(await t.client.getOrNull(R.clusterversions, undefined, 'gitops-unreached-2')).not.toBeNull();
      await eventually(async () => {
        expect(await metric('vc_gitops_notification_retries_total', 'type="webhook",event="Applied"')).toBeGreaterThan(
          retriedBefore,
        );
      }, 30_000);
      // The first revision's deliveries have run out by now (a destination's deliveries go in order).
      const failedSince = async () => [
        await metric('vc_gitops_notifications_total', 'type="webhook",event="Applied",result="failed"'),
        await metric('vc_gitops_notifications_total', 'type="webhook",event="Healthy",result="failed"'),
      ];
      const failedAtOutage = await failedSince();
      const hooks: Record<string, unknown>[] = [];
      const back = createServer((req, res) => {
        let raw = '';
        req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
        req.on('end', () => {
          hooks.push(JSON.parse(raw) as Record<string, unknown>);
          res.writeHead(204).end();
        });
      });
      await new Promise<void>((ok) => back.listen(port, '127.0.0.1', ok));
      try {
        await eventually(() => {
          expect(hooks.map((h) => [h.event, h.revision])).toEqual([
            ['Applied', second],
            ['Healthy', second],
          ]);
        }, 90_000);
        for (const h of hooks) expect(validate('notification', h)).toEqual([]);
        // Delivered late, not lost: no delivery of the second revision was given up.
        expect(await failedSince()).toEqual(failedAtOutage);
        await t.client.delete(GITSOURCES, 'default', 'unreached');
      } finally {
        await new Promise((ok) => back.close(ok));
      }
    });
  });

  it('runs the GitOps and VirtualCluster controllers again in a second leadership term', async () => {
    await eventually(() => expect(manager.isLeader()).toBe(true), 30_000);
    const first = manager.gitops;
    // every tenant the earlier cases made runs before the processes are counted
    let tenantApiservers: number[] = [];
    await eventually(async () => {
      const vcs = (await t.client.list<VirtualCluster>(R.virtualclusters, { namespace: 'default' })).items;
      expect(vcs.length).toBeGreaterThan(0);
      for (const v of vcs) expect(v.status?.phase, v.metadata?.name).toBe('Running');
      tenantApiservers = apiserverPids(join(dir, 'tenants'));
      expect(tenantApiservers).toHaveLength(vcs.length);
    }, 120_000);
    // Another candidate takes the Lease: this manager stops leading, then wins it back once that lease expires.
    await t.client.patch(
      R.leases,
      'kube-system',
      'vc-manager',
      { spec: { holderIdentity: 'another-manager', leaseDurationSeconds: 3, renewTime: formatMicroTime(Date.now()) } },
      'merge',
    );
    await eventually(() => expect(manager.isLeader()).toBe(false), 30_000);
    await eventually(() => expect(manager.isLeader() && manager.gitops !== first).toBe(true), 60_000);
    // the tenants' control planes ran on through the change of term: the same apiserver processes serve them
    expect(apiserverPids(join(dir, 'tenants'))).toEqual(tenantApiservers);
    const rev = await git.commitFiles('tenants', { 'tenants/alpha.yaml': vcYaml('alpha', { weight: 9 }) }, 'weight 9');
    await eventually(poke, 30_000);
    await appliedRevision(rev);
    expect((await vc('alpha'))?.spec.weight).toBe(9);
    await eventually(async () => {
      const a = await vc('alpha');
      expect(a?.status?.observedGeneration).toBe(a?.metadata?.generation);
      expect(a?.status?.phase).toBe('Running');
    }, 90_000);
  });
});
