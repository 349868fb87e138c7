import { describe, expect, it } from 'vitest';
import {
  filterResourceMetrics,
  filterSummary,
  formatSample,
  mergeResourceMetrics,
  mergeSummary,
  parseSample,
  type TenantPods,
} from './usage.ts';

/** mine knows two Pods of tenant A: web (super uid s-web) and db, both in super namespace a-default. */
const mine: TenantPods = (ns, name, uid) => {
  if (ns !== 'a-default') return undefined;
  if (name === 'web' && (uid === undefined || uid === 's-web'))
    return { namespace: 'default', name: 'web', uid: 't-web' };
  if (name === 'db' && (uid === undefined || uid === 's-db')) return { namespace: 'default', name: 'db', uid: 't-db' };
  return undefined;
};

describe('parseSample', () => {
  it.each([
    [
      'node_cpu_usage_seconds_total 12.5 1700000000000',
      { name: 'node_cpu_usage_seconds_total', labels: [], value: '12.5', timestamp: '1700000000000' },
    ],
    ['resource_scrape_error 0', { name: 'resource_scrape_error', labels: [], value: '0' }],
    [
      'pod_cpu_usage_seconds_total{namespace="a-default",pod="web"} 1.5e-03 17',
      {
        name: 'pod_cpu_usage_seconds_total',
        labels: [
          ['namespace', 'a-default'],
          ['pod', 'web'],
        ],
        value: '1.5e-03',
        timestamp: '17',
      },
    ],
    ['x{a="q\\"uo\\\\te\\n",} +Inf', { name: 'x', labels: [['a', 'q"uo\\te\n']], value: '+Inf' }],
    [
      'x{ a="1" , b="2" } NaN',
      {
        name: 'x',
        labels: [
          ['a', '1'],
          ['b', '2'],
        ],
        value: 'NaN',
      },
    ],
  ])('reads %s', (line, want) => {
    expect(parseSample(line)).toEqual(want);
  });

  it.each([
    ['unterminated label', 'x{a="1} 2'],
    ['bad escape', 'x{a="\\t"} 2'],
    ['no value', 'x{a="1"}'],
    ['value not a number', 'x abc'],
    ['timestamp not an integer', 'x 1 1.5'],
    ['trailing field', 'x 1 2 3'],
    ['label without quotes', 'x{a=1} 2'],
    ['label name with a dash', 'x{a-b="1"} 2'],
    ['missing comma', 'x{a="1" b="2"} 2'],
    ['no name', '{a="1"} 2'],
  ])('refuses %s', (_what, line) => {
    expect(parseSample(line)).toBeUndefined();
  });

  it('writes back what it read', () => {
    const line = 'x{a="q\\"uo\\\\te\\n",b="2"} 1 17';
    expect(formatSample(parseSample(line)!)).toBe(line);
  });
});

/** KUBELET is a kubelet's /metrics/resource with Pods of tenant A (web, db), of tenant B and of the platform. */
const KUBELET = `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="a-default",pod="web"} 2 1000
container_cpu_usage_seconds_total{container="app",namespace="b-default",pod="web"} 50 1000
container_cpu_usage_seconds_total{container="coredns",namespace="kube-system",pod="coredns-1"} 9 1000
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="a-default",pod="web"} 1000 1000
container_memory_working_set_bytes{container="app",namespace="b-default",pod="web"} 99999 1000
# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="app",namespace="a-default",pod="web"} 1.7e+09 1000
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 12345 1000
# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 8e+09 1000
# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="a-default",pod="web"} 2.5 1000
pod_cpu_usage_seconds_total{namespace="a-default",pod="db"} 1.5 1000
pod_cpu_usage_seconds_total{namespace="b-default",pod="web"} 50 1000
# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="a-default",pod="web"} 3000 1000
pod_memory_working_set_bytes{namespace="a-default",pod="db"} 2000 1000
pod_memory_working_set_bytes{namespace="b-default",pod="web"} 99999 1000
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
# HELP process_start_time_seconds Start time of the process
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.6e+09
`;

/** samples returns the sample lines of a text (no comments), for comparing. */
const samples = (text: string): string[] => text.split('\n').filter((l) => l && !l.startsWith('#'));

describe('filterResourceMetrics', () => {
  it("keeps the tenant's Pods under tenant names, node totals as their sums, nothing else", () => {
    const out = mergeResourceMetrics([filterResourceMetrics(KUBELET, mine)]);
    expect(samples(out)).toEqual([
      'container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 2 1000',
      'container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 1000 1000',
      'container_start_time_seconds{container="app",namespace="default",pod="web"} 1.7e+09 1000',
      'node_cpu_usage_seconds_total 4 1000',
      'node_memory_working_set_bytes 5000 1000',
      'pod_cpu_usage_seconds_total{namespace="default",pod="web"} 2.5 1000',
      'pod_cpu_usage_seconds_total{namespace="default",pod="db"} 1.5 1000',
      'pod_memory_working_set_bytes{namespace="default",pod="web"} 3000 1000',
      'pod_memory_working_set_bytes{namespace="default",pod="db"} 2000 1000',
      'resource_scrape_error 0',
    ]);
    expect(out).toContain('# TYPE node_cpu_usage_seconds_total counter');
    expect(out).not.toMatch(/b-default|kube-system|coredns|99999|12345|8e\+09|process_start/);
  });

  it.each([
    ['another tenant', 'pod_cpu_usage_seconds_total{namespace="b-default",pod="web"} 1'],
    [
      'a super namespace of the tenant but an unknown Pod',
      'pod_cpu_usage_seconds_total{namespace="a-default",pod="x"} 1',
    ],
    ['no namespace label', 'pod_cpu_usage_seconds_total{pod="web"} 1'],
    ['no pod label', 'pod_cpu_usage_seconds_total{namespace="a-default"} 1'],
    ['a container sample without a container', 'container_cpu_usage_seconds_total{namespace="a-default",pod="web"} 1'],
    ['a family not allowed', 'container_fs_usage_bytes{container="app",namespace="a-default",pod="web"} 1'],
    ['a malformed line', 'pod_cpu_usage_seconds_total{namespace="a-default",pod="web" 1'],
    ['a labelled node series', 'node_cpu_usage_seconds_total{cpu="0"} 1'],
    ['a labelled scrape error', 'resource_scrape_error{x="1"} 1'],
  ])('drops %s', (_what, line) => {
    expect(filterResourceMetrics(`${line}\n`, mine).samples).toEqual([]);
  });

  it('drops extra labels of a kept sample: only container, namespace and pod remain', () => {
    const out = filterResourceMetrics(
      'pod_cpu_usage_seconds_total{namespace="a-default",pod="web",node="super-1",uid="s-web"} 1\n',
      mine,
    );
    expect(out.samples.map(formatSample)).toEqual(['pod_cpu_usage_seconds_total{namespace="default",pod="web"} 1']);
  });

  it('shows node totals of zero when the tenant has no Pod on the node, and no node totals the kubelet did not give', () => {
    expect(samples(mergeResourceMetrics([filterResourceMetrics(KUBELET, () => undefined)]))).toEqual([
      'node_cpu_usage_seconds_total 0 1000',
      'node_memory_working_set_bytes 0 1000',
      'resource_scrape_error 0',
    ]);
    expect(
      filterResourceMetrics('pod_cpu_usage_seconds_total{namespace="a-default",pod="web"} 1\n', mine).samples.map(
        (s) => s.name,
      ),
    ).toEqual(['pod_cpu_usage_seconds_total']);
  });

  it("withholds the node's usage when the tenant's policy says so (nodes.totals), its own Pods still shown", () => {
    const withheld = samples(mergeResourceMetrics([filterResourceMetrics(KUBELET, mine, 'withheld')]));
    const scaled = samples(mergeResourceMetrics([filterResourceMetrics(KUBELET, mine, 'scaled')]));
    expect(withheld).toEqual(scaled.filter((l) => !l.startsWith('node_')));
    expect(withheld.some((l) => l.startsWith('pod_cpu_usage_seconds_total{namespace="default",pod="web"}'))).toBe(true);
    const out = mergeResourceMetrics([filterResourceMetrics(KUBELET, mine, 'withheld')]);
    expect(out).not.toMatch(/node_/);
  });

  it('adds the node totals of several kubelets and keeps each Pod once', () => {
    const a = filterResourceMetrics(
      'node_cpu_usage_seconds_total 100 10\npod_cpu_usage_seconds_total{namespace="a-default",pod="web"} 1 10\n',
      mine,
    );
    const b = filterResourceMetrics(
      'node_cpu_usage_seconds_total 200 20\npod_cpu_usage_seconds_total{namespace="a-default",pod="db"} 2 20\n',
      mine,
    );
    expect(samples(mergeResourceMetrics([a, b]))).toEqual([
      'node_cpu_usage_seconds_total 3 20',
      'pod_cpu_usage_seconds_total{namespace="default",pod="web"} 1 10',
      'pod_cpu_usage_seconds_total{namespace="default",pod="db"} 2 20',
    ]);
  });
});

/** pod builds a summary PodStats. */
const pod = (ns: string, name: string, uid: string, cpu: number, mem: number): Record<string, unknown> => ({
  podRef: { namespace: ns, name, uid },
  startTime: '2026-01-01T00:00:00Z',
  containers: [{ name: 'app', cpu: { time: '2026-01-01T00:01:00Z', usageNanoCores: cpu } }],
  cpu: { time: '2026-01-01T00:01:00Z', usageNanoCores: cpu, usageCoreNanoSeconds: cpu * 10 },
  memory: { time: '2026-01-01T00:01:0' + String(mem % 10) + 'Z', workingSetBytes: mem, usageBytes: mem * 2 },
  network: { time: '2026-01-01T00:01:00Z', name: 'eth0', rxBytes: 1 },
  volume: [
    { name: 'data', usedBytes: 5, pvcRef: { name: 'data', namespace: ns } },
    { name: 'other', usedBytes: 5, pvcRef: { name: 'x', namespace: 'elsewhere' } },
  ],
  secretField: 'not a PodStats field',
});

const SUMMARY = {
  node: {
    nodeName: 'super-1',
    startTime: '2025-12-31T00:00:00Z',
    cpu: { usageNanoCores: 999999 },
    memory: { workingSetBytes: 999999, availableBytes: 1 },
    fs: { capacityBytes: 1 },
    network: { interfaces: [] },
    runtime: { imageFs: {} },
    systemContainers: [{ name: 'kubelet' }],
    rlimit: { maxpid: 1 },
  },
  pods: [
    pod('a-default', 'web', 's-web', 100, 1),
    pod('a-default', 'db', 's-db', 50, 2),
    pod('b-default', 'web', 's-b', 7777, 7777),
    pod('a-default', 'web', 'some-other-uid', 8888, 8888),
    { podRef: { namespace: 'a-default', name: 'db' } },
    'not an object',
  ],
};

describe('filterSummary and mergeSummary', () => {
  it("shows the tenant's Pods with tenant names and uids, and a node scaled to them", () => {
    const out = mergeSummary([filterSummary(SUMMARY, mine, 'super-1')], 'super-1');
    expect(out.node).toEqual({
      nodeName: 'super-1',
      startTime: '2025-12-31T00:00:00Z',
      cpu: { time: '2026-01-01T00:01:00Z', usageNanoCores: 150, usageCoreNanoSeconds: 1500 },
      memory: { time: '2026-01-01T00:01:02Z', workingSetBytes: 3, usageBytes: 6 },
    });
    const pods = out.pods as Array<Record<string, unknown>>;
    expect(pods.map((p) => p.podRef)).toEqual([
      { namespace: 'default', name: 'web', uid: 't-web' },
      { namespace: 'default', name: 'db', uid: 't-db' },
    ]);
    expect(pods[0]!.volume).toEqual([
      { name: 'data', usedBytes: 5, pvcRef: { name: 'data', namespace: 'default' } },
      { name: 'other', usedBytes: 5 },
    ]);
    expect(pods[0]).not.toHaveProperty('secretField');
    expect(JSON.stringify(out)).not.toMatch(/b-default|7777|8888|999999|availableBytes|kubelet|rlimit|imageFs|s-web/);
  });

  it.each([
    ['not an object', 'x'],
    ['null', null],
    ['no pods', { node: {} }],
    ['pods not a list', { pods: {} }],
  ])('answers no Pods for a summary that is %s', (_what, body) => {
    expect(filterSummary(body, mine, 'n').pods).toEqual([]);
  });

  it('merges several nodes: Pods of each, node sums over all', () => {
    const a = filterSummary({ node: { startTime: 'b' }, pods: [pod('a-default', 'web', 's-web', 1, 1)] }, mine, 'n1');
    const b = filterSummary({ node: { startTime: 'a' }, pods: [pod('a-default', 'db', 's-db', 2, 2)] }, mine, 'n2');
    const out = mergeSummary([a, b], 'n1');
    expect(out.node).toMatchObject({ nodeName: 'n1', startTime: 'a', cpu: { usageNanoCores: 3 } });
    expect((out.pods as unknown[]).length).toBe(2);
  });

  it.each([
    ['scaled', ['cpu', 'memory', 'nodeName', 'startTime']],
    ['withheld', ['nodeName', 'startTime']],
  ] as const)("the node's usage under nodes.totals %s", (totals, keys) => {
    const out = mergeSummary([filterSummary(SUMMARY, mine, 'super-1')], 'super-1', totals);
    expect(Object.keys(out.node as object).sort()).toEqual(keys);
    // the tenant's own Pods, with their usage, either way
    expect((out.pods as Array<{ podRef: { name: string } }>).map((p) => p.podRef.name)).toEqual(['web', 'db']);
  });

  it('has a node with only its name when there is nothing to sum', () => {
    expect(mergeSummary([], 'n')).toEqual({ node: { nodeName: 'n' }, pods: [] });
  });
});
