import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import type { ProcessStat } from '../core/dev/local/procstats.ts';

/** ComponentStarts is what one program of the stats file added up to. */
export interface ComponentStarts {
  component: string;
  starts: number;
  /** how many starts passed a readiness check, and their summed time to it */
  ready: number;
  readyMs: number;
  /** how many were stopped with their CPU time recorded, and that time summed, in seconds */
  stopped: number;
  cpu: number;
}

/** LabelStarts is what one label (a test file) started and used. */
export interface LabelStarts {
  label: string;
  starts: number;
  /** the CPU seconds of the file's worker and what it reaped, when the file recorded it (a `file` line) */
  cpu?: number;
  /** per component: its starts and the CPU seconds of those stopped, most CPU first */
  components: Array<{ component: string; starts: number; cpu: number }>;
}

/** ProcessSummary is a stats file added up per component (most starts first) and per label (most starts first). */
export interface ProcessSummary {
  components: ComponentStarts[];
  labels: LabelStarts[];
}

/** UNLABELLED is the label of lines written without PROCESS_STATS_LABEL_ENV (outside a test file of a labelled project). */
export const UNLABELLED = '(unlabelled)';

/**
 * summarizeProcessStats adds up ProcessStat lines. A line that is not one (a torn write of a killed process) is
 * skipped: the summary is a statistic, it never fails a run.
 */
export function summarizeProcessStats(lines: readonly string[]): ProcessSummary {
  const byComponent = new Map<string, ComponentStarts>();
  type Label = { starts: number; cpu?: number; parts: Map<string, { starts: number; cpu: number }> };
  const byLabel = new Map<string, Label>();
  for (const line of lines) {
    let s: ProcessStat;
    try {
      s = JSON.parse(line) as ProcessStat;
    } catch {
      continue;
    }
    if (typeof s?.component !== 'string') continue;
    const label = s.label ?? UNLABELLED;
    const l: Label = byLabel.get(label) ?? { starts: 0, parts: new Map() };
    if (s.event === 'file') {
      if (typeof s.cpu === 'number') byLabel.set(label, { ...l, cpu: (l.cpu ?? 0) + s.cpu });
      continue;
    }
    const c = byComponent.get(s.component) ?? {
      component: s.component,
      starts: 0,
      ready: 0,
      readyMs: 0,
      stopped: 0,
      cpu: 0,
    };
    byComponent.set(s.component, c);
    const part = l.parts.get(s.component) ?? { starts: 0, cpu: 0 };
    if (s.event === 'start') {
      c.starts++;
      l.starts++;
      part.starts++;
    } else if (s.event === 'ready' && typeof s.ms === 'number') {
      c.ready++;
      c.readyMs += s.ms;
    } else if (s.event === 'stop' && typeof s.cpu === 'number') {
      c.stopped++;
      c.cpu += s.cpu;
      part.cpu += s.cpu;
    } else continue;
    l.parts.set(s.component, part);
    byLabel.set(label, l);
  }
  const components = [...byComponent.values()].sort(
    (a, b) => b.starts - a.starts || a.component.localeCompare(b.component),
  );
  const labels: LabelStarts[] = [...byLabel].map(([label, l]) => ({
    label,
    starts: l.starts,
    ...(l.cpu !== undefined && { cpu: l.cpu }),
    components: [...l.parts]
      .map(([component, p]) => ({ component, ...p }))
      .sort((a, b) => b.cpu - a.cpu || b.starts - a.starts || a.component.localeCompare(b.component)),
  }));
  labels.sort((a, b) => b.starts - a.starts || a.label.localeCompare(b.label));
  return { components, labels };
}

/**
 * readProcessSummary summarizes the stats file at path (empty when no process was started), from byte `from` on: a
 * run that appends to a file an earlier run wrote counts its own lines only.
 */
export function readProcessSummary(path: string, from = 0): ProcessSummary {
  if (!existsSync(path)) return { components: [], labels: [] };
  const size = statSync(path).size;
  const buf = Buffer.alloc(Math.max(0, size - from));
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buf, 0, buf.length, from);
  } finally {
    closeSync(fd);
  }
  return summarizeProcessStats(buf.toString('utf8').split('\n').filter(Boolean));
}

/**
 * processSummaryLines renders a summary for the end of a run: one line per component with its starts, mean time to
 * ready, summed time to ready and the CPU time of those stopped; then the `top` labels with the most starts; then the
 * `top` labels that used the most CPU, each with its most costly components.
 */
export function processSummaryLines(s: ProcessSummary, top: number): string[] {
  if (s.components.length === 0 && s.labels.length === 0) return [];
  const total = s.components.reduce((n, c) => n + c.starts, 0);
  const out = [`process starts: ${total}`];
  for (const c of s.components) {
    const ready = c.ready ? `, ready in ${sec(c.readyMs / c.ready)} s mean, ${sec(c.readyMs)} s summed` : '';
    const cpu = c.stopped ? `, ${c.cpu.toFixed(1)} CPU-s over ${c.stopped} stopped` : '';
    out.push(`  ${String(c.starts).padStart(5)}  ${c.component}${ready}${cpu}`);
  }
  const starting = s.labels.filter((l) => l.starts > 0);
  if (starting.length > 0) {
    out.push('test files starting the most processes:');
    for (const l of starting.slice(0, top)) out.push(`  ${String(l.starts).padStart(5)}  ${l.label}`);
  }
  const costly = s.labels.filter((l) => l.cpu !== undefined).sort((a, b) => b.cpu! - a.cpu!);
  if (costly.length > 0) {
    out.push('test files using the most CPU (CPU-s of the file with all it reaped; of its components, with starts):');
    for (const l of costly.slice(0, top)) {
      const parts = l.components
        .filter((p) => p.cpu > 0)
        .slice(0, 4)
        .map((p) => `${p.component} ${p.cpu.toFixed(1)} (${p.starts})`);
      out.push(`  ${l.cpu!.toFixed(1).padStart(7)}  ${l.label}${parts.length ? `: ${parts.join(', ')}` : ''}`);
    }
  }
  return out;
}

function sec(ms: number): string {
  return (ms / 1000).toFixed(1);
}
