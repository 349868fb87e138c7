import { describe, expect, it } from 'vitest';
import { buildReport, cdfPoints, throughputBins, type ReportInput } from './report.ts';

const fixture: ReportInput[] = [
  {
    name: 'syncer',
    figures: { throughputRatio: 0.5, syncerP99Ms: 800 },
    series: {
      latencyMs: { direct: [400, 100, 300, 200], syncer: [200, 800, 600, 400] },
      runningAtS: { direct: [0.5, 0.7, 1.2, 3.9], syncer: [1.5, 2.5, 2.6, 2.7] },
      tenantP99Ms: [
        { tenant: 'quiet', phase: 'alone', p99Ms: 120 },
        { tenant: 'quiet', phase: 'during flood', p99Ms: 150 },
      ],
    },
  },
  { name: 'controlplane', figures: { superReadySeconds: 4.25 } },
];

type Row = Record<string, unknown>;
const valuesOf = (spec: unknown): Row[] => (spec as { data: { values: Row[] } }).data.values;

describe('report', () => {
  it('cdfPoints gives each latency the fraction of Pods Running by then', () => {
    expect(cdfPoints([400, 100, 300, 200])).toEqual([
      { ms: 100, fraction: 0.25 },
      { ms: 200, fraction: 0.5 },
      { ms: 300, fraction: 0.75 },
      { ms: 400, fraction: 1 },
    ]);
    expect(cdfPoints([])).toEqual([]);
    const many = cdfPoints(Array.from({ length: 1001 }, (_, i) => i));
    expect(many.length).toBeLessThanOrEqual(402);
    expect(many.at(-1)).toEqual({ ms: 1000, fraction: 1 });
  });

  it('throughputBins counts Pods Running per bin as Pods per second', () => {
    expect(throughputBins([0.5, 0.7, 1.2, 3.9], 1)).toEqual([
      { t: 0, podsPerSecond: 2 },
      { t: 1, podsPerSecond: 1 },
      { t: 2, podsPerSecond: 0 },
      { t: 3, podsPerSecond: 1 },
    ]);
    expect(throughputBins([1, 3], 2)).toEqual([
      { t: 0, podsPerSecond: 0.5 },
      { t: 2, podsPerSecond: 0.5 },
    ]);
  });

  it('builds the named plots from the numbers given, rendered to SVG, and a page with every figure', async () => {
    const { html, plots } = await buildReport(fixture, new Date('2026-01-02T03:04:05Z'));
    expect(plots.map((p) => p.id)).toEqual(['latency-cdf:syncer', 'throughput:syncer', 'tenant-p99:syncer']);

    const cdf = valuesOf(plots[0]!.spec);
    expect(cdf.filter((r) => r.arm === 'direct').map((r) => [r.ms, r.fraction])).toEqual([
      [100, 0.25],
      [200, 0.5],
      [300, 0.75],
      [400, 1],
    ]);
    expect(cdf.filter((r) => r.arm === 'syncer').map((r) => r.ms)).toEqual([200, 400, 600, 800]);

    const thr = valuesOf(plots[1]!.spec);
    expect(thr.filter((r) => r.arm === 'syncer').map((r) => [r.t, r.podsPerSecond])).toEqual([
      [0, 0],
      [1, 1],
      [2, 3],
    ]);
    expect(valuesOf(plots[2]!.spec)).toEqual(fixture[0]!.series!.tenantP99Ms);

    for (const p of plots) {
      expect(p.svg.startsWith('<svg')).toBe(true);
      // Vega draws the title and the legend's entries from the data: the arms and phases given must be on the plot.
      expect(p.svg).toContain('syncer: ');
    }
    expect(plots[0]!.svg).toContain('>direct<');
    expect(plots[2]!.svg).toContain('>during flood<');

    for (const p of plots) expect(html).toContain(`<figure id="${p.id}"><svg`);
    expect(html).toContain('<td>throughputRatio</td><td class="v">0.50</td>');
    expect(html).toContain('<td>superReadySeconds</td><td class="v">4.25</td>');
    expect(html).toContain('2026-01-02T03:04:05.000Z');
  });
});
