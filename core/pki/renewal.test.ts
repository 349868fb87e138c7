import { describe, expect, it } from 'vitest';
import { kubeletClientStep, PUBLISH_GRACE_MS } from './renewal.ts';

describe('kubeletClientStep: the two steps of the kubelet client certificate renewal', () => {
  const fp = 'a'.repeat(64);
  const old = 'b'.repeat(64);
  it.each([
    // [what, state, step]
    ['not due, nothing staged', { due: false, published: [old] }, 'none'],
    ['due, nothing staged: a renewed pair is made beside it', { due: true, published: [old] }, 'stage'],
    [
      'staged, not yet in the status: the apiserver must not present it',
      { due: true, staged: { fingerprint: fp, ageMs: 60_000 }, published: [old] },
      'wait',
    ],
    [
      'staged and published only a moment ago: the vn-agents may not have it yet',
      { due: true, staged: { fingerprint: fp, ageMs: PUBLISH_GRACE_MS - 1 }, published: [old, fp] },
      'wait',
    ],
    [
      'staged and published for the grace: given to the apiserver',
      { due: true, staged: { fingerprint: fp, ageMs: PUBLISH_GRACE_MS }, published: [old, fp] },
      'promote',
    ],
  ] as const)('%s', (_, state, step) => {
    expect(kubeletClientStep(state)).toBe(step);
  });
});
