import { describe, expect, it } from 'vitest';
import type { TestCase } from './report.ts';
import { ALL_FOCUS, compare, type RunMeta } from './sidebyside.ts';
import { CONFORMANCE_SIGS, mergeRuns, parseSigs, readSummary } from './sigruns.ts';

describe('parseSigs', () => {
  it.each([
    ['node', ['node']],
    ['storage,node', ['node', 'storage']],
    [' auth , auth,cli ', ['auth', 'cli']],
  ])('%j', (arg, want) => expect(parseSigs(arg)).toEqual(want));

  it.each([
    ['', /name at least one SIG/],
    [',', /name at least one SIG/],
    ['nodes', /unknown SIG nodes/],
    ['node,sig-apps', /unknown SIG sig-apps/],
  ])('refuses %j', (arg, want) => expect(() => parseSigs(arg)).toThrow(want));

  it('knows every SIG the docs count specs for', () => expect(CONFORMANCE_SIGS).toHaveLength(10));
});

const pass = (text: string): TestCase => ({ node: 'It', text, status: 'passed', seconds: 3 });
const fail = (text: string): TestCase => ({ node: 'It', text, status: 'failed', seconds: 3, message: '[FAILED] x' });
const AUTH = '[sig-auth] a [Conformance]';
const NODE = '[sig-node] n [Conformance]';
const NODE2 = '[sig-node] m [Conformance]';
const run = (date: string, commit: string): RunMeta => ({
  date,
  commit,
  kubernetes: 'v1.36.3',
  command: 'npm run conformance -- --sig x',
  focus: ALL_FOCUS,
  seconds: { tenant: 100, super: 20 },
});

describe('mergeRuns', () => {
  const first = compare([pass(AUTH), fail(NODE)], [pass(AUTH), pass(NODE)], ALL_FOCUS);
  const r1 = run('2026-11-29', 'aaa1111');
  const merged1 = mergeRuns(undefined, first, r1);

  it('stamps every SIG of a first run with it and drops the run-wide focus', () => {
    expect(merged1.sigs.map((g) => [g.sig, g.run?.commit])).toEqual([
      ['auth', 'aaa1111'],
      ['node', 'aaa1111'],
    ]);
    expect(merged1.focus).toBeUndefined();
    expect(merged1.totals).toMatchObject({ selected: 2, passedTenant: 1, passedSuper: 2, gaps: 1 });
  });

  it("replaces the SIGs a later run selected, keeps the others with their own run's date and commit", () => {
    const second = compare([pass(NODE), pass(NODE2)], [pass(NODE), pass(NODE2)], ALL_FOCUS);
    const m = mergeRuns(merged1, second, run('2026-11-30', 'bbb2222'));
    expect(m.sigs.map((g) => [g.sig, g.selected, g.passedTenant, g.run?.date, g.run?.commit])).toEqual([
      ['auth', 1, 1, '2026-11-29', 'aaa1111'],
      ['node', 2, 2, '2026-11-30', 'bbb2222'],
    ]);
    expect(m.totals).toMatchObject({ selected: 3, passedTenant: 3, passedSuper: 3, gaps: 0 });
  });

  it('survives its own JSON', () => {
    const back = readSummary(JSON.stringify(merged1));
    expect(back).toEqual(merged1);
    expect(mergeRuns(back, first, r1)).toEqual(merged1);
  });
});

describe('readSummary', () => {
  it.each([[undefined], [''], ['  \n']])('none for %j', (t) => expect(readSummary(t)).toBeUndefined());
  it('refuses a file that is not a summary', () => expect(() => readSummary('{"a":1}')).toThrow(/no sigs list/));
});
