/**
 * The hostile-tenant suites count their attempts here: each attempt is an attack that must be refused. An attempt
 * whose check fails counts as succeeded (and fails the test); the summary line is what the issue asks each suite to
 * print. When the run gives a directory in ATTEMPTS_DIR_ENV (test/summary-reporter.ts does), every attempt is also
 * appended there, so that the reporter prints one line for all suites of the run (tallyAttempts).
 */
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** ATTEMPTS_DIR_ENV names the environment variable holding the run's directory of attempt records. */
export const ATTEMPTS_DIR_ENV = 'VC_SECURITY_ATTEMPTS_DIR';

/** AttemptOutcome is how one attempt ended. */
export type AttemptOutcome = 'refused' | 'succeeded';

/** AttemptRecord is one attempt: its name, its outcome, and the reason the system gave (or the failed check). */
export interface AttemptRecord {
  name: string;
  outcome: AttemptOutcome;
  detail: string;
}

/** Attempts records the attempts of one suite. */
export class Attempts {
  /** records are the attempts made so far, in order. */
  readonly records: AttemptRecord[] = [];

  /**
   * attempt runs one attack and its checks: `fn` returns the reason the system gave for refusing it, and throws when
   * a check fails (the attack got through, or was not refused clearly). The error is rethrown.
   */
  async attempt(name: string, fn: () => Promise<string>): Promise<string> {
    try {
      const reason = await fn();
      this.record({ name, outcome: 'refused', detail: reason });
      return reason;
    } catch (e) {
      this.record({ name, outcome: 'succeeded', detail: e instanceof Error ? e.message : String(e) });
      throw e;
    }
  }

  private record(r: AttemptRecord): void {
    this.records.push(r);
    const dir = process.env[ATTEMPTS_DIR_ENV];
    if (dir) appendFileSync(join(dir, `${process.pid}.jsonl`), `${JSON.stringify(r)}\n`);
  }

  /** report prints every attempt with its outcome and reason, then the suite's line under `label`. */
  report(label: string): void {
    for (const r of this.records) console.log(`${r.outcome}: ${r.name}: ${r.detail}`);
    console.log(`${label}: ${this.summary()}`);
  }

  /** summary is the one line a suite prints: `attempts N, refused N, succeeded N`. */
  summary(): string {
    return countLine(this.records);
  }
}

/** countLine is `attempts N, refused N, succeeded N` for a list of attempts. */
export function countLine(records: readonly AttemptRecord[]): string {
  const refused = records.filter((r) => r.outcome === 'refused').length;
  return `attempts ${records.length}, refused ${refused}, succeeded ${records.length - refused}`;
}

/** tallyAttempts reads every attempt the suites of a run appended to `dir` (see ATTEMPTS_DIR_ENV). */
export function tallyAttempts(dir: string): AttemptRecord[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) =>
      readFileSync(join(dir, f), 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as AttemptRecord),
    );
}
