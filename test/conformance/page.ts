/**
 * The dated docs page of side-by-side conformance runs, made from the (merged) JSON summary: per SIG what was
 * selected and passed on each side, the run it comes from (date, commit, wall time) and its time per spec on each
 * side; every spec that is not a pass on both, by class, with its reason; and where the tenant's time goes beyond
 * the super cluster's. Unit-tested in page.test.ts.
 */
import type { Outcome, RunMeta, SideBySide, SigSummary, SpecResult } from './sidebyside.ts';

const clock = (seconds: number) => {
  const t = Math.round(seconds);
  return `${Math.floor(t / 60)}m${String(t % 60).padStart(2, '0')}s`;
};

const perSpec = (seconds: number, specs: number) => (specs ? (seconds / specs).toFixed(1) : '-');

/** OUTCOME_WORDS say what a rechecked spec came to. */
const OUTCOME_WORDS: Record<Outcome, string> = {
  passed: 'passed on both sides',
  gap: 'a fidelity gap (Gaps)',
  environment: 'failed on both sides (Environment)',
  tenantOnly: 'passed on the tenant only (Tenant only)',
  skipped: 'skipped',
};

/** runKey tells runs apart: one command at one commit on one date. */
const runKey = (r: RunMeta) => `${r.date} ${r.commit} ${r.command}`;

/**
 * runsOf lists the distinct runs the SIGs come from, oldest first, with the SIGs each one gave and, for a focused run
 * that rechecked some of their specs, how many.
 */
export function runsOf(sigs: readonly SigSummary[]): Array<{ run: RunMeta; sigs: string[]; rechecked?: number }> {
  const out = new Map<string, { run: RunMeta; sigs: string[]; rechecked?: number }>();
  const add = (run: RunMeta, sig: string, rechecked?: number) => {
    const k = runKey(run);
    const e = out.get(k) ?? { run, sigs: [] };
    if (!e.sigs.includes(sig)) e.sigs.push(sig);
    if (rechecked !== undefined) e.rechecked = (e.rechecked ?? 0) + rechecked;
    out.set(k, e);
  };
  for (const g of sigs) {
    if (g.run) add(g.run, g.sig);
    for (const c of g.rechecks ?? []) add(c.run, g.sig, c.specs.length);
  }
  return [...out.values()].sort(
    (a, b) => a.run.date.localeCompare(b.run.date) || runKey(a.run).localeCompare(runKey(b.run)),
  );
}

/** renderPage writes the page from a summary whose SIGs carry their runs (mergeRuns). */
export function renderPage(r: SideBySide): string {
  const runs = runsOf(r.sigs);
  const latest =
    runs
      .map((x) => x.run.date)
      .sort()
      .at(-1) ?? 'no run';
  const lines = [
    `# Conformance, tenant and super cluster side by side (${latest})`,
    '',
    'Made by `npm run conformance` from the summary [conformance-results.json](conformance-results.json), one or ' +
      "more SIGs per run; each SIG row names the run it comes from, and running that run's command again replaces " +
      "its rows; a focused run (`--focus`) replaces only its specs' results and is named beside the SIG's run. " +
      'A **gap** passes on the super cluster and fails on the tenant (a fidelity gap, or a design limit ' +
      'with its reason); **environment** fails on both (this machine); **tenant only** passes on the tenant alone. ' +
      "Time per spec is Ginkgo's own time of the specs that passed on both sides.",
    '',
    '| SIG | selected | passed on tenant | passed on super | gaps | environment | tenant only | skipped | s per spec, tenant / super | run |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...r.sigs.map((g) => {
      const t = g.timing;
      const time = t ? `${perSpec(t.tenantSeconds, t.specs)} / ${perSpec(t.superSeconds, t.specs)}` : '-';
      const run = [
        g.run ? `${g.run.date}, ${g.run.commit}` : '-',
        ...(g.rechecks ?? []).map((c) => `${c.specs.length} rechecked ${c.run.date}, ${c.run.commit}`),
      ].join('; ');
      return (
        `| ${g.sig} | ${g.selected} | ${g.passedTenant} | ${g.passedSuper} | ${g.gaps.length} | ` +
        `${g.environment.length} | ${g.tenantOnly.length} | ${g.skipped} | ${time} | ${run} |`
      );
    }),
    `| **all** | ${r.totals.selected} | ${r.totals.passedTenant} | ${r.totals.passedSuper} | ` +
      `${r.totals.gaps + r.totals.designLimits} | ${r.totals.environment} | ${r.totals.tenantOnly} | ` +
      `${r.totals.skipped} | | |`,
    '',
    '## Runs',
    '',
  ];
  for (const { run, sigs, rechecked } of runs)
    lines.push(
      `- ${run.date}, commit ${run.commit} (Kubernetes ${run.kubernetes}), ` +
        `${rechecked === undefined ? 'SIGs' : `${rechecked} specs rechecked of SIGs`} ${sigs.join(', ')}: ` +
        `\`${run.command}\`; tenant run ${clock(run.seconds.tenant)}, super run ${clock(run.seconds.super)} ` +
        `(focus \`${run.focus}\`${run.skip ? `, skip \`${run.skip}\`` : ''}).`,
    );
  const section = (title: string, pick: (g: SigSummary) => SpecResult[], why: (x: SpecResult) => string) => {
    const all = r.sigs.flatMap(pick);
    if (!all.length) return;
    lines.push('', `## ${title}`, '');
    for (const x of all) lines.push(`- ${x.text}: ${why(x)}`);
  };
  section(
    'Gaps',
    (g) => g.gaps,
    (x) => (x.designLimit ? `design limit: ${x.designLimit}` : `fidelity gap: ${x.message ?? x.tenant ?? ''}`),
  );
  section(
    'Environment',
    (g) => g.environment,
    (x) => x.message ?? x.tenant ?? '',
  );
  section(
    'Tenant only',
    (g) => g.tenantOnly,
    (x) => `super: ${x.message ?? x.super ?? ''}`,
  );
  const rechecks = r.sigs.flatMap((g) => (g.rechecks ?? []).flatMap((c) => c.specs.map((x) => ({ x, run: c.run }))));
  if (rechecks.length) {
    lines.push(
      '',
      '## Rechecked',
      '',
      "Specs a focused run made again after their SIG's run; its results replace that run's above.",
      '',
    );
    for (const { x, run } of rechecks)
      lines.push(
        `- ${x.text}: ${x.designLimit ? 'a design limit (Gaps)' : OUTCOME_WORDS[x.outcome]} (${run.date}, ${run.commit})`,
      );
  }
  const steps = r.sigs.filter((g) => g.timing?.steps?.length);
  if (steps.length) {
    lines.push(
      '',
      '## Where the tenant spends its time beyond the super cluster',
      '',
      "Per SIG, the steps of the specs that passed on both sides (Ginkgo's timelines: a step lasts until the next " +
        'begins; numbers in step names shown as N), summed: tenant s / super s over the specs they occur in.',
      '',
    );
    for (const g of steps)
      for (const x of g.timing!.steps!)
        lines.push(`- ${g.sig}: ${x.step}: ${x.tenant.toFixed(1)} / ${x.super.toFixed(1)} over ${x.specs} specs`);
  }
  const slow = r.sigs.flatMap((g) => g.timing?.slowest ?? []).sort((a, b) => b.tenant - b.super - (a.tenant - a.super));
  if (slow.length) {
    lines.push(
      '',
      '## Slowest on the tenant beyond the super cluster',
      '',
      '| spec | tenant s | super s |',
      '|---|---|---|',
    );
    for (const x of slow.slice(0, 10))
      lines.push(`| ${x.text.replace(/\|/g, '\\|')} | ${x.tenant.toFixed(1)} | ${x.super.toFixed(1)} |`);
  }
  return lines.join('\n') + '\n';
}
