import { describe, expect, it } from 'vitest';
import { ANN } from '../names/names.ts';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import type { KubeObject } from '../kube/client.ts';
import {
  asleep,
  durationMs,
  idleDue,
  sleepDeferredUntil,
  sleepRequestedAt,
  specChangedWhileAsleep,
  WAKE_WINDOW_MS,
  workloadsRunning,
} from './sleep.ts';

const vc = (o: {
  afterIdle?: string;
  phase?: string;
  asked?: string;
  generation?: number;
  observed?: number;
  readySince?: number;
}) =>
  ({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: {
      name: 'a',
      namespace: 'default',
      generation: o.generation ?? 1,
      ...(o.asked !== undefined && { annotations: { [ANN.sleepRequested]: o.asked } }),
    },
    spec: { ...(o.afterIdle && { sleep: { afterIdle: o.afterIdle } }) },
    status: {
      phase: o.phase ?? 'Running',
      observedGeneration: o.observed ?? 1,
      ...(o.readySince !== undefined && {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'Running',
            lastTransitionTime: new Date(o.readySince).toISOString(),
          },
        ],
      }),
    },
  }) as VirtualCluster;

describe('sleepDeferredUntil', () => {
  const now = 10 * WAKE_WINDOW_MS;
  const min = 60_000;
  it.each([
    { name: 'no wakes', wakes: [], max: 3, want: undefined },
    { name: 'fewer wakes than allowed', wakes: [now - min, now - 2 * min], max: 3, want: undefined },
    {
      name: 'as many as allowed: awake until the oldest is an hour old',
      wakes: [now - min, now - 5 * min, now - 2 * min],
      max: 3,
      want: now - 5 * min + WAKE_WINDOW_MS,
    },
    {
      name: 'more than allowed: until the max-th latest is an hour old',
      wakes: [now - 50 * min, now - min, now - 5 * min, now - 2 * min],
      max: 3,
      want: now - 5 * min + WAKE_WINDOW_MS,
    },
    {
      name: 'wakes older than the hour do not count',
      wakes: [now - WAKE_WINDOW_MS, now - 61 * min, now - min],
      max: 2,
      want: undefined,
    },
    { name: 'one allowed, one wake', wakes: [now - min], max: 1, want: now - min + WAKE_WINDOW_MS },
  ])('$name', ({ wakes, max, want }) => {
    expect(sleepDeferredUntil(wakes, now, max)).toBe(want);
  });
});

describe('durationMs', () => {
  it.each([
    ['90s', 90_000],
    ['1h30m', 5_400_000],
    ['250ms', 250],
    ['1.5m', 90_000],
    ['15', undefined],
    ['', undefined],
    ['5d', undefined],
  ])('%s -> %s', (text, ms) => expect(durationMs(text)).toBe(ms));
});

describe('idleDue', () => {
  const now = 1_000_000;
  it.each([
    ['idle past afterIdle', vc({ afterIdle: '30s' }), { open: 0, lastActiveMs: now - 30_000 }, true],
    ['idle, not yet long enough', vc({ afterIdle: '30s' }), { open: 0, lastActiveMs: now - 29_999 }, false],
    ['a connection is open', vc({ afterIdle: '30s' }), { open: 1, lastActiveMs: 0 }, false],
    ['below the 10 s floor counts as 10 s', vc({ afterIdle: '1s' }), { open: 0, lastActiveMs: now - 5000 }, false],
    ['at the floor', vc({ afterIdle: '1s' }), { open: 0, lastActiveMs: now - 10_000 }, true],
    ['no spec.sleep', vc({}), { open: 0, lastActiveMs: 0 }, false],
    ['no front door', vc({ afterIdle: '30s' }), undefined, false],
    ['not Running', vc({ afterIdle: '30s', phase: 'Degraded' }), { open: 0, lastActiveMs: 0 }, false],
    ['already asked', vc({ afterIdle: '30s', asked: 'x' }), { open: 0, lastActiveMs: 0 }, false],
    [
      'woken (Ready) since the last client, not yet afterIdle ago',
      vc({ afterIdle: '30s', readySince: now - 29_000 }),
      { open: 0, lastActiveMs: now - 600_000 },
      false,
    ],
    [
      'Ready for afterIdle, no client since',
      vc({ afterIdle: '30s', readySince: now - 30_000 }),
      { open: 0, lastActiveMs: 0 },
      true,
    ],
    [
      'a client after it became Ready counts from the client',
      vc({ afterIdle: '30s', readySince: now - 600_000 }),
      { open: 0, lastActiveMs: now - 1000 },
      false,
    ],
  ] as const)('%s', (_name, v, activity, due) => expect(idleDue(v, activity, now)).toBe(due));
});

describe('workloadsRunning', () => {
  const pod = (phase: string | undefined, deleting = false) =>
    ({
      metadata: { name: 'p', ...(deleting && { deletionTimestamp: '2026-11-30T10:00:00Z' }) },
      status: phase === undefined ? {} : { phase },
    }) as KubeObject;
  it.each([
    ['none', [], 0],
    ['a Running Pod', [pod('Running')], 1],
    ['a Pending Pod, and one with no status yet', [pod('Pending'), pod(undefined)], 2],
    ['Pods that ended', [pod('Succeeded'), pod('Failed'), pod('Unknown')], 0],
    ['a Running Pod being deleted', [pod('Running', true)], 0],
  ] as const)('%s: %d', (_name, pods, n) => expect(workloadsRunning(pods)).toBe(n));
});

describe('sleep decisions', () => {
  it('reads the request time, a bad one as the epoch (any later request wins over it)', () => {
    expect(sleepRequestedAt(vc({}))).toBeUndefined();
    expect(sleepRequestedAt(vc({ asked: '2026-01-01T00:00:00.000Z' }))).toBe(Date.UTC(2026, 0, 1));
    expect(sleepRequestedAt(vc({ asked: 'soon' }))).toBe(0);
  });

  it.each([
    ['sleeping, spec unchanged', vc({ phase: 'Sleeping' }), false],
    ['sleeping, spec changed', vc({ phase: 'Sleeping', generation: 2 }), true],
    ['running, spec changed', vc({ generation: 2 }), false],
  ] as const)('specChangedWhileAsleep: %s', (_n, v, want) => expect(specChangedWhileAsleep(v)).toBe(want));

  it('asleep releases the tenant and announces the first sleep only', () => {
    const first = asleep(vc({}));
    expect(first).toMatchObject({ stop: true, release: true, status: { phase: 'Sleeping', reason: 'Sleeping' } });
    expect(first.events).toHaveLength(1);
    expect(asleep(vc({ phase: 'Sleeping' })).events).toHaveLength(0);
  });
});
