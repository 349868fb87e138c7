import { describe, expect, it } from 'vitest';
import { metricNameProblems } from './naming.ts';

describe('metricNameProblems', () => {
  const cases: Array<[string, string, string[], string | undefined]> = [
    // [name, type, labels, expected problem (a fragment) or undefined when the name is fine]
    ['vc_syncer_writes_total', 'counter', ['tenant'], undefined],
    ['vc_syncer_sync_duration_seconds', 'histogram', ['tenant'], undefined],
    ['vc_syncer_queue_depth', 'gauge', ['tenant'], undefined],
    ['process_cpu_seconds_total', 'counter', [], undefined],
    ['nodejs_active_handles_total', 'gauge', [], undefined],
    ['nodejs_gc_duration_seconds', 'histogram', ['kind'], undefined],
    ['vc_process_cpu_seconds_total', 'counter', [], 'stock dashboards read process_cpu_seconds_total'],
    ['syncer_writes_total', 'counter', [], 'start with vc_'],
    ['vc_syncer_writes', 'counter', [], "a counter's name ends with _total"],
    ['vc_queue_depth_total', 'gauge', [], 'only a counter'],
    ['vc_sync_duration_ms', 'histogram', [], 'base units'],
    ['vc_sync_duration', 'histogram', [], 'ends with its unit'],
    ['vc_syncerWrites_total', 'counter', [], 'snake_case'],
    ['vc_x_total', 'counter', ['superCluster'], 'label superCluster is not snake_case'],
    ['vc_x_total', 'counter', ['__name'], 'reserved'],
  ];
  it.each(cases)('%s (%s %j)', (name, type, labels, problem) => {
    const found = metricNameProblems({ name, type, labels });
    if (problem === undefined) expect(found).toEqual([]);
    else expect(found.join('\n')).toContain(problem);
  });
});
