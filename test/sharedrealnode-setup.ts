import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { PROCESS_STATS_LABEL_ENV } from '../core/dev/local/procstats.ts';
import { hostSnapshot, snapshotDiff } from '../core/dev/local/testing.ts';
import { nodeToolchainDir } from '../core/toolchain/node.ts';
import { realNodeSkipReason, startTestSuper } from './harness.ts';
import { realNodeInfo } from './sharedrealnode.ts';
import { anyFileCalls } from './sharedsuper-setup.ts';

/** SHARED_REAL_NODE_ENV set to 0 starts no shared real node: every file that asks for one starts its own. */
export const SHARED_REAL_NODE_ENV = 'VC_TEST_SHARED_REAL_NODE';

/**
 * setup (a global setup of the real-node project, after test/build-dist.ts) starts the super cluster with one real
 * node that the files calling sharedRealNodeSuper share (test/sharedrealnode.ts). After the last file it stops it and
 * fails the run if the host is not as it was before the start (processes, mounts, links, chains, cgroups, paths, as
 * each real-node file checks of its own node). On a host that cannot run a real node it starts nothing: those files
 * skip themselves.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (process.env[SHARED_REAL_NODE_ENV] === '0' || !anyFileCalls(project, 'sharedRealNodeSuper(')) return undefined;
  if (await realNodeSkipReason()) return undefined;
  const binDir = join(nodeToolchainDir(), 'bin');
  const before = await hostSnapshot(binDir);
  const label = process.env[PROCESS_STATS_LABEL_ENV];
  process.env[PROCESS_STATS_LABEL_ENV] = 'shared real node (test/sharedrealnode-setup.ts)';
  try {
    const t = await startTestSuper({ nodes: 1, realNodes: 1 });
    const cp = t.sc.cluster;
    project.provide('sharedRealNode', {
      kubeconfigPath: t.sc.kubeconfigPath,
      etcdEndpoint: t.sc.etcd.endpoint,
      cluster: { server: cp.server, caPem: cp.caPem, dir: cp.dir, kubeconfigPath: cp.kubeconfigPath },
      node: realNodeInfo(t.sc.realNodes[0]!),
    });
    return async () => {
      await t.stop();
      const left = snapshotDiff(before, await hostSnapshot(binDir));
      if (Object.keys(left).length)
        throw new Error(`the shared real node left on the host: ${JSON.stringify(left, undefined, 1)}`);
    };
  } finally {
    if (label === undefined) delete process.env[PROCESS_STATS_LABEL_ENV];
    else process.env[PROCESS_STATS_LABEL_ENV] = label;
  }
}
