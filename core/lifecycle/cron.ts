/**
 * A cron expression as a Kubernetes CronJob writes one (`minute hour day-of-month month day-of-week`), read in UTC,
 * with an optional leading seconds field (six fields) for schedules shorter than a minute. Each field is `*`, a
 * number, a range `a-b`, a step `*\/s`, `a-b/s` or `a/s`, or a comma-separated list of those; months and weekdays also
 * take their English three-letter names, and weekday 7 is Sunday as 0 is. `@hourly`, `@daily` (`@midnight`),
 * `@weekly`, `@monthly` and `@yearly` (`@annually`) stand for their usual expressions. As in cron, when both the day of
 * the month and the day of the week are restricted, a day matching either one matches.
 */

/** Cron is a parsed expression: the allowed values of each field. */
export interface Cron {
  seconds: ReadonlySet<number>;
  minutes: ReadonlySet<number>;
  hours: ReadonlySet<number>;
  days: ReadonlySet<number>;
  months: ReadonlySet<number>;
  weekdays: ReadonlySet<number>;
  /** whether the day-of-month and day-of-week fields were `*` (cron's rule for days depends on it) */
  anyDay: boolean;
  anyWeekday: boolean;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  /** names of the values from `min` on */
  names?: readonly string[];
}

const FIELDS: Record<'seconds' | 'minutes' | 'hours' | 'days' | 'months' | 'weekdays', FieldSpec> = {
  seconds: { name: 'second', min: 0, max: 59 },
  minutes: { name: 'minute', min: 0, max: 59 },
  hours: { name: 'hour', min: 0, max: 23 },
  days: { name: 'day of month', min: 1, max: 31 },
  months: { name: 'month', min: 1, max: 12, names: MONTHS },
  // 7 is read as Sunday after parsing
  weekdays: { name: 'day of week', min: 0, max: 7, names: WEEKDAYS },
};

/** parseCron reads an expression; a string is the error, naming the field and what is wrong with it. */
export function parseCron(expression: string): Cron | string {
  const text = expression.trim();
  const expanded = MACROS[text.toLowerCase()] ?? text;
  const parts = expanded.split(/\s+/).filter(Boolean);
  if (parts.length !== 5 && parts.length !== 6)
    return `cron expression "${expression}" has ${parts.length} fields: it takes 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)`;
  const all = parts.length === 6 ? parts : ['0', ...parts];
  const keys = ['seconds', 'minutes', 'hours', 'days', 'months', 'weekdays'] as const;
  const out: Partial<Record<(typeof keys)[number], Set<number>>> = {};
  for (const [i, key] of keys.entries()) {
    const r = parseField(all[i]!, FIELDS[key]);
    if (typeof r === 'string') return `cron expression "${expression}": ${r}`;
    out[key] = r;
  }
  const weekdays = out.weekdays!;
  if (weekdays.delete(7)) weekdays.add(0);
  return {
    seconds: out.seconds!,
    minutes: out.minutes!,
    hours: out.hours!,
    days: out.days!,
    months: out.months!,
    weekdays,
    anyDay: all[3] === '*' || all[3] === '?',
    anyWeekday: all[5] === '*' || all[5] === '?',
  };
}

/** parseField reads one field into its set of values, or says what is wrong. */
function parseField(text: string, f: FieldSpec): Set<number> | string {
  const values = new Set<number>();
  for (const item of text.split(',')) {
    const [range, stepText, extra] = item.split('/');
    if (extra !== undefined || range === undefined || range === '') return `${f.name} "${item}" is not a value`;
    let step = 1;
    if (stepText !== undefined) {
      if (!/^[0-9]+$/.test(stepText) || Number(stepText) < 1)
        return `${f.name} step "${stepText}" is not a number >= 1`;
      step = Number(stepText);
    }
    let lo: number, hi: number;
    if (range === '*' || range === '?') {
      lo = f.min;
      hi = f.max === 7 ? 6 : f.max;
    } else {
      const [a, b, more] = range.split('-');
      if (more !== undefined) return `${f.name} "${range}" is not a range`;
      const first = valueOf(a!, f);
      if (typeof first === 'string') return first;
      lo = first;
      if (b !== undefined) {
        const last = valueOf(b, f);
        if (typeof last === 'string') return last;
        hi = last;
      } else hi = stepText !== undefined ? (f.max === 7 ? 6 : f.max) : lo;
      if (hi < lo) return `${f.name} range "${range}" ends before it starts`;
    }
    for (let v = lo; v <= hi; v += step) values.add(v);
  }
  return values;
}

/** valueOf reads a number or a name of a field and checks its bounds. */
function valueOf(text: string, f: FieldSpec): number | string {
  const named = f.names?.indexOf(text.toUpperCase()) ?? -1;
  if (named >= 0) return named + f.min;
  if (!/^[0-9]+$/.test(text)) return `${f.name} "${text}" is not a number${f.names ? ' or a name' : ''}`;
  const v = Number(text);
  if (v < f.min || v > f.max) return `${f.name} ${v} is outside ${f.min}-${f.max}`;
  return v;
}

/** dayMatches applies cron's rule for days: both fields restricted means either one may match. */
function dayMatches(c: Cron, d: Date): boolean {
  const day = c.days.has(d.getUTCDate());
  const weekday = c.weekdays.has(d.getUTCDay());
  if (c.anyDay || c.anyWeekday) return day && weekday;
  return day || weekday;
}

/** HORIZON_YEARS bounds the search: an expression with no time within it (30 February) never fires. */
const HORIZON_YEARS = 8;

/**
 * nextCron returns the first time strictly after `after` that the expression names, in whole seconds of UTC, or
 * undefined when it names none (a day no month has).
 */
export function nextCron(c: Cron, after: Date): Date | undefined {
  const t = new Date(Math.floor(after.getTime() / 1000) * 1000 + 1000);
  const end = after.getTime() + HORIZON_YEARS * 366 * 86_400_000;
  while (t.getTime() <= end) {
    if (!c.months.has(t.getUTCMonth() + 1)) {
      t.setUTCMonth(t.getUTCMonth() + 1, 1);
      t.setUTCHours(0, 0, 0, 0);
    } else if (!dayMatches(c, t)) {
      t.setUTCDate(t.getUTCDate() + 1);
      t.setUTCHours(0, 0, 0, 0);
    } else if (!c.hours.has(t.getUTCHours())) {
      t.setUTCHours(t.getUTCHours() + 1, 0, 0, 0);
    } else if (!c.minutes.has(t.getUTCMinutes())) {
      t.setUTCMinutes(t.getUTCMinutes() + 1, 0, 0);
    } else if (!c.seconds.has(t.getUTCSeconds())) {
      t.setUTCSeconds(t.getUTCSeconds() + 1, 0);
    } else return t;
  }
  return undefined;
}
