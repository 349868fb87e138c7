import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

/** outsideTests are the directories asked for outside a test, removed when the file's tests finish. */
const outsideTests = new Set<string>();

/**
 * removeDirsOutsideTests removes the directories asked for outside a test. test/tmpdir-setup.ts, a setup file of every
 * project, runs it after each file's last hook: a hook of this module's own would run after the first file only where
 * the files of a worker share their modules (the unit project), and vitest runs no afterAll that a beforeAll registers.
 */
export function removeDirsOutsideTests(): void {
  for (const d of outsideTests) rmSync(d, { recursive: true, force: true });
  outsideTests.clear();
}

/**
 * testDir makes a directory under the OS temp directory that is removed, with everything in it, when the test that
 * asked for it finishes (pass or fail); asked for outside a test (a file's top level or a beforeAll hook), when the
 * file's tests finish.
 */
export function testDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  } catch {
    outsideTests.add(dir);
  }
  return dir;
}
