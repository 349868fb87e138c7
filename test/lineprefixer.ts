/**
 * LinePrefixer puts a prefix before each whole line of a stream that arrives in pieces (test/run.ts marks the lines of
 * two test runs going on at once with their stage's name).
 */
export class LinePrefixer {
  private rest = '';

  constructor(private readonly prefix: string) {}

  /** push takes the next piece and returns the lines it completes, prefixed; a partial last line waits for the next. */
  push(chunk: string): string {
    const lines = (this.rest + chunk).split('\n');
    this.rest = lines.pop() ?? '';
    return lines.map((l) => `${this.prefix}${l}\n`).join('');
  }

  /** end returns what is left (a last line without a newline), prefixed and ended; '' when nothing is. */
  end(): string {
    const last = this.rest;
    this.rest = '';
    return last === '' ? '' : `${this.prefix}${last}\n`;
  }
}
