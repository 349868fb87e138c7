import { describe, expect, it } from 'vitest';
import {
  CONFORMANCE_FOCUS,
  e2eCommand,
  parseJUnit,
  summarize,
  summaryLine,
  unescapeXml,
  type E2eRun,
  type Summary,
  type TestCase,
} from './report.ts';

// The shape Ginkgo v2 writes through the e2e framework's junit_01.xml (labels omitted, passed/skipped without
// timelines); every testcase of the suite is present, unfocused ones as skipped.
const JUNIT = `<?xml version="1.0" encoding="UTF-8"?>
  <testsuites tests="6" disabled="0" errors="0" failures="2" time="61.5">
      <testsuite name="Kubernetes e2e suite" tests="6" skipped="2" failures="2" time="61.5">
          <properties>
              <property name="SuiteSucceeded" value="false"></property>
          </properties>
          <testcase name="[SynchronizedBeforeSuite]" status="passed" time="1.2"></testcase>
          <testcase name="[It] [sig-apps] Deployment deployment should support rollover [Conformance]" status="passed" time="20.1"></testcase>
          <testcase name="[It] [sig-api-machinery] Watchers should observe add, update, and delete watch notifications [Conformance]"
            status="failed" time="30">
              <failure message="" type="failed">[FAILED] timed out waiting for &quot;watch&quot; &amp; more&#xA;In [It] at: x.go:1</failure>
              <system-err>log</system-err>
          </testcase>
          <testcase name="[It] [sig-apps] StatefulSet Basic StatefulSet functionality should perform rolling updates [Conformance]"
            status="timedout" time="10">
              <failure message="" type="timedout">[TIMEDOUT] A suite timeout occurred</failure>
          </testcase>
          <testcase name="[It] [sig-apps] Job should run a job to completion [Conformance]" status="skipped" time="0.2">
              <skipped message="skipped - Only supported for providers [gce]"></skipped>
          </testcase>
          <testcase name="[It] [sig-network] Services should serve a basic endpoint from pods [Conformance]" status="skipped" time="0">
              <skipped message="skipped"></skipped>
          </testcase>
          <testcase name="[ReportAfterSuite] Kubernetes e2e JUnit report" status="passed" time="0.01"></testcase>
      </testsuite>
  </testsuites>`;

describe('parseJUnit', () => {
  it('reads node type, text, status, time and the failure or skip message of every testcase', () => {
    const cases = parseJUnit(JUNIT);
    expect(cases.map((c) => [c.node, c.status, c.seconds])).toEqual([
      ['SynchronizedBeforeSuite', 'passed', 1.2],
      ['It', 'passed', 20.1],
      ['It', 'failed', 30],
      ['It', 'timedout', 10],
      ['It', 'skipped', 0.2],
      ['It', 'skipped', 0],
      ['ReportAfterSuite', 'passed', 0.01],
    ]);
    expect(cases[1]!.text).toBe('[sig-apps] Deployment deployment should support rollover [Conformance]');
    expect(cases[2]!.message).toBe('[FAILED] timed out waiting for "watch" & more\nIn [It] at: x.go:1');
    expect(cases[4]!.message).toBe('skipped - Only supported for providers [gce]');
    expect(cases[0]!.message).toBeUndefined();
  });

  it.each([
    ['a self-closing testcase', '<testcase name="[It] a" status="passed" time="1"/>', [['It', 'a', 'passed']]],
    [
      'a name without node type',
      '<testcase name="plain" status="pending" time="0"></testcase>',
      [['', 'plain', 'pending']],
    ],
    ['no testcases', '<testsuites></testsuites>', []],
  ])('%s', (_, xml, want) => {
    expect(parseJUnit(xml).map((c) => [c.node, c.text, c.status])).toEqual(want);
  });

  it('refuses a status it does not know, naming the testcase', () => {
    expect(() => parseJUnit('<testcase name="[It] x" status="weird" time="0"></testcase>')).toThrow(
      'JUnit testcase "[It] x": unknown status "weird"',
    );
  });
});

describe('unescapeXml', () => {
  it.each([
    ['&lt;a&gt; &amp; &quot;b&quot; &apos;c&apos;', `<a> & "b" 'c'`],
    ['line&#xA;next&#10;end', 'line\nnext\nend'],
    ['&unknown; stays', '&unknown; stays'],
  ])('%s', (input, want) => expect(unescapeXml(input)).toBe(want));
});

describe('summarize', () => {
  const tc = (text: string, status: TestCase['status'], node = 'It'): TestCase => ({ node, text, status, seconds: 1 });
  const rows: Array<[string, TestCase[], string | undefined, Omit<Summary, 'failures' | 'setupFailures'>, number]> = [
    [
      'the sample report: unfocused sig-network left out',
      parseJUnit(JUNIT),
      undefined,
      { passed: 1, failed: 2, skipped: 1 },
      0,
    ],
    [
      'every failing state counts as failed',
      (['failed', 'timedout', 'interrupted', 'aborted', 'panicked'] as const).map((s) =>
        tc(`[sig-apps] x ${s} [Conformance]`, s),
      ),
      undefined,
      { passed: 0, failed: 5, skipped: 0 },
      0,
    ],
    [
      'pending counts as skipped; not-conformance specs are left out',
      [
        tc('[sig-apps] a [Conformance]', 'pending'),
        tc('[sig-apps] b', 'passed'),
        tc('[sig-api-machinery] c [Conformance]', 'passed'),
      ],
      undefined,
      { passed: 1, failed: 0, skipped: 1 },
      0,
    ],
    [
      'the skip regexp leaves specs out',
      [tc('[sig-apps] a [Serial] [Conformance]', 'failed'), tc('[sig-apps] b [Conformance]', 'passed')],
      String.raw`\[Serial\]`,
      { passed: 1, failed: 0, skipped: 0 },
      0,
    ],
    [
      'a failed suite setup node is reported apart',
      [tc('', 'failed', 'SynchronizedBeforeSuite'), tc('[sig-apps] a [Conformance]', 'skipped')],
      undefined,
      { passed: 0, failed: 0, skipped: 1 },
      1,
    ],
  ];
  it.each(rows)('%s', (_, cases, skip, counts, setupFailures) => {
    const s = summarize(cases, CONFORMANCE_FOCUS, skip);
    expect({ passed: s.passed, failed: s.failed, skipped: s.skipped }).toEqual(counts);
    expect(s.failures.length).toBe(counts.failed);
    expect(s.setupFailures.length).toBe(setupFailures);
  });

  it('lists each failure with its text, state and message', () => {
    expect(
      summarize(parseJUnit(JUNIT), CONFORMANCE_FOCUS).failures.map((f) => [f.status, f.text.slice(0, 26)]),
    ).toEqual([
      ['failed', '[sig-api-machinery] Watche'],
      ['timedout', '[sig-apps] StatefulSet Bas'],
    ]);
  });
});

describe('summaryLine', () => {
  const base: Summary = { passed: 80, failed: 3, skipped: 2, failures: [], setupFailures: [] };
  it.each([
    [base, 61.4, 'conformance: 80 passed, 3 failed, 2 skipped in 1m01s'],
    [base, 59.6, 'conformance: 80 passed, 3 failed, 2 skipped in 1m00s'],
    [
      { ...base, setupFailures: [{ node: 'SynchronizedBeforeSuite', status: 'failed' as const }] },
      3,
      'conformance: 80 passed, 3 failed, 2 skipped in 0m03s, suite setup failed (SynchronizedBeforeSuite)',
    ],
  ])('%#', (s, seconds, want) => expect(summaryLine(s, seconds)).toBe(want));
});

describe('e2eCommand', () => {
  const run: E2eRun = {
    binDir: '/c',
    kubeconfig: '/r/tenant.kubeconfig',
    kubectl: '/t/kubectl',
    reportDir: '/r',
    focus: 'F',
    procs: 1,
    timeout: '3h',
  };
  const suite = [
    '--provider=skeleton',
    '--kubeconfig=/r/tenant.kubeconfig',
    '--kubectl-path=/t/kubectl',
    '--report-dir=/r',
    '--non-blocking-taints=node-role.kubernetes.io/control-plane,vc.tenancy.x-k8s.io/real-node',
  ];
  it.each([
    [
      'one process: e2e.test with --ginkgo.* flags',
      run,
      {
        command: '/c/e2e.test',
        args: [
          '--ginkgo.focus=F',
          '--ginkgo.timeout=3h',
          '--ginkgo.no-color',
          '--ginkgo.silence-skips',
          '--ginkgo.json-report=/r/report.json',
          ...suite,
        ],
      },
    ],
    [
      'one process with a skip',
      { ...run, skip: 'S' },
      {
        command: '/c/e2e.test',
        args: [
          '--ginkgo.focus=F',
          '--ginkgo.skip=S',
          '--ginkgo.timeout=3h',
          '--ginkgo.no-color',
          '--ginkgo.silence-skips',
          '--ginkgo.json-report=/r/report.json',
          ...suite,
        ],
      },
    ],
    [
      'several processes: the Ginkgo CLI, the suite flags after --',
      { ...run, procs: 4 },
      {
        command: '/c/ginkgo',
        args: [
          '--procs=4',
          '--focus=F',
          '--timeout=3h',
          '--no-color',
          '--silence-skips',
          '--json-report=/r/report.json',
          '/c/e2e.test',
          '--',
          ...suite,
        ],
      },
    ],
  ])('%s', (_, r, want) => expect(e2eCommand(r)).toEqual(want));

  it.each([
    [{ ...run, procs: 0 }, '--procs 0: must be a whole number >= 1'],
    [{ ...run, procs: 1.5 }, '--procs 1.5: must be a whole number >= 1'],
    [{ ...run, focus: '' }, '--focus: must not be empty'],
  ])('refuses %j', (r, msg) => expect(() => e2eCommand(r)).toThrow(msg));
});
