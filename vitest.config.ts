import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Unit tests (`*.test.ts` next to the code) need no server. Integration tests (`test/**/*.it.test.ts`) start real
// Kubernetes processes; they run one file at a time because this machine has two cores.
export default defineConfig({
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
    ],
  },
  test: {
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: [
            'core/**/*.test.ts',
            'plugins/**/*.test.ts',
            'gitops/**/*.test.ts',
            'schemas/**/*.test.ts',
            'test/bench/**/*.test.ts',
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
          globalSetup: ['./test/build-dist.ts'],
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 240_000,
        },
      },
    ],
  },
});
