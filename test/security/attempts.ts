/**
 * The hostile-tenant suites count their attempts here: each attempt is an attack that must be refused. An attempt
 * whose check fails counts as succeeded (and fails the test); the summary line is what the issue asks each suite to
 * print.
 */

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
      this.records.push({ name, outcome: 'refused', detail: reason });
      return reason;
    } catch (e) {
      this.records.push({ name, outcome: 'succeeded', detail: e instanceof Error ? e.message : String(e) });
      throw e;
    }
  }

  /** summary is the one line a suite prints: `attempts N, refused N, succeeded N`. */
  summary(): string {
    const refused = this.records.filter((r) => r.outcome === 'refused').length;
    return `attempts ${this.records.length}, refused ${refused}, succeeded ${this.records.length - refused}`;
  }
}
