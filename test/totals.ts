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

/** Failure is one failed test (or a failed hook or file), named with the first lines of its error. */
export interface Failure {
  file: string;
  /** the test's full name, or the suite's or file's for an error outside a test */
  name: string;
  error: string;
}

/** RunTotals is what one or more vitest runs counted. */
export interface RunTotals {
  passed: number;
  failed: number;
  skipped: number;
  files: FileTime[];
  failures: Failure[];
}

/** emptyTotals is the count before any test ran. */
export function emptyTotals(): RunTotals {
  return { passed: 0, failed: 0, skipped: 0, files: [], failures: [] };
}

/** ERROR_LINES and ERROR_CHARS bound how much of a failure's error the closing summary repeats. */
const ERROR_LINES = 6;
const ERROR_CHARS = 800;

/** errorHead is the first lines of an error's message (its stack left out), bounded for a closing summary. */
export function errorHead(e: { name?: string; message?: string } | undefined): string {
  const text = `${e?.name && e.name !== 'Error' ? `${e.name}: ` : ''}${e?.message ?? '(no message)'}`;
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const head = lines.slice(0, ERROR_LINES).join('\n');
  return head.length > ERROR_CHARS ? `${head.slice(0, ERROR_CHARS)}…` : head;
}

/**
 * failureLines lists the failures for the end of a run, where a CI system that shows only the last part of a long
 * log still shows them: each as its file and name, then its error's first lines indented.
 */
export function failureLines(failures: readonly Failure[]): string[] {
  if (failures.length === 0) return [];
  const out = [`failed (${failures.length}):`];
  for (const f of failures) {
    out.push(`  ${f.file} > ${f.name}`);
    for (const l of f.error.split('\n')) out.push(`      ${l}`);
  }
  return out;
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
    sum.failures.push(...(t.failures ?? []));
  }
  sum.files.sort((a, b) => b.ms - a.ms);
  return sum;
}
