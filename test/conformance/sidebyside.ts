/**
 * The pure parts of `npm run conformance -- --all`: which specs a run selects, the tenant's results set beside the
 * super cluster's (the same specs run against the super cluster the tenant runs on), every spec classified, a JSON
 * summary per SIG and the dated docs page made from it. Unit-tested from tables in sidebyside.test.ts.
 */
import type { SpecState, TestCase } from './report.ts';
import type { StepTime } from './timeline.ts';

/** ALL_FOCUS selects every `[Conformance]` spec of every SIG. */
export const ALL_FOCUS = String.raw`\[Conformance\]`;
/** SERIAL_SKIP leaves out the specs that need the whole cluster to themselves, unless a run asks for them. */
export const SERIAL_SKIP = String.raw`\[Serial\]|\[Disruptive\]`;

/** sigFocus is the Ginkgo focus of the `[Conformance]` specs of the given SIGs (sigruns.ts parseSigs' names). */
export const sigFocus = (sigs: readonly string[]): string => String.raw`\[sig-(${sigs.join('|')})\].*\[Conformance\]`;

/**
 * selection is the focus and skip of a run: `--all` selects every conformance spec, `--sig` those of some SIGs (else
 * `focus`), leaving out `[Serial]` and `[Disruptive]` ones unless `serial`; a skip of the user's own is added to that.
 */
export function selection(o: {
  all?: boolean;
  sigs?: readonly string[];
  serial?: boolean;
  focus: string;
  skip?: string;
}): {
  focus: string;
  skip?: string;
} {
  const whole = o.all || !!o.sigs?.length;
  const focus = o.sigs?.length ? sigFocus(o.sigs) : o.all ? ALL_FOCUS : o.focus;
  const skips = [...(whole && !o.serial ? [SERIAL_SKIP] : []), ...(o.skip ? [o.skip] : [])];
  return skips.length ? { focus, skip: skips.join('|') } : { focus };
}

/** sigOf is the SIG a spec belongs to, from its text (`[sig-apps] ...`), or `other`. */
export const sigOf = (text: string): string => /\[sig-([a-z0-9-]+)\]/.exec(text)?.[1] ?? 'other';

/**
 * Outcome is how one spec compares: both passed; a fidelity gap (passed on super, failed on the tenant); an
 * environment limit (failed on both: this machine, not the tenant); tenant only (passed on the tenant, failed on
 * super: to investigate); skipped (at run time on either side, or not reached on one).
 */
export const OUTCOMES = ['passed', 'gap', 'environment', 'tenantOnly', 'skipped'] as const;
/** Outcome is one of OUTCOMES. */
export type Outcome = (typeof OUTCOMES)[number];

/** DesignLimit is a spec the tenant cannot pass by design, and why (written down in docs/conformance.md). */
export interface DesignLimit {
  spec: RegExp;
  reason: string;
}

/**
 * DESIGN_LIMITS are the conformance specs a tenant fails on purpose. A gap whose spec matches one is reported with
 * its reason; every other gap is a fidelity gap to fix.
 */
export const DESIGN_LIMITS: readonly DesignLimit[] = [
  {
    spec: /Daemon set .*should run and stop complex daemon/,
    reason:
      'labels a vNode and selects on the label: tenants do not label super nodes (the original VirtualCluster and ' +
      'vcluster without node syncing fail it too)',
  },
];

/** SpecResult is one selected spec with both sides' states. */
export interface SpecResult {
  text: string;
  sig: string;
  tenant?: SpecState;
  super?: SpecState;
  outcome: Outcome;
  /** the tenant's failure message (gaps, environment), else the super's (tenant only) */
  message?: string;
  /** the design limit's reason, for a gap that is one */
  designLimit?: string;
}

/** SpecTime is how long one spec took on each side (Ginkgo's JUnit time, seconds). */
export interface SpecTime {
  text: string;
  tenant: number;
  super: number;
}

/**
 * SigTiming is where a SIG's time went: the summed time of the specs that passed on both sides (so both sums cover
 * the same work) and the SLOWEST_KEPT of them the tenant took longest beyond the super cluster.
 */
export interface SigTiming {
  /** specs that passed on both sides */
  specs: number;
  tenantSeconds: number;
  superSeconds: number;
  slowest: SpecTime[];
  /** the steps of those specs the tenant spends most beyond super (timeline.ts), when the run kept timelines */
  steps?: StepTime[];
}

/** SLOWEST_KEPT is how many of a SIG's specs its timing names, by the time the tenant took beyond super. */
export const SLOWEST_KEPT = 5;

/** RunMeta says which run a SIG's results come from: a full run is made in pieces, one or more SIGs at a time. */
export interface RunMeta {
  /** UTC date of the run, YYYY-MM-DD */
  date: string;
  commit: string;
  kubernetes: string;
  /** the command that produced it (reproducibleCommand) */
  command: string;
  focus: string;
  skip?: string;
  /** wall time of the tenant run and of the super run, seconds (the whole run: every SIG it selected) */
  seconds: { tenant: number; super: number };
}

/** SigSummary counts one SIG's selected specs. */
export interface SigSummary {
  sig: string;
  selected: number;
  passedTenant: number;
  passedSuper: number;
  gaps: SpecResult[];
  environment: SpecResult[];
  tenantOnly: SpecResult[];
  skipped: number;
  timing?: SigTiming;
  /** the run these results come from (set when runs are merged: sigruns.ts) */
  run?: RunMeta;
  /** later focused runs of some of its specs, whose results replace those of `run` (sigruns.ts mergeRecheck) */
  rechecks?: Recheck[];
}

/** Recheck is a focused run of some specs of a SIG and what each one came to. */
export interface Recheck {
  run: RunMeta;
  specs: SpecResult[];
}

/** Totals sums the SIGs of a summary. */
export type Totals = Omit<SigSummary, 'sig' | 'gaps' | 'environment' | 'tenantOnly' | 'timing' | 'run' | 'rechecks'> & {
  gaps: number;
  designLimits: number;
  environment: number;
  tenantOnly: number;
};

/**
 * SideBySide is the JSON summary of a run (focus and skip: what it selected) or of several runs merged per SIG (no
 * focus: each SIG names its run): every SIG, and the totals.
 */
export interface SideBySide {
  focus?: string;
  skip?: string;
  sigs: SigSummary[];
  totals: Totals;
}

const FAILED: readonly SpecState[] = ['failed', 'timedout', 'interrupted', 'aborted', 'panicked'];
const passed = (s?: SpecState) => s === 'passed';
const failed = (s?: SpecState) => s !== undefined && FAILED.includes(s);

/** outcomeOf classifies one spec from its two states (undefined: the side did not report it). */
export function outcomeOf(tenant?: SpecState, sup?: SpecState): Outcome {
  if (passed(tenant) && passed(sup)) return 'passed';
  if (passed(sup) && failed(tenant)) return 'gap';
  if (failed(tenant) && failed(sup)) return 'environment';
  if (passed(tenant) && failed(sup)) return 'tenantOnly';
  return 'skipped';
}

/** selected keeps the It specs of a report that match focus and not skip, by text. */
function selectedSpecs(cases: readonly TestCase[], focus: string, skip?: string): Map<string, TestCase> {
  const f = new RegExp(focus);
  const s = skip ? new RegExp(skip) : undefined;
  const out = new Map<string, TestCase>();
  for (const c of cases) if (c.node === 'It' && f.test(c.text) && !s?.test(c.text)) out.set(c.text, c);
  return out;
}

/**
 * classify sets the tenant's JUnit cases beside the super cluster's: every spec either side selected, sorted by text,
 * with its outcome. A gap matching DESIGN_LIMITS carries its reason.
 */
export function classify(
  tenantCases: readonly TestCase[],
  superCases: readonly TestCase[],
  focus: string,
  skip?: string,
  limits: readonly DesignLimit[] = DESIGN_LIMITS,
): SpecResult[] {
  const t = selectedSpecs(tenantCases, focus, skip);
  const s = selectedSpecs(superCases, focus, skip);
  return [...new Set([...t.keys(), ...s.keys()])].sort().map((text): SpecResult => {
    const tc = t.get(text);
    const sc = s.get(text);
    const outcome = outcomeOf(tc?.status, sc?.status);
    const message = outcome === 'tenantOnly' ? sc?.message : outcome === 'passed' ? undefined : tc?.message;
    const designLimit = outcome === 'gap' ? limits.find((l) => l.spec.test(text))?.reason : undefined;
    return {
      text,
      sig: sigOf(text),
      ...(tc && { tenant: tc.status }),
      ...(sc && { super: sc.status }),
      outcome,
      ...(message && { message: firstLine(message) }),
      ...(designLimit && { designLimit }),
    };
  });
}

/** emptySig is a SIG summary that counts nothing yet. */
export const emptySig = (sig: string): SigSummary => ({
  sig,
  selected: 0,
  passedTenant: 0,
  passedSuper: 0,
  gaps: [],
  environment: [],
  tenantOnly: [],
  skipped: 0,
});

/** count adds one classified spec to its SIG's counts and lists (`by` -1 takes it out again). */
export function count(g: SigSummary, r: SpecResult, by: 1 | -1 = 1): void {
  g.selected += by;
  if (passed(r.tenant)) g.passedTenant += by;
  if (passed(r.super)) g.passedSuper += by;
  if (r.outcome === 'skipped') g.skipped += by;
  const list =
    r.outcome === 'gap'
      ? g.gaps
      : r.outcome === 'environment'
        ? g.environment
        : r.outcome === 'tenantOnly'
          ? g.tenantOnly
          : undefined;
  if (!list) return;
  if (by === 1) list.push(r);
  else {
    const i = list.findIndex((x) => x.text === r.text);
    if (i >= 0) list.splice(i, 1);
  }
}

/**
 * compare sets the tenant's JUnit cases beside the super cluster's (classify), counted per SIG (sorted by name) and
 * in total, with the time of the specs that passed on both sides.
 */
export function compare(
  tenantCases: readonly TestCase[],
  superCases: readonly TestCase[],
  focus: string,
  skip?: string,
  limits: readonly DesignLimit[] = DESIGN_LIMITS,
): SideBySide {
  const t = selectedSpecs(tenantCases, focus, skip);
  const s = selectedSpecs(superCases, focus, skip);
  const sigs = new Map<string, SigSummary>();
  for (const r of classify(tenantCases, superCases, focus, skip, limits)) {
    let g = sigs.get(r.sig);
    if (!g) sigs.set(r.sig, (g = emptySig(r.sig)));
    count(g, r);
    const tc = t.get(r.text);
    const sc = s.get(r.text);
    if (r.outcome === 'passed' && tc && sc) {
      const x = (g.timing ??= { specs: 0, tenantSeconds: 0, superSeconds: 0, slowest: [] });
      x.specs++;
      x.tenantSeconds += tc.seconds;
      x.superSeconds += sc.seconds;
      x.slowest.push({ text: r.text, tenant: tc.seconds, super: sc.seconds });
    }
  }
  const list = [...sigs.values()].sort((a, b) => a.sig.localeCompare(b.sig));
  for (const g of list) {
    if (!g.timing) continue;
    g.timing.slowest.sort((a, b) => b.tenant - b.super - (a.tenant - a.super) || a.text.localeCompare(b.text));
    g.timing.slowest = g.timing.slowest.slice(0, SLOWEST_KEPT);
  }
  return { focus, ...(skip && { skip }), sigs: list, totals: totalsOf(list) };
}

/** totalsOf sums SIG summaries; a gap with a design limit counts as one, not as a gap to fix. */
export function totalsOf(list: readonly SigSummary[]): Totals {
  const sum = (f: (g: SigSummary) => number) => list.reduce((n, g) => n + f(g), 0);
  return {
    selected: sum((g) => g.selected),
    passedTenant: sum((g) => g.passedTenant),
    passedSuper: sum((g) => g.passedSuper),
    gaps: sum((g) => g.gaps.filter((x) => !x.designLimit).length),
    designLimits: sum((g) => g.gaps.filter((x) => x.designLimit).length),
    environment: sum((g) => g.environment.length),
    tenantOnly: sum((g) => g.tenantOnly.length),
    skipped: sum((g) => g.skipped),
  };
}

/** firstLine is a failure message's first non-empty line, cut to 300 characters (the JUnit one holds the stack). */
export function firstLine(message: string): string {
  const line = message.split('\n').find((l) => l.trim()) ?? '';
  return line.length > 300 ? `${line.slice(0, 297)}...` : line.trim();
}

/** shellQuote quotes a command line argument for a POSIX shell when it holds anything but plain characters. */
export const shellQuote = (a: string): string => (/^[\w@%+=:,./-]*$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);

/** LOCAL_OPTIONS are options whose value names a place on the machine that ran: the page's command leaves them out. */
const LOCAL_OPTIONS = ['--state-dir', '--report-dir', '--page', '--summary'];

/**
 * reproducibleCommand is the command line a reader runs to produce the page again: the arguments as given, quoted,
 * without the options that only say where this run kept its files (the defaults serve a reader).
 */
export function reproducibleCommand(args: readonly string[]): string {
  const kept: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (LOCAL_OPTIONS.includes(a)) {
      i++;
      continue;
    }
    if (LOCAL_OPTIONS.some((o) => a.startsWith(`${o}=`))) continue;
    kept.push(shellQuote(a));
  }
  return ['npm run conformance --', ...kept].join(' ');
}
