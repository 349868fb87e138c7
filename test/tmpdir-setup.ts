import { afterAll } from 'vitest';
import { removeDirsOutsideTests } from './tmpdir.ts';

// A setup file of every project, evaluated before each test file (also where a worker's files share their modules):
// registered before the file's own hooks, this one runs after them, and removes the directories the file asked
// test/tmpdir.ts for outside a test.
afterAll(removeDirsOutsideTests);
