import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { kwokNode } from '../../core/dev/local/controlplane.ts';
import { REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { LocalSuperCluster } from '../../core/dev/local/supercluster.ts';
import { ensureNodeToolchain, NODE_IMAGES } from '../../core/toolchain/node.ts';
import { cacheRoot } from '../../core/toolchain/toolchain.ts';
import { eventually, realNodeSkipReason } from '../harness.ts';
import type { BenchResult } from './main.ts';
import { type ArmFigures, repeatFigures, repsOf } from './repeat.ts';
import { removeStateDir, stateDir } from '../statedirs.ts';

const MiB = 1024 * 1024;

/** ToolchainBuild is what a toolchain's .complete marker says about its last build. */
interface ToolchainBuild {
  builtAt?: string;
  seconds?: number;
}

/** toolchainBuilds reads the build time every cached toolchain recorded (the last build: cold or with warm Go caches). */
function toolchainBuilds(): Record<string, ToolchainBuild> {
  const root = cacheRoot();
  const out: Record<string, ToolchainBuild> = {};
  if (!existsSync(root)) return out;
  for (const d of readdirSync(root)) {
    const marker = join(root, d, '.complete');
    if (!existsSync(marker)) continue;
    try {
      const m = JSON.parse(readFileSync(marker, 'utf8')) as ToolchainBuild;
      out[d] = { builtAt: m.builtAt, seconds: m.seconds };
    } catch {
      // a marker of an older layout (plain text) records no time
    }
  }
  return out;
}

const isReady = (n: { status?: { conditions?: Array<{ type: string; status: string }> } } | null) =>
  !!n?.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True');

/** podRunningMs creates a busybox Pod bound to a node and returns the milliseconds until it is Running. */
async function podRunningMs(c: KubeClient, name: string, nodeName: string): Promise<number> {
  const t0 = performance.now();
  await c.create(R.pods, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 1,
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
      containers: [{ name, image: NODE_IMAGES.busybox, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
    },
  } as KubeObject);
  await eventually(
    async () => {
      const p = await c.get<KubeObject & { status?: { phase?: string } }>(R.pods, 'default', name);
      if (p.status?.phase !== 'Running')
        throw new Error(`Pod ${name} on ${nodeName}: ${p.status?.phase ?? 'no phase'}`);
    },
    120_000,
    100,
  );
  return performance.now() - t0;
}

/**
 * realNodeBench measures the first real-node start of the local super cluster against a simulated (kwok) node
 * measured in the same run: how long the cached node toolchain check takes (a cold build is not repeated here: the
 * build times the toolchain markers recorded are reported as they are), the real node's Ready time (from containerd's
 * start) against a new kwok node's, the first and a second Pod's Running time (create to Running, bound to the
 * node, image already imported) against a kwok Pod's, and the resident memory of the node's processes (containerd,
 * kubelet, kube-proxy, kube-router and the runc shims of the two Pods) against kwok's, which simulates every kwok node.
 * It holds the host's real-node lock only while it runs. Each of BENCH_REPS repetitions (default 3) starts its own super
 * cluster and real node, and every figure (the ratios too, each taken within its repetition) is the median over them
 * with its min and max.
 */
export async function realNodeBench(): Promise<BenchResult> {
  const skip = await realNodeSkipReason();
  if (skip) throw new Error(`realnode bench: ${skip}`);
  const { figures, notes, runs } = await repeatFigures([{ name: 'realnode', run: realNodeRun }], repsOf());
  return { name: 'realnode', figures, notes, detail: { runs, toolchainBuilds: toolchainBuilds() } };
}

/** realNodeRun is one repetition: a super cluster with a real node and a kwok node started, measured, stopped. */
async function realNodeRun(): Promise<ArmFigures> {
  const c0 = performance.now();
  await ensureNodeToolchain();
  const toolchainCheckMs = performance.now() - c0;
  const dir = stateDir('vc-bench-realnode-');
  const t0 = performance.now();
  const sc = await LocalSuperCluster.start({ stateDir: dir, nodes: 1, realNodes: 1, realNodeLockWaitMs: 30 * 60_000 });
  const superStartMs = performance.now() - t0;
  try {
    const node = sc.realNodes[0]!;
    const c = await sc.cluster.client();
    const k0 = performance.now();
    await c.create(R.nodes, kwokNode('bench-kwok'));
    await eventually(async () => {
      if (!isReady(await c.getOrNull(R.nodes, undefined, 'bench-kwok'))) throw new Error('bench-kwok not Ready');
    }, 60_000);
    const kwokReadyMs = performance.now() - k0;
    await eventually(() => c.get(R.serviceaccounts, 'default', 'default'), 60_000);
    const firstPodMs = await podRunningMs(c, 'first', node.name);
    const secondPodMs = await podRunningMs(c, 'second', node.name);
    const kwokPodMs = await podRunningMs(c, 'kwok', 'bench-kwok');
    // resident memory once the node is idle with its two Pods
    await new Promise((r) => setTimeout(r, 10_000));
    const rss = node.rssBytes();
    const byComponent: Record<string, number> = {
      containerd: rss.containerd / MiB,
      kubelet: rss.kubelet / MiB,
      'kube-proxy': rss['kube-proxy'] / MiB,
      ...(node.kubeRouter && { 'kube-router': node.kubeRouter.rssBytes() / MiB }),
      shims: rss.shims / MiB,
    };
    const nodeMiB = Object.values(byComponent).reduce((a, b) => a + b, 0);
    const kwokMiB = (sc.cluster.kwok?.rssBytes() ?? 0) / MiB;
    return {
      figures: {
        nodeToolchainCheckSeconds: toolchainCheckMs / 1000,
        nodeReadySeconds: node.timings.readyMs / 1000,
        kwokNodeReadySeconds: kwokReadyMs / 1000,
        nodeReadyVsKwok: node.timings.readyMs / kwokReadyMs,
        firstPodRunningSeconds: firstPodMs / 1000,
        secondPodRunningSeconds: secondPodMs / 1000,
        kwokPodRunningSeconds: kwokPodMs / 1000,
        firstPodVsKwok: firstPodMs / kwokPodMs,
        nodeRssMiB: nodeMiB,
        kwokRssMiB: kwokMiB,
        nodeRssVsKwok: kwokMiB ? nodeMiB / kwokMiB : NaN,
      },
      detail: {
        superStartSeconds: superStartMs / 1000,
        rssMiBByComponent: byComponent,
        shims: node.shimPids().length,
        kubeRouter: !!node.kubeRouter,
      },
    };
  } finally {
    await sc.stop();
    removeStateDir(dir);
  }
}
