import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromPackageRoot } from '../core/paths.ts';
import { readRunTotals, TOTALS_DIR_ENV } from './totals.ts';

/**
 * run.ts is `npm test`: the checks in the order of their cost, stopping at the first that fails, so a type error or a
 * failing unit test is reported in minutes, before the Go toolchain is built. The stages:
 *   typecheck, lint, format, unit tests   no server, no Go build
 *   toolchain                             builds (or finds in its cache) what the integration tests run
 *   integration and real-node tests       real processes on loopback
 * At the end it prints how long each stage took, the slowest test files of the whole run, and one closing line
 * `tests: N passed, N failed, N skipped` over every vitest run (the reporter in summary-reporter.ts writes each run's
 * counts to a directory this script gives it).
 */

interface Stage {
  name: string;
  cmd: string;
  args: string[];
}

const TSX = ['tsx', 'core/programs/cli/main.ts'];

const STAGES: Stage[] = [
  { name: 'typecheck', cmd: 'npx', args: ['tsc', '--noEmit', '-p', '.'] },
  { name: 'lint', cmd: 'npx', args: ['eslint', '.'] },
  { name: 'format', cmd: 'npx', args: ['prettier', '--check', '.'] },
  { name: 'unit', cmd: 'npx', args: ['vitest', 'run', '--project', 'unit'] },
  { name: 'toolchain', cmd: 'npx', args: [...TSX, 'toolchain', 'build'] },
  { name: 'integration', cmd: 'npx', args: ['vitest', 'run', '--project', 'integration', '--project', 'realnode'] },
];

/** SLOWEST is how many test files the closing summary lists. */
const SLOWEST = 10;

function main(): number {
  const totalsDir = mkdtempSync(join(tmpdir(), 'vc-test-totals-'));
  const env = { ...process.env, [TOTALS_DIR_ENV]: totalsDir };
  const times: string[] = [];
  let failed: string | undefined;
  try {
    for (const s of STAGES) {
      process.stdout.write(`\n== ${s.name}: ${[s.cmd, ...s.args].join(' ')}\n`);
      const start = Date.now();
      const r = spawnSync(s.cmd, s.args, { cwd: fromPackageRoot(), env, stdio: 'inherit' });
      times.push(`${s.name} ${Math.round((Date.now() - start) / 1000)} s`);
      if (r.status !== 0) {
        failed = `${s.name} (exit ${r.status ?? r.signal})`;
        break;
      }
    }
    const totals = readRunTotals(totalsDir);
    process.stdout.write(`\nstage times: ${times.join(', ')}\n`);
    if (totals.files.length > 0) {
      process.stdout.write(`slowest test files:\n`);
      for (const f of totals.files.slice(0, SLOWEST))
        process.stdout.write(`  ${(f.ms / 1000).toFixed(1).padStart(7)} s  ${f.file}\n`);
    }
    if (failed) process.stdout.write(`stopped at: ${failed}\n`);
    // A failed stage that is not a test run (typecheck, lint, format, toolchain) counts as one failure, so the closing
    // line never reads as a clean run when the run stopped early.
    const stageFailure = failed && !/^(unit|integration) /.test(failed) ? 1 : 0;
    process.stdout.write(
      `\ntests: ${totals.passed} passed, ${totals.failed + stageFailure} failed, ${totals.skipped} skipped\n`,
    );
    return failed ? 1 : 0;
  } finally {
    rmSync(totalsDir, { recursive: true, force: true });
  }
}

process.exitCode = main();
