import { relative } from 'node:path';
import { afterAll, expect } from 'vitest';
import { cpuSeconds, PROCESS_STATS_LABEL_ENV, recordProcessStat } from '../core/dev/local/procstats.ts';
import { fromPackageRoot } from '../core/paths.ts';

// A setup file of the integration and real-node projects, evaluated before each test file: every component that file
// starts (in this worker or in a process it spawns, which inherits the environment) is counted under its name
// (core/dev/local/procstats.ts), and after the file's last hook, the CPU time its worker used from here on, with
// every child process it reaped (the components it started and stopped, the CLIs it ran): the file's cost.
const testPath = expect.getState().testPath;
if (testPath) process.env[PROCESS_STATS_LABEL_ENV] = relative(fromPackageRoot(), testPath);
const before = cpuSeconds('self');

// Registered before the file's own hooks, this one runs after them (vitest runs afterAll hooks last first).
afterAll(() => {
  const after = cpuSeconds('self');
  if (before !== undefined && after !== undefined) recordProcessStat('test file', 'file', { cpu: after - before });
});
