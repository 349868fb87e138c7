/**
 * A full side-by-side run takes hours on the tenant side, so it is made in pieces: `--sig node,storage` runs the
 * `[Conformance]` specs of those SIGs only, and the SIGs a run selected replace the same SIGs of the summary kept
 * from earlier runs (`--summary`, default docs/conformance-results.json); every SIG keeps the date, commit, command
 * and wall time of the run it comes from, and the page is made from the merged summary. Unit-tested in
 * sigruns.test.ts.
 */
import {
  count,
  emptySig,
  type RunMeta,
  type SideBySide,
  type SigSummary,
  type SpecResult,
  totalsOf,
} from './sidebyside.ts';

/** The SIGs of the upstream `[Conformance]` specs (v1.36.3); `--sig` takes these names. */
export const CONFORMANCE_SIGS = [
  'api-machinery',
  'apps',
  'architecture',
  'auth',
  'cli',
  'instrumentation',
  'network',
  'node',
  'scheduling',
  'storage',
] as const;

/**
 * parseSigs reads `--sig`: SIG names separated by commas, each one of CONFORMANCE_SIGS (a typo would select nothing
 * and look like a clean run), sorted, without repeats.
 */
export function parseSigs(arg: string): string[] {
  const names = [
    ...new Set(
      arg
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    ),
  ].sort();
  if (!names.length) throw new Error('--sig: name at least one SIG');
  const unknown = names.filter((n) => !(CONFORMANCE_SIGS as readonly string[]).includes(n));
  if (unknown.length)
    throw new Error(`--sig: unknown SIG ${unknown.join(', ')} (one of ${CONFORMANCE_SIGS.join(', ')})`);
  return names;
}

/**
 * mergeRuns puts the SIGs of a new run, each stamped with `run`, in place of the same SIGs of an earlier summary
 * (whatever run those came from), keeps the earlier summary's other SIGs as they were, and sums the result again.
 * The merged summary has no focus of its own: each SIG names its run's.
 */
export function mergeRuns(earlier: SideBySide | undefined, next: SideBySide, run: RunMeta): SideBySide {
  const bySig = new Map<string, SigSummary>();
  for (const g of earlier?.sigs ?? []) bySig.set(g.sig, g);
  for (const g of next.sigs) bySig.set(g.sig, { ...g, run });
  const sigs = [...bySig.values()].sort((a, b) => a.sig.localeCompare(b.sig));
  return { sigs, totals: totalsOf(sigs) };
}

/** selectedBy tells whether a run (by its focus and skip) selected a spec; a SIG without a run selected none. */
function selectedBy(run: RunMeta | undefined, text: string): boolean {
  return !!run && new RegExp(run.focus).test(text) && !(run.skip && new RegExp(run.skip).test(text));
}

/**
 * mergeRecheck puts the results of a focused run (`--focus` without `--sig` or `--all`: some specs, not whole SIGs)
 * in place of the same specs' results in the summary, keeping every other spec of their SIGs and the run those came
 * from; each SIG it touched records the run and what its specs came to (`rechecks`), a later recheck of a spec
 * replacing an earlier one. A spec the summary lists (gap, environment, tenant only) is taken out of its list and
 * counts first; one it does not list passed on both sides in its SIG's run if that run selected it (or was skipped
 * there: a summary counts skipped specs without naming them, and this takes such a spec as passed), and is new to
 * the SIG if that run did not select it. A SIG the summary lacks is added with the focused run as its run. The
 * time per spec stays that of the SIG's run. Unit-tested in sigruns.test.ts.
 */
export function mergeRecheck(
  earlier: SideBySide | undefined,
  results: readonly SpecResult[],
  run: RunMeta,
): SideBySide {
  const bySig = new Map<string, SigSummary>();
  for (const g of earlier?.sigs ?? []) bySig.set(g.sig, g);
  const touched = new Map<string, SigSummary>();
  for (const r of results) {
    let g = touched.get(r.sig);
    if (!g) {
      const was = bySig.get(r.sig);
      g = was
        ? {
            ...was,
            gaps: [...was.gaps],
            environment: [...was.environment],
            tenantOnly: [...was.tenantOnly],
            rechecks: [...(was.rechecks ?? [])],
          }
        : { ...emptySig(r.sig), run };
      touched.set(r.sig, g);
    }
    if (g.run === run) {
      count(g, r);
      continue;
    }
    const listed = [...g.gaps, ...g.environment, ...g.tenantOnly].find((x) => x.text === r.text);
    if (listed) count(g, listed, -1);
    else if (selectedBy(g.run, r.text))
      count(g, { text: r.text, sig: r.sig, tenant: 'passed', super: 'passed', outcome: 'passed' }, -1);
    count(g, r);
    g.rechecks = g
      .rechecks!.map((c) => ({ ...c, specs: c.specs.filter((x) => x.text !== r.text) }))
      .filter((c) => c.specs.length);
    const mine = g.rechecks.find((c) => c.run === run);
    if (mine) mine.specs.push(r);
    else g.rechecks.push({ run, specs: [r] });
  }
  for (const [sig, g] of touched) bySig.set(sig, g);
  const sigs = [...bySig.values()].sort((a, b) => a.sig.localeCompare(b.sig));
  return { sigs, totals: totalsOf(sigs) };
}

/** readSummary reads a summary written by an earlier run; undefined for none (an empty or missing file). */
export function readSummary(text: string | undefined): SideBySide | undefined {
  if (!text?.trim()) return undefined;
  const v = JSON.parse(text) as Partial<SideBySide>;
  if (!Array.isArray(v.sigs)) throw new Error('the conformance summary has no sigs list');
  return v as SideBySide;
}
