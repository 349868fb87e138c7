import { execFileSync } from 'node:child_process';
import { fromPackageRoot } from '../core/paths.ts';

/**
 * setup (the integration project's global setup) builds dist/ before any test runs: integration tests spawn `vc`,
 * which runs the compiled JavaScript, and must run the current sources. The build is incremental (about 2 s when
 * nothing changed).
 */
export default function setup(): void {
  // Two projects (integration, realnode) share this setup in one vitest process: build once.
  if (process.env.VC_TEST_DIST_BUILT === '1') return;
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: fromPackageRoot(), stdio: 'inherit' });
  process.env.VC_TEST_DIST_BUILT = '1';
}
