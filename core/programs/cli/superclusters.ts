import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { ApiError, KubeClient, type KubeObject, type Resource } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { LABEL } from '../../names/names.ts';
import { formatResources, type Resources } from '../../scheduler/annotations.ts';
import { sumAllocatable } from '../../scheduler/capacity.ts';
import { clusterState, kubeconfigSecretName, RegistrationError } from '../../superclusters/registration.ts';
import { CLUSTERS, kubeconfigFromSecret, RegistrationFailure, readyOf } from '../../superclusters/registration.ts';
import type { Condition } from '../../controller/status.ts';
import { readSchedulerState, SCHEDULER_STATE_NAMESPACES, stateSections } from './placements.ts';
import { CliError, DEFAULT_STATE_DIR, metaKubeconfig } from './vcs.ts';
import { formatData, outputOption } from './output.ts';
import { clusterClient } from './kubeconfig.ts';
import { lastRebalanceLine, parseRebalanceReport } from './rebalance.ts';

/** SCHEDULER_STATE is the ConfigMap the namespace scheduler publishes its per-super-cluster summary in. */
export const SCHEDULER_STATE = { name: 'vc-scheduler-state' } as const;

/** ClusterSummary is the scheduler's published summary of one super cluster. */
export interface ClusterSummary {
  state?: string;
  placedSlices?: number;
  placedNamespaces?: number;
  allocatable?: Record<string, string>;
  free?: Record<string, string>;
}

/**
 * parseSchedulerState reads the scheduler's ConfigMap data: one key holding JSON {clusters: {<name>: summary}}.
 * Anything else is no summary (the table shows '-'), never an error: the listing must work without a scheduler.
 */
export function parseSchedulerState(data: Readonly<Record<string, string>> | undefined): Map<string, ClusterSummary> {
  const out = new Map<string, ClusterSummary>();
  for (const clusters of stateSections(data, 'clusters'))
    for (const [name, s] of Object.entries(clusters))
      if (typeof s === 'object' && s !== null) out.set(name, s as ClusterSummary);
  return out;
}

/** ClusterRow is one line of `vc superclusters`. */
export interface ClusterRow {
  name: string;
  namespace: string;
  state: string;
  capacity: string;
  slices: string;
  namespaces: string;
  message: string;
}

interface ClusterObj extends KubeObject {
  metadata: {
    name: string;
    namespace: string;
    deletionTimestamp?: string;
    annotations?: Record<string, string>;
  };
  status?: { conditions?: Condition[] };
}

/**
 * registrationRow describes one Cluster from what the registry wrote in its status: its state (the scheduler's
 * ClusterState, or `pending` before the registry checked it) and the message of a registration that is not ready.
 */
export function registrationRow(
  c: ClusterObj,
  capacity: Resources | undefined,
  summary: ClusterSummary | undefined,
): ClusterRow {
  const cond = readyOf(c.status);
  let state: string;
  let message = cond?.status === 'True' ? '' : (cond?.message ?? '');
  try {
    state = !cond && !c.metadata.deletionTimestamp ? 'pending' : clusterState(c, cond?.status === 'True');
  } catch (e) {
    if (!(e instanceof RegistrationError)) throw e;
    state = 'unreachable';
    message = e.message;
  }
  if (state === 'pending') message = 'not checked yet: is a manager with superClusterRegistry.enabled running?';
  return {
    name: c.metadata.name,
    namespace: c.metadata.namespace,
    state,
    capacity: capacity ? formatResources(pick(capacity)) : '-',
    slices: summary?.placedSlices === undefined ? '-' : String(summary.placedSlices),
    namespaces: summary?.placedNamespaces === undefined ? '-' : String(summary.placedNamespaces),
    message,
  };
}

/**
 * summaryRows are the super clusters the scheduler's summary names that no other row lists: those a manager
 * configures statically (`superClusters`, such as r1 of `vc up --super-clusters N`), which have no Cluster object,
 * and those whose Cluster is gone while placements still name them. Their capacity is the summary's allocatable.
 */
export function summaryRows(summaries: ReadonlyMap<string, ClusterSummary>, listed: ReadonlySet<string>): ClusterRow[] {
  const rows: ClusterRow[] = [];
  for (const [name, sum] of [...summaries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (listed.has(name)) continue;
    const gone = sum.state === 'deregistered';
    const alloc = sum.allocatable ?? {};
    const shown = SHOWN.filter((k) => typeof alloc[k] === 'string');
    rows.push({
      name,
      namespace: gone ? '-' : '(static)',
      state: typeof sum.state === 'string' ? sum.state : '-',
      capacity: shown.length ? shown.map((k) => `${k}=${alloc[k]}`).join(',') : '-',
      slices: sum.placedSlices === undefined ? '-' : String(sum.placedSlices),
      namespaces: sum.placedNamespaces === undefined ? '-' : String(sum.placedNamespaces),
      message: gone
        ? 'no registration any more; its placements stay until drained'
        : "configured in the manager's superClusters, not registered",
    });
  }
  return rows;
}

const SHOWN = ['cpu', 'memory', 'pods'] as const;
const pick = (r: Resources): Resources =>
  Object.fromEntries(SHOWN.filter((k) => r[k] !== undefined).map((k) => [k, r[k]!]));

interface NodeObj extends KubeObject {
  status?: { allocatable?: Record<string, string>; conditions?: Array<{ type: string; status: string }> };
}

/** readyCapacity is the allocatable of a super cluster's Ready nodes, or undefined when it cannot be read. */
async function readyCapacity(c: KubeClient): Promise<Resources | undefined> {
  try {
    const nodes = (await c.listAll<NodeObj>(R.nodes)).items.filter((n) =>
      n.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'),
    );
    return sumAllocatable(nodes.map((n) => ({ name: n.metadata!.name!, allocatable: n.status?.allocatable ?? {} })));
  } catch {
    return undefined;
  }
}

async function capacityOf(meta: KubeClient, c: ClusterObj): Promise<Resources | undefined> {
  const ref = { namespace: c.metadata.namespace, name: c.metadata.name };
  try {
    const secret = await meta.getOrNull<KubeObject & { data?: Record<string, string> }>(
      R.secrets,
      ref.namespace,
      kubeconfigSecretName(ref.name),
    );
    const { safe } = kubeconfigFromSecret(ref, secret);
    const client = KubeClient.fromSafe(safe, { timeoutMs: 5000 });
    try {
      return await readyCapacity(client);
    } finally {
      client.close();
    }
  } catch (e) {
    if (e instanceof RegistrationFailure) return undefined;
    throw e;
  }
}

/** formatRows writes rows as an aligned table with a header. */
export function formatRows(rows: readonly ClusterRow[]): string {
  const cols = ['name', 'namespace', 'state', 'capacity', 'slices', 'namespaces', 'message'] as const;
  const w = cols.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] || '-').length)));
  const line = (v: readonly string[]) =>
    v
      .map((x, i) => (x || '-').padEnd(w[i]!))
      .join('  ')
      .trimEnd();
  return [line(cols.map((c) => c.toUpperCase())), ...rows.map((r) => line(cols.map((c) => r[c])))].join('\n') + '\n';
}

/** registerSuperClusterCommands adds `vc superclusters`. */
export function registerSuperClusterCommands(program: Command): void {
  program
    .command('superclusters')
    .description(
      'every super cluster a manager syncs to (registered, and static ones): state, capacity of Ready nodes, slices and namespaces placed',
    )
    .option('--kubeconfig <file>', 'meta cluster kubeconfig (see `vc --help` for the default)')
    .option('--context <name>', 'the kubeconfig context to use (default: its current-context)')
    .option(
      '--scheduler-namespace <ns>',
      "namespace of the scheduler's vc-scheduler-state ConfigMap (default: vc-system, then kube-system)",
    )
    .option('--state-dir <dir>', 'state directory of vc up, whose statically configured super cluster is listed too')
    .addOption(outputOption(['table', 'json', 'yaml', 'name', 'jsonpath']))
    .action(
      async (o: {
        kubeconfig?: string;
        context?: string;
        schedulerNamespace?: string;
        stateDir?: string;
        output: string;
      }) => {
        const metaPath = metaKubeconfig(o.kubeconfig);
        const embedded = resolve(metaPath) === resolve(DEFAULT_STATE_DIR, 'clusters/super/admin.kubeconfig');
        const meta = await clusterClient(o);
        try {
          let clusters: ClusterObj[];
          try {
            clusters = (await meta.listAll<ClusterObj>(CLUSTERS as Resource)).items;
          } catch (e) {
            if (e instanceof ApiError && e.code === 404)
              throw new CliError('no super cluster is registered: the Cluster CRD (cluster.x-k8s.io) is not installed');
            throw e;
          }
          // The scheduler publishes in the manager's namespace: vc-system when deployed, kube-system under vc up.
          const data = await readSchedulerState(
            meta,
            SCHEDULER_STATE.name,
            o.schedulerNamespace ? [o.schedulerNamespace] : SCHEDULER_STATE_NAMESPACES,
          );
          const summaries = parseSchedulerState(data);
          const rows: ClusterRow[] = [];
          const statics = await staticSuperClusters(o.stateDir ?? (embedded ? DEFAULT_STATE_DIR : undefined));
          for (const s of statics) {
            const c = await KubeClient.fromFile(s.kubeconfig);
            try {
              const cap = await readyCapacity(c);
              const sum = summaries.get(s.name);
              rows.push({
                name: s.name,
                namespace: '(static)',
                state: cap ? 'ready' : 'unreachable',
                capacity: cap ? formatResources(pick(cap)) : '-',
                slices: sum?.placedSlices === undefined ? '-' : String(sum.placedSlices),
                namespaces: sum?.placedNamespaces === undefined ? '-' : String(sum.placedNamespaces),
                message: cap ? '' : `cannot list nodes with ${s.kubeconfig}`,
              });
            } finally {
              c.close();
            }
          }
          // Like the registry, a Cluster in a tenant namespace (where synced tenant objects live) is not a registration.
          const tenantNamespaces = new Set(
            (await meta.listAll<KubeObject>(R.namespaces, { labelSelector: LABEL.cluster })).items.map(
              (n) => n.metadata?.name,
            ),
          );
          clusters = clusters.filter((c) => !tenantNamespaces.has(c.metadata.namespace));
          for (const c of clusters.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))) {
            const ready = readyOf(c.status)?.status === 'True';
            const cap = ready ? await capacityOf(meta, c) : undefined;
            rows.push(registrationRow(c, cap, summaries.get(c.metadata.name)));
          }
          // Every super cluster the manager syncs to is in the scheduler's summary, the static ones included.
          rows.push(...summaryRows(summaries, new Set(rows.map((r) => r.name))));
          const names = () => rows.map((r) => `supercluster/${r.name}\n`).join('');
          // The table ends with the answer to the last rebalance request (vc superclusters rebalance), if any.
          const table = () => formatRows(rows) + lastRebalanceLine(parseRebalanceReport(data));
          process.stdout.write(o.output === 'name' ? names() : (formatData(rows, o.output) ?? table()));
        } finally {
          meta.close();
        }
      },
    );
}

/** staticSuperClusters are the super clusters a running `vc up` configured statically (its manager.yaml). */
async function staticSuperClusters(stateDir: string | undefined): Promise<Array<{ name: string; kubeconfig: string }>> {
  if (!stateDir) return [];
  const file = resolve(stateDir, 'manager.yaml');
  if (!existsSync(file)) return [];
  const { loadManagerConfig } = await import('../manager/config.ts');
  // A meta cluster apart (metaOnly) holds the registrations and is no super cluster itself.
  return (loadManagerConfig(file).superClusters ?? []).flatMap((s) =>
    !s.metaOnly && s.kubeconfig && existsSync(s.kubeconfig) ? [{ name: s.name, kubeconfig: s.kubeconfig }] : [],
  );
}
