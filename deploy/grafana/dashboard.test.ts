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
});
