import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, onTestFinished } from 'vitest';

/** outsideTests are the directories asked for outside a test, removed when the file's tests finish. */
const outsideTests = new Set<string>();

// Registered when a test file imports this module, so on that file's root suite: vitest runs no afterAll that a
// beforeAll hook registers, so a directory asked for there is removed by this one.
afterAll(() => {
  for (const d of outsideTests) rmSync(d, { recursive: true, force: true });
  outsideTests.clear();
});

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
