import { percentile, latenciesOf, type RunFigures, type Sample, stages } from './podwatch.ts';
import type { CpuShare, InflightStats } from './procstat.ts';
import { type ArmLoad, OTHER_LOAD_BOUND, type RepRun, reportRatios, spread } from './repeat.ts';
import type { BenchSeries } from './report.ts';
import { beyondPerPod, type WriteRow, writesPerPodTotal } from './accounting.ts';

/** ArmResult is one arm's figures, its samples and what each process used meanwhile. */
export interface ArmResult extends RunFigures {
  samples: Sample[];
  cpu: Record<string, CpuShare>;
  inflight: InflightStats;
  /** the host's busy CPU and the other load (outside this run's process tree) while the arm ran */
  load: ArmLoad;
}

/** ArmRun is what one arm of one repetition leaves for the figures: its result and, for the synced arms, writes. */
export interface ArmRun {
  r: ArmResult;
  /** API writes per Pod, the tenant's own create included */
  writesPerPod?: number;
  account?: WriteRow[];
}

/** busiest names the process group that used the most CPU in an arm (host and this process aside from groups). */
export function busiest(cpu: Record<string, CpuShare>): { process: string; percentOfOneCore: number } {
  const [k, v] = Object.entries(cpu)
    .filter(([n]) => n !== 'host' && n !== 'otherOnHost')
    .sort((a, b) => b[1].cpuSeconds - a[1].cpuSeconds)[0]!;
  return { process: k, percentOfOneCore: v.percentOfOneCore };
}

/** FiguresInput is what a run of the syncer scenario hands to syncerFigures: its arms and what it recorded beside. */
export interface FiguresInput {
  runs: ReadonlyArray<RepRun<ArmRun>>;
  /** Pods per arm */
  pods: number;
  reps: number;
  /** heap and RSS per Pod of each syncer arm, `heapKBPerPodR<n>` and `rssKBPerPodR<n>` */
  memory: Record<string, number>;
  repDetail: Array<Record<string, unknown>>;
  fair: Record<string, unknown> | undefined;
  timings: Record<string, number>;
  watchStats: unknown[];
  /** the run's figures, notes and detail, which this fills */
  figures: Record<string, number>;
  notes: string[];
  detail: Record<string, unknown>;
  log: (msg: string) => void;
}

/**
 * syncerFigures turns the interleaved arms into the scenario's figures: per-arm medians over the repetitions, each
 * ratio within a repetition whose arms ran under comparable other load (ratioSpread), CPU per process group, and the
 * series the report draws.
 */
export function syncerFigures(i: FiguresInput): BenchSeries {
  const { runs, pods: N, reps: REPS, memory, repDetail, fair, timings, figures, notes, detail, log } = i;
  const valuesOf = (arm: string) => runs.filter((x) => x.arm === arm).map((x) => x.value);
  const med = (arm: string, f: (v: ArmRun) => number) => spread(valuesOf(arm).map(f)).median;
  const ratios = reportRatios(
    runs,
    {
      throughputRatio: { numerator: 'syncer', denominator: 'direct', f: (v) => v.r.podsPerSecond },
      throughputRatioSameWrites: { numerator: 'syncer', denominator: 'same-writes', f: (v) => v.r.podsPerSecond },
      p50Ratio: { numerator: 'syncer', denominator: 'direct', f: (v) => v.r.p50Ms },
      p99Ratio: { numerator: 'syncer', denominator: 'direct', f: (v) => v.r.p99Ms },
      p99RatioSameWrites: { numerator: 'syncer', denominator: 'same-writes', f: (v) => v.r.p99Ms },
    },
    figures,
    notes,
  );
  // The first syncer arm syncs into tenants with nothing synced yet (vNodes, super namespaces, ServiceAccounts and
  // tokens are made then); the later ones find those in place: their writes per Pod are the steady state.
  const accounts = valuesOf('syncer').map((v) => v.account ?? []);
  if (accounts.length) {
    const firstBeyond = beyondPerPod(accounts[0]!);
    figures.syncerWritesPerPodFirstRep = writesPerPodTotal(accounts[0]!);
    figures.syncerBeyondPerPodFirstRep = round3(firstBeyond.perPod);
    const later = accounts.slice(1);
    if (later.length) {
      figures.syncerWritesPerPodLaterReps = spread(later.map(writesPerPodTotal)).median;
      figures.syncerBeyondPerPodLaterReps = round3(spread(later.map((a) => beyondPerPod(a).perPod)).median);
    }
    notes.push(
      `syncer writes per Pod (the tenant's create aside): first repetition ${figures.syncerWritesPerPodFirstRep}, ` +
        (later.length
          ? `later repetitions (namespaces, ServiceAccounts and vNodes in place; a vNode Pods return to within its ` +
            `settle time after the repetition before deleted them is not written) median ` +
            `${figures.syncerWritesPerPodLaterReps} of which ${figures.syncerBeyondPerPodLaterReps} beyond ` +
            `1 super create, 1 Binding and 1 status`
          : 'no later repetition'),
    );
  }
  for (const n of notes) log(n);
  const directBench = valuesOf('direct').map((v) => v.r.cpu.benchProcess!.cpuSeconds);
  Object.assign(figures, {
    repetitions: REPS,
    directPodsPerSecond: med('direct', (v) => v.r.podsPerSecond),
    sameWritesPodsPerSecond: med('same-writes', (v) => v.r.podsPerSecond),
    syncerPodsPerSecond: med('syncer', (v) => v.r.podsPerSecond),
    directP50Ms: med('direct', (v) => v.r.p50Ms),
    directP99Ms: med('direct', (v) => v.r.p99Ms),
    sameWritesP50Ms: med('same-writes', (v) => v.r.p50Ms),
    sameWritesP99Ms: med('same-writes', (v) => v.r.p99Ms),
    syncerP50Ms: med('syncer', (v) => v.r.p50Ms),
    syncerP99Ms: med('syncer', (v) => v.r.p99Ms),
    directApiWritesPerPod: 1,
    sameWritesApiWritesPerPod: med('same-writes', (v) => v.writesPerPod!),
    syncerApiWritesPerPod: med('syncer', (v) => v.writesPerPod!),
    // This process's CPU in the syncer arm (the syncer, plus the bench's creates and watches), and the same minus
    // this process's CPU per Pod in the direct arm of the same repetition (the bench's creates and watches alone).
    syncerCpuMsPerPod: med('syncer', (v) => (v.r.cpu.benchProcess!.cpuSeconds * 1000) / N),
    syncerCpuMsPerPodNet: spread(
      valuesOf('syncer').map((v, k) => ((v.r.cpu.benchProcess!.cpuSeconds - directBench[k]!) * 1000) / N),
    ).median,
    syncerHeapKBPerPod: spread(
      Object.entries(memory)
        .filter(([k]) => k.startsWith('heap'))
        .map(([, v]) => v),
    ).median,
    syncerRssKBPerPod: spread(
      Object.entries(memory)
        .filter(([k]) => k.startsWith('rss'))
        .map(([, v]) => v),
    ).median,
  });
  // Which resource was the limit, per arm: CPU of each process group (% of one core, median over the repetitions; the
  // host has 2 cores, and otherOnHost is everything outside this run) and the super apiserver's peak inflight requests.
  for (const [label, arm] of [
    ['direct', 'direct'],
    ['sameWrites', 'same-writes'],
    ['syncer', 'syncer'],
  ] as const) {
    const rs = valuesOf(arm).map((v) => v.r);
    for (const proc of Object.keys(rs[0]!.cpu))
      figures[`${label}.cpu.${proc}`] = spread(rs.map((r) => r.cpu[proc]?.percentOfOneCore ?? NaN)).median;
    for (const kind of Object.keys(rs[0]!.inflight))
      figures[`${label}.superInflightPeak.${kind}`] = Math.max(...rs.map((r) => r.inflight[kind]?.peak ?? 0));
  }
  const armDetail = (r: ArmResult) => ({
    pods: r.pods,
    podsPerSecond: r.podsPerSecond,
    p50Ms: r.p50Ms,
    p99Ms: r.p99Ms,
    maxMs: r.maxMs,
    wallSeconds: r.wallSeconds,
    stagesMs: stages(r.samples),
    busiest: busiest(r.cpu),
    cpu: r.cpu,
    apiserverInflight: r.inflight,
  });
  detail.otherLoadBoundPercentOfOneCore = OTHER_LOAD_BOUND;
  detail.ratios = ratios;
  detail.runs = runs.map((x) => ({ rep: x.rep + 1, arm: x.arm, load: x.load, ...armDetail(x.value.r) }));
  detail.syncerArm = repDetail;
  detail.memory = { ...(detail.memory as object), perRepetition: memory };
  if (fair) detail.fairness = fair;
  detail.timings = timings;
  detail.watchStats = i.watchStats;
  const pooledSamples = (arm: string) => valuesOf(arm).flatMap((v) => v.r.samples);
  const startOf = (s: readonly Sample[]) => Math.min(...s.map((x) => x.t0));
  const arms = [
    ['direct', 'direct'],
    ['same writes', 'same-writes'],
    ['syncer', 'syncer'],
  ] as const;
  const series: BenchSeries = {
    latencyMs: Object.fromEntries(arms.map(([k, a]) => [k, latenciesOf(pooledSamples(a)).map(Math.round)])),
    // the last repetition's timeline of each arm
    runningAtS: Object.fromEntries(
      arms.map(([k, a]) => {
        const s = valuesOf(a).at(-1)!.r.samples;
        return [k, s.map((x) => Number(((x.running - startOf(s)) / 1000).toFixed(3)))];
      }),
    ),
  };
  if (fair) {
    const q = fair as { quietAloneMs: number[]; quietDuringFloodMs: number[] };
    series.tenantP99Ms = [
      { tenant: 'quiet', phase: 'alone', p99Ms: percentile(q.quietAloneMs, 99) },
      { tenant: 'quiet', phase: 'during flood', p99Ms: percentile(q.quietDuringFloodMs, 99) },
      { tenant: 'noisy (flood)', phase: 'during flood', p99Ms: Math.round(figures.floodP99Ms!) },
    ];
    series.latencyMs!['quiet alone'] = q.quietAloneMs;
    series.latencyMs!['quiet during flood'] = q.quietDuringFloodMs;
  }
  return series;
}

/** round3 keeps three decimals of a per-Pod figure (a difference of sums prints 0.019000000000000003 otherwise). */
function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
