import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROCESS_STATS_ENV } from '../core/dev/local/procstats.ts';
import { fromPackageRoot, packageRoot } from '../core/paths.ts';
import { processSummaryLines, readProcessSummary } from './procsummary.ts';
import { DIST_BUILT_ENV } from './build-dist.ts';
import { busyLine, cpuTimes } from './hostcpu.ts';
import { LinePrefixer } from './lineprefixer.ts';
import { failureLines, readRunTotals, TOTALS_DIR_ENV, VITEST_CACHE_ENV } from './totals.ts';

/**
 * run.ts is `npm test`: the checks in the order of their cost, stopping at the first step that fails, so a type error
 * or a failing unit test is reported in minutes, without waiting for the Go toolchain to be built. The steps:
 *   typecheck, lint, format   together (no server, no build; each one's output printed when it ends)
 *   unit tests                no server, no Go build
 *   toolchain, build          together: the Kubernetes binaries (or their cache) and dist/ (which `vc` runs); the
 *                             toolchain's build starts with the unit tests, its progress lines prefixed `[toolchain]`
 *                             as they come (on a fresh machine it takes most of an hour's budget, and the unit tests
 *                             keep a quarter of the cores busy, the static checks all of them); failed tests stop it
 *   integration, realnode,    together, three vitest runs: simulated-node files two at a time beside the real-node
 *   waits                     files one at a time, and beside both the few long files that mostly wait out timers of
 *                             their own (vitest.config.ts) one at a time (their lines prefixed with the stage's name as
 *                             they come)
 * The integration and real-node tests mostly wait on the processes they start, so running the real-node files beside
 * the integration files instead of after them shortens the run, and so does taking the files that wait on timers out
 * of the integration run's two workers (figures: docs/benchmarks.md#build-and-test-times).
 * `--from <stage>` starts at the step of that stage (e.g. `npm test -- --from integration` after the checks passed).
 * The static checks keep caches keyed by file content, so a second run checks only what changed: tsc's incremental
 * build info and prettier's cache under the user's cache directory (~/.cache/virtualcluster-ts/checks/<checkout>),
 * which outlives node_modules (`npm ci`, as CI runs, removes it), since both are exact (tsc compares every file's
 * content, the imported declarations included; prettier's result depends on one file, its options and version);
 * eslint's under node_modules/.cache/virtualcluster-ts/<checkout>, so a fresh install (CI) lints everything: a
 * type-aware rule's result can change with another file's types, which eslint's cache does not see. Removing either
 * directory is always safe.
 * At the end it prints how long each stage took, how busy the host's CPUs were over each step (bound by CPU or by
 * waits: test/hostcpu.ts), the slowest test files of the whole run with the CPU time each used, how many of each
 * Kubernetes component the tests started and how long they took to become ready (core/dev/local/procstats.ts), the
 * failed tests with their errors' first lines, and one closing line `tests: N passed, N failed, N skipped` over every
 * vitest run (the reporter in summary-reporter.ts writes each run's counts and failures to a directory this script
 * gives it).
 */

interface Stage {
  name: string;
  cmd: string;
  args: string[];
  /** beside other stages, write its lines as they come, each prefixed with the stage's name (default: at its end) */
  stream?: boolean;
  /**
   * a vitest run: it keeps its files' last durations (vitest runs the slowest first) in a directory of its own under
   * the user's cache, which outlives node_modules (`npm ci` in a fresh clone) and which no run beside it overwrites
   */
  vitest?: boolean;
  /**
   * start it with the step of this earlier stage rather than with its own (whose end still waits for it), streamed:
   * a stage that on a fresh machine takes long (the Go builds) runs beside a step that leaves the cores idle, and a
   * step that fails before its own stops it
   */
  startsWith?: string;
}

/** vitestCacheDir is where the vitest run of a stage keeps its results (vitest.config.ts reads VITEST_CACHE_ENV). */
function vitestCacheDir(stage: string): string {
  return userCache('vitest', stage);
}

/** userCache is a path under this user's cache directory for the project, which outlives any checkout. */
function userCache(...parts: string[]): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'virtualcluster-ts', ...parts);
}

const TSX = ['tsx', 'core/programs/cli/main.ts'];

/** CHECKOUT names this checkout in cache paths (node_modules and the user's cache may be shared between checkouts). */
const CHECKOUT = createHash('sha256').update(packageRoot).digest('hex').slice(0, 12);

/** CACHE is this checkout's cache directory in node_modules: gone with a fresh install. */
const CACHE = fromPackageRoot('node_modules', '.cache', 'virtualcluster-ts', CHECKOUT);

/** USER_CACHE is this checkout's cache directory in the user's cache: kept over a fresh install. */
const USER_CACHE = userCache('checks', CHECKOUT);

/** STEPS run one after another; the stages of one step run at the same time. */
const STEPS: Stage[][] = [
  [
    {
      name: 'typecheck',
      cmd: 'npx',
      args: ['tsc', '--noEmit', '-p', '.', '--incremental', '--tsBuildInfoFile', join(USER_CACHE, 'tsc.tsbuildinfo')],
    },
    // ESLint's cache does not know that a type-aware rule's result can change with another file's types: it stays in
    // node_modules, which a fresh install (CI) starts without.
    {
      name: 'lint',
      cmd: 'npx',
      args: ['eslint', '--cache', '--cache-strategy', 'content', '--cache-location', join(CACHE, 'eslint') + '/', '.'],
    },
    {
      name: 'format',
      cmd: 'npx',
      args: [
        'prettier',
        '--check',
        '--cache',
        '--cache-strategy',
        'content',
        '--cache-location',
        join(USER_CACHE, 'prettier'),
        '.',
      ],
    },
  ],
  [{ name: 'unit', cmd: 'npx', args: ['vitest', 'run', '--project', 'unit'], vitest: true }],
  // dist/ is built here, once, rather than by each vitest run's global setup (test/build-dist.ts), so that the
  // test runs below do not build it at the same time.
  [
    {
      name: 'toolchain',
      cmd: 'npx',
      args: [...TSX, 'toolchain', 'build', '--extras'],
      stream: true,
      startsWith: 'unit',
    },
    { name: 'build', cmd: 'npm', args: ['run', '--silent', 'build'] },
  ],
  [
    {
      name: 'integration',
      cmd: 'npx',
      args: ['vitest', 'run', '--project', 'integration'],
      stream: true,
      vitest: true,
    },
    { name: 'realnode', cmd: 'npx', args: ['vitest', 'run', '--project', 'realnode'], stream: true, vitest: true },
    { name: 'waits', cmd: 'npx', args: ['vitest', 'run', '--project', 'waits'], stream: true, vitest: true },
  ],
];

/** SLOWEST is how many test files the closing summary lists (slowest, and starting the most processes). */
const SLOWEST = 10;

interface StageResult {
  name: string;
  seconds: number;
  /** undefined when the stage passed; the exit code or signal otherwise */
  failure?: string;
}

/**
 * runStage runs one stage. Alone in its step, it writes to this terminal as it goes; beside others, its output is
 * collected and printed in one piece when it ends, so that the stages' lines do not interleave.
 */
function runStage(s: Stage, env: NodeJS.ProcessEnv, alone: boolean, stop?: AbortSignal): Promise<StageResult> {
  const header = `\n== ${s.name}: ${[s.cmd, ...s.args].join(' ')}\n`;
  const streamed = !alone && s.stream === true;
  if (alone || streamed) process.stdout.write(header);
  const start = Date.now();
  const stageEnv = s.vitest ? { ...env, [VITEST_CACHE_ENV]: vitestCacheDir(s.name) } : env;
  // A stage that may be stopped runs in a process group of its own, so that stopping it stops what it started (go).
  const child = spawn(s.cmd, s.args, {
    cwd: fromPackageRoot(),
    env: stageEnv,
    stdio: alone ? 'inherit' : 'pipe',
    detached: stop !== undefined,
  });
  const kill = () => {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGTERM');
    } catch {
      // the group has ended already
    }
  };
  stop?.addEventListener('abort', kill, { once: true });
  const out: Buffer[] = [];
  const prefixed = streamed ? new LinePrefixer(`[${s.name}] `) : undefined;
  const take = (b: Buffer) => (prefixed ? process.stdout.write(prefixed.push(b.toString())) : out.push(b));
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  return new Promise((resolve) => {
    const done = (failure: string | undefined) => {
      stop?.removeEventListener('abort', kill);
      const seconds = Math.round((Date.now() - start) / 1000);
      if (prefixed) process.stdout.write(prefixed.end() + `(${s.name}: ${seconds} s)\n`);
      else if (!alone) process.stdout.write(header + Buffer.concat(out).toString() + `(${s.name}: ${seconds} s)\n`);
      resolve({ name: s.name, seconds, ...(failure && { failure }) });
    };
    child.on('error', (e) => done(e.message));
    child.on('close', (code, signal) => done(code === 0 ? undefined : `exit ${code ?? signal}`));
  });
}

/** stepsFrom is STEPS from the step of the stage named by `--from <stage>` in args (all of them without it). */
function stepsFrom(args: readonly string[]): Stage[][] {
  const i = args.indexOf('--from');
  if (i < 0) return STEPS;
  const name = args[i + 1];
  const at = STEPS.findIndex((step) => step.some((s) => s.name === name));
  if (at < 0) {
    const names = STEPS.flat().map((s) => s.name);
    process.stderr.write(`--from ${name ?? '(nothing)'}: no such stage; the stages are ${names.join(', ')}\n`);
    process.exit(2);
  }
  // The test runs need dist/ built once before them (two of them building it at once would collide).
  const build = STEPS.findIndex((step) => step.some((s) => s.name === 'build'));
  const buildStage = STEPS[build]!.find((s) => s.name === 'build')!;
  return at > build ? [[buildStage], ...STEPS.slice(at)] : STEPS.slice(at);
}

async function main(): Promise<number> {
  const steps = stepsFrom(process.argv.slice(2));
  const totalsDir = mkdtempSync(join(tmpdir(), 'vc-test-totals-'));
  const statsFile = join(totalsDir, 'process-starts.jsonl');
  const env: NodeJS.ProcessEnv = { ...process.env, [TOTALS_DIR_ENV]: totalsDir, [PROCESS_STATS_ENV]: statsFile };
  mkdirSync(CACHE, { recursive: true });
  mkdirSync(USER_CACHE, { recursive: true });
  const started = Date.now();
  // A stage that starts with an earlier step (startsWith) runs in a process group of its own, which the terminal's
  // signal does not reach: Ctrl-C, or a failed step before its own, stops it.
  const stopEarly = new AbortController();
  const early = new Map<string, Promise<StageResult>>();
  const interrupted = (signal: NodeJS.Signals) => {
    stopEarly.abort();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const times: string[] = [];
  const busy: string[] = [];
  const failed: string[] = [];
  /** failed stages that are not vitest runs (typecheck, lint, format, toolchain, build), and the vitest runs that failed */
  let otherFailures = 0;
  let vitestFailures = 0;
  try {
    for (const step of steps) {
      // A test run after the build step finds dist/ current and does not build it again (test/build-dist.ts).
      if (step.some((s) => s.name === 'build')) env[DIST_BUILT_ENV] = '1';
      const names = new Set(step.map((s) => s.name));
      for (const later of steps.flat())
        if (later.startsWith && names.has(later.startsWith) && !early.has(later.name))
          early.set(later.name, runStage(later, env, false, stopEarly.signal));
      const cpuBefore = cpuTimes();
      const results = await Promise.all(step.map((s) => early.get(s.name) ?? runStage(s, env, step.length === 1)));
      const line = busyLine(step.map((s) => s.name).join(', '), cpuBefore, cpuTimes());
      if (line) busy.push(line);
      results.forEach((r, i) => {
        times.push(`${r.name} ${r.seconds} s`);
        if (!r.failure) return;
        failed.push(`${r.name} (${r.failure})`);
        if (step[i]!.vitest) vitestFailures++;
        else otherFailures++;
      });
      if (failed.length) break;
    }
    const totals = readRunTotals(totalsDir);
    const total = Math.round((Date.now() - started) / 1000);
    process.stdout.write(`\nstage times: ${times.join(', ')} (all together ${total} s)\n`);
    if (busy.length > 0) process.stdout.write(`host CPU busy over each step:\n${busy.join('\n')}\n`);
    const summary = readProcessSummary(statsFile);
    if (totals.files.length > 0) {
      // A file's CPU time against its wall time: a file far below one core's worth mostly waits.
      const cpu = new Map(summary.labels.map((l) => [l.label, l.cpu]));
      process.stdout.write(`slowest test files (wall time, CPU time of the file with all it reaped):\n`);
      for (const f of totals.files.slice(0, SLOWEST)) {
        const c = cpu.get(f.file);
        const cpuText = c === undefined ? '' : `${c.toFixed(1).padStart(7)} CPU-s`;
        process.stdout.write(`  ${(f.ms / 1000).toFixed(1).padStart(7)} s ${cpuText.padStart(13)}  ${f.file}\n`);
      }
    }
    for (const l of processSummaryLines(summary, SLOWEST)) process.stdout.write(`${l}\n`);
    // The failures come last, just above the closing line: a CI system that shows only a long log's end shows them.
    for (const l of failureLines(totals.failures)) process.stdout.write(`${l}\n`);
    if (failed.length) process.stdout.write(`stopped at: ${failed.join(', ')}\n`);
    // A failed stage that is not a test run (typecheck, lint, format, toolchain) counts as one failure, and so does a
    // failed test run whose tests all passed (vitest itself failed), so the closing line never reads as a clean run
    // when the run stopped early; a test run's own failed tests are counted once, by its reporter.
    const stageFailures = otherFailures + (totals.failed === 0 ? vitestFailures : 0);
    process.stdout.write(
      `\ntests: ${totals.passed} passed, ${totals.failed + stageFailures} failed, ${totals.skipped} skipped\n`,
    );
    return failed.length ? 1 : 0;
  } finally {
    stopEarly.abort();
    rmSync(totalsDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
