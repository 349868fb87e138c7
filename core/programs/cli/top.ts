import type { Command } from 'commander';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import type { KubeClient } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { provenanceOf, rootNamespace } from '../../names/names.ts';
import { tenantUsage, topRow, TOP_HEAD, type TenantUsage, type UsagePod } from '../../syncer/tenantusage.ts';
import { isSimulatedNode } from '../../vnagent/simulated.ts';
import type { SuperNode } from '../../vnagent/superview.ts';
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

/** registerTopCommand adds `vc top`: per-tenant Pods, CPU and memory (used and requested), for chargeback. */
export function registerTopCommand(program: Command): void {
  addClusterOptions(program.command('top'), 'the super cluster (an admin: it reads every Pod and node summary)')
    .description("show each tenant's Pods, CPU and memory in use (the kubelets' summaries) and requested")
    .addOption(outputOption(['text', 'json', 'yaml']))
    .action(async (o: { output: string; kubeconfig?: string; context?: string }) => {
      const c = await clusterClient(o);
      try {
        const { rows, unread } = await readTenantUsage(c);
        for (const u of unread) process.stderr.write(`usage of node ${u} could not be read\n`);
        const doc = rows.map((r) => ({
          ...r,
          cpuRequests: `${r.cpuRequests}m`,
          memoryRequests: `${r.memoryRequests / 1000n}`,
        }));
        process.stdout.write(formatData(doc, o.output) ?? formatTable(TOP_HEAD, rows.map(topRow)));
      } finally {
        c.close();
      }
    });
}
