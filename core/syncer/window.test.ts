import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import { SchedulingWindow, waitsForScheduler } from './window.ts';

/** superPod is a super Pod of tenant `tenant` in its super namespace, as the syncer creates it. */
function superPod(
  tenant: string,
  name: string,
  o: { nodeName?: string; phase?: string; unschedulable?: boolean } = {},
) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      namespace: `${tenant}-default`,
      name,
      labels: { [LABEL.managedBy]: MANAGER },
      annotations: { [ANN.cluster]: tenant, [ANN.namespace]: 'default', [ANN.name]: name },
    },
    spec: { ...(o.nodeName && { nodeName: o.nodeName }) },
    status: {
      ...(o.phase && { phase: o.phase }),
      ...(o.unschedulable && { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] }),
    },
  } as KubeObject;
}

function newWindow(size: number, now = () => 0) {
  const woken: string[] = [];
  const w = new SchedulingWindow({ size, wake: (k) => woken.push(k), now });
  return { w, woken, pods: w.podHandler() };
}

describe('waitsForScheduler', () => {
  it.each([
    { name: 'a new Pod', o: {}, want: true },
    { name: 'a bound Pod', o: { nodeName: 'n1' }, want: false },
    { name: 'an unschedulable Pod (in the backoff, ahead of nobody)', o: { unschedulable: true }, want: false },
    { name: 'a Pod that ended unbound', o: { phase: 'Failed' }, want: false },
    { name: 'a Pending Pod', o: { phase: 'Pending' }, want: true },
  ])('$name: $want', ({ o, want }) => {
    expect(waitsForScheduler(superPod('t', 'p', o))).toBe(want);
  });

  it('a Pod being deleted does not wait', () => {
    const p = superPod('t', 'p');
    p.metadata!.deletionTimestamp = '2026-11-27T00:00:00Z';
    expect(waitsForScheduler(p)).toBe(false);
  });
});

describe('SchedulingWindow', () => {
  it('lets `size` Pods of a tenant wait for the scheduler, parks the next keys, and does not hold back another tenant', () => {
    const { w } = newWindow(2);
    expect(w.reserve('a', 'a-default/p0', 'a/pods/default/p0')).toBe(true);
    expect(w.reserve('a', 'a-default/p1', 'a/pods/default/p1')).toBe(true);
    expect(w.reserve('a', 'a-default/p2', 'a/pods/default/p2')).toBe(false);
    expect(w.reserve('a', 'a-default/p3', 'a/pods/default/p3')).toBe(false);
    expect(w.reserve('b', 'b-default/q0', 'b/pods/default/q0')).toBe(true);
    expect([w.waitingOf('a'), w.parkedOf('a'), w.waitingOf('b')]).toEqual([2, 2, 1]);
    // the same Pod planned again (a retried create) keeps its place
    expect(w.reserve('a', 'a-default/p0', 'a/pods/default/p0')).toBe(true);
    expect(w.waitingOf('a')).toBe(2);
  });

  it('parkIfFull parks a key without counting it only when the tenant has no place for its Pod', () => {
    const { w, woken, pods } = newWindow(1);
    expect(w.parkIfFull('a', 'a-default/p0', 'a/pods/default/p0')).toBe(false);
    expect(w.reserve('a', 'a-default/p0', 'a/pods/default/p0')).toBe(true);
    // the Pod already counted keeps its place; another of the tenant's is parked; another tenant's is not
    expect(w.parkIfFull('a', 'a-default/p0', 'a/pods/default/p0')).toBe(false);
    expect(w.parkIfFull('a', 'a-default/p1', 'a/pods/default/p1')).toBe(true);
    expect(w.parkIfFull('b', 'b-default/q0', 'b/pods/default/q0')).toBe(false);
    expect([w.waitingOf('a'), w.parkedOf('a'), w.waitingOf('b')]).toEqual([1, 1, 0]);
    pods.onUpdate!(superPod('a', 'p0'), superPod('a', 'p0', { nodeName: 'n1' }));
    expect(woken).toEqual(['a/pods/default/p1']);
    expect(w.parkedOf('a')).toBe(0);
  });

  it.each([
    {
      event: 'bound',
      apply: (h: ReturnType<SchedulingWindow['podHandler']>) =>
        h.onUpdate!(superPod('a', 'p0'), superPod('a', 'p0', { nodeName: 'n1' })),
    },
    {
      event: 'unschedulable',
      apply: (h: ReturnType<SchedulingWindow['podHandler']>) =>
        h.onUpdate!(superPod('a', 'p0'), superPod('a', 'p0', { unschedulable: true })),
    },
    { event: 'deleted', apply: (h: ReturnType<SchedulingWindow['podHandler']>) => h.onDelete!(superPod('a', 'p0')) },
    {
      event: 'added already bound',
      apply: (h: ReturnType<SchedulingWindow['podHandler']>) => h.onAdd!(superPod('a', 'p0', { nodeName: 'n1' })),
    },
  ])('a Pod $event frees its place and wakes the oldest parked key', ({ apply }) => {
    const { w, woken, pods } = newWindow(1);
    w.reserve('a', 'a-default/p0', 'a/pods/default/p0');
    w.reserve('a', 'a-default/p1', 'a/pods/default/p1');
    w.reserve('a', 'a-default/p2', 'a/pods/default/p2');
    pods.onAdd!(superPod('a', 'p0'));
    expect(woken).toEqual([]);
    apply(pods);
    expect(woken).toEqual(['a/pods/default/p1']);
    expect([w.waitingOf('a'), w.parkedOf('a')]).toEqual([0, 1]);
    // the woken key takes the place when it runs
    expect(w.reserve('a', 'a-default/p1', 'a/pods/default/p1')).toBe(true);
  });

  it("ignores Pods that are not the syncer's, and other tenants' events free nothing of this one", () => {
    const { w, woken, pods } = newWindow(1);
    w.reserve('a', 'a-default/p0', 'a/pods/default/p0');
    w.reserve('a', 'a-default/p1', 'a/pods/default/p1');
    const stranger = superPod('a', 'p0', { nodeName: 'n1' });
    delete stranger.metadata!.labels;
    pods.onUpdate!(superPod('a', 'p0'), stranger);
    pods.onDelete!(superPod('b', 'p0'));
    expect(woken).toEqual([]);
    expect(w.waitingOf('a')).toBe(1);
  });

  it('release gives back the place of a create that failed', () => {
    const { w, woken } = newWindow(1);
    w.reserve('a', 'a-default/p0', 'a/pods/default/p0');
    w.reserve('a', 'a-default/p1', 'a/pods/default/p1');
    w.release('a', 'a-default/p0');
    expect(woken).toEqual(['a/pods/default/p1']);
  });

  it('stops counting a Pod that waited longer than staleMs, on the recheck', () => {
    let now = 0;
    const woken: string[] = [];
    const w = new SchedulingWindow({ size: 1, wake: (k) => woken.push(k), now: () => now, staleMs: 1000 });
    w.reserve('a', 'a-default/p0', 'a/pods/default/p0');
    w.reserve('a', 'a-default/p1', 'a/pods/default/p1');
    now = 999;
    w.recheck();
    expect(woken).toEqual([]);
    now = 1001;
    w.recheck();
    expect(woken).toEqual(['a/pods/default/p1']);
    w.stop();
  });

  it('forget drops a tenant: its parked keys are not woken later', () => {
    const { w, woken, pods } = newWindow(1);
    w.reserve('a', 'a-default/p0', 'a/pods/default/p0');
    w.reserve('a', 'a-default/p1', 'a/pods/default/p1');
    w.forget('a');
    pods.onDelete!(superPod('a', 'p0'));
    expect(woken).toEqual([]);
    expect([w.waitingOf('a'), w.parkedOf('a')]).toEqual([0, 0]);
    w.stop();
  });

  it('clear forgets every tenant, as a new leadership term starts from its own replay', () => {
    const { w, woken, pods } = newWindow(1);
    w.reserve('a', 'a-default/p0', 'a/pods/default/p0');
    w.reserve('a', 'a-default/p1', 'a/pods/default/p1');
    w.reserve('b', 'b-default/q0', 'b/pods/default/q0');
    w.clear();
    pods.onDelete!(superPod('a', 'p0'));
    expect(woken).toEqual([]);
    expect([w.waitingOf('a'), w.parkedOf('a'), w.waitingOf('b')]).toEqual([0, 0, 0]);
  });

  it.each([0, -1, 1.5])('refuses size %d', (size) => {
    expect(() => new SchedulingWindow({ size, wake: () => undefined })).toThrow(/size must be a positive integer/);
  });
});
