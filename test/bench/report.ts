import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

/**
 * BenchSeries are the raw numbers a scenario hands to the HTML report, beside its headline figures: per arm, each
 * Pod's create-to-Running latency and the times its Pods were seen Running; per tenant, the p99 of each phase.
 */
export interface BenchSeries {
  /** latencyMs maps an arm (e.g. `direct`, `same-writes`, `syncer`) to every Pod's create-to-Running time in ms. */
  latencyMs?: Record<string, number[]>;
  /** runningAtS maps an arm to the seconds, from the arm's first create, at which each of its Pods was Running. */
  runningAtS?: Record<string, number[]>;
  /** tenantP99Ms is one p99 per tenant and phase (e.g. `alone`, `during flood`). */
  tenantP99Ms?: Array<{ tenant: string; phase: string; p99Ms: number }>;
}

/** ReportInput is one scenario as the report reads it (a BenchResult with its series). */
export interface ReportInput {
  name: string;
  figures: Record<string, number>;
  series?: BenchSeries;
}

/** PlotKind names what a plot shows; a plot's id is `<kind>:<scenario>`. */
export const PLOT_KINDS = ['latency-cdf', 'throughput', 'tenant-p99'] as const;
/** PlotKind is one of PLOT_KINDS. */
export type PlotKind = (typeof PLOT_KINDS)[number];

/** Plot is one chart of the report: its id, the Vega-Lite spec with the data inlined, and the rendered SVG. */
export interface Plot {
  id: string;
  kind: PlotKind;
  scenario: string;
  spec: TopLevelSpec;
  svg: string;
}

/** Points of a CDF at most (latencies are thinned to this many evenly spaced ranks). */
const CDF_POINTS = 400;

/** cdfPoints turns latencies into (ms, fraction of Pods Running by then) points, ascending, at most CDF_POINTS. */
export function cdfPoints(values: readonly number[]): Array<{ ms: number; fraction: number }> {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  if (!n) return [];
  const step = Math.max(1, Math.ceil(n / CDF_POINTS));
  const out: Array<{ ms: number; fraction: number }> = [];
  for (let i = step - 1; i < n; i += step) out.push({ ms: sorted[i]!, fraction: (i + 1) / n });
  if (out[out.length - 1]!.fraction !== 1) out.push({ ms: sorted[n - 1]!, fraction: 1 });
  return out;
}

/**
 * throughputBins counts the Pods that became Running in each bin of `binS` seconds (as Pods per second), from 0 to the
 * last one; binS defaults to a twentieth of the span, at least 1 s.
 */
export function throughputBins(
  runningAtS: readonly number[],
  binS?: number,
): Array<{ t: number; podsPerSecond: number }> {
  if (!runningAtS.length) return [];
  const end = Math.max(...runningAtS);
  const bin = binS ?? Math.max(1, Math.ceil(end / 20));
  const counts = new Array<number>(Math.floor(end / bin) + 1).fill(0);
  for (const t of runningAtS) counts[Math.floor(Math.max(0, t) / bin)]!++;
  return counts.map((c, i) => ({ t: i * bin, podsPerSecond: c / bin }));
}

const SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';
const SIZE = { width: 520, height: 300 };

/** specsFor is the Vega-Lite spec of every plot one scenario's series allow, keyed by kind. */
export function specsFor(r: ReportInput): Array<{ kind: PlotKind; spec: TopLevelSpec }> {
  const s = r.series ?? {};
  const out: Array<{ kind: PlotKind; spec: TopLevelSpec }> = [];
  const lat = Object.entries(s.latencyMs ?? {}).filter(([, v]) => v.length);
  if (lat.length)
    out.push({
      kind: 'latency-cdf',
      spec: {
        $schema: SCHEMA,
        title: `${r.name}: create-to-Running latency (CDF)`,
        ...SIZE,
        data: { values: lat.flatMap(([arm, v]) => cdfPoints(v).map((p) => ({ arm, ...p }))) },
        mark: { type: 'line', interpolate: 'step-after' },
        encoding: {
          x: { field: 'ms', type: 'quantitative', title: 'create-to-Running (ms)' },
          y: { field: 'fraction', type: 'quantitative', title: 'fraction of Pods', scale: { domain: [0, 1] } },
          color: { field: 'arm', type: 'nominal' },
        },
      },
    });
  const thr = Object.entries(s.runningAtS ?? {}).filter(([, v]) => v.length);
  if (thr.length)
    out.push({
      kind: 'throughput',
      spec: {
        $schema: SCHEMA,
        title: `${r.name}: Pods reaching Running per second`,
        ...SIZE,
        data: { values: thr.flatMap(([arm, v]) => throughputBins(v).map((p) => ({ arm, ...p }))) },
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 't', type: 'quantitative', title: 'seconds since the first create' },
          y: { field: 'podsPerSecond', type: 'quantitative', title: 'Pods/s' },
          color: { field: 'arm', type: 'nominal' },
        },
      },
    });
  if (s.tenantP99Ms?.length)
    out.push({
      kind: 'tenant-p99',
      spec: {
        $schema: SCHEMA,
        title: `${r.name}: p99 create-to-Running per tenant`,
        ...SIZE,
        data: { values: s.tenantP99Ms.map((x) => ({ ...x })) },
        mark: 'bar',
        encoding: {
          x: { field: 'tenant', type: 'nominal' },
          xOffset: { field: 'phase', type: 'nominal' },
          y: { field: 'p99Ms', type: 'quantitative', title: 'p99 (ms)' },
          color: { field: 'phase', type: 'nominal' },
        },
      },
    });
  return out;
}

/** renderSvg renders a Vega-Lite spec to SVG in this process (no browser). */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(compile(structuredClone(spec)).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** buildPlots renders every plot of every scenario. */
export async function buildPlots(results: readonly ReportInput[]): Promise<Plot[]> {
  const plots: Plot[] = [];
  for (const r of results)
    for (const { kind, spec } of specsFor(r))
      plots.push({ id: `${kind}:${r.name}`, kind, scenario: r.name, spec, svg: await renderSvg(spec) });
  return plots;
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const fmt = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(2));

/**
 * buildReport is one self-contained HTML page: per scenario a table of its figures and its plots as inline SVG, each
 * plot in an element whose id is the plot's id.
 */
export async function buildReport(
  results: readonly ReportInput[],
  at = new Date(),
): Promise<{ html: string; plots: Plot[] }> {
  const plots = await buildPlots(results);
  const parts = [
    '<!doctype html><html><head><meta charset="utf-8"><title>virtualcluster-ts bench</title>',
    '<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td{padding:2px 12px;',
    'border-bottom:1px solid #ddd}td.v{text-align:right;font-variant-numeric:tabular-nums}figure{display:inline-block;',
    'margin:1em}</style></head><body>',
    `<h1>virtualcluster-ts bench</h1><p>${escapeHtml(at.toISOString())}</p>`,
  ];
  for (const r of results) {
    parts.push(`<h2 id="${escapeHtml(r.name)}">${escapeHtml(r.name)}</h2><table>`);
    for (const [k, v] of Object.entries(r.figures))
      parts.push(`<tr><td>${escapeHtml(k)}</td><td class="v">${escapeHtml(fmt(v))}</td></tr>`);
    parts.push('</table>');
    for (const p of plots.filter((x) => x.scenario === r.name))
      parts.push(`<figure id="${escapeHtml(p.id)}">${p.svg}</figure>`);
  }
  parts.push('</body></html>\n');
  return { html: parts.join('\n'), plots };
}
