import { describe, expect, it } from 'vitest';
import { nextCron, parseCron, type Cron } from './cron.ts';

const parsed = (e: string): Cron => {
  const c = parseCron(e);
  if (typeof c === 'string') throw new Error(c);
  return c;
};

describe('nextCron', () => {
  // expression, after (UTC), the next time it names
  const cases: [string, string, string | undefined][] = [
    ['* * * * *', '2026-11-29T23:40:57Z', '2026-11-29T23:41:00Z'],
    ['*/15 * * * *', '2026-11-29T23:40:57Z', '2026-11-29T23:45:00Z'],
    ['0 */6 * * *', '2026-11-29T23:40:57Z', '2026-11-30T00:00:00Z'],
    ['0 */6 * * *', '2026-11-30T00:00:00Z', '2026-11-30T06:00:00Z'],
    ['30 2 * * *', '2026-11-29T02:30:00.500Z', '2026-11-30T02:30:00Z'],
    ['@hourly', '2026-11-29T23:40:57Z', '2026-11-30T00:00:00Z'],
    ['@daily', '2026-12-31T12:00:00Z', '2027-01-01T00:00:00Z'],
    ['@weekly', '2026-11-29T00:00:00Z', '2026-12-06T00:00:00Z'], // 29 Nov 2026 is a Sunday
    ['@monthly', '2026-11-29T23:40:57Z', '2026-12-01T00:00:00Z'],
    ['@yearly', '2026-11-29T23:40:57Z', '2027-01-01T00:00:00Z'],
    ['0 9 * * MON-FRI', '2026-11-27T09:00:00Z', '2026-11-30T09:00:00Z'], // Friday to Monday
    ['0 0 * * 7', '2026-11-29T00:00:01Z', '2026-12-06T00:00:00Z'], // 7 is Sunday
    ['0 0 1 JAN,jul *', '2026-02-01T00:00:00Z', '2026-07-01T00:00:00Z'],
    ['0 0 29 2 *', '2026-03-01T00:00:00Z', '2028-02-29T00:00:00Z'], // the next leap day
    ['0 0 30 2 *', '2026-03-01T00:00:00Z', undefined], // no February has it
    // both day fields restricted: either matches (the 13th, or any Friday)
    ['0 0 13 * 5', '2026-11-01T00:00:00Z', '2026-11-06T00:00:00Z'],
    ['0 0 13 * 5', '2026-11-12T00:00:00Z', '2026-11-13T00:00:00Z'],
    // one restricted: only it counts
    ['0 0 13 * *', '2026-11-01T00:00:00Z', '2026-11-13T00:00:00Z'],
    ['0 0 * * 5', '2026-11-01T00:00:00Z', '2026-11-06T00:00:00Z'],
    ['0 0 ? * 5', '2026-11-01T00:00:00Z', '2026-11-06T00:00:00Z'],
    // six fields: seconds first
    ['*/5 * * * * *', '2026-11-29T23:40:57Z', '2026-11-29T23:41:00Z'],
    ['*/5 * * * * *', '2026-11-29T23:40:57.999Z', '2026-11-29T23:41:00Z'],
    ['10-20/5 * * * * *', '2026-11-29T23:40:15Z', '2026-11-29T23:40:20Z'],
    ['10/20 * * * * *', '2026-11-29T23:40:31Z', '2026-11-29T23:40:50Z'],
    ['0 0 0 * * *', '2026-11-29T23:59:59Z', '2026-11-30T00:00:00Z'],
    ['5,1-2 * * * *', '2026-11-29T23:02:00Z', '2026-11-29T23:05:00Z'],
  ];
  it.each(cases)('%s after %s is %s', (expression, after, want) => {
    expect(nextCron(parsed(expression), new Date(after))?.toISOString()).toBe(
      want === undefined ? undefined : new Date(want).toISOString(),
    );
  });
});

describe('parseCron refuses what it cannot read, naming the field', () => {
  const bad: [string, string][] = [
    ['', 'has 0 fields'],
    ['* * * *', 'has 4 fields'],
    ['* * * * * * *', 'has 7 fields'],
    ['60 * * * *', 'minute 60 is outside 0-59'],
    ['* 24 * * *', 'hour 24 is outside 0-23'],
    ['* * 0 * *', 'day of month 0 is outside 1-31'],
    ['* * * 13 *', 'month 13 is outside 1-12'],
    ['* * * * 8', 'day of week 8 is outside 0-7'],
    ['*/0 * * * *', 'minute step "0" is not a number >= 1'],
    ['5-1 * * * *', 'minute range "5-1" ends before it starts'],
    ['* * * FOO *', 'month "FOO" is not a number or a name'],
    ['x * * * *', 'minute "x" is not a number'],
    ['1-2-3 * * * *', 'minute "1-2-3" is not a range'],
    ['1/2/3 * * * *', 'minute "1/2/3" is not a value'],
    ['@every 5m', 'has 2 fields'],
  ];
  it.each(bad)('%j', (expression, want) => {
    const r = parseCron(expression);
    expect(typeof r).toBe('string');
    expect(r).toContain(want);
  });
});
