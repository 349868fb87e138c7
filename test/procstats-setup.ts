import { relative } from 'node:path';
import { expect } from 'vitest';
import { PROCESS_STATS_LABEL_ENV } from '../core/dev/local/procstats.ts';
import { fromPackageRoot } from '../core/paths.ts';

// A setup file of the integration and real-node projects, evaluated before each test file: every component that file
// starts (in this worker or in a process it spawns, which inherits the environment) is counted under its name
// (core/dev/local/procstats.ts).
const testPath = expect.getState().testPath;
if (testPath) process.env[PROCESS_STATS_LABEL_ENV] = relative(fromPackageRoot(), testPath);
