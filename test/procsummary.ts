import { existsSync, readFileSync } from 'node:fs';
import type { ProcessStat } from '../core/dev/local/procstats.ts';

/** ComponentStarts is what one program of the stats file added up to. */
export interface ComponentStarts {
  component: string;
  starts: number;
  /** how many starts passed a readiness check, and their summed time to it */
  ready: number;
  readyMs: number;
}

/** LabelStarts is how many component starts one label (a test file) made. */
export interface LabelStarts {
  label: string;
  starts: number;
}

/** ProcessSummary is a stats file added up per component (most starts first) and per label (most starts first). */
export interface ProcessSummary {
  components: ComponentStarts[];
  labels: LabelStarts[];
}

/**
 * summarizeProcessStats adds up ProcessStat lines. A line that is not one (a torn write of a killed process) is
 * skipped: the summary is a statistic, it never fails a run.
 */
export function summarizeProcessStats(lines: readonly string[]): ProcessSummary {
  const byComponent = new Map<string, ComponentStarts>();
  const byLabel = new Map<string, number>();
  for (const line of lines) {
    let s: ProcessStat;
    try {
      s = JSON.parse(line) as ProcessStat;
    } catch {
      continue;
    }
    if (typeof s?.component !== 'string') continue;
    const c = byComponent.get(s.component) ?? { component: s.component, starts: 0, ready: 0, readyMs: 0 };
    byComponent.set(s.component, c);
    if (s.event === 'start') {
      c.starts++;
      const label = s.label ?? '(unlabelled)';
      byLabel.set(label, (byLabel.get(label) ?? 0) + 1);
    } else if (s.event === 'ready' && typeof s.ms === 'number') {
      c.ready++;
      c.readyMs += s.ms;
    }
  }
  const components = [...byComponent.values()].sort(
    (a, b) => b.starts - a.starts || a.component.localeCompare(b.component),
  );
  const labels = [...byLabel].map(([label, starts]) => ({ label, starts }));
  labels.sort((a, b) => b.starts - a.starts || a.label.localeCompare(b.label));
  return { components, labels };
}

/** readProcessSummary summarizes the stats file at path (empty when no process was started). */
export function readProcessSummary(path: string): ProcessSummary {
  if (!existsSync(path)) return { components: [], labels: [] };
  return summarizeProcessStats(readFileSync(path, 'utf8').split('\n').filter(Boolean));
}

/**
 * processSummaryLines renders a summary for the end of a run: one line per component with its starts, mean time to
 * ready and summed time to ready, then the `top` labels with the most starts.
 */
export function processSummaryLines(s: ProcessSummary, top: number): string[] {
  if (s.components.length === 0) return [];
  const total = s.components.reduce((n, c) => n + c.starts, 0);
  const out = [`process starts: ${total}`];
  for (const c of s.components) {
    const ready = c.ready ? `, ready in ${sec(c.readyMs / c.ready)} s mean, ${sec(c.readyMs)} s summed` : '';
    out.push(`  ${String(c.starts).padStart(5)}  ${c.component}${ready}`);
  }
  if (s.labels.length > 0) {
    out.push('test files starting the most processes:');
    for (const l of s.labels.slice(0, top)) out.push(`  ${String(l.starts).padStart(5)}  ${l.label}`);
  }
  return out;
}

function sec(ms: number): string {
  return (ms / 1000).toFixed(1);
}
