import { execFileSync } from 'node:child_process';
import { fromPackageRoot } from '../core/paths.ts';

/** DIST_BUILT_ENV set to 1 says dist/ was built for this run already (test/run.ts builds it before its test runs). */
export const DIST_BUILT_ENV = 'VC_TEST_DIST_BUILT';

/**
 * setup (the integration project's global setup) builds dist/ before any test runs: integration tests spawn `vc`,
 * which runs the compiled JavaScript, and must run the current sources. The build is incremental (about 2 s when
 * nothing changed).
 */
export default function setup(): void {
  // Several projects (integration, realnode, waits) share this setup in one vitest process: build once.
  if (process.env[DIST_BUILT_ENV] === '1') return;
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: fromPackageRoot(), stdio: 'inherit' });
  process.env[DIST_BUILT_ENV] = '1';
}
