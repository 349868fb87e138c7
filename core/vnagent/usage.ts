/**
 * A tenant's view of a kubelet's usage endpoints: `/metrics/resource` (Prometheus text, what metrics-server reads) and
 * `/stats/summary` (JSON). Both are filtered here, as pure functions, before the vn-agent answers a tenant:
 * - a Pod appears only when it is provably the tenant's (TenantPods: a super Pod of this tenant the agent has cached,
 *   whose super namespace maps back to the tenant namespace its provenance names, and, in the summary, whose uid is
 *   the cached super Pod's); its namespace, name and uid are the tenant's;
 * - every other Pod, every container outside those Pods and every series or field not listed here is absent;
 * - node totals follow the tenant's policy (nodes.totals, NodeTotals): `scaled`, the node's CPU, memory and swap usage
 *   are the sums over the tenant's own Pods on that node, never the machine's; `withheld`, the node's usage is absent.
 *   Everything else about the node (file systems, network, runtime, system containers, rlimits, available memory) is
 *   withheld either way.
 */
import type { NodeTotals } from '../../plugins/sdk/src/contract.ts';

/** NodeTotals is re-exported: what a tenant sees of a node's own usage. */
export type { NodeTotals };

/** TenantPodRef is the tenant's name of one super Pod. */
export interface TenantPodRef {
  namespace: string;
  name: string;
  uid: string;
}

/** TenantPods answers, for a super namespace and Pod name (and, when known, the super uid), the tenant's Pod or undefined. */
export type TenantPods = (superNamespace: string, superName: string, superUid?: string) => TenantPodRef | undefined;

/** Sample is one parsed line of Prometheus text: metric name, labels in order, value and optional timestamp. */
export interface Sample {
  name: string;
  labels: Array<[string, string]>;
  value: string;
  timestamp?: string;
}

/** POD_FAMILIES are the kubelet's per-Pod and per-container resource-metrics families a tenant may see (its own). */
export const POD_FAMILIES = [
  'container_cpu_usage_seconds_total',
  'container_memory_working_set_bytes',
  'container_start_time_seconds',
  'container_swap_usage_bytes',
  'pod_cpu_usage_seconds_total',
  'pod_memory_working_set_bytes',
  'pod_swap_usage_bytes',
] as const;

/** NODE_SCALED maps each node family a tenant sees to the Pod family it is summed from. */
export const NODE_SCALED: Record<string, string> = {
  node_cpu_usage_seconds_total: 'pod_cpu_usage_seconds_total',
  node_memory_working_set_bytes: 'pod_memory_working_set_bytes',
  node_swap_usage_bytes: 'pod_swap_usage_bytes',
};

/** KEPT_AS_IS are families that say nothing about anyone's workload and are kept unchanged. */
const KEPT_AS_IS = ['resource_scrape_error'];

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const NUMBER = /^(?:[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|Inf)|NaN)$/;
const TIMESTAMP = /^-?\d+$/;

/** parseSample reads one sample line of the Prometheus text format, or undefined when it is not a well-formed one. */
export function parseSample(line: string): Sample | undefined {
  const m = NAME.exec(line);
  if (!m) return undefined;
  const name = m[0];
  let i = name.length;
  const labels: Array<[string, string]> = [];
  if (line[i] === '{') {
    i++;
    for (;;) {
      while (line[i] === ' ') i++;
      if (line[i] === '}') {
        i++;
        break;
      }
      const ln = LABEL_NAME.exec(line.slice(i));
      if (!ln) return undefined;
      i += ln[0].length;
      if (line[i] !== '=' || line[i + 1] !== '"') return undefined;
      i += 2;
      let v = '';
      for (;;) {
        const c = line[i];
        if (c === undefined) return undefined;
        i++;
        if (c === '"') break;
        if (c !== '\\') {
          v += c;
          continue;
        }
        const e = line[i++];
        if (e === 'n') v += '\n';
        else if (e === '\\' || e === '"') v += e;
        else return undefined;
      }
      labels.push([ln[0], v]);
      while (line[i] === ' ') i++;
      if (line[i] === ',') i++;
      else if (line[i] !== '}') return undefined;
    }
  }
  const rest = line.slice(i).trim().split(/\s+/);
  if (rest.length < 1 || rest.length > 2 || !NUMBER.test(rest[0]!)) return undefined;
  if (rest.length === 2 && !TIMESTAMP.test(rest[1]!)) return undefined;
  return { name, labels, value: rest[0]!, ...(rest.length === 2 ? { timestamp: rest[1] } : {}) };
}

const escapeLabel = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/** formatSample writes a sample back as one line of the Prometheus text format. */
export function formatSample(s: Sample): string {
  const labels = s.labels.length ? `{${s.labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}` : '';
  return `${s.name}${labels} ${s.value}${s.timestamp !== undefined ? ` ${s.timestamp}` : ''}`;
}

/** ResourceMetrics is one kubelet's `/metrics/resource` after filtering: the kept samples and help texts per family. */
export interface ResourceMetrics {
  help: Map<string, string>;
  type: Map<string, string>;
  samples: Sample[];
}

const label = (s: Sample, k: string): string | undefined => s.labels.find(([n]) => n === k)?.[1];

/**
 * filterResourceMetrics keeps from one kubelet's `/metrics/resource` text the tenant's own Pod and container samples
 * (namespace and pod relabelled to the tenant's, every other label but container dropped), the node families of
 * NODE_SCALED as sums over those Pods (none when `totals` is withheld), and KEPT_AS_IS; every other line is dropped,
 * malformed ones included.
 */
export function filterResourceMetrics(text: string, pods: TenantPods, totals: NodeTotals = 'scaled'): ResourceMetrics {
  const out: ResourceMetrics = { help: new Map(), type: new Map(), samples: [] };
  const nodeSeen = new Map<string, string | undefined>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const meta = /^#\s+(HELP|TYPE)\s+([a-zA-Z_:][a-zA-Z0-9_:]*)\s?(.*)$/.exec(line);
    if (meta) {
      (meta[1] === 'HELP' ? out.help : out.type).set(meta[2]!, meta[3]!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const s = parseSample(line);
    if (!s) continue;
    if ((POD_FAMILIES as readonly string[]).includes(s.name)) {
      const ns = label(s, 'namespace');
      const pod = label(s, 'pod');
      const ref = ns !== undefined && pod !== undefined ? pods(ns, pod) : undefined;
      if (!ref) continue;
      const container = label(s, 'container');
      if (s.name.startsWith('container_') && !container) continue;
      const labels: Array<[string, string]> = [
        ...(container !== undefined ? [['container', container] as [string, string]] : []),
        ['namespace', ref.namespace],
        ['pod', ref.name],
      ];
      out.samples.push({ ...s, labels });
    } else if (Object.hasOwn(NODE_SCALED, s.name)) {
      // Only the timestamp of the node's own sample is kept: its value is the machine's, never shown.
      if (s.labels.length === 0 && totals === 'scaled') nodeSeen.set(s.name, s.timestamp);
    } else if (KEPT_AS_IS.includes(s.name) && s.labels.length === 0) {
      out.samples.push(s);
    }
  }
  for (const [node, pod] of Object.entries(NODE_SCALED)) {
    if (!nodeSeen.has(node)) continue;
    const mine = out.samples.filter((s) => s.name === pod);
    const sum = mine.reduce((a, s) => a + Number(s.value), 0);
    const ts = nodeSeen.get(node) ?? mine.map((s) => s.timestamp).find((t) => t !== undefined);
    out.samples.push({ name: node, labels: [], value: String(sum), ...(ts !== undefined ? { timestamp: ts } : {}) });
  }
  const kept = new Set(out.samples.map((s) => s.name));
  for (const m of [out.help, out.type]) for (const k of [...m.keys()]) if (!kept.has(k)) m.delete(k);
  return out;
}

/**
 * mergeResourceMetrics joins the filtered metrics of several kubelets into one text: Pod and container samples are
 * concatenated (a Pod runs on one node), node sums are added, each family is written once with its help and type.
 */
export function mergeResourceMetrics(parts: readonly ResourceMetrics[]): string {
  const help = new Map<string, string>();
  const type = new Map<string, string>();
  const families = new Map<string, Sample[]>();
  for (const p of parts) {
    for (const [k, v] of p.help) help.set(k, v);
    for (const [k, v] of p.type) type.set(k, v);
    for (const s of p.samples) {
      const list = families.get(s.name) ?? [];
      if (Object.hasOwn(NODE_SCALED, s.name) && list.length) {
        const prev = list[0]!;
        const ts = [prev.timestamp, s.timestamp].filter((t): t is string => t !== undefined);
        list[0] = {
          ...prev,
          value: String(Number(prev.value) + Number(s.value)),
          ...(ts.length ? { timestamp: ts.sort((a, b) => Number(b) - Number(a))[0] } : {}),
        };
      } else list.push(s);
      families.set(s.name, list);
    }
  }
  const lines: string[] = [];
  for (const name of [...families.keys()].sort()) {
    if (help.has(name)) lines.push(`# HELP ${name} ${help.get(name)}`);
    if (type.has(name)) lines.push(`# TYPE ${name} ${type.get(name)}`);
    for (const s of families.get(name)!) lines.push(formatSample(s));
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined;
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** POD_STATS_FIELDS are the fields of a summary PodStats a tenant sees of its own Pods (podRef rewritten). */
export const POD_STATS_FIELDS = [
  'startTime',
  'containers',
  'cpu',
  'memory',
  'network',
  'volume',
  'ephemeral-storage',
  'process_stats',
  'swap',
] as const;

/** SummaryPart is one kubelet's `/stats/summary` after filtering. */
export interface SummaryPart {
  node: string;
  startTime?: unknown;
  pods: Json[];
}

/** filterPod returns a summary PodStats of the tenant with tenant names, or undefined when it is not provably its. */
function filterPod(p: Json, pods: TenantPods): Json | undefined {
  const ref = obj(p.podRef);
  const ns = ref?.namespace;
  const name = ref?.name;
  const uid = ref?.uid;
  if (typeof ns !== 'string' || typeof name !== 'string' || typeof uid !== 'string' || !uid) return undefined;
  const mine = pods(ns, name, uid);
  if (!mine) return undefined;
  const out: Json = { podRef: { name: mine.name, namespace: mine.namespace, uid: mine.uid } };
  for (const f of POD_STATS_FIELDS) if (p[f] !== undefined) out[f] = structuredClone(p[f]);
  if (Array.isArray(out.volume)) {
    // A volume's claim is named in the super namespace: shown only in the tenant's, and only when it is this Pod's.
    out.volume = (out.volume as unknown[]).map((v) => {
      const vol = { ...obj(v) };
      const pvc = obj(vol.pvcRef);
      if (pvc) {
        if (pvc.namespace === ns && typeof pvc.name === 'string')
          vol.pvcRef = { name: pvc.name, namespace: mine.namespace };
        else delete vol.pvcRef;
      }
      return vol;
    });
  }
  return out;
}

/** filterSummary keeps the tenant's own Pods of one kubelet's `/stats/summary` (see filterPod) and the node's name. */
export function filterSummary(summary: unknown, pods: TenantPods, nodeName: string): SummaryPart {
  const s = obj(summary);
  const node = obj(s?.node);
  const list = Array.isArray(s?.pods) ? (s.pods as unknown[]) : [];
  const kept: Json[] = [];
  for (const item of list) {
    const p = obj(item);
    const mine = p && filterPod(p, pods);
    if (mine) kept.push(mine);
  }
  return { node: nodeName, ...(node?.startTime !== undefined ? { startTime: node.startTime } : {}), pods: kept };
}

/** sumOf adds a numeric field of a stats section over Pods; undefined when no Pod has it. */
function sumOf(pods: readonly Json[], section: string, field: string): number | undefined {
  let total: number | undefined;
  for (const p of pods) {
    const v = num(obj(p[section])?.[field]);
    if (v !== undefined) total = (total ?? 0) + v;
  }
  return total;
}

/** latest is the latest `time` of a stats section over Pods. */
function latest(pods: readonly Json[], section: string): string | undefined {
  const times = pods.map((p) => obj(p[section])?.time).filter((t): t is string => typeof t === 'string');
  return times.sort().at(-1);
}

/** scaledSection sums `fields` of a section over the Pods, with the latest time; undefined when none has any. */
function scaledSection(pods: readonly Json[], section: string, fields: readonly string[]): Json | undefined {
  const out: Json = {};
  for (const f of fields) {
    const v = sumOf(pods, section, f);
    if (v !== undefined) out[f] = v;
  }
  if (!Object.keys(out).length) return undefined;
  const time = latest(pods, section);
  return time ? { time, ...out } : out;
}

/**
 * mergeSummary builds the summary a tenant sees from the filtered parts of the kubelets its Pods run on: its Pods, and
 * a node section named `nodeName` whose CPU, memory and swap are the sums over those Pods (left out when `totals` is
 * withheld); nothing else of the node.
 */
export function mergeSummary(parts: readonly SummaryPart[], nodeName: string, totals: NodeTotals = 'scaled'): Json {
  const pods = parts.flatMap((p) => p.pods);
  const node: Json = { nodeName };
  const start = parts
    .map((p) => p.startTime)
    .filter((t): t is string => typeof t === 'string')
    .sort()[0];
  if (start) node.startTime = start;
  if (totals === 'withheld') return { node, pods };
  const cpu = scaledSection(pods, 'cpu', ['usageNanoCores', 'usageCoreNanoSeconds']);
  const memory = scaledSection(pods, 'memory', ['usageBytes', 'workingSetBytes', 'rssBytes']);
  const swap = scaledSection(pods, 'swap', ['swapUsageBytes']);
  if (cpu) node.cpu = cpu;
  if (memory) node.memory = memory;
  if (swap) node.swap = swap;
  return { node, pods };
}
