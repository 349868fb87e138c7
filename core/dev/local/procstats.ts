import { appendFileSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';

/**
 * PROCESS_STATS_ENV names a file where, when it is set, every component start, its time to become ready and the CPU
 * time it used until it was stopped are appended, one JSON line each (a ProcessStat). `npm test` sets it to count the
 * processes a run starts and what they cost; processes this one spawns (a `vc up`, a manager) inherit it, so their
 * components are counted too.
 */
export const PROCESS_STATS_ENV = 'VC_PROCESS_STATS_FILE';

/** PROCESS_STATS_LABEL_ENV is a label every ProcessStat line carries when set (the test runner sets the test file). */
export const PROCESS_STATS_LABEL_ENV = 'VC_PROCESS_STATS_LABEL';

/** ProcessStat is one line of the stats file. */
export interface ProcessStat {
  /** the component's program: etcd, kube-apiserver, kwok; for a `file` line, `test file` */
  component: string;
  /**
   * start: the component was spawned; ready: it passed its first readiness check `ms` after its start; stop: it was
   * stopped or killed after using `cpu` seconds; file: a test file ended after its worker used `cpu` seconds
   */
  event: 'start' | 'ready' | 'stop' | 'file';
  /** for `ready`: milliseconds from the start to the first successful readiness check */
  ms?: number;
  /**
   * for `stop` and `file`: user and system CPU seconds of the process and of the children it reaped (a component
   * from its start until the signal that stopped it; a test file's worker from its setup to its last hook)
   */
  cpu?: number;
  /** PROCESS_STATS_LABEL_ENV at the time of the event */
  label?: string;
}

/** processStatsOn says whether PROCESS_STATS_ENV is set, so that a caller can skip measuring what nobody records. */
export function processStatsOn(): boolean {
  return !!process.env[PROCESS_STATS_ENV];
}

/**
 * recordProcessStat appends one ProcessStat for the program at command when PROCESS_STATS_ENV is set, and does
 * nothing otherwise. A line is far shorter than PIPE_BUF, so appends of concurrent processes never interleave. A
 * statistic never fails a start: a write error is dropped.
 */
export function recordProcessStat(
  command: string,
  event: ProcessStat['event'],
  figures: { ms?: number; cpu?: number } = {},
): void {
  const file = process.env[PROCESS_STATS_ENV];
  if (!file) return;
  const label = process.env[PROCESS_STATS_LABEL_ENV];
  const line: ProcessStat = {
    component: basename(command),
    event,
    ...(figures.ms !== undefined && { ms: figures.ms }),
    ...(figures.cpu !== undefined && { cpu: Math.round(figures.cpu * 100) / 100 }),
    ...(label && { label }),
  };
  try {
    appendFileSync(file, JSON.stringify(line) + '\n');
  } catch {
    /* a statistic, not a result */
  }
}

/** USER_HZ is the clock tick of /proc/<pid>/stat's times (100 on every Linux this runs on). */
const USER_HZ = 100;

/**
 * cpuSeconds is the user and system CPU time of a process (`self`: this one) and of the children it has reaped,
 * from /proc/<pid>/stat; undefined when it cannot be read (the process is gone, or this is not Linux).
 */
export function cpuSeconds(pid: number | 'self'): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis, from field 3.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime, stime, cutime, cstime are fields 14 to 17
    const ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    return Number.isFinite(ticks) ? ticks / USER_HZ : undefined;
  } catch {
    return undefined;
  }
}
