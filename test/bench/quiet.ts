import { hostCpuSeconds } from './procstat.ts';

/** QuietGate is how quiet the host must be before a scenario starts, and how long to wait for it. */
export interface QuietGate {
  /** the most the host may be busy over one window, in % of one core, for the run to start */
  maxBusyPercent: number;
  /** how long to wait for such a window before giving up, in seconds */
  waitSeconds: number;
  /** the length of one window, in seconds */
  windowSeconds: number;
}

/**
 * quietGateOf reads BENCH_QUIET_WAIT_S (seconds to wait for a quiet host; unset or 0: start at once, as before) and
 * BENCH_QUIET_MAX (the host's busy CPU allowed, % of one core, default 50) into a gate, or undefined for none.
 */
export function quietGateOf(env: Record<string, string | undefined> = process.env): QuietGate | undefined {
  const waitSeconds = Number(env.BENCH_QUIET_WAIT_S ?? 0);
  const maxBusyPercent = Number(env.BENCH_QUIET_MAX ?? 50);
  if (!Number.isFinite(waitSeconds) || waitSeconds < 0)
    throw new Error(`BENCH_QUIET_WAIT_S=${env.BENCH_QUIET_WAIT_S}: must be a number of seconds >= 0`);
  if (!Number.isFinite(maxBusyPercent) || maxBusyPercent <= 0)
    throw new Error(`BENCH_QUIET_MAX=${env.BENCH_QUIET_MAX}: must be a percentage of one core > 0`);
  return waitSeconds > 0 ? { maxBusyPercent, waitSeconds, windowSeconds: 10 } : undefined;
}

/**
 * quietVerdict decides after each window: `start` when the last window was under the bound, `wait` while time is left
 * for another window, `give up` otherwise (with the windows measured, for the message).
 */
export function quietVerdict(busy: readonly number[], gate: QuietGate): 'start' | 'wait' | 'give up' {
  const last = busy.at(-1);
  if (last !== undefined && last <= gate.maxBusyPercent) return 'start';
  return (busy.length + 1) * gate.windowSeconds <= gate.waitSeconds ? 'wait' : 'give up';
}

/**
 * waitForQuiet measures the host's busy CPU (all of it is other work: nothing of the run has started) over windows
 * until one is under the gate's bound, and throws with what it measured when none is within the wait. It returns the
 * windows, for the run's detail.
 */
export async function waitForQuiet(gate: QuietGate, log: (msg: string) => void): Promise<number[]> {
  const busy: number[] = [];
  for (;;) {
    const [c0, t0] = [hostCpuSeconds(), performance.now()];
    await new Promise((r) => setTimeout(r, gate.windowSeconds * 1000));
    busy.push(Math.round(((hostCpuSeconds() - c0) / ((performance.now() - t0) / 1000)) * 100));
    const v = quietVerdict(busy, gate);
    log(`host busy ${busy.at(-1)}% of one core over ${gate.windowSeconds} s (start at <= ${gate.maxBusyPercent}%)`);
    if (v === 'start') return busy;
    if (v === 'give up')
      throw new Error(
        `the host was not quiet within ${gate.waitSeconds} s: busy ${busy.join(', ')}% of one core per ` +
          `${gate.windowSeconds} s window, bound ${gate.maxBusyPercent}% (BENCH_QUIET_MAX); not started`,
      );
  }
}
