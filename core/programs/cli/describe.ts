import type { Command } from 'commander';
import { isNotFound, type KubeObject } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import { addClusterOptions, clusterClient } from './kubeconfig.ts';
import { CliError } from './errors.ts';
import { formatData, formatTable, outputOption } from './output.ts';

/** EventRow is what describe shows of one Event about a VirtualCluster. */
export interface EventRow {
  type: string;
  reason: string;
  message: string;
  /** RFC 3339 time of its last occurrence */
  time: string;
  count: number;
}

/** EVENTS_SHOWN is how many of the latest events describe shows. */
export const EVENTS_SHOWN = 20;

/**
 * healthOf is the HEALTH column of `vc get` and `vc status`: Healthy, the failing component and its reason, or `-`
 * before the manager probed the tenant (not served yet, or a manager without health probes).
 */
export function healthOf(vc: VirtualCluster): string {
  const comps = vc.status?.components;
  if (!comps?.length) return '-';
  const failing = comps.find((c) => !c.healthy);
  return failing ? `${failing.name}: ${failing.reason ?? 'Unhealthy'}` : 'Healthy';
}

/** describeDocument is what `vc describe -o json|yaml` prints: the tenant, its components, conditions and events. */
export function describeDocument(vc: VirtualCluster, events: readonly EventRow[]) {
  const m = vc.metadata!;
  const s = vc.status ?? {};
  return {
    namespace: m.namespace,
    name: m.name,
    phase: s.phase ?? 'Pending',
    ...(s.reason && { reason: s.reason }),
    ...(s.message && { message: s.message }),
    provisioner: vc.spec?.provisioner?.type ?? '(default)',
    ...(vc.spec?.clusterVersionName && { clusterVersion: vc.spec.clusterVersionName }),
    ...(s.clusterNamespace && { rootNamespace: s.clusterNamespace }),
    ...(s.apiserverEndpoint && { apiserverEndpoint: s.apiserverEndpoint }),
    components: s.components ?? [],
    conditions: s.conditions ?? [],
    events,
  };
}

/** describeText renders describeDocument as kubectl describe does: fields, then tables of components, conditions, events. */
export function describeText(vc: VirtualCluster, events: readonly EventRow[]): string {
  const d = describeDocument(vc, events);
  const field = (k: string, v: string | undefined) => (v ? `${`${k}:`.padEnd(20)}${v}\n` : '');
  let out =
    field('Name', d.name) +
    field('Namespace', d.namespace) +
    field('Phase', d.phase) +
    field('Reason', d.reason) +
    field('Message', d.message) +
    field('Provisioner', d.provisioner) +
    field('ClusterVersion', d.clusterVersion) +
    field('Root Namespace', d.rootNamespace) +
    field('API Endpoint', d.apiserverEndpoint);
  const indent = (t: string) =>
    t
      .split('\n')
      .map((l) => (l ? `  ${l}` : l))
      .join('\n');
  out += '\nComponents:\n';
  out += d.components.length
    ? indent(
        formatTable(
          ['NAME', 'HEALTHY', 'RESTARTS', 'VERSION', 'REASON', 'MESSAGE'],
          d.components.map((c) => [
            c.name,
            String(c.healthy),
            String(c.restarts ?? '-'),
            c.version ?? '-',
            c.reason ?? '',
            c.message ?? '',
          ]),
        ),
      )
    : '  <not probed yet>\n';
  out += '\nConditions:\n';
  out += d.conditions.length
    ? indent(
        formatTable(
          ['TYPE', 'STATUS', 'REASON', 'SINCE', 'MESSAGE'],
          d.conditions.map((c) => [c.type, c.status, c.reason, c.lastTransitionTime, c.message ?? '']),
        ),
      )
    : '  <none>\n';
  out += '\nEvents:\n';
  out += events.length
    ? indent(
        formatTable(
          ['TYPE', 'REASON', 'LAST SEEN', 'COUNT', 'MESSAGE'],
          events.map((e) => [e.type, e.reason, e.time, String(e.count), e.message]),
        ),
      )
    : '  <none>\n';
  return out;
}

type CoreEvent = KubeObject & {
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  lastTimestamp?: string;
  eventTime?: string;
  involvedObject?: { uid?: string };
};

/** eventRows keeps the events of this VirtualCluster (by uid when they name one), latest EVENTS_SHOWN, oldest first. */
export function eventRows(vc: VirtualCluster, items: readonly CoreEvent[]): EventRow[] {
  const uid = vc.metadata?.uid;
  return items
    .filter((e) => !uid || !e.involvedObject?.uid || e.involvedObject.uid === uid)
    .map((e) => ({
      type: e.type ?? 'Normal',
      reason: e.reason ?? '',
      message: e.message ?? '',
      time: e.lastTimestamp ?? e.eventTime ?? e.metadata?.creationTimestamp ?? '',
      count: e.count ?? 1,
    }))
    .sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0))
    .slice(-EVENTS_SHOWN);
}

/** registerDescribeCommand adds `vc describe NAME`. */
export function registerDescribeCommand(program: Command): void {
  addClusterOptions(program.command('describe <name>'))
    .description("show a VirtualCluster's components (health, restarts, versions), conditions and recent events")
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .addOption(outputOption(['text', 'json', 'yaml', 'jsonpath']))
    .action(async (name: string, o: { namespace: string; output: string; kubeconfig?: string; context?: string }) => {
      const [ns, n] = name.includes('/') ? (name.split('/') as [string, string]) : [o.namespace, name];
      const c = await clusterClient(o);
      try {
        const vc = await c.get<VirtualCluster>(R.virtualclusters, ns, n).catch((e: unknown) => {
          if (isNotFound(e))
            throw new CliError(`VirtualCluster ${ns}/${n} not found: list them with \`vc get\`, or pass -n NAMESPACE`);
          throw e;
        });
        const list = await c.list<CoreEvent>(R.events, {
          namespace: ns,
          fieldSelector: `involvedObject.kind=VirtualCluster,involvedObject.name=${n}`,
        });
        const events = eventRows(vc, list.items);
        const data = formatData(describeDocument(vc, events), o.output);
        process.stdout.write(data ?? describeText(vc, events));
      } finally {
        c.close();
      }
    });
}
