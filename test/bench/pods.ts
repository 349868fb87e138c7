import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { pool, waitUntil } from './podwatch.ts';

/** envInt reads a non-negative integer from the environment, or returns the default. */
export function envInt(name: string, def: number, env: Record<string, string | undefined> = process.env): number {
  const v = env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${v}"`);
  return n;
}

/**
 * BenchSize is how large a scenario runs: `full` (its defaults) or `small` (`BENCH_SIZE=small`: the same cases with
 * fewer tenants, Pods and seconds, so that three repetitions finish on a small shared host).
 */
export type BenchSize = 'full' | 'small';

/** benchSize reads BENCH_SIZE: unset, empty or `full` is full; `small` is small; anything else is refused. */
export function benchSize(env: Record<string, string | undefined> = process.env): BenchSize {
  const v = env.BENCH_SIZE;
  if (v === undefined || v === '' || v === 'full') return 'full';
  if (v === 'small') return 'small';
  throw new Error(`BENCH_SIZE=${v}: must be full or small`);
}

/** envSized reads a size like envInt, its default the `full` or the `small` one by BENCH_SIZE. */
export function envSized(
  name: string,
  sizes: Record<BenchSize, number>,
  env: Record<string, string | undefined> = process.env,
): number {
  return envInt(name, sizes[benchSize(env)], env);
}

/** TenantPodsOptions name and pace the Pods of createPodsAndWaitRunning. */
export interface TenantPodsOptions {
  /** the name of the j-th Pod of each tenant */
  name: (j: number) => string;
  /** creates in flight at once, over all tenants */
  concurrency: number;
  deadlineMs: number;
  /** how often the tenants are listed while waiting */
  everyMs: number;
  /** how many Pods of each tenant must be Running for the wait to end (default `pods`: a later wave counts those before) */
  running?: number;
  /** settled must also hold before the wait ends (a syncer idle, nothing left to patrol) */
  settled?: () => boolean | Promise<boolean>;
}

/**
 * createPodsAndWaitRunning creates `pods` Pods in namespace default of every tenant and waits until each tenant has
 * that many Pods Running (`o.running` when earlier Pods are there too) and `settled` holds.
 */
export async function createPodsAndWaitRunning(
  tenants: readonly KubeClient[],
  pods: number,
  o: TenantPodsOptions,
): Promise<void> {
  const jobs = tenants.flatMap((c) => Array.from({ length: pods }, (_, j) => ({ c, name: o.name(j) })));
  await pool(jobs, o.concurrency, async ({ c, name }) => {
    await c.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'nginx' }] },
    });
  });
  await waitUntil(
    async () => {
      for (const c of tenants) {
        const list = await c.listAll<KubeObject & { status?: { phase?: string } }>(R.pods, { namespace: 'default' });
        if (list.items.filter((p) => p.status?.phase === 'Running').length < (o.running ?? pods)) return false;
      }
      return o.settled ? o.settled() : true;
    },
    o.deadlineMs,
    () => `${o.running ?? pods} tenant Pods Running in each of ${tenants.length} tenants`,
    o.everyMs,
  );
}
