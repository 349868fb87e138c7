import { mkdirSync, writeFileSync } from 'node:fs';
import { ensureToolchain } from '../../core/toolchain/toolchain.ts';
import { removeStateDirsOnSignal } from '../statedirs.ts';
import { controlPlaneBench } from './controlplane.ts';
import { densityBench } from './density.ts';
import { faultsBench } from './faults.ts';
import { gitopsBench } from './gitops.ts';
import { installBench } from './install.ts';
import { lifecycleBench } from './lifecycle.ts';
import { patrolBench } from './patrol.ts';
import { realNodeBench } from './realnode.ts';
import { restartBench } from './restart.ts';
import { sandboxCallBench } from './sandboxcall.ts';
import { type BenchSeries, buildReport } from './report.ts';
import { slowTenantBench } from './slowtenant.ts';
import { syncerBench, syncerScaleBench } from './syncer.ts';
import { schedulerBench } from './scheduler.ts';
import { watchesBench } from './watches.ts';
import { writesBench } from './writes.ts';

/** BenchResult is what one scenario reports: headline figures (ratios where a baseline exists) and details. */
export interface BenchResult {
  name: string;
  figures: Record<string, number>;
  detail?: Record<string, unknown>;
  /** series are the raw numbers the HTML report plots (latencies and Running times per arm, p99 per tenant). */
  series?: BenchSeries;
  /** notes are lines printed under the figures: a ratio's spread over repetitions, or why it is not reported */
  notes?: string[];
}

const scenarios: Record<string, () => Promise<BenchResult>> = {
  controlplane: controlPlaneBench,
  lifecycle: lifecycleBench,
  gitops: gitopsBench,
  syncer: syncerBench,
  'syncer-scale': syncerScaleBench,
  'slow-tenant': slowTenantBench,
  scheduler: schedulerBench,
  writes: writesBench,
  patrol: patrolBench,
  restart: restartBench,
  faults: faultsBench,
  realnode: realNodeBench,
  install: installBench,
  watches: watchesBench,
  density: densityBench,
  'sandbox-call': sandboxCallBench,
};

// Scenario names; options (`--case kill-manager` of the faults scenario) are the scenarios' own.
const wanted = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && all[i - 1] !== '--case');
// Ctrl-C stops the clusters a scenario started and removes their state directories (a signal unwinds nothing).
removeStateDirsOnSignal();
await ensureToolchain();
mkdirSync('bench-results', { recursive: true });
const ran: BenchResult[] = [];
for (const [name, run] of Object.entries(scenarios)) {
  if (wanted.length && !wanted.includes(name)) continue;
  const r = await run();
  process.stdout.write(`\n== ${r.name}\n`);
  for (const [k, v] of Object.entries(r.figures)) process.stdout.write(`  ${k.padEnd(32)} ${v.toFixed(2)}\n`);
  for (const n of r.notes ?? []) process.stdout.write(`  ${n}\n`);
  writeFileSync(`bench-results/${r.name}.json`, JSON.stringify({ ...r, at: new Date().toISOString() }, null, 2) + '\n');
  ran.push(r);
}
// One HTML page with the plots of the scenarios of this run, beside their JSON.
if (ran.length) {
  const { html, plots } = await buildReport(ran);
  writeFileSync('bench-results/report.html', html);
  process.stdout.write(`\nreport: bench-results/report.html (${plots.length} plots)\n`);
}
