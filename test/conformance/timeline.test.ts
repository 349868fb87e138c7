import { describe, expect, it } from 'vitest';
import {
  type GinkgoEvent,
  type GinkgoSpec,
  readGinkgoReport,
  specText,
  stepName,
  stepsOf,
  stepTimes,
  STEPS_KEPT,
} from './timeline.ts';

const T0 = Date.parse('2026-11-30T00:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const by = (s: number, Message: string): GinkgoEvent => ({
  SpecEventType: 'By',
  Message,
  TimelineLocation: { Time: at(s) },
});
const node = (s: number, NodeType: string, Message = ''): GinkgoEvent => ({
  SpecEventType: 'Node',
  NodeType,
  Message,
  TimelineLocation: { Time: at(s) },
});
const nodeEnd = (s: number, NodeType: string): GinkgoEvent => ({
  SpecEventType: 'Node (End)',
  NodeType,
  TimelineLocation: { Time: at(s) },
});

/** spec is a passed It of `sig` whose events are given, from second 0 to `end`. */
const spec = (sig: string, leaf: string, end: number, events: GinkgoEvent[], State = 'passed'): GinkgoSpec => ({
  ContainerHierarchyTexts: [`[sig-${sig}] Things`],
  LeafNodeText: leaf,
  LeafNodeType: 'It',
  State,
  StartTime: at(0),
  EndTime: at(end),
  SpecEvents: events,
});

describe('stepName', () => {
  it.each([
    ['Creating pod pod-service-account-9c8f0f42-8c7d-439c-9bc3-8a6fc6313dc3', 'Creating pod pod-service-account-<uid>'],
    ['Waiting up to 5m0s for pod "x-17"', 'Waiting up to NmNs for pod "x-N"'],
    ['  two   spaces ', 'two spaces'],
  ])('%s', (s, want) => expect(stepName(s)).toBe(want));
});

describe('stepsOf', () => {
  it('charges the time from each event to the next to the first, from the spec start to its end', () => {
    const s = spec('auth', 'mounts', 10, [
      node(1, 'BeforeEach', 'set up framework'),
      by(2, 'Creating a kubernetes client'),
      nodeEnd(3, 'BeforeEach'),
      node(3, 'It'),
      by(4, 'Creating pod pod-1'),
      by(9, 'reading the token'),
    ]);
    expect(Object.fromEntries(stepsOf(s))).toEqual({
      '(spec start)': 1,
      '[BeforeEach] set up framework': 1,
      'Creating a kubernetes client': 1,
      '[It]': 1,
      'Creating pod pod-N': 5,
      'reading the token': 1,
    });
  });

  it('adds up a step that occurs twice and ignores events without a time', () => {
    const s = spec('auth', 'twice', 4, [
      by(0, 'poll 1'),
      { SpecEventType: 'By', Message: 'no time' },
      by(1, 'other'),
      by(2, 'poll 2'),
    ]);
    expect(Object.fromEntries(stepsOf(s))).toEqual({ 'poll N': 3, other: 1 });
  });
});

describe('stepTimes', () => {
  const tenant = [
    spec('auth', 'a', 20, [by(0, 'Creating pod'), by(18, 'reading')]),
    spec('auth', 'b', 5, [by(0, 'Creating pod'), by(4, 'reading')]),
    spec('auth', 'failed on the tenant', 50, [by(0, 'Creating pod')], 'failed'),
    spec('node', 'only here', 9, [by(0, 'x')]),
  ];
  const sup = [
    spec('auth', 'a', 4, [by(0, 'Creating pod'), by(3, 'reading')]),
    spec('auth', 'b', 3, [by(0, 'Creating pod'), by(2, 'reading')]),
    spec('auth', 'failed on the tenant', 4, [by(0, 'Creating pod')]),
  ];
  const got = stepTimes(tenant, sup);

  it('sums each step over the specs that passed on both sides, per SIG, the largest excess first', () => {
    expect([...got.keys()]).toEqual(['auth']);
    expect(got.get('auth')).toEqual([
      { step: 'Creating pod', specs: 2, tenant: 22, super: 5 },
      { step: 'reading', specs: 2, tenant: 3, super: 2 },
    ]);
  });

  it(`keeps ${STEPS_KEPT} steps per SIG`, () => {
    const many = Array.from({ length: 8 }, (_, i) => by(i, `step ${'abcdefgh'[i]}`));
    const x = stepTimes([spec('cli', 'k', 8, many)], [spec('cli', 'k', 0.5, many.slice(0, 1))]);
    expect(x.get('cli')).toHaveLength(STEPS_KEPT);
  });
});

describe('readGinkgoReport', () => {
  it('reads the spec reports of every suite report', () => {
    const s = spec('auth', 'a', 1, []);
    expect(readGinkgoReport(JSON.stringify([{ SpecReports: [s] }, { SpecReports: null }]))).toEqual([s]);
    expect(specText(s)).toBe('[sig-auth] Things a');
  });
  it('refuses what is not a list', () => expect(() => readGinkgoReport('{}')).toThrow(/list of suite reports/));
});
