import { appendFileSync } from 'node:fs';
import { basename } from 'node:path';

/**
 * PROCESS_STATS_ENV names a file where, when it is set, every component start and its time to become ready are
 * appended, one JSON line each (a ProcessStat). `npm test` sets it to count the processes a run starts; processes
 * this one spawns (a `vc up`, a manager) inherit it, so their components are counted too.
 */
export const PROCESS_STATS_ENV = 'VC_PROCESS_STATS_FILE';

/** PROCESS_STATS_LABEL_ENV is a label every ProcessStat line carries when set (the test runner sets the test file). */
export const PROCESS_STATS_LABEL_ENV = 'VC_PROCESS_STATS_LABEL';

/** ProcessStat is one line of the stats file: a component started, or became ready `ms` after its start. */
export interface ProcessStat {
  /** the component's program: etcd, kube-apiserver, kwok */
  component: string;
  event: 'start' | 'ready';
  /** for `ready`: milliseconds from the start to the first successful readiness check */
  ms?: number;
  /** PROCESS_STATS_LABEL_ENV at the time of the event */
  label?: string;
}

/**
 * recordProcessStat appends one ProcessStat for the program at command when PROCESS_STATS_ENV is set, and does
 * nothing otherwise. A line is far shorter than PIPE_BUF, so appends of concurrent processes never interleave. A
 * statistic never fails a start: a write error is dropped.
 */
export function recordProcessStat(command: string, event: ProcessStat['event'], ms?: number): void {
  const file = process.env[PROCESS_STATS_ENV];
  if (!file) return;
  const label = process.env[PROCESS_STATS_LABEL_ENV];
  const line: ProcessStat = {
    component: basename(command),
    event,
    ...(ms !== undefined && { ms }),
    ...(label && { label }),
  };
  try {
    appendFileSync(file, JSON.stringify(line) + '\n');
  } catch {
    /* a statistic, not a result */
  }
}
