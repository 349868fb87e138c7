import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../../core/names/names.ts';
import type { Decision, RouteContext } from '../../core/plugins/contract.ts';
import { MapCache, testContext } from '../../core/plugins/testing.ts';
import plugin, { type Event, eventsPlugin, INVOLVED_WAIT, lastSeen, saidByTheObject } from './index.ts';

const ctx0 = testContext();
const KEY = ctx0.tenant.key;
const SNS = ctx0.names.superNamespace('default');

const owned = (kind: string, name: string, superUid: string, tenantUid: string, cluster = KEY): KubeObject => ({
  apiVersion: 'v1',
  kind,
  metadata: {
    name,
    namespace: SNS,
    uid: superUid,
    labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: cluster },
    annotations: { [ANN.cluster]: cluster, [ANN.namespace]: 'default', [ANN.name]: name, [ANN.uid]: tenantUid },
  },
});

const superEvent = (kind = 'Pod', name = 'web', uid = 'super-pod-uid', over: Partial<Event> = {}): Event => ({
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name: `${name}.17a3`, namespace: SNS, uid: 'super-event-uid', resourceVersion: '301' },
  involvedObject: {
    apiVersion: 'v1',
    kind,
    namespace: SNS,
    name,
    uid,
    resourceVersion: '88',
    fieldPath: 'spec.containers{app}',
  },
  reason: 'Pulled',
  message: 'Successfully pulled image "nginx:1"',
  type: 'Normal',
  count: 3,
  firstTimestamp: '2026-01-01T00:00:01Z',
  lastTimestamp: '2026-01-01T00:00:09Z',
  eventTime: null,
  source: { component: 'kubelet', host: 'node-1' },
  reportingComponent: 'kubelet',
  reportingInstance: 'node-1',
  action: 'Pull',
  series: { count: 3 },
  ...over,
});

const tenantEvent = (kind = 'Pod', name = 'web', tenantUid = 'tenant-pod-uid'): Event => ({
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name: `${name}.17a3`, namespace: 'default' },
  involvedObject: {
    apiVersion: 'v1',
    kind,
    namespace: 'default',
    name,
    uid: tenantUid,
    fieldPath: 'spec.containers{app}',
  },
  reason: 'Pulled',
  message: 'Successfully pulled image "nginx:1"',
  type: 'Normal',
  count: 3,
  firstTimestamp: '2026-01-01T00:00:01Z',
  lastTimestamp: '2026-01-01T00:00:09Z',
  eventTime: null,
  source: { component: 'kubelet', host: 'node-1' },
  reportingComponent: 'kubelet',
  reportingInstance: 'node-1',
  action: 'Pull',
});

const what = 'Pod team-a-1a2b3c-dev-default/web (uid super-pod-uid)';
const waiting = (ms: number): Decision<Event> => ({
  object: null,
  skip: { reason: 'WaitingForInvolvedObject', message: `${what} is not in the super cache yet` },
  requeueAfterMs: ms,
});
const unknown = (): Decision<Event> => ({
  object: null,
  skip: {
    reason: 'InvolvedObjectUnknown',
    message: `${what} is not in the super cache a minute after the event (deleted, or not the syncer's)`,
  },
});

interface Case {
  name: string;
  now?: Date;
  superPods?: KubeObject[];
  superServices?: KubeObject[];
  superEvent?: Event;
  tenantEvent?: Event;
  want: Decision<Event>;
}

const cases: Case[] = [
  {
    name: 'a Pod event is created in the tenant with the involved object rewritten to the tenant Pod',
    superPods: [owned('Pod', 'web', 'super-pod-uid', 'tenant-pod-uid')],
    superEvent: superEvent(),
    want: { object: tenantEvent() },
  },
  {
    name: 'a Service event is created in the tenant with the tenant Service uid',
    superServices: [owned('Service', 'db', 'super-svc-uid', 'tenant-svc-uid')],
    superEvent: superEvent('Service', 'db', 'super-svc-uid'),
    want: { object: tenantEvent('Service', 'db', 'tenant-svc-uid') },
  },
  {
    name: 'create-only: an existing tenant event is returned unchanged even when the super event changed',
    superPods: [owned('Pod', 'web', 'super-pod-uid', 'tenant-pod-uid')],
    superEvent: superEvent('Pod', 'web', 'super-pod-uid', { count: 9, lastTimestamp: '2026-01-01T00:05:00Z' }),
    tenantEvent: tenantEvent(),
    want: { object: tenantEvent() },
  },
  {
    name: 'the involved super Pod is not in the cache yet: no event now, planned again soon',
    superEvent: superEvent(),
    want: waiting(INVOLVED_WAIT.firstMs),
  },
  {
    name: 'the event was last seen 3 s ago and its Pod is not in the cache: planned again after 3 s',
    superEvent: superEvent(),
    now: new Date('2026-01-01T00:00:12Z'),
    want: waiting(3000),
  },
  {
    name: 'the event was last seen 50 s ago and its Pod is not in the cache: the delay is capped',
    superEvent: superEvent(),
    now: new Date('2026-01-01T00:00:59Z'),
    want: waiting(INVOLVED_WAIT.maxMs),
  },
  {
    name: 'the event was last seen over a minute ago and its Pod is not in the cache: no event, no requeue',
    superEvent: superEvent(),
    now: new Date('2026-01-01T00:01:10Z'),
    want: unknown(),
  },
  {
    name: 'an event that gives no time at all and whose Pod is not in the cache: no requeue',
    superEvent: superEvent('Pod', 'web', 'super-pod-uid', { lastTimestamp: undefined, firstTimestamp: undefined }),
    want: unknown(),
  },
  {
    name: 'the involved super Pod is another tenant’s: no event, no requeue',
    superPods: [owned('Pod', 'web', 'super-pod-uid', 'tenant-pod-uid', 'team-b-4d5e6f-prod')],
    superEvent: superEvent(),
    want: { object: null },
  },
  {
    name: 'the involved super Pod is not the syncer’s (no provenance): no event, no requeue',
    superPods: [{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: SNS, uid: 'super-pod-uid' } }],
    superEvent: superEvent(),
    want: { object: null },
  },
  {
    name: 'the cache holds another super Pod of the same name: the event waits for its own',
    superPods: [owned('Pod', 'web', 'super-pod-uid-2', 'tenant-pod-uid-2')],
    superEvent: superEvent(),
    want: waiting(INVOLVED_WAIT.firstMs),
  },
  {
    name: 'an old event about an earlier super Pod of the same name: no event, no requeue',
    superPods: [owned('Pod', 'web', 'super-pod-uid-2', 'tenant-pod-uid-2')],
    superEvent: superEvent(),
    now: new Date('2026-01-01T00:05:00Z'),
    want: unknown(),
  },
  {
    name: 'the super event is gone and no tenant event exists: nothing',
    want: { object: null },
  },
  {
    name: "the scheduler's Scheduled on a Pod is not copied: the Binding gave the tenant Pod its node and PodScheduled",
    superPods: [owned('Pod', 'web', 'super-pod-uid', 'tenant-pod-uid')],
    superEvent: superEvent('Pod', 'web', 'super-pod-uid', { reason: 'Scheduled', source: { component: 'scheduler' } }),
    want: { object: null },
  },
  {
    name: 'a Scheduled copy made before is kept as it is (create-only; the syncer deletes no tenant event)',
    superPods: [owned('Pod', 'web', 'super-pod-uid', 'tenant-pod-uid')],
    superEvent: superEvent('Pod', 'web', 'super-pod-uid', { reason: 'Scheduled' }),
    tenantEvent: { ...tenantEvent(), reason: 'Scheduled' },
    want: { object: { ...tenantEvent(), reason: 'Scheduled' } },
  },
  {
    name: 'a reason Scheduled on a Service is copied: only a Pod says it in its own fields',
    superServices: [owned('Service', 'db', 'super-svc-uid', 'tenant-svc-uid')],
    superEvent: superEvent('Service', 'db', 'super-svc-uid', { reason: 'Scheduled' }),
    want: { object: { ...tenantEvent('Service', 'db', 'tenant-svc-uid'), reason: 'Scheduled' } },
  },
];

describe('events plugin: toTenant', () => {
  it.each(cases)('$name', (c) => {
    const ctx = testContext({
      ...(c.now && { now: c.now }),
      superCache: new MapCache([
        [R.pods, c.superPods ?? []],
        [R.services, c.superServices ?? []],
      ]),
    });
    const got = eventsPlugin.toTenant!(
      c.superEvent && structuredClone(c.superEvent),
      c.tenantEvent && structuredClone(c.tenantEvent),
      ctx,
    );
    expect(got).toEqual(c.want);
  });
});

describe('events plugin: lastSeen', () => {
  const at = (over: Partial<Event>): Event => ({ apiVersion: 'v1', kind: 'Event', metadata: { name: 'e' }, ...over });
  it.each<[string, Event, string | undefined]>([
    ['no time at all', at({}), undefined],
    ['creationTimestamp only', at({ metadata: { creationTimestamp: '2026-01-01T00:00:01Z' } }), '2026-01-01T00:00:01Z'],
    [
      'lastTimestamp after creation (a repeat counted on the event)',
      at({ metadata: { creationTimestamp: '2026-01-01T00:00:01Z' }, lastTimestamp: '2026-01-01T00:02:00Z' }),
      '2026-01-01T00:02:00Z',
    ],
    [
      'an events.k8s.io series observed last',
      at({
        eventTime: '2026-01-01T00:00:01.000000Z',
        series: { count: 4, lastObservedTime: '2026-01-01T00:03:00.500000Z' },
      }),
      '2026-01-01T00:03:00.500Z',
    ],
    ['a time that does not parse is left out', at({ lastTimestamp: 'yesterday', eventTime: null }), undefined],
  ])('%s', (_, e, want) => {
    expect(lastSeen(e)).toBe(want === undefined ? undefined : Date.parse(want));
  });
});

describe('events plugin: route', () => {
  const rctx: RouteContext = {
    tenants: [],
    superCache: new MapCache(),
    tenantsBy: () => [],
    tenantOfNamespace: (ns) => (ns === SNS ? { tenant: KEY, namespace: 'default' } : undefined),
  };
  const cases: Array<[string, Event, unknown[]]> = [
    ['a Pod event in a tenant namespace', superEvent(), [{ tenant: KEY, namespace: 'default', name: 'web.17a3' }]],
    [
      'a Service event in a tenant namespace',
      superEvent('Service', 'db'),
      [{ tenant: KEY, namespace: 'default', name: 'db.17a3' }],
    ],
    ['a Node event', superEvent('Node', 'node-1', 'n', { involvedObject: { kind: 'Node', name: 'node-1' } }), []],
    ['a ConfigMap event in a tenant namespace', superEvent('ConfigMap', 'cm'), []],
    [
      "the scheduler's Scheduled on a Pod: not routed, so never queued",
      superEvent('Pod', 'web', 'u', { reason: 'Scheduled' }),
      [],
    ],
    [
      'a FailedScheduling on a Pod is routed (the tenant Pod does not say why it waits)',
      superEvent('Pod', 'web', 'u', { reason: 'FailedScheduling', type: 'Warning' }),
      [{ tenant: KEY, namespace: 'default', name: 'web.17a3' }],
    ],
    [
      'a Pod event in a super namespace of no tenant',
      superEvent('Pod', 'web', 'u', { involvedObject: { kind: 'Pod', namespace: 'kube-system', name: 'web' } }),
      [],
    ],
  ];
  it.each(cases)('%s', (_, e, want) => {
    expect(eventsPlugin.route!(e, rctx)).toEqual(want);
  });
});

describe('events plugin: saidByTheObject', () => {
  it.each<[string, Partial<Event>, boolean]>([
    ['Pod Scheduled', { reason: 'Scheduled' }, true],
    ['Pod Pulled', { reason: 'Pulled' }, false],
    ['Pod FailedScheduling', { reason: 'FailedScheduling' }, false],
    ['Service Scheduled', { reason: 'Scheduled', involvedObject: { kind: 'Service', name: 'db' } }, false],
    ['no involved object', { reason: 'Scheduled', involvedObject: undefined }, false],
  ])('%s: %s', (_, over, want) => {
    expect(saidByTheObject(superEvent('Pod', 'web', 'u', over))).toBe(want);
  });
});

describe('events plugin: manifest', () => {
  it('owns core/v1 events, up from the super, and is the default export', () => {
    expect(eventsPlugin.manifest).toEqual({
      apiVersion: 'plugins.tenancy.x-k8s.io/v1',
      name: 'events',
      version: '0.1.0',
      description: expect.any(String),
      resource: { group: '', version: 'v1', resource: 'events', kind: 'Event', namespaced: true },
      direction: 'up',
      sourceOfTruth: 'super',
      processes: ['manager'],
    });
    expect(plugin).toBe(eventsPlugin);
  });
});
