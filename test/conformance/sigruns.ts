/**
 * A full side-by-side run takes hours on the tenant side, so it is made in pieces: `--sig node,storage` runs the
 * `[Conformance]` specs of those SIGs only, and the SIGs a run selected replace the same SIGs of the summary kept
 * from earlier runs (`--summary`, default docs/conformance-results.json); every SIG keeps the date, commit, command
 * and wall time of the run it comes from, and the page is made from the merged summary. Unit-tested in
 * sigruns.test.ts.
 */
import { type RunMeta, type SideBySide, type SigSummary, totalsOf } from './sidebyside.ts';

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

/** readSummary reads a summary written by an earlier run; undefined for none (an empty or missing file). */
export function readSummary(text: string | undefined): SideBySide | undefined {
  if (!text?.trim()) return undefined;
  const v = JSON.parse(text) as Partial<SideBySide>;
  if (!Array.isArray(v.sigs)) throw new Error('the conformance summary has no sigs list');
  return v as SideBySide;
}
