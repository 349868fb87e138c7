import { describe, expect, it } from 'vitest';
import type { SpecState, TestCase } from './report.ts';
import {
  ALL_FOCUS,
  compare,
  firstLine,
  type Outcome,
  outcomeOf,
  selection,
  SERIAL_SKIP,
  reproducibleCommand,
  shellQuote,
  sigFocus,
  sigOf,
} from './sidebyside.ts';

describe('selection', () => {
  it.each<[string, Parameters<typeof selection>[0], ReturnType<typeof selection>]>([
    ['without --all, the focus given and no skip', { focus: 'F' }, { focus: 'F' }],
    ['without --all, the skip given', { focus: 'F', skip: 'S' }, { focus: 'F', skip: 'S' }],
    [
      '--all: every conformance spec, Serial and Disruptive left out',
      { all: true, focus: 'F' },
      { focus: ALL_FOCUS, skip: SERIAL_SKIP },
    ],
    ['--all --serial: nothing left out', { all: true, serial: true, focus: 'F' }, { focus: ALL_FOCUS }],
    [
      '--sig: those SIGs, Serial and Disruptive left out',
      { sigs: ['auth', 'node'], focus: 'F' },
      { focus: sigFocus(['auth', 'node']), skip: SERIAL_SKIP },
    ],
    [
      '--sig beats --all; --serial keeps them',
      { all: true, sigs: ['node'], serial: true, focus: 'F' },
      { focus: sigFocus(['node']) },
    ],
    [
      '--all with a skip of its own: both',
      { all: true, focus: 'F', skip: 'S' },
      { focus: ALL_FOCUS, skip: `${SERIAL_SKIP}|S` },
    ],
  ])('%s', (_, o, want) => expect(selection(o)).toEqual(want));

  it('the skip of --all leaves out exactly the Serial and Disruptive specs', () => {
    const re = new RegExp(selection({ all: true, focus: '' }).skip!);
    expect(
      ['[sig-apps] x [Serial] [Conformance]', '[sig-node] y [Disruptive] [Conformance]'].every((t) => re.test(t)),
    ).toBe(true);
    expect(re.test('[sig-apps] z [Conformance]')).toBe(false);
  });
});

describe('sigFocus', () => {
  const re = new RegExp(sigFocus(['auth', 'node']));
  it.each([
    ['[sig-auth] ServiceAccounts should mount [Conformance]', true],
    ['[sig-node] Pods should run [NodeConformance] [Conformance]', true],
    ['[sig-node] Pods should run, not conformance', false],
    ['[sig-network] Services [Conformance]', false],
    ['[sig-node-extra] x [Conformance]', false],
  ])('%s: %s', (text, want) => expect(re.test(text)).toBe(want));
});

describe('sigOf', () => {
  it.each([
    ['[sig-api-machinery] Watchers should observe [Conformance]', 'api-machinery'],
    ['[sig-node] Pods should be updated [NodeConformance] [Conformance]', 'node'],
    ['Kubectl client without a sig', 'other'],
  ])('%s -> %s', (text, sig) => expect(sigOf(text)).toBe(sig));
});

describe('outcomeOf', () => {
  it.each<[SpecState | undefined, SpecState | undefined, Outcome]>([
    ['passed', 'passed', 'passed'],
    ['failed', 'passed', 'gap'],
    ['timedout', 'passed', 'gap'],
    ['failed', 'failed', 'environment'],
    ['panicked', 'timedout', 'environment'],
    ['passed', 'failed', 'tenantOnly'],
    ['skipped', 'passed', 'skipped'],
    ['passed', 'skipped', 'skipped'],
    ['failed', undefined, 'skipped'],
    [undefined, 'passed', 'skipped'],
  ])('tenant %s, super %s: %s', (t, s, want) => expect(outcomeOf(t, s)).toBe(want));
});

const it_ = (text: string, status: SpecState, message?: string): TestCase => ({
  node: 'It',
  text,
  status,
  seconds: 1,
  ...(message && { message }),
});

const A = '[sig-apps] Deployment should roll [Conformance]';
const B = '[sig-apps] Daemon set should run and stop complex daemon [Conformance]';
const C = '[sig-apps] StatefulSet should pin [Conformance]';
const D = '[sig-node] Pods should run [NodeConformance] [Conformance]';
const E = '[sig-network] Services should serve [Conformance]';
const F = '[sig-storage] EmptyDir should mount [Conformance]';
const SERIAL = '[sig-scheduling] SchedulerPredicates validates [Serial] [Conformance]';
const NOT = '[sig-apps] Job not conformance';

const tenant: TestCase[] = [
  { node: 'SynchronizedBeforeSuite', text: '', status: 'passed', seconds: 1 },
  it_(A, 'passed'),
  it_(B, 'failed', '[FAILED] no node selected\nstack'),
  it_(C, 'failed', '\n[FAILED] pod not running\nstack'),
  it_(D, 'failed', '[FAILED] image pull'),
  it_(E, 'passed'),
  it_(F, 'skipped'),
  it_(SERIAL, 'failed'),
  it_(NOT, 'failed'),
];
const superSide: TestCase[] = [
  it_(A, 'passed'),
  it_(B, 'passed'),
  it_(C, 'passed'),
  it_(D, 'failed', '[FAILED] image pull on super'),
  it_(E, 'failed', '[FAILED] no route'),
  it_(F, 'passed'),
  it_(SERIAL, 'passed'),
];

describe('compare', () => {
  const r = compare(tenant, superSide, ALL_FOCUS, SERIAL_SKIP);

  it('classifies every selected spec per SIG, sorted, leaving out setup nodes, unfocused and skipped-by-skip specs', () => {
    expect(r.sigs.map((g) => [g.sig, g.selected, g.passedTenant, g.passedSuper, g.skipped])).toEqual([
      ['apps', 3, 1, 3, 0],
      ['network', 1, 1, 0, 0],
      ['node', 1, 0, 0, 0],
      ['storage', 1, 0, 1, 1],
    ]);
    const apps = r.sigs[0]!;
    expect(apps.gaps.map((x) => [x.text, x.message, x.designLimit !== undefined])).toEqual([
      [B, '[FAILED] no node selected', true],
      [C, '[FAILED] pod not running', false],
    ]);
    expect(r.sigs[1]!.tenantOnly).toEqual([
      {
        text: E,
        sig: 'network',
        tenant: 'passed',
        super: 'failed',
        outcome: 'tenantOnly',
        message: '[FAILED] no route',
      },
    ]);
    expect(r.sigs[2]!.environment.map((x) => x.message)).toEqual(['[FAILED] image pull']);
  });

  it('totals the SIGs, design limits apart from the gaps to fix', () => {
    expect(r.totals).toEqual({
      selected: 6,
      passedTenant: 2,
      passedSuper: 4,
      gaps: 1,
      designLimits: 1,
      environment: 1,
      tenantOnly: 1,
      skipped: 1,
    });
  });

  it("times the specs that passed on both sides, naming the ones the tenant took longest beyond super's", () => {
    const t = (text: string, seconds: number): TestCase => ({ ...it_(text, 'passed'), seconds });
    const names = Array.from({ length: 7 }, (_, i) => `[sig-auth] spec ${i} [Conformance]`);
    const x = compare(
      [...names.map((n, i) => t(n, 10 + i)), it_('[sig-auth] failing [Conformance]', 'failed')],
      [...names.map((n) => t(n, 2)), t('[sig-auth] failing [Conformance]', 50)],
      ALL_FOCUS,
    );
    const timing = x.sigs[0]!.timing!;
    expect([timing.specs, timing.tenantSeconds, timing.superSeconds]).toEqual([7, 91, 14]);
    expect(timing.slowest.map((s) => [s.text, s.tenant - s.super])).toEqual(
      [6, 5, 4, 3, 2].map((i) => [names[i], 8 + i]),
    );
    expect(r.sigs.find((g) => g.sig === 'node')!.timing).toBeUndefined();
  });

  it('counts a spec one side never reported as skipped, not as a gap', () => {
    const x = compare([it_(A, 'failed')], [], ALL_FOCUS);
    expect(x.totals).toMatchObject({ selected: 1, gaps: 0, skipped: 1 });
  });
});

describe('DESIGN_LIMITS', () => {
  it.each([
    ['[sig-apps] Daemon set [Serial] should run and stop complex daemon [Conformance]', /labels a vNode/],
    // a fidelity gap since each node translates tenant cluster IPs: no longer a design limit
    [
      '[sig-network] EndpointSlice should support a Service with multiple ports specified in multiple EndpointSlices [Conformance]',
      undefined,
    ],
    [
      '[sig-network] EndpointSlice should create Endpoints and EndpointSlices for Pods matching a Service [Conformance]',
      undefined,
    ],
  ])('%s', (text, want) => {
    const g = compare([it_(text, 'failed', '[FAILED] x')], [it_(text, 'passed')], ALL_FOCUS).sigs[0]!;
    if (want) expect(g.gaps[0]!.designLimit).toMatch(want);
    else expect(g.gaps[0]!.designLimit).toBeUndefined();
  });
});

describe('reproducibleCommand', () => {
  it.each([
    [['--all'], 'npm run conformance -- --all'],
    [
      ['--super', '--state-dir', '/tmp/x/state', '--report-dir=/tmp/x/r', '--focus', 'a|b'],
      "npm run conformance -- --super --focus 'a|b'",
    ],
    [['--page', 'docs/p.md', '--serial'], 'npm run conformance -- --serial'],
  ])('%j', (args, want) => expect(reproducibleCommand(args)).toBe(want));
});

describe('shellQuote', () => {
  it.each([
    ['--all', '--all'],
    ['/tmp/a-b.c', '/tmp/a-b.c'],
    [String.raw`\[sig-(a|b)\]`, String.raw`'\[sig-(a|b)\]'`],
    ["it's", String.raw`'it'\''s'`],
    ['', ''],
  ])('%s', (a, want) => expect(shellQuote(a)).toBe(want));
});

describe('firstLine', () => {
  it.each([
    ['\n\n  [FAILED] x  \nstack', '[FAILED] x'],
    ['a'.repeat(400), `${'a'.repeat(297)}...`],
    ['', ''],
  ])('%#', (m, want) => expect(firstLine(m)).toBe(want));
});
