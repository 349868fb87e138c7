import { describe, expect, it } from 'vitest';
import type { TestCase } from './report.ts';
import { ALL_FOCUS, classify, compare, type RunMeta, SERIAL_SKIP, sigFocus } from './sidebyside.ts';
import { CONFORMANCE_SIGS, mergeRecheck, mergeRuns, parseSigs, readSummary } from './sigruns.ts';

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

describe('mergeRecheck', () => {
  const GAP = '[sig-storage] Downward API should update labels [Conformance]';
  const ENV = '[sig-storage] HostPath should mount [Conformance]';
  const OK = '[sig-storage] EmptyDir should mount [Conformance]';
  const SERIAL = '[sig-storage] CSI should attach [Serial] [Conformance]';
  const NET = '[sig-network] EndpointSlice should support [Conformance]';
  const sigRun: RunMeta = { ...run('2026-11-29', 'aaa1111'), focus: sigFocus(['storage']), skip: SERIAL_SKIP };
  const storage = mergeRuns(
    undefined,
    compare([fail(GAP), fail(ENV), pass(OK)], [pass(GAP), fail(ENV), pass(OK)], sigRun.focus, sigRun.skip),
    sigRun,
  );
  const focused = (commit: string): RunMeta => ({ ...run('2026-11-30', commit), focus: 'x', skip: undefined });
  const recheck = (tenant: TestCase[], sup: TestCase[], commit: string, earlier = storage) =>
    mergeRecheck(earlier, classify(tenant, sup, ALL_FOCUS), focused(commit));
  const row = (m: ReturnType<typeof mergeRecheck>, sig: string) => {
    const g = m.sigs.find((x) => x.sig === sig)!;
    return {
      selected: g.selected,
      passedTenant: g.passedTenant,
      passedSuper: g.passedSuper,
      gaps: g.gaps.map((x) => x.text),
      environment: g.environment.map((x) => x.text),
      run: g.run?.commit,
      rechecks: (g.rechecks ?? []).map((c) => [c.run.commit, c.specs.map((x) => [x.text, x.outcome])]),
    };
  };

  it.each([
    {
      name: 'a gap that now passes leaves the gaps and counts for the tenant, the SIG keeps its run',
      tenant: [pass(GAP)],
      sup: [pass(GAP)],
      want: { selected: 3, passedTenant: 2, passedSuper: 2, gaps: [], environment: [ENV] },
      rechecked: [[GAP, 'passed']],
    },
    {
      name: 'a spec that passed on both in the SIG run and now fails on the tenant becomes a gap',
      tenant: [fail(OK)],
      sup: [pass(OK)],
      want: { selected: 3, passedTenant: 0, passedSuper: 2, gaps: [GAP, OK], environment: [ENV] },
      rechecked: [[OK, 'gap']],
    },
    {
      name: 'an environment failure that now passes on both leaves its list',
      tenant: [pass(ENV), fail(GAP)],
      sup: [pass(ENV), pass(GAP)],
      want: { selected: 3, passedTenant: 2, passedSuper: 3, gaps: [GAP], environment: [] },
      rechecked: [
        [GAP, 'gap'],
        [ENV, 'passed'],
      ],
    },
    {
      name: "a spec the SIG's run left out (Serial) is added to the SIG",
      tenant: [pass(SERIAL)],
      sup: [pass(SERIAL)],
      want: { selected: 4, passedTenant: 2, passedSuper: 3, gaps: [GAP], environment: [ENV] },
      rechecked: [[SERIAL, 'passed']],
    },
  ])('$name', ({ tenant, sup, want, rechecked }) => {
    const m = recheck(tenant, sup, 'bbb2222');
    expect(row(m, 'storage')).toEqual({ ...want, run: 'aaa1111', rechecks: [['bbb2222', rechecked]] });
    expect(m.totals).toMatchObject({ selected: want.selected, passedTenant: want.passedTenant });
  });

  it('a later recheck of the same spec replaces the earlier one; of another spec, joins it', () => {
    const one = recheck([pass(GAP)], [pass(GAP)], 'bbb2222');
    const again = recheck([fail(GAP)], [pass(GAP)], 'ccc3333', one);
    expect(row(again, 'storage')).toMatchObject({
      passedTenant: 1,
      gaps: [GAP],
      rechecks: [['ccc3333', [[GAP, 'gap']]]],
    });
    const other = recheck([pass(ENV)], [pass(ENV)], 'ccc3333', one);
    expect(row(other, 'storage').rechecks).toEqual([
      ['bbb2222', [[GAP, 'passed']]],
      ['ccc3333', [[ENV, 'passed']]],
    ]);
  });

  it('a SIG the summary lacks comes with the focused run as its run', () => {
    const m = recheck([fail(NET)], [pass(NET)], 'bbb2222');
    expect(row(m, 'network')).toEqual({
      selected: 1,
      passedTenant: 0,
      passedSuper: 1,
      gaps: [NET],
      environment: [],
      run: 'bbb2222',
      rechecks: [],
    });
    expect(row(m, 'storage')).toMatchObject({ gaps: [GAP], run: 'aaa1111', rechecks: [] });
  });

  it("a whole run of the SIG later replaces it, the rechecks with it; the summary's input is left alone", () => {
    const before = JSON.stringify(storage);
    const m = recheck([pass(GAP)], [pass(GAP)], 'bbb2222');
    expect(JSON.stringify(storage)).toBe(before);
    const whole = mergeRuns(m, compare([pass(GAP)], [pass(GAP)], ALL_FOCUS), run('2026-12-01', 'ddd4444'));
    expect(row(whole, 'storage')).toMatchObject({ selected: 1, run: 'ddd4444', rechecks: [] });
  });
});

describe('readSummary', () => {
  it.each([[undefined], [''], ['  \n']])('none for %j', (t) => expect(readSummary(t)).toBeUndefined());
  it('refuses a file that is not a summary', () => expect(() => readSummary('{"a":1}')).toThrow(/no sigs list/));
});
