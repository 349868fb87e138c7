import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { ATTEMPTS_DIR_ENV, countLine, tallyAttempts } from './security/attempts.ts';

const SECURITY_DIR = `${sep}test${sep}security${sep}`;

/**
 * SummaryReporter prints one plain closing line, `tests: N passed, N failed, N skipped`, which CI systems that do
 * not parse vitest's own summary can read. When a hostile-tenant suite (test/security) ran, it first prints the
 * attempts of all of them together, `hostile-tenant suite: attempts N, refused N, succeeded N`: it gives the run a
 * directory (ATTEMPTS_DIR_ENV, inherited by the test workers) where each Attempts appends what it tried.
 */
export default class SummaryReporter implements Reporter {
  private readonly attemptsDir = mkdtempSync(join(tmpdir(), 'vc-attempts-'));

  onInit(): void {
    process.env[ATTEMPTS_DIR_ENV] = this.attemptsDir;
    process.once('exit', () => rmSync(this.attemptsDir, { recursive: true, force: true }));
  }

  onTestRunStart(): void {
    for (const f of readdirSync(this.attemptsDir)) rmSync(join(this.attemptsDir, f), { force: true });
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const n = { passed: 0, failed: 0, skipped: 0 };
    for (const m of modules) {
      for (const t of m.children.allTests()) {
        const s = t.result().state;
        if (s === 'passed') n.passed++;
        else if (s === 'failed') n.failed++;
        else n.skipped++;
      }
      if (m.state() === 'failed' && m.children.size === 0) n.failed++;
    }
    if (modules.some((m) => m.moduleId.includes(SECURITY_DIR))) {
      process.stdout.write(`\nhostile-tenant suite: ${countLine(tallyAttempts(this.attemptsDir))}`);
    }
    process.stdout.write(`\ntests: ${n.passed} passed, ${n.failed} failed, ${n.skipped} skipped\n`);
  }
}
