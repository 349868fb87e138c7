/**
 * Repetitions of a benchmark's arms, and ratios between arms that say how much they moved. A 2-core host shared with
 * other work gives figures that move by 2x from one run to the next; a ratio of two arms means something only when
 * both ran under the same other load. So the arms run interleaved (a, b, c, a, b, c, ...), each arm records the host's
 * CPU and the CPU of everything outside the run meanwhile, a ratio is taken within one repetition only when its two
 * arms' other load differs by at most a stated bound, and what is reported is the median with the min and the max.
 */

/** OTHER_LOAD_BOUND is the most the other load (% of one core) of two arms may differ for their ratio to count. */
export const OTHER_LOAD_BOUND = 25;

/** ArmLoad is what the host did while one arm ran, in % of one core: all of it, and what was outside the run. */
export interface ArmLoad {
  hostPercent: number;
  otherPercent: number;
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
 * the order they ran. An arm's `run` gets the repetition's index (0-based) and reports its value and load.
 */
export async function interleave<T>(
  arms: ReadonlyArray<{ name: string; run: (rep: number) => Promise<{ value: T; load: ArmLoad }> }>,
  reps: number,
): Promise<Array<RepRun<T>>> {
  const out: Array<RepRun<T>> = [];
  for (let rep = 0; rep < reps; rep++)
    for (const a of arms) {
      const r = await a.run(rep);
      out.push({ rep, arm: a.name, value: r.value, load: r.load });
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
 * ratioSpread takes, in each repetition, f(numerator arm) / f(denominator arm), leaving out a repetition whose two
 * arms' other load differs by more than `bound` (% of one core), and summarizes the rest.
 */
export function ratioSpread<T>(
  runs: ReadonlyArray<RepRun<T>>,
  numerator: string,
  denominator: string,
  f: (v: T) => number,
  bound = OTHER_LOAD_BOUND,
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
    perRep.push(f(num.value) / f(den.value));
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
