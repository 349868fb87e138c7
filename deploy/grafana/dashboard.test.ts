import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { registry } from '../../core/metrics/registry.ts';
import { metricNameProblems } from '../../core/metrics/naming.ts';
import { registeredMetrics } from '../../test/docs/metricsdoc.ts';

interface Target {
  expr: string;
}
interface Panel {
  type: string;
  title: string;
  targets?: Target[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: Array<{ name: string; query?: string | { query: string } }> };
}

const dashboard = JSON.parse(readFileSync(new URL('./manager-dashboard.json', import.meta.url), 'utf8')) as Dashboard;

/** The series a metric of the registry is scraped as: histograms and summaries add their suffixes. */
async function exportedSeries(): Promise<Set<string>> {
  // The modules the manager process loads register their metrics on the shared registry when imported: load the
  // manager itself (with the process guards its command installs) rather than listing metric names by hand.
  // (registeredMetrics also loads the vn-agent, whose panels the dashboard has too.)
  await registeredMetrics();
  const out = new Set<string>();
  for (const m of await registry.getMetricsAsJSON()) {
    out.add(m.name);
    const type = String(m.type);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(m.name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) out.add(m.name + s);
  }
  return out;
}

const exprs = (): string[] => [
  ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
  ...dashboard.templating.list.flatMap((v) =>
    v.query === undefined ? [] : [typeof v.query === 'string' ? v.query : v.query.query],
  ),
];

/**
 * metricNames are the series an expression reads: the project's vc_* and the standard process_* and nodejs_* (label
 * names and functions never start with those).
 */
const metricNames = (expr: string): string[] =>
  [...expr.matchAll(/\b(vc|process|nodejs)_[a-z0-9_]+\b/g)].map((m) => m[0]);

/** TARGET_LABELS are the labels Prometheus itself gives every scraped series. */
const TARGET_LABELS = ['job', 'instance'];

/**
 * labelProblems names each label an expression reads (in a selector's braces, `by (...)`, `without (...)`,
 * `on (...)`, `ignoring (...)` or `label_values(..., LABEL)`) that none of the series it reads carries: `labels` gives
 * the label names of a series (histogram series have `le` as well), and Prometheus adds job and instance.
 */
export function labelProblems(expr: string, labels: (series: string) => string[] | undefined): string[] {
  const series = metricNames(expr);
  const known = new Set([...TARGET_LABELS, ...series.flatMap((n) => labels(n) ?? [])]);
  const used = [
    ...[...expr.matchAll(/\b(?:vc|process|nodejs)_[a-z0-9_]+\{([^}]*)\}/g)].flatMap((m) =>
      [...m[1]!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map((x) => x[1]!),
    ),
    ...[...expr.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g)].flatMap((m) =>
      m[1]!.split(',').map((x) => x.trim()),
    ),
    ...[...expr.matchAll(/label_values\([^,]+,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)/g)].map((m) => m[1]!),
  ].filter(Boolean);
  return [...new Set(used)].filter((l) => !known.has(l)).map((l) => `${expr}: no series it reads has label ${l}`);
}

/** seriesLabels maps each scraped series of the registry to its label names (`le` on histogram buckets). */
async function seriesLabels(): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const r of await registeredMetrics()) {
    out.set(r.name, r.labels);
    if (r.type === 'histogram') {
      out.set(`${r.name}_bucket`, [...r.labels, 'le']);
      for (const s of ['_sum', '_count']) out.set(r.name + s, r.labels);
    }
    if (r.type === 'summary') {
      out.set(r.name, [...r.labels, 'quantile']);
      for (const s of ['_sum', '_count']) out.set(r.name + s, r.labels);
    }
  }
  return out;
}

describe('labelProblems', () => {
  const labels = (n: string) =>
    ({ vc_a_total: ['tenant', 'op'], vc_h_seconds_bucket: ['tenant', 'le'] })[n] as string[] | undefined;
  it.each([
    ['sum by (tenant, op) (rate(vc_a_total{job=~"$job", tenant=~"$t"}[5m]))', []],
    ['histogram_quantile(0.99, sum by (tenant, le) (rate(vc_h_seconds_bucket[5m])))', []],
    ['label_values(vc_a_total{job=~"$job"}, tenant)', []],
    ['sum by (plugin) (rate(vc_a_total[5m]))', ['plugin']],
    ['sum(rate(vc_a_total{reason="x"}[5m]))', ['reason']],
    ['sum without (le) (vc_a_total)', ['le']],
    ['label_values(vc_a_total, source)', ['source']],
  ])('%s', (expr, missing) => {
    expect(labelProblems(expr, labels)).toEqual(missing.map((l) => `${expr}: no series it reads has label ${l}`));
  });
});

describe('deploy/grafana/manager-dashboard.json', () => {
  // Importing the whole manager transforms most of the code base: seconds on a busy 2-core machine.
  it('uses only series the manager exports', { timeout: 120_000 }, async () => {
    const exported = await exportedSeries();
    const used = new Set(exprs().flatMap(metricNames));
    expect(used.size).toBeGreaterThan(10);
    expect([...used].filter((n) => !exported.has(n))).toEqual([]);
  });

  it('shows queue depth and latency per tenant, writes, errors, patrol, dropped events, plugin errors, yielding', () => {
    const all = exprs().join('\n');
    for (const needed of [
      'sum by (tenant) (vc_syncer_queue_depth',
      'sum by (tenant, le) (rate(vc_syncer_sync_duration_seconds_bucket',
      'vc_syncer_writes_total',
      'vc_syncer_sync_errors_total',
      'vc_syncer_patrol_fixes_total',
      'vc_syncer_events_dropped_total',
      'vc_plugin_errors_total',
      'vc_syncer_create_yielding',
      'vc_gitops_applied_objects_total',
      'vc_gitops_source_errors_total',
      'vc_gitops_reconcile_failures_total',
      'vc_vnagent_requests_total',
      'vc_vnagent_active_streams',
      'vc_vnagent_relayed_bytes_total',
      'process_cpu_seconds_total',
      'nodejs_eventloop_lag_p99_seconds',
    ])
      expect(all).toContain(needed);
  });

  it('groups and filters only by labels the series it reads carry', { timeout: 120_000 }, async () => {
    const labels = await seriesLabels();
    expect(exprs().flatMap((e) => labelProblems(e, (n) => labels.get(n)))).toEqual([]);
  });

  it('gives every panel that draws something a query, and reads the series it names', () => {
    for (const p of dashboard.panels.filter((x) => x.type !== 'row')) {
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets!) expect(metricNames(t.expr).length, `${p.title}: ${t.expr}`).toBeGreaterThan(0);
    }
  });

  it('reads the standard runtime metrics by their standard names, as stock Node.js dashboards do', () => {
    const used = exprs().flatMap(metricNames);
    expect(used.filter((n) => /^vc_(process|nodejs)_/.test(n))).toEqual([]);
  });

  it('finds a series the manager does not export', { timeout: 120_000 }, async () => {
    // The check above must be able to fail: a misspelt name is reported.
    const exported = await exportedSeries();
    expect(exported.has('vc_syncer_writes_total')).toBe(true);
    expect(exported.has('vc_syncer_write_total')).toBe(false);
    expect(exported.has('vc_syncer_sync_duration_seconds_bucket')).toBe(true);
  });
});

describe('the metrics registry', () => {
  it('names every metric by the Prometheus naming rules', { timeout: 120_000 }, async () => {
    const rows = await registeredMetrics();
    expect(rows.length).toBeGreaterThan(30);
    expect(rows.some((r) => r.name === 'process_cpu_seconds_total')).toBe(true);
    expect(rows.some((r) => r.name === 'nodejs_heap_size_used_bytes')).toBe(true);
    expect(rows.flatMap(metricNameProblems)).toEqual([]);
  });

  it('says in its help how many series a metric labelled per tenant has', { timeout: 120_000 }, async () => {
    const perTenant = (await registeredMetrics()).filter((r) => r.labels.includes('tenant'));
    expect(perTenant.length).toBeGreaterThan(10);
    expect(perTenant.filter((r) => !/Bounded: /.test(r.help)).map((r) => r.name)).toEqual([]);
  });
});
