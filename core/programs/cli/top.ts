import type { Command } from 'commander';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import type { KubeClient } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { provenanceOf, rootNamespace } from '../../names/names.ts';
import {
  tenantUsage,
  topRow,
  TOP_HEAD,
  TOP_WRITES_HEAD,
  withWrites,
  type TenantUsage,
  type UsagePod,
} from '../../syncer/tenantusage.ts';
import { isSimulatedNode } from '../../vnagent/simulated.ts';
import type { SuperNode } from '../../vnagent/superview.ts';
import { parseSample } from '../../vnagent/usage.ts';
import { CliError } from './errors.ts';
import { addClusterOptions, clusterClient } from './kubeconfig.ts';
import { formatData, formatTable, outputOption } from './output.ts';

/**
 * readTenantUsage reads, with a super cluster admin's client, every super Pod, the /stats/summary of each real node
 * that runs a tenant Pod (through the apiserver's nodes/proxy), and the VirtualClusters for their names (none when the
 * cluster has no VirtualCluster API: the meta cluster may be another). A node whose summary cannot be read is named in
 * `unread`; its Pods count with requests only.
 */
export async function readTenantUsage(c: KubeClient): Promise<{ rows: TenantUsage[]; unread: string[] }> {
  const pods = (await c.listAll<UsagePod>(R.pods)).items;
  const nodes = new Set(
    pods.filter((p) => provenanceOf(p)).flatMap((p) => (p.spec?.nodeName ? [p.spec.nodeName] : [])),
  );
  const summaries: unknown[] = [];
  const unread: string[] = [];
  for (const n of [...nodes].sort()) {
    const node = await c.getOrNull<SuperNode>(R.nodes, undefined, n);
    if (!node || isSimulatedNode(node)) continue;
    try {
      summaries.push(await c.request('GET', `/api/v1/nodes/${encodeURIComponent(n)}/proxy/stats/summary`));
    } catch (e) {
      unread.push(`${n}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  const names = new Map<string, string>();
  const vcs = await c.list<VirtualCluster>(R.virtualclusters).catch(() => ({ items: [] as VirtualCluster[] }));
  for (const vc of vcs.items) {
    const m = vc.metadata;
    if (m?.namespace && m.name && m.uid)
      names.set(rootNamespace(m.namespace, m.name, m.uid), `${m.namespace}/${m.name}`);
  }
  return { rows: tenantUsage(pods, summaries, names), unread };
}

/** WRITES_METRIC is the manager's counter of the syncer's API writes, labelled by tenant, that `vc top --metrics` reads. */
export const WRITES_METRIC = 'vc_syncer_writes_total';

/**
 * writesByTenant sums WRITES_METRIC over every label but `tenant` in a Prometheus text exposition (a manager's
 * /metrics). Lines of other families, comments and malformed lines are skipped.
 */
export function writesByTenant(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(WRITES_METRIC)) continue;
    const s = parseSample(line.trim());
    const tenant = s?.labels.find(([k]) => k === 'tenant')?.[1];
    const n = Number(s?.value);
    if (s?.name !== WRITES_METRIC || !tenant || !Number.isFinite(n)) continue;
    out.set(tenant, (out.get(tenant) ?? 0) + n);
  }
  return out;
}

/** readWrites reads a manager's /metrics at `url` and sums its writes per tenant, or fails naming the URL. */
export async function readWrites(url: string): Promise<Map<string, number>> {
  let text: string;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(15_000) });
    text = await res.text();
    if (!res.ok) throw new Error(`answered ${res.status}: ${text.slice(0, 200).trim()}`);
  } catch (e) {
    throw new CliError(`--metrics ${url}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!text.split('\n').some((l) => l.startsWith(`# TYPE ${WRITES_METRIC} `)))
    throw new CliError(`--metrics ${url}: no ${WRITES_METRIC} there: not a manager's /metrics`);
  return writesByTenant(text);
}

/** registerTopCommand adds `vc top`: per-tenant Pods, CPU and memory (used and requested), for chargeback. */
export function registerTopCommand(program: Command): void {
  addClusterOptions(program.command('top'), 'the super cluster (an admin: it reads every Pod and node summary)')
    .description("show each tenant's Pods, CPU and memory in use (the kubelets' summaries) and requested")
    .addOption(outputOption(['text', 'json', 'yaml']))
    .option(
      '--metrics <url>',
      `the manager's /metrics (its ops port): adds each tenant's API writes through the syncer (${WRITES_METRIC})`,
    )
    .action(async (o: { output: string; kubeconfig?: string; context?: string; metrics?: string }) => {
      const writes = o.metrics === undefined ? undefined : await readWrites(o.metrics);
      const c = await clusterClient(o);
      try {
        const usage = await readTenantUsage(c);
        const rows = writes ? withWrites(usage.rows, writes) : usage.rows;
        for (const u of usage.unread) process.stderr.write(`usage of node ${u} could not be read\n`);
        const doc = rows.map((r) => ({
          ...r,
          cpuRequests: `${r.cpuRequests}m`,
          memoryRequests: `${r.memoryRequests / 1000n}`,
        }));
        const head = writes ? [...TOP_HEAD, TOP_WRITES_HEAD] : TOP_HEAD;
        process.stdout.write(
          formatData(doc, o.output) ??
            formatTable(
              head,
              rows.map((r) => topRow(r, !!writes)),
            ),
        );
      } finally {
        c.close();
      }
    });
}
