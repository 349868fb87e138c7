import { readFileSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { PROCESS_STATS_LABEL_ENV } from '../core/dev/local/procstats.ts';
import { startTestSuper } from './harness.ts';
import { SHARED_SUPER_NODES } from './sharedsuper.ts';

/** SHARED_SUPER_ENV set to 0 starts no shared super cluster: every file that asks for one starts its own. */
export const SHARED_SUPER_ENV = 'VC_TEST_SHARED_SUPER';

/**
 * setup (a global setup of the integration project, after test/build-dist.ts) starts the super cluster the files
 * calling sharedTestSuper share (test/sharedsuper.ts), and stops it after the last file.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (process.env[SHARED_SUPER_ENV] === '0' || !anyFileShares(project)) return undefined;
  // Its process starts are counted under a name of their own in the run's summary, not under a test file.
  const label = process.env[PROCESS_STATS_LABEL_ENV];
  process.env[PROCESS_STATS_LABEL_ENV] = 'shared super cluster (test/sharedsuper-setup.ts)';
  try {
    const t = await startTestSuper({ nodes: SHARED_SUPER_NODES });
    project.provide('sharedSuper', {
      kubeconfigPath: t.sc.kubeconfigPath,
      etcdEndpoint: t.sc.etcd.endpoint,
      ports: t.sc.cluster.ports,
    });
    return () => t.stop();
  } finally {
    if (label === undefined) delete process.env[PROCESS_STATS_LABEL_ENV];
    else process.env[PROCESS_STATS_LABEL_ENV] = label;
  }
}

/**
 * anyFileShares says whether a test file of this run in this project calls sharedTestSuper, so that a run of other
 * files alone starts no super cluster nobody uses. When the run's files are not known it says yes.
 */
function anyFileShares(project: TestProject): boolean {
  const files = project.vitest.state.getPaths().filter((f) => project.matchesTestGlob(f));
  return files.length === 0 || files.some((f) => readFileSync(f, 'utf8').includes('sharedTestSuper('));
}
