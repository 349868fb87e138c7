/**
 * Where a spec's time goes: Ginkgo's JSON report (report.ts JSON_REPORT) holds every spec's timeline, its setup and
 * teardown nodes and its `By` steps, each timed. The time from one event to the next is charged to the first one
 * (a step runs until the next begins), steps are named without the random parts of their text (numbers, uids), and
 * for the specs that passed on both sides the tenant's time per step is set beside the super cluster's: the steps the
 * tenant spends most beyond super say what to make faster. Unit-tested in timeline.test.ts.
 */
import { sigOf } from './sidebyside.ts';

/** GinkgoEvent is the part of one Ginkgo spec event this file reads. */
export interface GinkgoEvent {
  /** "By", "By (End)", "Node", "Node (End)", ... */
  SpecEventType?: string;
  Message?: string;
  /** for node events: "BeforeEach", "It", "AfterEach", "DeferCleanup (Each)", ... */
  NodeType?: string;
  TimelineLocation?: { Time?: string };
}

/** GinkgoSpec is the part of one Ginkgo spec report this file reads. */
export interface GinkgoSpec {
  ContainerHierarchyTexts?: string[] | null;
  LeafNodeText?: string;
  LeafNodeType?: string;
  State?: string;
  StartTime?: string;
  EndTime?: string;
  SpecEvents?: GinkgoEvent[] | null;
}

/** readGinkgoReport reads the spec reports of a Ginkgo JSON report (one report per suite). */
export function readGinkgoReport(text: string): GinkgoSpec[] {
  const suites = JSON.parse(text) as Array<{ SpecReports?: GinkgoSpec[] | null }>;
  if (!Array.isArray(suites)) throw new Error('a Ginkgo JSON report is a list of suite reports');
  return suites.flatMap((s) => s.SpecReports ?? []);
}

/** specText is a spec's full text as the JUnit report names it, without the node type. */
export const specText = (s: GinkgoSpec): string =>
  [...(s.ContainerHierarchyTexts ?? []), s.LeafNodeText ?? ''].filter(Boolean).join(' ');

/** stepName names a step without what differs between runs: uids, then any number. */
export const stepName = (s: string): string =>
  s
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uid>')
    .replace(/[0-9]+(\.[0-9]+)?/g, 'N')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 160);

const eventName = (e: GinkgoEvent): string => {
  const type = e.SpecEventType ?? '';
  if (type === 'By') return stepName(e.Message ?? '');
  if (type === 'Node') return `[${e.NodeType ?? 'node'}]${e.Message ? ` ${stepName(e.Message)}` : ''}`;
  return '(between steps)';
};

/** stepsOf charges a spec's time, from its start to its end, to its events (seconds per step name). */
export function stepsOf(spec: GinkgoSpec): Map<string, number> {
  const out = new Map<string, number>();
  const end = Date.parse(spec.EndTime ?? '');
  let at = Date.parse(spec.StartTime ?? '');
  let name = '(spec start)';
  const charge = (until: number) => {
    if (Number.isFinite(at) && Number.isFinite(until) && until > at)
      out.set(name, (out.get(name) ?? 0) + (until - at) / 1000);
  };
  for (const e of spec.SpecEvents ?? []) {
    const t = Date.parse(e.TimelineLocation?.Time ?? '');
    if (!Number.isFinite(t)) continue;
    charge(t);
    at = t;
    name = eventName(e);
  }
  charge(end);
  return out;
}

/** StepTime is one step's summed time over the specs that passed on both sides. */
export interface StepTime {
  step: string;
  /** specs it occurred in, on the tenant side */
  specs: number;
  tenant: number;
  super: number;
}

/** STEPS_KEPT is how many steps per SIG stepTimes keeps: the ones the tenant spends most beyond super. */
export const STEPS_KEPT = 5;

const passedIts = (specs: readonly GinkgoSpec[]) => {
  const out = new Map<string, GinkgoSpec>();
  for (const s of specs) if (s.LeafNodeType === 'It' && s.State === 'passed') out.set(specText(s), s);
  return out;
};

/**
 * stepTimes sums, per SIG, each step's time over the specs that passed on both sides (tenant and super), and keeps
 * the STEPS_KEPT steps with the most tenant time beyond super's, largest first.
 */
export function stepTimes(tenant: readonly GinkgoSpec[], sup: readonly GinkgoSpec[]): Map<string, StepTime[]> {
  const t = passedIts(tenant);
  const s = passedIts(sup);
  const bySig = new Map<string, Map<string, StepTime>>();
  for (const [text, ts] of t) {
    const ss = s.get(text);
    if (!ss) continue;
    const sig = sigOf(text);
    const steps = bySig.get(sig) ?? new Map<string, StepTime>();
    bySig.set(sig, steps);
    const get = (step: string) => {
      const x = steps.get(step) ?? { step, specs: 0, tenant: 0, super: 0 };
      steps.set(step, x);
      return x;
    };
    for (const [step, sec] of stepsOf(ts)) {
      const x = get(step);
      x.specs++;
      x.tenant += sec;
    }
    for (const [step, sec] of stepsOf(ss)) get(step).super += sec;
  }
  const out = new Map<string, StepTime[]>();
  for (const [sig, steps] of bySig) {
    const list = [...steps.values()].sort(
      (a, b) => b.tenant - b.super - (a.tenant - a.super) || a.step.localeCompare(b.step),
    );
    out.set(sig, list.slice(0, STEPS_KEPT));
  }
  return out;
}
