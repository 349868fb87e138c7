import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { VITEST_CACHE_ENV } from './test/totals.ts';

// Unit tests (`*.test.ts` next to the code) need no server. Integration tests (`test/**/*.it.test.ts`) start real
// Kubernetes processes on free loopback ports and wait on them most of the time, so two files run at once after the
// unit tests. Files that start real nodes change the host (bridges, iptables, sysctls, cgroups) and run one at a time,
// so two real nodes never sweep each other's host state: in one vitest run after the integration files; under
// `npm test` (test/run.ts) in a vitest run of their own beside the integration files, which touch no host state.
// Integration files that start real nodes (directly or through `vc up`, whose default starts one when the host allows).
const REAL_NODE_FILES = ['test/realnode/**/*.it.test.ts', 'test/security/workload.it.test.ts'];
// Integration files that take minutes, mostly waiting out timers of their own (certificates of two minutes, a snapshot
// schedule and a retention grace, idle timeouts) with well under half a core busy: under `npm test` they run in a
// vitest run of their own, one at a time, beside the integration and real-node runs, instead of each holding one of the
// integration run's two workers for minutes (docs/benchmarks.md#build-and-test-times).
const WAITING_FILES = [
  'test/integration/certrenewal.it.test.ts',
  'test/integration/retained.it.test.ts',
  'test/integration/sleep.it.test.ts',
];

// A test or hook of the three projects below waits on real processes, so its timeout has to outlast a busy two-core host
// (a whole `npm test` keeps both cores busy for an hour, and a kube-apiserver then takes a minute or more to become
// ready; its own start gives up after four: core/dev/local/controlplane.ts APISERVER_READY_MS). The waits inside a
// test, each with its own bound and message, are what fail it; these only stop a test that hangs.
const SERVER_TEST_MS = 300_000;
const SERVER_HOOK_MS = 480_000;

export default defineConfig({
  // `npm test` gives each of its vitest runs a cache directory of its own (test/run.ts).
  cacheDir: process.env[VITEST_CACHE_ENV] || undefined,
  // Inside the repository the plugin SDK's package name means its source (as tsconfig.json "paths" does for tsc), so
  // tests need no prior build; an installed plugin package resolves it to the built dist/ like any dependency.
  resolve: {
    alias: [
      {
        find: /^@virtualcluster-ts\/plugin-sdk$/,
        replacement: fileURLToPath(new URL('./plugins/sdk/src/index.ts', import.meta.url)),
      },
      {
        find: /^@virtualcluster-ts\/plugin-sdk\/testing$/,
        replacement: fileURLToPath(new URL('./plugins/sdk/src/testing.ts', import.meta.url)),
      },
      {
        find: /^@virtualcluster-ts\/plugin-sdk\/(pods|network)$/,
        replacement: fileURLToPath(new URL('./plugins/sdk/src/', import.meta.url)) + '$1/index.ts',
      },
    ],
  },
  test: {
    // Tests keep their output readable: warnings and above, one JSON object per line, also in the processes they
    // start (which inherit the environment). LOG_LEVEL still overrides both.
    // GOGC 200: the Go components the tests start (about 280 kube-apiservers in a full run, most of their CPU spent
    // starting) collect garbage half as often: a tenant kube-apiserver took 1.98 CPU-s to become ready against 2.30
    // with Go's default 100, and 15% less CPU idle, for about 50 MiB more resident memory (docs/development.md). A
    // ClusterVersion's goGCPercent still sets a component's own (its environment comes after this one).
    env: { VC_DEFAULT_LOG_LEVEL: 'warn', LOG_FORMAT: 'json', GOGC: '200' },
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          // Unit tests are pure and restore what they change (environment variables, fake timers), so the files of one
          // worker share one module graph instead of loading it again for each file: importing was about 90 % of the
          // unit stage's time (a whole unit run: 141 s of CPU isolated, 31 s shared).
          isolate: false,
          // A pure test is never waiting on anything: its timeout only has to outlast a host at load average 20 (the
          // property tests' thousand cases took more than vitest's default 5 s there), not bound its speed.
          testTimeout: 60_000,
          setupFiles: ['./test/tmpdir-setup.ts'],
          include: [
            'core/**/*.test.ts',
            'plugins/**/*.test.ts',
            'gitops/**/*.test.ts',
            'schemas/**/*.test.ts',
            'test/*.test.ts',
            'test/bench/**/*.test.ts',
            'test/conformance/**/*.test.ts',
            'deploy/**/*.test.ts',
          ],
          exclude: ['**/*.it.test.ts', 'node_modules/**'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.it.test.ts'],
          exclude: [...REAL_NODE_FILES, ...WAITING_FILES, 'node_modules/**'],
          // dist/ first, then the super cluster the files calling sharedTestSuper share (test/sharedsuper.ts).
          globalSetup: ['./test/build-dist.ts', './test/sharedsuper-setup.ts'],
          setupFiles: ['./test/procstats-setup.ts', './test/tmpdir-setup.ts'],
          sequence: { groupOrder: 1 },
          maxWorkers: 2,
          testTimeout: SERVER_TEST_MS,
          hookTimeout: SERVER_HOOK_MS,
        },
      },
      {
        extends: true,
        test: {
          name: 'realnode',
          include: REAL_NODE_FILES,
          globalSetup: ['./test/build-dist.ts'],
          setupFiles: ['./test/procstats-setup.ts', './test/tmpdir-setup.ts'],
          sequence: { groupOrder: 2 },
          maxWorkers: 1,
          testTimeout: SERVER_TEST_MS,
          hookTimeout: SERVER_HOOK_MS,
        },
      },
      {
        extends: true,
        test: {
          name: 'waits',
          include: WAITING_FILES,
          globalSetup: ['./test/build-dist.ts'],
          setupFiles: ['./test/procstats-setup.ts', './test/tmpdir-setup.ts'],
          sequence: { groupOrder: 3 },
          maxWorkers: 1,
          testTimeout: SERVER_TEST_MS,
          hookTimeout: SERVER_HOOK_MS,
        },
      },
    ],
  },
});
