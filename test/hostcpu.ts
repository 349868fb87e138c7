import { cpus, type CpuInfo } from 'node:os';

/** CpuTimes is the host's CPU time since boot in milliseconds, summed over its cores: busy, and busy and idle. */
export interface CpuTimes {
  cores: number;
  busyMs: number;
  totalMs: number;
}

/**
 * cpuTimes adds up the per-core times Node reads from the kernel (`os.cpus()`, /proc/stat on Linux): user, nice, sys
 * and irq are busy, idle is not.
 */
export function cpuTimes(info: ReadonlyArray<Pick<CpuInfo, 'times'>> = cpus()): CpuTimes {
  let busyMs = 0;
  let totalMs = 0;
  for (const { times: t } of info) {
    const busy = t.user + t.nice + t.sys + t.irq;
    busyMs += busy;
    totalMs += busy + t.idle;
  }
  return { cores: info.length, busyMs, totalMs };
}

/**
 * busyShare is the share of the host's CPU time that was busy between two readings (0 to 1), or undefined when no
 * time passed between them or the host's cores changed (nothing to compare).
 */
export function busyShare(before: CpuTimes, after: CpuTimes): number | undefined {
  const total = after.totalMs - before.totalMs;
  if (total <= 0 || before.cores !== after.cores) return undefined;
  return Math.min(1, Math.max(0, (after.busyMs - before.busyMs) / total));
}

/**
 * busyLine says how busy the host's CPUs were over a step, for the closing summary of `npm test`: a test step whose
 * CPUs were busy nearly all the time is bound by CPU (starting fewer processes shortens it); one whose CPUs idled
 * much of the time is bound by waits (more files at once would shorten it). Other work on the host counts too.
 */
export function busyLine(step: string, before: CpuTimes, after: CpuTimes): string | undefined {
  const share = busyShare(before, after);
  if (share === undefined) return undefined;
  return `  ${String(Math.round(share * 100)).padStart(3)} %  ${step} (of ${after.cores} cores)`;
}
