/**
 * The per-call cost of the plugin sandbox (`npm run bench -- sandbox-call`): the same plugin (the sandbox-runtimeclass
 * example, a mutator of Pods, with the tenant's configuration set so it does its work) called in the manager's process
 * and through its sandbox, on the same Pod. The two arms run interleaved over BENCH_REPS repetitions (default 3) of
 * BENCH_SANDBOX_CALLS calls each (default 3000, after 200 unmeasured ones); the run records the CPU the rest of the
 * host used meanwhile, since on a shared host that, not the sandbox, moves the tail.
 */
import { existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PluginSandbox } from '../../core/plugins/sandbox/sandbox.ts';
import { testContext, testTenant } from '../../core/plugins/testing.ts';
import type { MutatorPlugin } from '../../core/plugins/contract.ts';
import inProcess from '../../plugins/examples/sandbox-runtimeclass/src/index.ts';
import type { BenchResult } from './main.ts';
import { hostCpuSeconds, treeCpuSeconds } from './procstat.ts';
import { repsOf, spread } from './repeat.ts';

const dir = join(import.meta.dirname, '../../plugins/examples/sandbox-runtimeclass');
const WARMUP = 200;
const ctx = testContext({ tenant: testTenant({ pluginConfig: { sandbox: { runtimeClassName: 'kata' } } }) });
const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'api-0', namespace: 'web', labels: { app: 'api' } },
  spec: { containers: [{ name: 'api', image: 'api:1', resources: { requests: { cpu: '100m' } } }] },
};

/** CallTimes are one arm's per-call times in microseconds. */
interface CallTimes {
  median: number;
  p99: number;
}

/** measure calls the plugin `calls` times (after WARMUP calls) and gives the median and p99 of one call. */
function measure(p: MutatorPlugin, calls: number): CallTimes {
  const times: number[] = [];
  for (let i = 0; i < calls + WARMUP; i++) {
    const t = performance.now();
    const d = p.mutate(structuredClone(pod), pod, ctx);
    if ((d.object?.spec as { runtimeClassName?: string }).runtimeClassName !== 'kata')
      throw new Error(
        'sandbox-call: the plugin did not set runtimeClassName kata: the arms would not do the same work',
      );
    if (i >= WARMUP) times.push((performance.now() - t) * 1000);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)]!, p99: times[Math.floor(times.length * 0.99)]! };
}

/** sandboxCallBench measures one call of the example mutator in process and sandboxed, in the same run. */
export async function sandboxCallBench(): Promise<BenchResult> {
  const calls = Number(process.env.BENCH_SANDBOX_CALLS ?? 3000);
  if (!Number.isInteger(calls) || calls < 100)
    throw new Error(`BENCH_SANDBOX_CALLS=${process.env.BENCH_SANDBOX_CALLS}: must be a whole number >= 100`);
  const entry = join(dir, 'dist/index.js');
  if (!existsSync(entry))
    throw new Error(`sandbox-call: ${entry} is not built: run \`npm run build:plugins\` (npm ci runs it)`);
  const sandbox = new PluginSandbox({
    entry,
    source: dir,
    readPaths: [dir, join(import.meta.dirname, '../../node_modules/@virtualcluster-ts/plugin-sdk')],
  });
  try {
    const [boxed] = sandbox.load();
    const arms: Array<[string, MutatorPlugin]> = [
      ['in-process', inProcess as unknown as MutatorPlugin],
      ['sandboxed', boxed as MutatorPlugin],
    ];
    // The other load is taken over the whole run: one arm of in-process calls lasts a few tens of milliseconds,
    // a few of /proc/stat's 10 ms ticks.
    const load0 = loadavg()[0]!;
    const host0 = hostCpuSeconds();
    const own0 = treeCpuSeconds();
    const t0 = performance.now();
    const runs: Array<{ rep: number; arm: string; value: CallTimes }> = [];
    for (let rep = 0; rep < repsOf(); rep++)
      for (const [arm, p] of arms) runs.push({ rep, arm, value: measure(p, calls) });
    const seconds = (performance.now() - t0) / 1000;
    const otherPercent = ((hostCpuSeconds() - host0 - (treeCpuSeconds() - own0)) / seconds) * 100;
    const of = (name: string) => runs.filter((r) => r.arm === name);
    const a = of('in-process');
    const b = of('sandboxed');
    const overhead = spread(b.map((r, i) => r.value.median - a[i]!.value.median));
    const us = (x: number) => `${x.toFixed(1)} µs`;
    return {
      name: 'sandbox-call',
      figures: {
        inProcessMedianMicros: spread(a.map((r) => r.value.median)).median,
        inProcessP99Micros: spread(a.map((r) => r.value.p99)).median,
        sandboxedMedianMicros: spread(b.map((r) => r.value.median)).median,
        sandboxedP99Micros: spread(b.map((r) => r.value.p99)).median,
        overheadMedianMicros: overhead.median,
        otherLoadPercent: otherPercent,
        loadAverage1m: load0,
      },
      notes: [
        `${calls} calls per arm in each of ${a.length} repetitions; medians over the repetitions`,
        `overhead per call (sandboxed median - in-process median): median ${us(overhead.median)}, ` +
          `min ${us(overhead.min)}, max ${us(overhead.max)}`,
        `other work on the host meanwhile: ${otherPercent.toFixed(0)}% of a core (of ${cpus().length * 100}%); ` +
          `load average ${load0.toFixed(1)} at the start`,
      ],
      detail: { calls, runs },
    };
  } finally {
    await sandbox.close();
  }
}
