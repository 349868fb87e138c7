import { defineConfig } from 'vitest/config';

// Unit tests (`*.test.ts` next to the code) need no server. Integration tests (`test/**/*.it.test.ts`) start real
// Kubernetes processes; they run one file at a time because this machine has two cores.
export default defineConfig({
  test: {
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['core/**/*.test.ts', 'plugins/**/*.test.ts', 'gitops/**/*.test.ts', 'schemas/**/*.test.ts'],
          exclude: ['**/*.it.test.ts', 'node_modules/**'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.it.test.ts'],
          globalSetup: ['./test/build-dist.ts'],
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 240_000,
        },
      },
    ],
  },
});
