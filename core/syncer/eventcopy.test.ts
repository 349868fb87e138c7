import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import { FakeClock } from '../queue/clock.ts';
import { FairQueue } from '../queue/fairqueue.ts';
import { MapCache, testContext, testTenant } from '../plugins/testing.ts';
import events, { INVOLVED_WAIT } from '../../plugins/events/index.ts';
import { planKey, type PlanHost } from './plan.ts';
import { makeKey, parseKey } from './routing.ts';

/**
 * A super event and its involved super Pod reach the syncer on two separate watches, in either order. These tables
 * replay both orders through the planner and a fair queue on a fake clock, as the syncer's workers do (a plan's
 * requeueAfterMs is the reconcile's requeueAfter), with nothing but the event's own key ever enqueued: the events
 * plugin watches no Pods, so an event planned before its Pod arrived must ask to be planned again itself. Before
 * that, such an event was planned once, found no Pod, and its copy was lost for good (restart.it saw the next
 * leader write them).
 */

const tenant = testTenant();
const other = testTenant({ key: 'team-b-4d5e6f-prod', vcName: 'prod', vcNamespace: 'team-b' });
const SNS = testContext({ tenant }).names.superNamespace('default');
const T0 = Date.parse('2026-01-01T00:00:00Z');
const host: PlanHost = { mutatorsOf: () => [], enabledFor: () => true };

const superPod = (uid: string, owner = tenant.key, tenantUid = `tenant-${uid}`): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web',
    namespace: SNS,
    uid,
    labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: owner },
    annotations: { [ANN.cluster]: owner, [ANN.namespace]: 'default', [ANN.name]: 'web', [ANN.uid]: tenantUid },
  },
});

const superEvent = (podUid: string, seenAt: number): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name: 'web.17a3', namespace: SNS, uid: 'ev-uid', creationTimestamp: new Date(seenAt).toISOString() },
  involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: SNS, name: 'web', uid: podUid },
  // Not Scheduled: the events plugin does not copy that one (the Binding says it on the tenant Pod).
  reason: 'Pulled',
  message: 'Successfully pulled image "nginx"',
  type: 'Normal',
});

interface Row {
  name: string;
  /** how old the event is when it is first planned */
  ageMs: number;
  /** the super Pods in the cache from the start */
  before: KubeObject[];
  /** the super Pods in the cache from `at` ms after the first plan on */
  after?: { at: number; pods: KubeObject[] };
  /** the involved Pod uid of the event */
  podUid: string;
  /** the tenant Pod uid the copy names, or undefined when nothing may be copied */
  copiedFor?: string;
  /** plans of the key, at most */
  maxPlans: number;
  /** the key no longer asks to be requeued within this many ms after its first plan */
  quietWithinMs: number;
}

const rows: Row[] = [
  {
    name: 'the Pod is in the cache first: copied at the first plan',
    ageMs: 0,
    before: [superPod('p1')],
    podUid: 'p1',
    copiedFor: 'tenant-p1',
    maxPlans: 1,
    quietWithinMs: 0,
  },
  {
    name: 'the event comes 50 ms before its Pod: copied at the next plan',
    ageMs: 0,
    before: [],
    after: { at: 50, pods: [superPod('p1')] },
    podUid: 'p1',
    copiedFor: 'tenant-p1',
    maxPlans: 2,
    quietWithinMs: 1000,
  },
  {
    name: 'the Pod watch lags 20 s behind: copied, the delays doubling up to their cap',
    ageMs: 0,
    before: [],
    after: { at: 20_000, pods: [superPod('p1')] },
    podUid: 'p1',
    copiedFor: 'tenant-p1',
    maxPlans: 10,
    quietWithinMs: 30_000,
  },
  {
    name: 'the cache holds the earlier Pod of that name until the new one arrives: copied for the new one',
    ageMs: 0,
    before: [superPod('p1')],
    after: { at: 700, pods: [superPod('p2')] },
    podUid: 'p2',
    copiedFor: 'tenant-p2',
    maxPlans: 4,
    quietWithinMs: 2000,
  },
  {
    name: 'the Pod never arrives (deleted, or not written by the syncer): the requeues stop after the wait',
    ageMs: 0,
    before: [],
    podUid: 'p1',
    maxPlans: 15,
    quietWithinMs: INVOLVED_WAIT.giveUpMs + INVOLVED_WAIT.maxMs,
  },
  {
    name: 'an old event replayed after a restart whose Pod is gone: planned once, no requeue',
    ageMs: INVOLVED_WAIT.giveUpMs + 1,
    before: [],
    podUid: 'p1',
    maxPlans: 1,
    quietWithinMs: 0,
  },
  {
    name: "the Pod that arrives is another tenant's: never copied, and no requeue once it is seen",
    ageMs: 0,
    before: [],
    after: { at: 300, pods: [superPod('p1', other.key)] },
    podUid: 'p1',
    maxPlans: 3,
    quietWithinMs: 1000,
  },
];

/** replay plans the event's key as the syncer's workers would until the queue is empty and no delay is pending. */
async function replay(row: Row): Promise<{ copies: KubeObject[]; plans: number[] }> {
  const clock = new FakeClock(T0);
  const queue = new FairQueue({ clock });
  const pods: KubeObject[] = [...row.before];
  const superEvents = [superEvent(row.podUid, T0 - row.ageMs)];
  const superCache = new MapCache([
    [R.pods, pods],
    [R.services, []],
    [R.events, superEvents],
  ]);
  const copies: KubeObject[] = [];
  const tenantCache = new MapCache([[R.events, copies]]);
  const key = makeKey(tenant.key, 'events', 'default', 'web.17a3');
  const plans: number[] = [];
  queue.add(key);
  for (let step = 0; step < 10_000; step++) {
    while (queue.len() > 0) {
      const k = (await queue.get())!;
      const ctx = testContext({ tenant, superCache, tenantCache, now: new Date(clock.now()) });
      const out = planKey(host, events, ctx, parseKey(k));
      plans.push(clock.now() - T0);
      for (const s of out.steps) if (s.op === 'createTenant') copies.push(s.obj);
      queue.done(k);
      if (out.requeueAfterMs !== undefined) queue.addAfter(k, out.requeueAfterMs);
    }
    if (clock.pending() === 0) break;
    clock.step(10);
    if (row.after && clock.now() - T0 >= row.after.at && pods[0] !== row.after.pods[0])
      pods.splice(0, pods.length, ...row.after.pods);
  }
  return { copies, plans };
}

describe('an event and its Pod in either order', () => {
  it.each(rows)('$name', async (row) => {
    const { copies, plans } = await replay(row);
    expect(copies.map((c) => (c as { involvedObject?: { uid?: string } }).involvedObject?.uid)).toEqual(
      row.copiedFor ? [row.copiedFor] : [],
    );
    expect(plans.length).toBeLessThanOrEqual(row.maxPlans);
    expect(plans.at(-1)).toBeLessThanOrEqual(row.quietWithinMs);
  });

  it('no delay is shorter than INVOLVED_WAIT.firstMs, so a waiting event never spins', async () => {
    const { plans } = await replay(rows[4]!);
    const gaps = plans.slice(1).map((t, i) => t - plans[i]!);
    expect(gaps.length).toBeGreaterThan(5);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(INVOLVED_WAIT.firstMs);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(INVOLVED_WAIT.maxMs + 10);
  });
});
