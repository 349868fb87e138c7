import { describe, expect, it } from 'vitest';
import { movedKey } from './rekey.ts';

describe('movedKey', () => {
  it.each([
    ['/old/registry/pods/a', '/old', '/new', '/new/registry/pods/a'],
    ['/old/registry/pods/a', '/old/', '/new/', '/new/registry/pods/a'],
    ['/older/registry/x', '/old', '/new', undefined],
    ['/other/x', '/old', '/new', undefined],
    ['/old', '/old', '/new', undefined],
  ])('%s from %s to %s -> %s', (key, from, to, want) => expect(movedKey(key, from, to)).toBe(want));
});
