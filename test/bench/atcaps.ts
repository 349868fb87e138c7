import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { LABEL } from '../../core/names/names.ts';
import { sizeOf } from '../../core/syncer/caps.ts';
import { DEFAULT_POLICY } from '../../core/tenancy/policy.ts';
import type { Tenant } from '../../core/tenancy/tenant.ts';
import type { TestSuper } from '../harness.ts';
import { waitUntil } from './podwatch.ts';

/** FILL_CHARS is the size of each ConfigMap the capped tenant writes: under the 1 MiB per-object cap. */
const FILL_CHARS = 900 * 1024;
const MiB = 1024 * 1024;

/** AtCaps is the tenant that fills its caps, and where. */
export interface AtCaps {
  t: TestSuper;
  client: KubeClient;
  tenant: Tenant;
  log: (msg: string) => void;
  /** the tenant's byte rate to the super cluster (bytes per second; 0: none): the fill is given time for it */
  bytesPerSecond: number;
  /** the tenant's admin kubeconfig, which the writer process uses */
  kubeconfig: string;
  /** the writer process's pid, once it runs (for the bench's CPU meter) */
  onWriter?: (pid: number) => void;
  /** called once the writer's first ConfigMap is in the tenant (its process takes seconds to start) */
  onWriting?: () => void;
}

/** WRITER is the at-caps tenant's writer, run as a process of its own. */
const WRITER = fileURLToPath(new URL('./atcaps-writer.ts', import.meta.url));

/**
 * writeInOwnProcess runs the writer (atcaps-writer.ts) in a node process of its own, as a tenant's client runs on
 * another machine: on this process's main thread, building and sending 80 MiB would take the syncer's event loop.
 */
function writeInOwnProcess(c: AtCaps, count: number): Promise<{ cpuSeconds: number }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', WRITER, c.kubeconfig, String(count), String(FILL_CHARS), '4'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  if (child.pid) c.onWriter?.(child.pid);
  let err = '';
  let out = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.startsWith('writing\n')) c.onWriting?.();
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve({ cpuSeconds: Number(/^cpu (\S+)$/m.exec(out)?.[1]) })
        : reject(new Error(`at-caps writer exited ${code}: ${err.trim()}`)),
    );
  });
}

/** etcdDbBytes is the size of the (shared) etcd's database file, from its maintenance status. */
async function etcdDbBytes(t: TestSuper): Promise<number> {
  const res = await fetch(`${t.sc.etcd.endpoint}/v3/maintenance/status`, { method: 'POST', body: '{}' });
  const body = (await res.json()) as { dbSize?: string };
  return Number(body.dbSize ?? 0);
}

/**
 * atCapsFill has one tenant write ConfigMaps past its default caps (2000 objects of at most 1 MiB, 64 MiB in all):
 * 16 MiB more than the byte total, so the last ones are refused. The writes come from a process of its own (the
 * tenant's client is not the platform's). It samples this process's memory (the syncer runs here) while it fills,
 * waits until every ConfigMap is copied or refused, and reports what the tenant holds in the super cluster, how long
 * until every ConfigMap was copied or refused (polled every second), the manager's memory, and the growth of the
 * super cluster's etcd (which holds the tenant's own copies too when the tenants share it).
 */
export async function atCapsFill(c: AtCaps): Promise<{ figures: Record<string, number>; created: number }> {
  const total = DEFAULT_POLICY.quotaObjects.configmaps.totalBytes;
  const count = Math.ceil((total + 16 * MiB) / FILL_CHARS);
  const db0 = await etcdDbBytes(c.t);
  const rss0 = process.memoryUsage().rss;
  let rssPeak = rss0;
  let heapPeak = process.memoryUsage().heapUsed;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    rssPeak = Math.max(rssPeak, m.rss);
    heapPeak = Math.max(heapPeak, m.heapUsed);
  }, 100);
  const started = performance.now();
  try {
    c.log(`capped tenant writes ${count} ConfigMaps of ${FILL_CHARS} characters (cap ${total} bytes in all)`);
    const names = Array.from({ length: count }, (_, i) => `fill-${i}`);
    const writer = await writeInOwnProcess(c, count);
    const superOf = async () =>
      (await c.t.client.list(R.configmaps, { labelSelector: `${LABEL.cluster}=${c.tenant.key}` })).items;
    const refusedOf = async () =>
      new Set(
        (
          await c.client.list<KubeObject & { reason?: string; involvedObject?: { name?: string } }>(R.events, {
            namespace: 'default',
          })
        ).items
          .filter((e) => e.reason === 'QuotaExceeded')
          .map((e) => e.involvedObject?.name),
      );
    let copied: KubeObject[] = [];
    await waitUntil(
      async () => {
        copied = await superOf();
        const refused = await refusedOf();
        return names.every((n) => refused.has(n) || copied.some((o) => o.metadata?.name === n));
      },
      // 5 minutes, and at a byte rate twice the time the rate takes for all of it
      300_000 + (c.bytesPerSecond > 0 ? ((2 * count * FILL_CHARS) / c.bytesPerSecond) * 1000 : 0),
      () => `every ConfigMap of the capped tenant copied or refused (${copied.length} copied)`,
      1000,
    );
    const fillSeconds = Math.round((performance.now() - started) / 1000);
    const superBytes = copied.reduce((n, o) => n + sizeOf(o), 0);
    const figures = {
      cappedTenantConfigMapsWritten: count,
      cappedTenantConfigMapsInSuper: copied.length,
      cappedTenantSuperMiB: Number((superBytes / MiB).toFixed(1)),
      cappedTenantCapMiB: total / MiB,
      cappedTenantFillSeconds: fillSeconds,
      cappedTenantWriterCpuSeconds: Number(writer.cpuSeconds.toFixed(1)),
      managerRssPeakMiB: Math.round(rssPeak / MiB),
      managerRssGrowthMiB: Math.round((rssPeak - rss0) / MiB),
      managerHeapPeakMiB: Math.round(heapPeak / MiB),
      sharedEtcdGrowthMiB: Math.round(((await etcdDbBytes(c.t)) - db0) / MiB),
    };
    c.log(`capped tenant: ${JSON.stringify(figures)}`);
    return { figures, created: count };
  } finally {
    clearInterval(sampler);
  }
}
