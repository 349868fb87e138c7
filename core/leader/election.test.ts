import { describe, expect, it } from 'vitest';
import { KubeClient } from '../kube/client.ts';
import { registry } from '../metrics/registry.ts';
import {
  LeaderElector,
  decide,
  formatMicroTime,
  leaseHeld,
  nextRecord,
  recordOf,
  releaseRecord,
  sameRecord,
  type LeaderElectorOptions,
  type LeaderRecord,
} from './election.ts';

const T0 = Date.UTC(2025, 0, 2, 3, 4, 5, 678);

const held = (holderIdentity: string, over: Partial<LeaderRecord> = {}): LeaderRecord => ({
  holderIdentity,
  leaseDurationSeconds: 15,
  acquireTime: '2025-01-02T03:00:00.000000Z',
  renewTime: '2025-01-02T03:04:00.000000Z',
  leaseTransitions: 4,
  ...over,
});

describe('formatMicroTime', () => {
  it('formats like metav1.MicroTime', () => {
    expect(formatMicroTime(T0)).toBe('2025-01-02T03:04:05.678000Z');
    expect(formatMicroTime(Date.UTC(2025, 11, 31, 23, 59, 59, 0))).toBe('2025-12-31T23:59:59.000000Z');
  });
});

describe('recordOf / sameRecord', () => {
  it('reads the spec and fills zero values', () => {
    expect(recordOf({ spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } })).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '',
      renewTime: '',
      leaseTransitions: 0,
    });
    expect(recordOf({})).toEqual({
      holderIdentity: '',
      leaseDurationSeconds: 0,
      acquireTime: '',
      renewTime: '',
      leaseTransitions: 0,
    });
  });

  it('compares every field', () => {
    expect(sameRecord(held('a'), held('a'))).toBe(true);
    expect(sameRecord(held('a'), held('b'))).toBe(false);
    expect(sameRecord(held('a'), held('a', { renewTime: '2025-01-02T03:04:02.000000Z' }))).toBe(false);
    expect(sameRecord(held('a'), held('a', { leaseTransitions: 5 }))).toBe(false);
  });
});

describe('decide', () => {
  it('creates a missing lease', () => {
    expect(decide(null, 0, 0, 'me')).toBe('create');
  });

  it('renews its own lease, however old', () => {
    expect(decide(held('me'), 0, 1e9, 'me')).toBe('renew');
  });

  it('acquires a free (released) lease at once', () => {
    expect(decide(held('', { leaseDurationSeconds: 1 }), 1000, 1000, 'me')).toBe('acquire');
  });

  it('waits for another holder until its duration has passed since our own observation', () => {
    const rec = held('other');
    expect(decide(rec, 1000, 1000, 'me')).toBe('wait');
    expect(decide(rec, 1000, 15_999, 'me')).toBe('wait');
    expect(decide(rec, 1000, 16_000, 'me')).toBe('acquire');
  });

  it("takes another holder's lease at once when its process is known to be gone", () => {
    expect(decide(held('other'), 1000, 1000, 'me', true)).toBe('acquire');
    expect(decide(held('me'), 1000, 1000, 'me', true)).toBe('renew');
  });

  it('ignores the remote timestamps: a long-past renewTime first seen now is still valid', () => {
    const stale = held('other', { renewTime: '1970-01-01T00:00:00.000000Z' });
    expect(decide(stale, 50_000, 50_000, 'me')).toBe('wait');
  });

  it("counts the holder's leaseDurationSeconds", () => {
    expect(decide(held('other', { leaseDurationSeconds: 60 }), 0, 30_000, 'me')).toBe('wait');
    expect(decide(held('other', { leaseDurationSeconds: 0 }), 0, 0, 'me')).toBe('acquire');
  });
});

describe('nextRecord / releaseRecord', () => {
  const now = '2025-01-02T03:04:05.678000Z';

  it('creates with no transitions', () => {
    expect(nextRecord(null, 'me', 15, T0)).toEqual({
      holderIdentity: 'me',
      leaseDurationSeconds: 15,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: 0,
    });
  });

  it('renews keeping acquireTime and transitions', () => {
    expect(nextRecord(held('me', { leaseDurationSeconds: 30 }), 'me', 15, T0)).toEqual({
      holderIdentity: 'me',
      leaseDurationSeconds: 15,
      acquireTime: '2025-01-02T03:00:00.000000Z',
      renewTime: now,
      leaseTransitions: 4,
    });
  });

  it('counts a transition when taking over, also from a released lease', () => {
    const expected = {
      holderIdentity: 'me',
      leaseDurationSeconds: 15,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: 5,
    };
    expect(nextRecord(held('other'), 'me', 15, T0)).toEqual(expected);
    expect(nextRecord(held(''), 'me', 15, T0)).toEqual(expected);
  });

  it('releases with no holder and a one-second duration', () => {
    expect(releaseRecord(held('me'), T0)).toEqual({
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: 4,
    });
  });
});

// A client for an address nothing listens on: every request fails with ECONNREFUSED.
const unreachable = await KubeClient.fromString(`
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`);

function options(over: Partial<LeaderElectorOptions> = {}): LeaderElectorOptions {
  return {
    client: unreachable,
    namespace: 'kube-system',
    name: 'vc-manager',
    identity: 'me',
    onStartedLeading: () => {},
    onStoppedLeading: () => {},
    ...over,
  };
}

describe('leaseHeld', () => {
  it.each([
    [0, 8000, 0, true],
    [0, 8000, 7999, true],
    [0, 8000, 8000, false],
    [1000, 8000, 60_000, false],
  ])('renewed at %d, deadline %d ms: held at %d is %s', (renewedAt, deadline, now, want) => {
    expect(leaseHeld(renewedAt, deadline, now)).toBe(want);
  });
});

describe('LeaderElector', () => {
  it('holds nothing before it leads', () => {
    expect(new LeaderElector(options()).holds()).toBe('not leading the lease kube-system/vc-manager');
  });

  it('validates its options like client-go', () => {
    expect(() => new LeaderElector(options())).not.toThrow();
    expect(() => new LeaderElector(options({ identity: '' }))).toThrow(/identity/);
    expect(() => new LeaderElector(options({ name: '' }))).toThrow(/name/);
    expect(
      () => new LeaderElector(options({ leaseDurationSeconds: 1.5, renewDeadlineSeconds: 1, retryPeriodSeconds: 0.1 })),
    ).toThrow(/whole/);
    expect(() => new LeaderElector(options({ leaseDurationSeconds: 10 }))).toThrow(/greater than renewDeadline/);
    expect(() => new LeaderElector(options({ retryPeriodSeconds: 9 }))).toThrow(/retryPeriodSeconds \* 1.2/);
    expect(() => new LeaderElector(options({ retryPeriodSeconds: 0 }))).toThrow(/greater than zero/);
    expect(
      () => new LeaderElector(options({ leaseDurationSeconds: 2, renewDeadlineSeconds: 1.5, retryPeriodSeconds: 0.5 })),
    ).not.toThrow();
  });

  it('keeps retrying while the apiserver is unreachable and returns once cancelled, never having led', async () => {
    const calls: string[] = [];
    const e = new LeaderElector(
      options({
        name: 'unreachable',
        leaseDurationSeconds: 2,
        renewDeadlineSeconds: 1,
        retryPeriodSeconds: 0.02,
        onStartedLeading: () => void calls.push('started'),
        onStoppedLeading: () => void calls.push('stopped'),
        onNewLeader: (id) => void calls.push(`leader ${id}`),
      }),
    );
    const ac = new AbortController();
    const running = e.run(ac.signal);
    await expect(e.run(ac.signal)).rejects.toThrow(/already running/);
    await new Promise((r) => setTimeout(r, 200));
    expect(e.isLeader()).toBe(false);
    ac.abort();
    await running;
    expect(calls).toEqual([]);
    expect(e.leader()).toBe('');
    expect(await registry.getSingleMetricAsString('vc_leader_is_leader')).toContain(
      'vc_leader_is_leader{lease="kube-system/unreachable"} 0',
    );
  });

  it('returns at once when the signal has already aborted', async () => {
    const e = new LeaderElector(options({ name: 'aborted' }));
    await e.run(AbortSignal.abort());
    expect(e.isLeader()).toBe(false);
  });
});
