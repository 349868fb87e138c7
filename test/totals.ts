import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * TOTALS_DIR_ENV names a directory where each vitest run of `npm test` (test/run.ts) leaves its counts and file times,
 * so that the closing line counts every run together. Unset (a plain `npx vitest run`), the reporter prints its own.
 */
export const TOTALS_DIR_ENV = 'VC_TEST_TOTALS_DIR';

/**
 * VITEST_CACHE_ENV names the directory a vitest run keeps its cache in (vitest.config.ts), above all each file's last
 * duration, by which it starts the slowest files first. Unset, it is vitest's default under node_modules.
 */
export const VITEST_CACHE_ENV = 'VC_VITEST_CACHE_DIR';

/** FileTime is how long one test file took, from its import to its last hook. */
export interface FileTime {
  file: string;
  ms: number;
}

/** RunTotals is what one or more vitest runs counted. */
export interface RunTotals {
  passed: number;
  failed: number;
  skipped: number;
  files: FileTime[];
}

/** emptyTotals is the count before any test ran. */
export function emptyTotals(): RunTotals {
  return { passed: 0, failed: 0, skipped: 0, files: [] };
}

/** writeRunTotals leaves one run's totals in dir under a name of its own. */
export function writeRunTotals(dir: string, totals: RunTotals): void {
  writeFileSync(join(dir, `run-${randomUUID()}.json`), JSON.stringify(totals));
}

/** readRunTotals adds up every run's totals in dir; files are sorted slowest first. */
export function readRunTotals(dir: string): RunTotals {
  const sum = emptyTotals();
  for (const name of readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .sort()) {
    const t = JSON.parse(readFileSync(join(dir, name), 'utf8')) as RunTotals;
    sum.passed += t.passed;
    sum.failed += t.failed;
    sum.skipped += t.skipped;
    sum.files.push(...t.files);
  }
  sum.files.sort((a, b) => b.ms - a.ms);
  return sum;
}
