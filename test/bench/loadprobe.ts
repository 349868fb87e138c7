import { constants as perfConstants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { schedMs } from './procstat.ts';

/** LoadFigures are what a LoadProbe measured over a phase. */
export interface LoadFigures {
  cpuPercentOfOneCore: number;
  loopDelayP50Ms: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  /** garbage collection on this thread: pauses, the longest, and full (mark-compact) collections */
  gcPauses: number;
  gcMaxPauseMs: number;
  gcTotalMs: number;
  gcMajor: number;
  /**
   * this thread's time on a CPU and time runnable but waiting for one (the kernel's schedstat): a wait near the run
   * time means the host's cores, not the syncer's code, held the loop
   */
  threadRunMs: number;
  threadRunQueueWaitMs: number;
}

/** MAIN_THREAD is this process's main thread, the syncer's, as procstat names threads. */
export const MAIN_THREAD = `${process.pid}/task/${process.pid}`;

/**
 * LoadProbe measures this process's CPU use (user + system, in % of one core) and event-loop delay over a phase: the
 * syncer runs here, so a saturated loop means the syncer itself is the bottleneck.
 */
export class LoadProbe {
  private readonly cpu0 = process.cpuUsage();
  private readonly t0 = performance.now();
  private readonly delay = monitorEventLoopDelay({ resolution: 10 });
  private readonly gc = { pauses: 0, maxMs: 0, totalMs: 0, major: 0 };
  private readonly sched0 = schedMs(MAIN_THREAD);
  private readonly gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      this.gc.pauses++;
      this.gc.maxMs = Math.max(this.gc.maxMs, e.duration);
      this.gc.totalMs += e.duration;
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) this.gc.major++;
    }
  });

  constructor() {
    this.delay.enable();
    this.gcObserver.observe({ entryTypes: ['gc'] });
  }

  stop(): LoadFigures {
    this.delay.disable();
    this.gcObserver.disconnect();
    const c = process.cpuUsage(this.cpu0);
    const [run, wait] = schedMs(MAIN_THREAD);
    const ms = (n: number) => Math.round(n / 1e6);
    return {
      cpuPercentOfOneCore: Math.round(((c.user + c.system) / 1000 / (performance.now() - this.t0)) * 100),
      loopDelayP50Ms: ms(this.delay.percentile(50)),
      loopDelayP99Ms: ms(this.delay.percentile(99)),
      loopDelayMaxMs: ms(this.delay.max),
      gcPauses: this.gc.pauses,
      gcMaxPauseMs: Math.round(this.gc.maxMs),
      gcTotalMs: Math.round(this.gc.totalMs),
      gcMajor: this.gc.major,
      threadRunMs: Math.round(run - this.sched0[0]),
      threadRunQueueWaitMs: Math.round(wait - this.sched0[1]),
    };
  }
}
