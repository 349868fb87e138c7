/**
 * The pure parts of `npm run conformance`: the command line of the upstream e2e suite, and the JUnit report it
 * writes turned into one summary line. Unit-tested from tables in report.test.ts.
 */

/** CONFORMANCE_FOCUS selects the conformance specs of sig-api-machinery and sig-apps (Ginkgo matches spec texts). */
export const CONFORMANCE_FOCUS = String.raw`\[sig-(api-machinery|apps)\].*\[Conformance\]`;

/**
 * NON_BLOCKING_TAINTS are node taints that do not make the suite treat a node as unschedulable: upstream's default
 * and the real node's taint, which every tenant Pod of the conformance tenant tolerates (its policy forces it).
 */
export const NON_BLOCKING_TAINTS = ['node-role.kubernetes.io/control-plane', 'vc.tenancy.x-k8s.io/real-node'] as const;

/** JSON_REPORT is the file in the report directory Ginkgo writes its JSON report to (every spec's timeline). */
export const JSON_REPORT = 'report.json';

/** E2eRun is what one run of the suite needs. */
export interface E2eRun {
  /** directory of e2e.test and ginkgo */
  binDir: string;
  kubeconfig: string;
  kubectl: string;
  /** where the suite writes junit_01.xml */
  reportDir: string;
  focus: string;
  skip?: string;
  /** parallel Ginkgo processes; 1 runs e2e.test directly */
  procs: number;
  /** Ginkgo's suite timeout, e.g. "3h" */
  timeout: string;
}

/** E2eCommand is an executable and its arguments. */
export interface E2eCommand {
  command: string;
  args: string[];
}

/**
 * e2eCommand builds the command line of a run: e2e.test with --ginkgo.* flags for one process, else the Ginkgo CLI
 * running the compiled suite in `procs` processes (its own flags first, the suite's after `--`), as upstream's
 * hack/ginkgo-e2e.sh does. The provider is `skeleton`: a cluster Ginkgo knows nothing about beyond its kubeconfig.
 */
export function e2eCommand(r: E2eRun): E2eCommand {
  if (!Number.isInteger(r.procs) || r.procs < 1) throw new Error(`--procs ${r.procs}: must be a whole number >= 1`);
  if (!r.focus) throw new Error('--focus: must not be empty (it would run the whole suite)');
  const suite = [
    '--provider=skeleton',
    `--kubeconfig=${r.kubeconfig}`,
    `--kubectl-path=${r.kubectl}`,
    `--report-dir=${r.reportDir}`,
    `--non-blocking-taints=${NON_BLOCKING_TAINTS.join(',')}`,
  ];
  const ginkgo = [
    `--focus=${r.focus}`,
    ...(r.skip ? [`--skip=${r.skip}`] : []),
    `--timeout=${r.timeout}`,
    '--no-color',
    '--silence-skips',
    // every spec's timeline (its nodes and steps, timed): timeline.ts reads where the time went
    `--json-report=${r.reportDir}/${JSON_REPORT}`,
  ];
  if (r.procs === 1)
    return { command: `${r.binDir}/e2e.test`, args: [...ginkgo.map((f) => `--ginkgo.${f.slice(2)}`), ...suite] };
  return {
    command: `${r.binDir}/ginkgo`,
    args: [`--procs=${r.procs}`, ...ginkgo, `${r.binDir}/e2e.test`, '--', ...suite],
  };
}

/** SpecState is the status Ginkgo writes on a JUnit testcase. */
export const SPEC_STATES = [
  'passed',
  'skipped',
  'pending',
  'failed',
  'timedout',
  'interrupted',
  'aborted',
  'panicked',
] as const;
/** SpecState is one of SPEC_STATES. */
export type SpecState = (typeof SPEC_STATES)[number];

/** TestCase is one <testcase> of a Ginkgo JUnit report. */
export interface TestCase {
  /** the node type in brackets ("It", "SynchronizedBeforeSuite", ...) */
  node: string;
  /** the spec's full text, without the node type */
  text: string;
  status: SpecState;
  seconds: number;
  /** the failure or skip text, when there is one */
  message?: string;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** unescapeXml replaces XML entities and character references with their characters. */
export function unescapeXml(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (m, e: string) => {
    if (e.startsWith('#x')) return String.fromCodePoint(parseInt(e.slice(2), 16));
    if (e.startsWith('#')) return String.fromCodePoint(parseInt(e.slice(1), 10));
    return ENTITIES[e] ?? m;
  });
}

function attrs(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([\w:-]+)="([^"]*)"/g)) out[m[1]!] = unescapeXml(m[2]!);
  return out;
}

/**
 * parseJUnit reads the testcases of a JUnit report as Ginkgo v2 writes it (testcase attributes name, status, time;
 * a <failure>, <error> or <skipped> child). It throws, naming the testcase, on a status it does not know.
 */
export function parseJUnit(xml: string): TestCase[] {
  const out: TestCase[] = [];
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const a = attrs(m[1]!);
    const name = a.name ?? '';
    const status = a.status as SpecState;
    if (!SPEC_STATES.includes(status)) throw new Error(`JUnit testcase "${name}": unknown status "${a.status}"`);
    const nm = /^\[([^\]]+)\]\s*([\s\S]*)$/.exec(name);
    const body = m[3] ?? '';
    const child = /<(failure|error|skipped)\b([^>]*?)(\/>|>([\s\S]*?)<\/\1>)/.exec(body);
    let message: string | undefined;
    if (child) {
      const ca = attrs(child[2]!);
      const text = unescapeXml(child[4] ?? '').trim();
      message = ca.message || text || undefined;
    }
    out.push({
      node: nm ? nm[1]! : '',
      text: nm ? nm[2]! : name,
      status,
      seconds: Number(a.time ?? 0),
      ...(message ? { message } : {}),
    });
  }
  return out;
}

/** Summary counts the focused specs of a run by outcome. */
export interface Summary {
  passed: number;
  failed: number;
  skipped: number;
  /** the focused specs that did not pass or skip, by full text */
  failures: Array<{ text: string; status: SpecState; message?: string }>;
  /** suite setup or teardown nodes (BeforeSuite, ReportAfterSuite, ...) that failed */
  setupFailures: Array<{ node: string; status: SpecState; message?: string }>;
}

const FAILED: readonly SpecState[] = ['failed', 'timedout', 'interrupted', 'aborted', 'panicked'];

/**
 * summarize counts the It specs whose text matches focus (and not skip): Ginkgo reports every spec of the suite,
 * those left out by the focus as skipped too, so they are not counted. Skipped means skipped at run time (a spec that
 * does not apply to this cluster) or pending.
 */
export function summarize(cases: readonly TestCase[], focus: string, skip?: string): Summary {
  const f = new RegExp(focus);
  const s = skip ? new RegExp(skip) : undefined;
  const sum: Summary = { passed: 0, failed: 0, skipped: 0, failures: [], setupFailures: [] };
  for (const c of cases) {
    if (c.node !== 'It') {
      if (FAILED.includes(c.status)) sum.setupFailures.push({ node: c.node, status: c.status, message: c.message });
      continue;
    }
    if (!f.test(c.text) || s?.test(c.text)) continue;
    if (c.status === 'passed') sum.passed++;
    else if (c.status === 'skipped' || c.status === 'pending') sum.skipped++;
    else {
      sum.failed++;
      sum.failures.push({ text: c.text, status: c.status, message: c.message });
    }
  }
  return sum;
}

/** summaryLine is the one line a run ends with. */
export function summaryLine(s: Summary, seconds: number): string {
  const t = Math.round(seconds);
  const setup = s.setupFailures.length ? `, suite setup failed (${s.setupFailures.map((x) => x.node).join(', ')})` : '';
  return `conformance: ${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped in ${Math.floor(t / 60)}m${String(t % 60).padStart(2, '0')}s${setup}`;
}
