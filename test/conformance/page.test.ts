import { describe, expect, it } from 'vitest';
import { renderPage, runsOf } from './page.ts';
import type { SpecState, TestCase } from './report.ts';
import { ALL_FOCUS, classify, compare, type RunMeta, SERIAL_SKIP } from './sidebyside.ts';
import { mergeRecheck, mergeRuns } from './sigruns.ts';

const it_ = (text: string, status: SpecState, seconds = 1, message?: string): TestCase => ({
  node: 'It',
  text,
  status,
  seconds,
  ...(message && { message }),
});

const A = '[sig-apps] Deployment should roll [Conformance]';
const B = '[sig-apps] Daemon set should run and stop complex daemon [Conformance]';
const C = '[sig-apps] StatefulSet should pin [Conformance]';
const D = '[sig-node] Pods should run [NodeConformance] [Conformance]';
const E = '[sig-network] Services should serve [Conformance]';
const F = '[sig-auth] ServiceAccounts should mount | a pipe [Conformance]';

const run = (date: string, commit: string, command: string, tenant: number, sup: number): RunMeta => ({
  date,
  commit,
  kubernetes: 'v1.36.3',
  command,
  focus: ALL_FOCUS,
  skip: SERIAL_SKIP,
  seconds: { tenant, super: sup },
});

const first = compare(
  [
    it_(A, 'passed', 30),
    it_(B, 'failed', 5, '[FAILED] no node selected'),
    it_(C, 'failed', 5, '[FAILED] pod not running'),
    it_(D, 'failed', 5, '[FAILED] image pull'),
    it_(E, 'passed', 2),
  ],
  [it_(A, 'passed', 6), it_(B, 'passed'), it_(C, 'passed'), it_(D, 'failed'), it_(E, 'failed', 1, '[FAILED] no route')],
  ALL_FOCUS,
  SERIAL_SKIP,
);
const second = compare([it_(F, 'passed', 12)], [it_(F, 'passed', 3)], ALL_FOCUS, SERIAL_SKIP);
const merged = mergeRuns(
  mergeRuns(undefined, first, run('2026-11-29', 'abc1234', 'npm run conformance -- --all', 3600, 900)),
  second,
  run('2026-11-30', 'def5678', 'npm run conformance -- --sig auth', 65, 20),
);
merged.sigs.find((g) => g.sig === 'auth')!.timing!.steps = [
  { step: 'Creating pod pod-N', specs: 1, tenant: 9, super: 1.5 },
];
const page = renderPage(merged);

describe('renderPage', () => {
  it('is dated by its latest run and lists every run with its command, commit, SIGs and wall times', () => {
    expect(page).toContain('side by side (2026-11-30)');
    expect(page).toContain(
      '- 2026-11-29, commit abc1234 (Kubernetes v1.36.3), SIGs apps, network, node: `npm run conformance -- --all`; ' +
        'tenant run 60m00s, super run 15m00s',
    );
    expect(page).toContain(
      '- 2026-11-30, commit def5678 (Kubernetes v1.36.3), SIGs auth: `npm run conformance -- --sig auth`',
    );
    expect(page.indexOf('2026-11-29, commit abc1234')).toBeLessThan(page.indexOf('2026-11-30, commit def5678'));
  });

  it('has a row per SIG naming its run and its time per spec on each side, and a total', () => {
    expect(page).toContain('| apps | 3 | 1 | 3 | 2 | 0 | 0 | 0 | 30.0 / 6.0 | 2026-11-29, abc1234 |');
    expect(page).toContain('| auth | 1 | 1 | 1 | 0 | 0 | 0 | 0 | 12.0 / 3.0 | 2026-11-30, def5678 |');
    expect(page).toContain('| network | 1 | 1 | 0 | 0 | 0 | 1 | 0 | - | 2026-11-29, abc1234 |');
    expect(page).toContain('| **all** | 6 | 3 | 4 | 2 | 1 | 1 | 0 | | |');
  });

  it('lists every spec that is not a pass on both, by class, with its reason', () => {
    expect(page).toContain(`- ${B}: design limit: labels a vNode`);
    expect(page).toContain(`- ${C}: fidelity gap: [FAILED] pod not running`);
    expect(page).toContain(`## Environment\n\n- ${D}: [FAILED] image pull\n`);
    expect(page).toContain(`## Tenant only\n\n- ${E}: super: [FAILED] no route\n`);
  });

  it("names the specs the tenant took longest beyond super's, a pipe in a spec's text escaped", () => {
    const table = page.slice(page.indexOf('## Slowest'));
    expect(table.split('\n').slice(4, 6)).toEqual([
      `| ${A} | 30.0 | 6.0 |`,
      '| [sig-auth] ServiceAccounts should mount \\| a pipe [Conformance] | 12.0 | 3.0 |',
    ]);
  });
});

describe('renderPage: steps', () => {
  it("lists a SIG's steps the tenant spends most beyond super, only for SIGs whose run kept timelines", () => {
    expect(page).toContain('## Where the tenant spends its time beyond the super cluster');
    expect(page).toContain('- auth: Creating pod pod-N: 9.0 / 1.5 over 1 specs\n');
    expect(page).not.toMatch(/^- apps: /m);
  });
  it('has no such section when no run kept them', () => {
    const bare = {
      ...merged,
      sigs: merged.sigs.map((g) => ({ ...g, timing: g.timing && { ...g.timing, steps: undefined } })),
    };
    expect(renderPage(bare)).not.toContain('## Where the tenant spends');
  });
});

describe('renderPage: a focused recheck', () => {
  const rechecked = mergeRecheck(
    merged,
    classify([it_(C, 'passed', 4)], [it_(C, 'passed', 2)], ALL_FOCUS),
    run('2026-12-01', 'fed4321', "npm run conformance -- --super --focus 'StatefulSet'", 40, 10),
  );
  const p = renderPage(rechecked);

  it("names the recheck beside the SIG's run, and counts the spec's new result", () => {
    expect(p).toContain(
      '| apps | 3 | 2 | 3 | 1 | 0 | 0 | 0 | 30.0 / 6.0 | 2026-11-29, abc1234; 1 rechecked 2026-12-01, fed4321 |',
    );
    expect(p).not.toContain(`- ${C}: fidelity gap`);
    expect(p).toContain(`- ${B}: design limit: labels a vNode`);
  });

  it('lists the run with the number of specs it rechecked, and each spec with what it came to', () => {
    expect(p).toContain(
      "- 2026-12-01, commit fed4321 (Kubernetes v1.36.3), 1 specs rechecked of SIGs apps: `npm run conformance -- --super --focus 'StatefulSet'`",
    );
    expect(p).toContain(`## Rechecked\n\nSpecs a focused run made again`);
    expect(p).toContain(`- ${C}: passed on both sides (2026-12-01, fed4321)\n`);
    expect(page).not.toContain('## Rechecked');
    const limit = mergeRecheck(
      merged,
      classify([it_(B, 'failed', 4)], [it_(B, 'passed', 2)], ALL_FOCUS),
      run('2026-12-01', 'fed4321', 'npm run conformance -- --super --focus DaemonSet', 40, 10),
    );
    expect(renderPage(limit)).toContain(`- ${B}: a design limit (Gaps) (2026-12-01, fed4321)\n`);
  });
});

describe('runsOf', () => {
  it('one entry per run, oldest first, with its SIGs', () => {
    expect(runsOf(merged.sigs).map((x) => [x.run.commit, x.sigs])).toEqual([
      ['abc1234', ['apps', 'network', 'node']],
      ['def5678', ['auth']],
    ]);
  });
});
