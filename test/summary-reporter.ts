import type { Reporter, TestModule } from 'vitest/node';

/**
 * SummaryReporter prints one plain closing line, `tests: N passed, N failed, N skipped`, which CI systems that do
 * not parse vitest's own summary can read.
 */
export default class SummaryReporter implements Reporter {
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
    process.stdout.write(`\ntests: ${n.passed} passed, ${n.failed} failed, ${n.skipped} skipped\n`);
  }
}
