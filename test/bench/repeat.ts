/**
 * Repetitions of a benchmark's arms, and ratios between arms that say how much they moved. A 2-core host shared with
 * other work gives figures that move by 2x from one run to the next; a ratio of two arms means something only when
 * both ran under the same other load. So the arms run interleaved (a, b, c, a, b, c, ...), each arm records the host's
 * CPU and the demand for CPU of everything outside the run meanwhile (used or waited for), a ratio is taken within one repetition only when its two
 * arms' other load differs by at most a stated bound, and what is reported is the median with the min and the max.
 */

import { hostCpuSeconds, scanProcs, type ThreadSched, treePids, wantedWaitOutside } from './procstat.ts';

/** OTHER_LOAD_BOUND is the most the other load (% of one core) of two arms may differ for their ratio to count. */
export const OTHER_LOAD_BOUND = 25;

/**
 * ArmLoad is what the host did while one arm ran, in % of one core: its busy CPU, and the other load, the demand of
 * what was outside the run (the CPU it used plus the time its threads waited for a CPU, each given when measured).
 */
export interface ArmLoad {
  hostPercent: number;
  otherPercent: number;
  otherCpuPercent?: number;
  otherWaitPercent?: number;
}

/** RepRun is one arm of one repetition: its figures and the load it ran under. */
export interface RepRun<T> {
  rep: number;
  arm: string;
  value: T;
  load: ArmLoad;
}

/** Spread is the median, min and max of some values (NaN each when there are none). */
export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

/** spread summarizes values by their median (the mean of the middle two for an even count), min and max. */
export function spread(values: readonly number[]): Spread {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return { median: NaN, min: NaN, max: NaN, n: 0 };
  const mid = Math.floor(v.length / 2);
  const median = v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
  return { median, min: v[0]!, max: v[v.length - 1]!, n: v.length };
}

/**
 * interleave runs every arm once per repetition, in the given order, for `reps` repetitions, and returns the runs in
 * the order they ran. An arm's `run` gets the repetition's index (0-based) and reports its value and load; `after`,
 * when given, runs after each arm, outside its measurement (to undo what the arm left for the next one).
 */
export async function interleave<T>(
  arms: ReadonlyArray<{ name: string; run: (rep: number) => Promise<{ value: T; load: ArmLoad }> }>,
  reps: number,
  after?: (rep: number, arm: string) => Promise<void>,
): Promise<Array<RepRun<T>>> {
  const out: Array<RepRun<T>> = [];
  for (let rep = 0; rep < reps; rep++)
    for (const a of arms) {
      const r = await a.run(rep);
      out.push({ rep, arm: a.name, value: r.value, load: r.load });
      await after?.(rep, a.name);
    }
  return out;
}

/** RatioSpread is a ratio of two arms over the repetitions: what counted, its spread, and why the rest did not. */
export interface RatioSpread extends Spread {
  /** the ratio of each repetition, null where it was refused */
  perRep: Array<number | null>;
  /** why each refused repetition's ratio was left out */
  refused: string[];
}

/**
 * ratioSpread takes, in each repetition, f(numerator arm) / fDenominator(denominator arm) (f for both unless given),
 * leaving out a repetition whose two arms' other load differs by more than `bound` (% of one core), and summarizes
 * the rest.
 */
export function ratioSpread<T>(
  runs: ReadonlyArray<RepRun<T>>,
  numerator: string,
  denominator: string,
  f: (v: T) => number,
  bound = OTHER_LOAD_BOUND,
  fDenominator: (v: T) => number = f,
): RatioSpread {
  const reps = [...new Set(runs.map((r) => r.rep))].sort((a, b) => a - b);
  const perRep: Array<number | null> = [];
  const refused: string[] = [];
  for (const rep of reps) {
    const num = runs.find((r) => r.rep === rep && r.arm === numerator);
    const den = runs.find((r) => r.rep === rep && r.arm === denominator);
    if (!num || !den) {
      perRep.push(null);
      refused.push(`repetition ${rep + 1}: ${!num ? numerator : denominator} did not run`);
      continue;
    }
    const gap = Math.abs(num.load.otherPercent - den.load.otherPercent);
    if (gap > bound) {
      perRep.push(null);
      refused.push(
        `repetition ${rep + 1}: other load ${Math.round(num.load.otherPercent)}% (${numerator}) vs ` +
          `${Math.round(den.load.otherPercent)}% (${denominator}) of a core differs by more than ${bound}%`,
      );
      continue;
    }
    perRep.push(f(num.value) / fDenominator(den.value));
  }
  return { ...spread(perRep.filter((x): x is number => x !== null)), perRep, refused };
}

/** formatSpread prints a spread as `median (min-max, n of m)`, or why no repetition counted. */
export function formatSpread(name: string, s: RatioSpread, digits = 2): string {
  const m = s.perRep.length;
  if (!s.n) return `${name}: not reported, no repetition counted (${s.refused.join('; ')})`;
  const base = `${name}: ${s.median.toFixed(digits)} (min ${s.min.toFixed(digits)}, max ${s.max.toFixed(digits)}, ${s.n} of ${m} repetitions)`;
  return s.refused.length ? `${base}; left out: ${s.refused.join('; ')}` : base;
}

/** spreadFigures are a ratio's figures for a BenchResult: median, min and max, none when no repetition counted. */
export function spreadFigures(name: string, s: Spread): Record<string, number> {
  if (!s.n) return {};
  return { [name]: s.median, [`${name}Min`]: s.min, [`${name}Max`]: s.max };
}

/**
 * LoadReading is one reading of the clocks an arm's load is taken from: wall time, the host's busy CPU, the run's (this
 * process and every process below it: the clusters, managers and tools a scenario starts), the processes of the run,
 * and each thread's time on a CPU and waiting for one.
 */
export interface LoadReading {
  wallSeconds: number;
  hostCpuSeconds: number;
  runCpuSeconds: number;
  runPids: ReadonlySet<number>;
  /** `<pid>/<tid>` -> its run and run-queue wait so far, every live thread of the host */
  threads: ReadonlyMap<string, ThreadSched>;
}

/** readLoad reads the host's busy CPU, that of this process's tree, and every thread's run and run-queue wait, from /proc. */
export function readLoad(): LoadReading {
  const host = hostCpuSeconds();
  const { procs, threads } = scanProcs(true);
  const runPids = treePids(procs, process.pid);
  let ticks = 0;
  for (const pid of runPids) ticks += procs.get(pid)!.ticks;
  return {
    wallSeconds: performance.now() / 1000,
    hostCpuSeconds: host,
    runCpuSeconds: ticks / 100,
    runPids,
    threads,
  };
}

/**
 * loadBetween is the load between two readings, in % of one core: the host's busy CPU, and the other load, the demand
 * for CPU of everything outside the run: the CPU it used (the host's less the run's, never below 0: the two are read a
 * moment apart) plus the time its threads waited for a CPU they wanted (wantedWaitOutside). The wait is what makes the
 * other load a figure of the others alone: on a saturated host what the others use is the complement of what the run
 * uses, while what a thread that is always runnable uses plus what it waits for is the whole interval, whatever the
 * run does. The run is the later reading's process tree.
 */
export function loadBetween(a: LoadReading, b: LoadReading): ArmLoad {
  const wall = b.wallSeconds - a.wallSeconds;
  if (!(wall > 0)) return { hostPercent: NaN, otherPercent: NaN, otherCpuPercent: NaN, otherWaitPercent: NaN };
  const host = b.hostCpuSeconds - a.hostCpuSeconds;
  const otherCpu = Math.max(0, host - (b.runCpuSeconds - a.runCpuSeconds));
  const otherWait = wantedWaitOutside(a.threads, b.threads, b.runPids, wall);
  const pct = (s: number) => Math.round((s / wall) * 100);
  return {
    hostPercent: pct(host),
    otherPercent: pct(otherCpu + otherWait),
    otherCpuPercent: pct(otherCpu),
    otherWaitPercent: pct(otherWait),
  };
}

/**
 * meanLoad is the load over several timed stretches of one arm, each weighed alike (for an arm that times a few
 * like steps and not what it does between them).
 */
export function meanLoad(loads: readonly ArmLoad[]): ArmLoad {
  const ok = loads.filter((l) => Number.isFinite(l.otherPercent) && Number.isFinite(l.hostPercent));
  if (!ok.length) return { hostPercent: NaN, otherPercent: NaN };
  const mean = (f: (l: ArmLoad) => number) => Math.round(ok.reduce((s, l) => s + f(l), 0) / ok.length);
  const out: ArmLoad = { hostPercent: mean((l) => l.hostPercent), otherPercent: mean((l) => l.otherPercent) };
  if (ok.every((l) => l.otherCpuPercent !== undefined && l.otherWaitPercent !== undefined)) {
    out.otherCpuPercent = mean((l) => l.otherCpuPercent!);
    out.otherWaitPercent = mean((l) => l.otherWaitPercent!);
  }
  return out;
}

/**
 * measured turns a function that runs one arm into an arm of interleave: its value, and the load while it ran, the
 * other load being the host's CPU outside this process's tree. For scenarios whose processes are all below this one.
 */
export function measured<T>(run: (rep: number) => Promise<T>): (rep: number) => Promise<{ value: T; load: ArmLoad }> {
  return async (rep) => {
    const a = readLoad();
    const value = await run(rep);
    return { value, load: loadBetween(a, readLoad()) };
  };
}

/**
 * RatioSpec names a ratio of two arms: numerator and denominator arms, and the figure of an arm's value (f, or for the
 * denominator fDenominator when the two arms report it under different names).
 */
export interface RatioSpec<T> {
  numerator: string;
  denominator: string;
  f: (v: T) => number;
  fDenominator?: (v: T) => number;
}

/**
 * reportRatios takes each named ratio over the repetitions (ratioSpread), adds its median, min and max to `figures`
 * (none when no repetition counted), and adds to `notes` its spread or why it is not reported, and one line with the
 * other load of every arm of every repetition. It returns the spreads, for the scenario's detail.
 */
export function reportRatios<T>(
  runs: ReadonlyArray<RepRun<T>>,
  specs: Record<string, RatioSpec<T>>,
  figures: Record<string, number>,
  notes: string[],
  bound = OTHER_LOAD_BOUND,
): Record<string, RatioSpread> {
  const out: Record<string, RatioSpread> = {};
  for (const [name, r] of Object.entries(specs)) {
    const s = ratioSpread(runs, r.numerator, r.denominator, r.f, bound, r.fDenominator);
    out[name] = s;
    Object.assign(figures, spreadFigures(name, s));
    notes.push(formatSpread(name, s));
  }
  notes.push(otherLoadLine(runs, bound));
  return out;
}

/**
 * otherLoadLine prints the other load and the host's of every arm of every repetition, with the bound its ratios are
 * held to (none for arms that are not set against each other).
 */
export function otherLoadLine(runs: ReadonlyArray<RepRun<unknown>>, bound: number | null = OTHER_LOAD_BOUND): string {
  const parts = (l: ArmLoad) =>
    l.otherCpuPercent === undefined ? '' : `used ${l.otherCpuPercent}%, waited ${l.otherWaitPercent}%; `;
  return (
    `other load (% of a core demanded outside this run: CPU used plus time waiting for one) per arm and repetition` +
    (bound === null ? ': ' : `, bound ${bound}% between the arms of a ratio: `) +
    runs
      .map((x) => `${x.arm} r${x.rep + 1} ${x.load.otherPercent}% (${parts(x.load)}host ${x.load.hostPercent}%)`)
      .join(', ')
  );
}

/** repsOf reads BENCH_REPS, the repetitions of a scenario's interleaved arms (default 3, at least 1). */
export function repsOf(env: Record<string, string | undefined> = process.env, def = 3): number {
  const raw = env.BENCH_REPS;
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_REPS=${raw}: must be a whole number >= 1`);
  return n;
}

/**
 * figureSpreads adds to `figures` the median, min and max over the repetitions of every figure an arm's runs report
 * (`figuresOf` reads them from a run's value), under the figure's own name; a name two arms report is taken over both.
 */
export function figureSpreads<T>(
  runs: ReadonlyArray<RepRun<T>>,
  figuresOf: (v: T) => Record<string, number>,
  figures: Record<string, number>,
): void {
  const byName = new Map<string, number[]>();
  for (const r of runs)
    for (const [k, v] of Object.entries(figuresOf(r.value))) byName.set(k, [...(byName.get(k) ?? []), v]);
  for (const [k, vs] of byName) Object.assign(figures, spreadFigures(k, spread(vs)));
}

/** ArmFigures is what one arm of one repetition measured: flat figures (seconds, counts, MiB) and its detail. */
export interface ArmFigures {
  figures: Record<string, number>;
  detail: Record<string, unknown>;
}

/**
 * repeatFigures runs arms that report figures of their own (no ratio of one arm to another) interleaved over `reps`
 * repetitions, each timed with its load (`measured`), and returns every figure's median, min and max over the
 * repetitions (`figureSpreads`: a figure named by two arms is taken over both), the line with every arm's other load,
 * and the runs for the scenario's detail. `after` runs after each arm, outside its measurement.
 */
export async function repeatFigures(
  arms: ReadonlyArray<{ name: string; run: (rep: number) => Promise<ArmFigures> }>,
  reps: number,
  after?: (rep: number, arm: string) => Promise<void>,
): Promise<{ figures: Record<string, number>; notes: string[]; runs: Array<RepRun<ArmFigures>> }> {
  const runs = await interleave(
    arms.map((a) => ({ name: a.name, run: measured(a.run) })),
    reps,
    after,
  );
  return { ...repeatedFigures(runs), runs };
}

/** repeatedFigures is repeatFigures' summary of finished runs: the spreads of their figures and the other-load line. */
export function repeatedFigures(runs: ReadonlyArray<RepRun<ArmFigures>>): {
  figures: Record<string, number>;
  notes: string[];
} {
  const figures: Record<string, number> = {};
  figureSpreads(runs, (v) => v.figures, figures);
  return {
    figures,
    notes: [repetitionsLine(reps(runs)), otherLoadLine(runs, null)],
  };
}

/** repetitionsLine says over how many repetitions the figures are taken. */
export function repetitionsLine(n: number): string {
  return n === 1
    ? '1 repetition: each figure is its one value'
    : `${n} repetitions, each figure their median (min, max)`;
}

/** reps counts the repetitions among some runs. */
function reps(runs: ReadonlyArray<RepRun<unknown>>): number {
  return new Set(runs.map((r) => r.rep)).size;
}
