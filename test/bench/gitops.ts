import { createHmac } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { readDirArtifact } from '../../core/programs/cli/gitops.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { localProvisioners } from '../../core/dev/provisioner/offer.ts';
import { startManager } from '../../core/programs/manager/manager.ts';
import { planApply } from '../../gitops/applier/applier.ts';
import { GITSOURCES } from '../../gitops/applier/gitsource.ts';
import { GitSourceFetcher } from '../../gitops/source/source.ts';
import { startGitServer } from '../git/server.ts';
import { startTestSuper } from '../harness.ts';
import type { BenchResult } from './main.ts';
import { removeStateDir, stateDir } from '../statedirs.ts';
import { interleave, measured, repsOf, reportRatios, spread } from './repeat.ts';

const vcYaml = (name: string, weight = 1) =>
  stringify({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { name, namespace: 'default' },
    spec: { provisioner: { type: 'local' }, weight },
  });

/** waitRunning waits for a VirtualCluster's phase Running, and throws with its status after WAIT_RUNNING_MS. */
async function waitRunning(get: () => Promise<VirtualCluster | null>): Promise<void> {
  const deadline = performance.now() + WAIT_RUNNING_MS;
  for (;;) {
    const vc = await get();
    if (vc?.status?.phase === 'Running') return;
    if (performance.now() > deadline)
      throw new Error(`not Running after ${WAIT_RUNNING_MS / 1000} s: ${JSON.stringify(vc?.status ?? null)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** WAIT_RUNNING_MS bounds the wait for one tenant, so a tenant that never comes up ends the run with its status. */
const WAIT_RUNNING_MS = 300_000;

/**
 * gitopsBench measures (1) reading, validating and planning N tenant definitions (default 1000) from a directory
 * and from a git repository on a loopback git server, and (2) the time from a git commit announced by a webhook to a
 * Running tenant, against creating the same VirtualCluster directly in the same run (the baseline): the two arms
 * interleaved over BENCH_REPS repetitions (default 3), the ratio reported as median, min and max of the repetitions
 * whose arms ran under like other load (repeat.ts).
 */
export async function gitopsBench(): Promise<BenchResult> {
  const n = Number(process.env.BENCH_DEFINITIONS ?? 1000);
  const dir = stateDir('vc-bench-gitops-');
  const files: Record<string, string> = {};
  mkdirSync(join(dir, 'repo/tenants'), { recursive: true });
  for (let i = 0; i < n; i++) {
    files[`tenants/t${i}.yaml`] = vcYaml(`t${i}`);
    writeFileSync(join(dir, 'repo', `tenants/t${i}.yaml`), files[`tenants/t${i}.yaml`]!);
  }
  const git = await startGitServer();
  try {
    let t0 = performance.now();
    const fromDir = await readDirArtifact(join(dir, 'repo'));
    const readDirMs = performance.now() - t0;
    t0 = performance.now();
    const plan = planApply(fromDir, [], { namespace: 'bench', name: 'bench' });
    const planMs = performance.now() - t0;
    if (plan.errors.length || plan.apply.length !== n)
      throw new Error(`plan of ${n} definitions: ${plan.errors.length} errors, ${plan.apply.length} objects`);

    await git.initRepo('bulk');
    await git.commitFiles('bulk', files, `${n} tenants`);
    const fetcher = new GitSourceFetcher({
      cacheRoot: join(dir, 'cache'),
      addresses: { allowPrivateAddresses: ['127.0.0.0/8'] },
    });
    t0 = performance.now();
    const art = await fetcher.artifact({ url: git.url('bulk'), ref: { branch: 'main' }, path: 'tenants' });
    const gitReadMs = performance.now() - t0;
    t0 = performance.now();
    planApply(art, [], { namespace: 'bench', name: 'bench' });
    const gitPlanMs = performance.now() - t0;

    // Commit-to-Running through a webhook, against a direct create, on a real super cluster and manager.
    const t = await startTestSuper({ nodes: 1 });
    let manager;
    try {
      await applyCRDs(t.sc);
      await git.initRepo('tenants');
      await git.commitFiles('tenants', { 'tenants/first.yaml': vcYaml('first') }, 'first');
      await t.client.create(R.secrets, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'hook', namespace: 'default' },
        stringData: { token: 'k' },
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
        },
      });
      const cfgFile = join(dir, 'manager.yaml');
      writeFileSync(
        cfgFile,
        stringify({
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'ManagerConfiguration',
          superClusters: [{ name: 'default', kubeconfig: t.sc.kubeconfigPath }],
          virtualClusters: {
            enabled: true,
            local: { stateDir: join(dir, 'tenants'), etcdEndpoint: t.sc.etcd.endpoint },
          },
          // the bench's git server listens on loopback, which the manager refuses unless allowed
          gitops: { enabled: true, cacheDir: join(dir, 'gitops-cache'), allowPrivateAddresses: ['127.0.0.0/8'] },
        }),
      );
      const cfg = loadManagerConfig(cfgFile);
      manager = await startManager(cfg, cfgFile, { provisioners: localProvisioners(cfg) });
      const get = (name: string) => t.client.getOrNull<VirtualCluster>(R.virtualclusters, 'default', name);
      await waitRunning(() => get('first'));

      // The two arms interleaved (direct, git, direct, git, ...): each repetition's ratio counts only when both ran
      // under like other load (repeat.ts).
      const webhookURL = manager.gitops!.webhookURL('default', 'tenants')!;
      const runs = await interleave<number>(
        [
          {
            name: 'direct',
            run: measured(async (i) => {
              const t1 = performance.now();
              await t.client.create(R.virtualclusters, {
                apiVersion: 'tenancy.x-k8s.io/v1alpha1',
                kind: 'VirtualCluster',
                metadata: { name: `direct${i}`, namespace: 'default' },
                spec: { provisioner: { type: 'local' } },
              });
              await waitRunning(() => get(`direct${i}`));
              return performance.now() - t1;
            }),
          },
          {
            name: 'git',
            run: measured(async (i) => {
              const t1 = performance.now();
              await git.commitFiles('tenants', { [`tenants/git${i}.yaml`]: vcYaml(`git${i}`) }, `git${i}`);
              const body = '{}';
              const res = await fetch(webhookURL, {
                method: 'POST',
                body,
                headers: {
                  'content-type': 'application/json',
                  'x-signature': `sha256=${createHmac('sha256', 'k').update(body).digest('hex')}`,
                },
              });
              if (res.status >= 300) throw new Error(`webhook answered ${res.status}`);
              await waitRunning(() => get(`git${i}`));
              return performance.now() - t1;
            }),
          },
        ],
        repsOf(),
      );
      const figures: Record<string, number> = {
        definitions: n,
        readDirSeconds: readDirMs / 1000,
        validateAndPlanSeconds: planMs / 1000,
        planMsPerDefinition: planMs / n,
        gitFetchAndReadSeconds: gitReadMs / 1000,
        gitPlanSeconds: gitPlanMs / 1000,
        commitToRunningSeconds: spread(runs.filter((r) => r.arm === 'git').map((r) => r.value)).median / 1000,
        directCreateToRunningSeconds: spread(runs.filter((r) => r.arm === 'direct').map((r) => r.value)).median / 1000,
      };
      const notes: string[] = [];
      const ratios = reportRatios(
        runs,
        { commitToRunningRatio: { numerator: 'git', denominator: 'direct', f: (ms) => ms } },
        figures,
        notes,
      );
      return {
        name: 'gitops',
        figures,
        notes,
        detail: { runs, ratios },
      };
    } finally {
      await manager?.stop();
      await t.stop();
    }
  } finally {
    await git.close();
    removeStateDir(dir);
  }
}
