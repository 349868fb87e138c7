/**
 * AdaptiveLimit finds how many requests to keep in flight against a shared server from the latency it answers with,
 * in the manner of TCP Vegas: while the latency stays near the lowest seen, more requests in flight add throughput;
 * once it climbs well above it, the extra requests only wait in the server's queue, where the server serves them in
 * arrival order, not fairly. Kept in our own fair queue instead, they leave the server's queue short for the requests
 * of the tenants that have little to do.
 *
 * Latencies are taken in windows of `samplesPerWindow`; the window's median is compared with the baseline, the lowest
 * window median among the last `baselineWindows`:
 * - above `tolerance` x baseline: the server is queueing; the limit drops by a quarter (at least one), to `min`;
 * - below the middle of 1 and `tolerance` x baseline: it has room; the limit grows by one, to `max`;
 * - in between: the limit stays.
 * The baseline forgets windows older than `baselineWindows`, so a server that has become slower for good (more
 * objects, a bigger etcd) is measured again rather than throttled for ever.
 */
export interface AdaptiveLimitOptions {
  /** the least the limit falls to; at least 1 */
  min: number;
  /** the most it grows to, and where it starts */
  max: number;
  /** the ratio of a window's median to the baseline above which the limit drops; default 2 */
  tolerance?: number;
  /** the samples in one window; default 16 */
  samplesPerWindow?: number;
  /** how many window medians the baseline remembers; default 128 */
  baselineWindows?: number;
}

export class AdaptiveLimit {
  private current: number;
  private readonly min: number;
  private readonly max: number;
  private readonly tolerance: number;
  private readonly perWindow: number;
  private readonly remembered: number;
  private window: number[] = [];
  private readonly medians: number[] = [];
  private next = 0;

  constructor(o: AdaptiveLimitOptions) {
    const whole = (name: string, v: number) => {
      if (!Number.isSafeInteger(v) || v < 1)
        throw new RangeError(`adaptive limit: ${name} must be a positive integer, got ${v}`);
      return v;
    };
    this.min = whole('min', o.min);
    this.max = whole('max', o.max);
    if (this.max < this.min) throw new RangeError(`adaptive limit: max (${o.max}) is below min (${o.min})`);
    this.tolerance = o.tolerance ?? 2;
    if (!(this.tolerance > 1)) throw new RangeError(`adaptive limit: tolerance must be above 1, got ${this.tolerance}`);
    this.perWindow = whole('samplesPerWindow', o.samplesPerWindow ?? 16);
    this.remembered = whole('baselineWindows', o.baselineWindows ?? 128);
    this.current = this.max;
  }

  /** limit is how many requests may be in flight now. */
  get limit(): number {
    return this.current;
  }

  /** baseline is the lowest window median remembered, in the samples' unit; undefined before the first window. */
  get baseline(): number | undefined {
    return this.medians.length ? Math.min(...this.medians) : undefined;
  }

  /** observe takes one latency; it returns true when the window it completes changed the limit. */
  observe(latency: number): boolean {
    if (!Number.isFinite(latency) || latency < 0) return false;
    this.window.push(latency);
    if (this.window.length < this.perWindow) return false;
    const sorted = this.window.sort((a, b) => a - b);
    const median = sorted[sorted.length >> 1]!;
    this.window = [];
    if (this.medians.length < this.remembered) this.medians.push(median);
    else this.medians[this.next] = median;
    this.next = (this.next + 1) % this.remembered;
    const base = Math.max(this.baseline!, Number.EPSILON);
    const before = this.current;
    if (median > this.tolerance * base) this.current = Math.max(this.min, before - Math.max(1, Math.floor(before / 4)));
    else if (median < ((1 + this.tolerance) / 2) * base) this.current = Math.min(this.max, before + 1);
    return this.current !== before;
  }
}
