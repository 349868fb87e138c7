import { describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import { SLEEPING, WOKEN } from './sleep.ts';
import { sleepEpisode, SleepControl, type SleepControlOptions } from './sleepcontrol.ts';

/** sleeping is a Sleeping tenant without a sleep request (vc wake removed it) that fell asleep at `since`. */
const sleeping = (since: string | undefined) =>
  ({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { name: 'a', namespace: 'default', generation: 1 },
    spec: {},
    status: {
      phase: 'Sleeping',
      observedGeneration: 1,
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: SLEEPING,
          message: 'asleep',
          ...(since !== undefined && { lastTransitionTime: since }),
        },
      ],
    },
  }) as VirtualCluster;

describe('sleepEpisode', () => {
  it.each([
    ['2026-11-30T08:00:00Z', '2026-11-30T08:00:00Z'],
    [undefined, undefined],
  ])('a tenant asleep since %s is in sleep %s', (since, episode) =>
    expect(sleepEpisode(sleeping(since))).toBe(episode),
  );
});

describe('SleepControl.ifAsked on a wake by vc wake', () => {
  // The command branch reads only the VirtualCluster: no client, provisioner or recorder is called.
  const control = () => new SleepControl({} as SleepControlOptions);
  const ask = (c: SleepControl, vc: VirtualCluster) =>
    c.ifAsked(vc, 'root-a', undefined, 'local', () => vc, {} as never);
  const woken = (o: { events?: Array<{ reason: string }> }) => (o.events ?? []).map((e) => e.reason);
  /** byRequest is what woken records for a wake through the front door: the sleep it woke the tenant from */
  const byRequest = (c: SleepControl) =>
    (c as unknown as { wokenByRequest: Map<string, string | undefined> }).wokenByRequest;

  it('records one wake of one sleep, however often the reconcile sees it before the tenant shows Running', async () => {
    const c = control();
    expect(woken(await ask(c, sleeping('2026-11-30T08:00:00Z')))).toEqual([WOKEN]);
    expect(woken(await ask(c, sleeping('2026-11-30T08:00:00Z')))).toEqual([]);
    // the next sleep is another one
    expect(woken(await ask(c, sleeping('2026-11-30T09:00:00Z')))).toEqual([WOKEN]);
  });

  it('does not count a wake through the front door again as a command when a pass reads the sleep once more', async () => {
    const c = control();
    byRequest(c).set('root-a', '2026-11-30T08:00:00Z');
    expect(woken(await ask(c, sleeping('2026-11-30T08:00:00Z')))).toEqual([]);
    expect(woken(await ask(c, sleeping('2026-11-30T08:00:00Z')))).toEqual([]);
    expect(woken(await ask(c, sleeping('2026-11-30T09:00:00Z')))).toEqual([WOKEN]);
  });

  it('counts a wake by vc wake when the front door last woke the tenant from an earlier sleep no pass saw', async () => {
    const c = control();
    // the front door woke it from the 08:00 sleep while a pass found it awake already: nothing took that wake
    byRequest(c).set('root-a', '2026-11-30T08:00:00Z');
    expect(woken(await ask(c, sleeping('2026-11-30T09:00:00Z')))).toEqual([WOKEN]);
  });

  it('records every wake when the status names no sleep', async () => {
    const c = control();
    expect(woken(await ask(c, sleeping(undefined)))).toEqual([WOKEN]);
    expect(woken(await ask(c, sleeping(undefined)))).toEqual([WOKEN]);
  });
});
