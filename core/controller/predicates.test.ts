import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { OwnStatus, statusOnly } from './predicates.ts';

const base: KubeObject = {
  metadata: { name: 'a', generation: 3, resourceVersion: '10', labels: { x: '1' }, annotations: { y: '2' } },
};
const edit = (m: Record<string, unknown>, rest: Record<string, unknown> = {}): KubeObject => ({
  ...base,
  ...rest,
  metadata: { ...base.metadata, resourceVersion: '11', ...m },
});

describe('statusOnly', () => {
  it.each<[string, KubeObject, boolean]>([
    ['a status write', edit({}, { status: { phase: 'Running' } }), true],
    ['a spec change (generation)', edit({ generation: 4 }), false],
    ['a label change', edit({ labels: { x: '2' } }), false],
    ['an annotation added', edit({ annotations: { y: '2', z: '3' } }), false],
    ['a finalizer added', edit({ finalizers: ['f'] }), false],
    ['an owner added', edit({ ownerReferences: [{ apiVersion: 'v1', kind: 'K', name: 'o', uid: 'u' }] }), false],
    ['a deletion', edit({ deletionTimestamp: '2026-01-01T00:00:00Z' }), false],
  ])('%s', (_, b, want) => {
    expect(statusOnly(base, b)).toBe(want);
  });

  it('never calls an object without a generation status-only', () => {
    const a = { metadata: { name: 'cm', resourceVersion: '1' } };
    expect(statusOnly(a, { metadata: { name: 'cm', resourceVersion: '2' } })).toBe(false);
  });
});

describe('OwnStatus', () => {
  it("tells the echo of the controller's own write from a status someone else wrote", () => {
    const own = new OwnStatus();
    expect(own.isOwn('ns/a', { phase: 'Running' })).toBe(false);
    own.remember('ns/a', { phase: 'Running', clusterNamespace: 'vc-1', conditions: [{ type: 'Ready' }] });
    // key order does not count
    expect(own.isOwn('ns/a', { clusterNamespace: 'vc-1', conditions: [{ type: 'Ready' }], phase: 'Running' })).toBe(
      true,
    );
    expect(own.isOwn('ns/a', { phase: 'Running', clusterNamespace: 'vc-2', conditions: [{ type: 'Ready' }] })).toBe(
      false,
    );
    expect(own.isOwn('ns/b', { phase: 'Running', clusterNamespace: 'vc-1', conditions: [{ type: 'Ready' }] })).toBe(
      false,
    );
    own.forget('ns/a');
    expect(own.isOwn('ns/a', { phase: 'Running', clusterNamespace: 'vc-1', conditions: [{ type: 'Ready' }] })).toBe(
      false,
    );
  });
});
