import { describe, expect, it } from 'vitest';
import type { Pod } from '@virtualcluster-ts/plugin-sdk/pods';
import { tokenWaitsForBind } from './tokennode.ts';

const pod = (nodeName?: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'default' },
  spec: { containers: [{ name: 'app', image: 'nginx:1' }], ...(nodeName !== undefined && { nodeName }) },
});

describe('tokenWaitsForBind', () => {
  it.each([
    ['a Pod of its own, not bound: waits (its token would carry no node)', pod(), false, true],
    ['a Pod of its own, nodeName empty: waits', pod(''), false, true],
    ['a Pod of its own, bound to its vNode: minted now', pod('vn-1'), false, false],
    ['a shared token, not bound: minted now (bound to the ServiceAccount alone)', pod(), true, false],
    ['a shared token, bound', pod('vn-1'), true, false],
  ])('%s', (_name, p, shared, want) => {
    expect(tokenWaitsForBind(p, { shared })).toBe(want);
  });
});
