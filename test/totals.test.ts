import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { errorHead, failureLines, readRunTotals, writeRunTotals } from './totals.ts';

describe('run totals', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), 'vc-totals-test-'));
    dirs.push(d);
    return d;
  };

  it('adds up the counts of every run and lists the files slowest first', () => {
    const d = dir();
    writeRunTotals(d, { passed: 10, failed: 0, skipped: 1, files: [{ file: 'a.test.ts', ms: 20 }], failures: [] });
    writeRunTotals(d, {
      passed: 5,
      failed: 2,
      skipped: 0,
      files: [
        { file: 'b.it.test.ts', ms: 900 },
        { file: 'c.it.test.ts', ms: 5 },
      ],
      failures: [{ file: 'b.it.test.ts', name: 'b > drains', error: 'expected 1 to be 2' }],
    });
    const t = readRunTotals(d);
    expect({ passed: t.passed, failed: t.failed, skipped: t.skipped }).toEqual({ passed: 15, failed: 2, skipped: 1 });
    expect(t.files.map((f) => f.file)).toEqual(['b.it.test.ts', 'a.test.ts', 'c.it.test.ts']);
    expect(failureLines(t.failures)).toEqual([
      'failed (1):',
      '  b.it.test.ts > b > drains',
      '      expected 1 to be 2',
    ]);
  });

  it("keeps an error's first lines without its blank ones, and bounds a long message", () => {
    expect(errorHead({ name: 'AssertionError', message: 'expected a\n\nto be b\n' })).toBe(
      'AssertionError: expected a\nto be b',
    );
    expect(errorHead({ name: 'Error', message: 'plain' })).toBe('plain');
    expect(errorHead(undefined)).toBe('(no message)');
    expect(
      errorHead({ message: Array.from({ length: 20 }, (_, i) => `line ${i}`).join('\n') }).split('\n'),
    ).toHaveLength(6);
    expect(errorHead({ message: 'x'.repeat(5000) })).toHaveLength(801);
  });

  it('lists nothing when nothing failed', () => {
    expect(failureLines([])).toEqual([]);
  });

  it('counts nothing when no run left its totals', () => {
    expect(readRunTotals(dir())).toEqual({ passed: 0, failed: 0, skipped: 0, files: [], failures: [] });
  });
});
