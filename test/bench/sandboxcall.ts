/**
 * The per-call cost of the plugin sandbox: the same plugin (the sandbox-runtimeclass example, a mutator of Pods, with
 * the tenant's configuration set so it does its work) called in the manager's process and through its sandbox, on
 * the same Pod. Run: `npx tsx test/bench/sandboxcall.ts [calls]`; prints the median and p99 of each, in microseconds.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PluginSandbox } from '../../core/plugins/sandbox/sandbox.ts';
import { testContext, testTenant } from '../../core/plugins/testing.ts';
import type { MutatorPlugin } from '../../core/plugins/contract.ts';
import inProcess from '../../plugins/examples/sandbox-runtimeclass/src/index.ts';

const dir = join(import.meta.dirname, '../../plugins/examples/sandbox-runtimeclass');
const calls = Number(process.argv[2] ?? 5000);
const ctx = testContext({ tenant: testTenant({ pluginConfig: { sandbox: { runtimeClassName: 'kata' } } }) });
const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'api-0', namespace: 'web', labels: { app: 'api' } },
  spec: { containers: [{ name: 'api', image: 'api:1', resources: { requests: { cpu: '100m' } } }] },
};

function measure(p: MutatorPlugin): { median: number; p99: number } {
  const times: number[] = [];
  for (let i = 0; i < calls + 200; i++) {
    const t = performance.now();
    const d = p.mutate(structuredClone(pod), pod, ctx);
    if ((d.object?.spec as { runtimeClassName?: string }).runtimeClassName !== 'kata') throw new Error('wrong result');
    if (i >= 200) times.push((performance.now() - t) * 1000);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)]!, p99: times[Math.floor(times.length * 0.99)]! };
}

const sandbox = new PluginSandbox({
  entry: join(dir, 'dist/index.js'),
  source: dir,
  readPaths: [dir, join(import.meta.dirname, '../../node_modules/@virtualcluster-ts/plugin-sdk')],
});
const [boxed] = sandbox.load();
const a = measure(inProcess as unknown as MutatorPlugin);
const b = measure(boxed as MutatorPlugin);
await sandbox.close();
const f = (x: number) => x.toFixed(1);
process.stdout.write(
  `calls: ${calls}\nin-process: median ${f(a.median)} µs, p99 ${f(a.p99)} µs\n` +
    `sandboxed:  median ${f(b.median)} µs, p99 ${f(b.p99)} µs\noverhead:   median ${f(b.median - a.median)} µs\n`,
);
