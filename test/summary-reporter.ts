import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { PROCESS_STATS_ENV } from '../core/dev/local/procstats.ts';
import { fromPackageRoot } from '../core/paths.ts';
import { processSummaryLines, readProcessSummary, UNLABELLED } from './procsummary.ts';
import { ATTEMPTS_DIR_ENV, countLine, tallyAttempts } from './security/attempts.ts';
import { emptyTotals, errorHead, failureLines, TOTALS_DIR_ENV, writeRunTotals } from './totals.ts';

const SECURITY_DIR = `${sep}test${sep}security${sep}`;

/**
 * SummaryReporter prints one plain closing line, `tests: N passed, N failed, N skipped`, which CI systems that do
 * not parse vitest's own summary can read. When a hostile-tenant suite (test/security) ran, it first prints the
 * attempts of all of them together, `hostile-tenant suite: attempts N, refused N, succeeded N`: it gives the run a
 * directory (ATTEMPTS_DIR_ENV, inherited by the test workers) where each Attempts appends what it tried.
 * Under `npm test` (test/run.ts sets TOTALS_DIR_ENV) it leaves the counts and each file's time there instead of
 * printing them, and run.ts prints one line for all of its vitest runs together, with the slowest files.
 * Outside `npm test` it also prints what the run's files started and the CPU time each file used
 * (core/dev/local/procstats.ts), counted in PROCESS_STATS_ENV's file, or in a file of its own when that is unset.
 */
export default class SummaryReporter implements Reporter {
  private readonly attemptsDir = mkdtempSync(join(tmpdir(), 'vc-attempts-'));
  /** how long the process stats file was when this run started: the run's own lines follow */
  private statsFrom = 0;

  onInit(): void {
    process.env[ATTEMPTS_DIR_ENV] = this.attemptsDir;
    // A file beside the attempts directory, not in it: onTestRunStart empties that directory.
    const own = process.env[PROCESS_STATS_ENV] ? undefined : `${this.attemptsDir}-process-stats.jsonl`;
    if (own) process.env[PROCESS_STATS_ENV] = own;
    process.once('exit', () => {
      rmSync(this.attemptsDir, { recursive: true, force: true });
      if (own) rmSync(own, { force: true });
    });
  }

  onTestRunStart(): void {
    for (const f of readdirSync(this.attemptsDir)) rmSync(join(this.attemptsDir, f), { force: true });
    const stats = process.env[PROCESS_STATS_ENV];
    this.statsFrom = stats && existsSync(stats) ? statSync(stats).size : 0;
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const n = emptyTotals();
    for (const m of modules) {
      const d = m.diagnostic();
      const file = relative(fromPackageRoot(), m.moduleId);
      n.files.push({ file, ms: Math.round(d.collectDuration + d.setupDuration + d.duration) });
      for (const t of m.children.allTests()) {
        const r = t.result();
        if (r.state === 'passed') n.passed++;
        else if (r.state === 'failed') {
          n.failed++;
          n.failures.push({ file, name: t.fullName, error: errorHead(r.errors[0]) });
        } else n.skipped++;
      }
      // Errors outside any test: a failed beforeAll or afterAll (its suite's tests are then reported skipped), or a
      // file that did not load. Each such suite counts as one failure, so the closing line agrees with the list.
      let failedSuites = 0;
      for (const s of [m, ...m.children.allSuites()]) {
        const errors = s.errors();
        if (errors.length > 0) failedSuites++;
        for (const e of errors)
          n.failures.push({ file, name: s.type === 'module' ? '(the file)' : s.fullName, error: errorHead(e) });
      }
      n.failed += failedSuites || (m.state() === 'failed' && m.children.size === 0 ? 1 : 0);
    }
    if (modules.some((m) => m.moduleId.includes(SECURITY_DIR))) {
      process.stdout.write(`\nhostile-tenant suite: ${countLine(tallyAttempts(this.attemptsDir))}`);
    }
    const totalsDir = process.env[TOTALS_DIR_ENV];
    if (totalsDir) {
      writeRunTotals(totalsDir, n);
      return;
    }
    // Only files of the integration and real-node projects label what they start (test/procstats-setup.ts): the few
    // helper processes of unit tests are not worth a summary.
    const stats = process.env[PROCESS_STATS_ENV];
    const summary = stats ? readProcessSummary(stats, this.statsFrom) : undefined;
    if (summary?.labels.some((l) => l.label !== UNLABELLED)) {
      process.stdout.write(`\n${processSummaryLines(summary, 10).join('\n')}\n`);
    }
    const failed = failureLines(n.failures);
    if (failed.length > 0) process.stdout.write(`\n${failed.join('\n')}\n`);
    process.stdout.write(`\ntests: ${n.passed} passed, ${n.failed} failed, ${n.skipped} skipped\n`);
  }
}
