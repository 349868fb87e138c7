import { describe, expect, it } from 'vitest';
import type { ComponentReport } from '../provisioners/provisioner.ts';
import {
  APISERVER_NOT_READY,
  APISERVER_UNREACHABLE,
  COMPONENT_DOWN,
  ETCD_UNHEALTHY,
  failingChecks,
  HEALTHY,
  judge,
  LEASE_STALE,
  missedDeath,
  sameHealth,
  SYNCER_BACKLOG,
  SYNCER_NOT_SYNCED,
  DEFAULT_HEALTH_LIMITS,
  type ProbeResults,
} from './health.ts';

const NOW = new Date('2026-11-29T08:00:00Z');
const READY = { status: 200, body: '[+]ping ok\n[+]etcd ok\nreadyz check passed\n' };
const up = (name: string, restarts = 0): ComponentReport => ({ name, running: true, restarts });
const local = [up('etcd'), up('kube-apiserver'), up('kube-controller-manager')];
const healthy: ProbeResults = { components: local, readyz: READY, version: 'v1.31.0', lease: { state: 'absent' } };

describe('failingChecks', () => {
  it.each([
    ['passing', READY.body, []],
    [
      'two failing',
      '[+]ping ok\n[-]etcd failed: reason withheld\n[-]poststarthook/rbac/bootstrap-roles failed: not finished\nreadyz check failed',
      ['etcd', 'poststarthook/rbac/bootstrap-roles'],
    ],
    ['empty', '', []],
  ])('%s', (_n, body, want) => expect(failingChecks(body)).toEqual(want));
});

describe('judge: probe results to a verdict', () => {
  const cases: Array<{
    name: string;
    p: ProbeResults;
    healthy: boolean;
    component?: string;
    reason: string;
    message?: RegExp;
  }> = [
    { name: 'all healthy', p: healthy, healthy: true, reason: HEALTHY },
    {
      name: 'apiserver process dead: named, ComponentDown, readyz unreachable does not hide it',
      p: {
        ...healthy,
        components: [up('etcd'), { name: 'kube-apiserver', running: false, restarts: 1, message: 'exited (SIGKILL)' }],
        readyz: { error: 'connect ECONNREFUSED' },
        lease: { state: 'unknown', error: 'no answer' },
      },
      healthy: false,
      component: 'kube-apiserver',
      reason: COMPONENT_DOWN,
      message: /SIGKILL/,
    },
    {
      name: 'etcd process dead: etcd is blamed before the apiserver whose readyz fails with it',
      p: {
        ...healthy,
        components: [{ name: 'etcd', running: false, restarts: 0 }, up('kube-apiserver')],
        readyz: { status: 500, body: '[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed' },
      },
      healthy: false,
      component: 'etcd',
      reason: COMPONENT_DOWN,
    },
    {
      name: 'native tenant: readyz failing only on etcd blames etcd',
      p: {
        readyz: { status: 500, body: '[-]etcd failed: x\n[-]etcd-readiness failed: x\n' },
        lease: { state: 'absent' },
      },
      healthy: false,
      component: 'etcd',
      reason: ETCD_UNHEALTHY,
      message: /etcd, etcd-readiness/,
    },
    {
      name: 'etcd running but its own /health fails',
      p: {
        ...healthy,
        components: [{ name: 'etcd', running: true, healthy: false, restarts: 0 }, up('kube-apiserver')],
      },
      healthy: false,
      component: 'etcd',
      reason: ETCD_UNHEALTHY,
    },
    {
      name: 'apiserver readyz failing a post-start hook',
      p: { ...healthy, readyz: { status: 500, body: '[+]etcd ok\n[-]poststarthook/rbac/bootstrap-roles failed: x\n' } },
      healthy: false,
      component: 'kube-apiserver',
      reason: APISERVER_NOT_READY,
      message: /bootstrap-roles/,
    },
    {
      name: 'apiserver unreachable with no process report (imported tenant)',
      p: { readyz: { error: 'timeout' }, lease: { state: 'unknown', error: 'x' } },
      healthy: false,
      component: 'kube-apiserver',
      reason: APISERVER_UNREACHABLE,
    },
    {
      name: 'controller manager dead',
      p: {
        ...healthy,
        components: [
          up('etcd'),
          up('kube-apiserver'),
          { name: 'kube-controller-manager', running: false, restarts: 3 },
        ],
      },
      healthy: false,
      component: 'kube-controller-manager',
      reason: COMPONENT_DOWN,
    },
    {
      name: 'lease renewed within its duration',
      p: {
        ...healthy,
        lease: { state: 'present', holder: 'a', renewTime: '2026-11-29T07:59:50Z', durationSeconds: 15 },
      },
      healthy: true,
      reason: HEALTHY,
    },
    {
      name: 'lease stale past duration and grace',
      p: {
        ...healthy,
        lease: { state: 'present', holder: 'a', renewTime: '2026-11-29T07:59:00Z', durationSeconds: 15 },
      },
      healthy: false,
      component: 'kube-controller-manager',
      reason: LEASE_STALE,
      message: /holder a\) not renewed within 20 s$/,
    },
    {
      name: 'lease without renewTime',
      p: { ...healthy, lease: { state: 'present' } },
      healthy: false,
      component: 'kube-controller-manager',
      reason: LEASE_STALE,
      message: /never renewed/,
    },
    {
      name: 'syncer unsynced within grace',
      p: { ...healthy, syncer: { waiting: 3, inFlight: 1, synced: false, unsyncedForMs: 10_000 } },
      healthy: true,
      reason: HEALTHY,
    },
    {
      name: 'syncer unsynced past grace',
      p: { ...healthy, syncer: { waiting: 3, inFlight: 1, synced: false, unsyncedForMs: 200_000 } },
      healthy: false,
      component: 'syncer',
      reason: SYNCER_NOT_SYNCED,
    },
    {
      name: 'syncer backlog over the limit',
      p: { ...healthy, syncer: { waiting: 20_000, inFlight: 4, synced: true, unsyncedForMs: 0 } },
      healthy: false,
      component: 'syncer',
      reason: SYNCER_BACKLOG,
    },
    {
      name: 'apiserver not ready comes before a stale lease and a backlog',
      p: {
        ...healthy,
        readyz: { status: 500, body: '[-]informer-sync failed: x\n' },
        lease: { state: 'present', renewTime: '2026-11-29T07:00:00Z' },
        syncer: { waiting: 20_000, inFlight: 4, synced: true, unsyncedForMs: 0 },
      },
      healthy: false,
      component: 'kube-apiserver',
      reason: APISERVER_NOT_READY,
    },
  ];
  it.each(cases)('$name', ({ p, healthy: h, component, reason, message }) => {
    const v = judge(p, NOW);
    expect(v.healthy).toBe(h);
    expect(v.component).toBe(component);
    expect(v.reason).toBe(reason);
    if (message) expect(v.message).toMatch(message);
    if (component) expect(v.message.startsWith(`${component}: `)).toBe(true);
  });

  it('carries restarts and the version into the component lines', () => {
    const v = judge({ ...healthy, components: [up('etcd', 2), up('kube-apiserver', 1)] }, NOW);
    expect(v.components.find((c) => c.name === 'etcd')).toMatchObject({ healthy: true, restarts: 2 });
    expect(v.components.find((c) => c.name === 'kube-apiserver')).toMatchObject({ restarts: 1, version: 'v1.31.0' });
  });

  it('leaves the controller manager out when neither the apiserver nor a report can tell', () => {
    const v = judge({ readyz: { error: 'x' }, lease: { state: 'unknown', error: 'x' } }, NOW);
    expect(v.components.map((c) => c.name)).toEqual(['kube-apiserver']);
  });
});

describe('sameHealth', () => {
  const a = judge(healthy, NOW);
  it.each([
    ['same verdict', a, judge(healthy, NOW), true],
    ['a restart more', a, judge({ ...healthy, components: [up('etcd', 1), ...local.slice(1)] }, NOW), false],
    [
      'only a syncer counter differs',
      judge({ ...healthy, syncer: { waiting: 1, inFlight: 0, synced: true, unsyncedForMs: 0 } }, NOW),
      judge({ ...healthy, syncer: { waiting: 9, inFlight: 2, synced: true, unsyncedForMs: 0 } }, NOW),
      true,
    ],
    ['unhealthy against healthy', a, judge({ ...healthy, readyz: { error: 'x' } }, NOW), false],
    ['none against one', undefined, a, false],
  ])('%s', (_n, x, y, want) => expect(sameHealth(x, y)).toBe(want));
});

describe('missedDeath: a death the provisioner announced is shown even when the probe found the component back', () => {
  const etcdBack: ProbeResults = {
    ...healthy,
    components: [up('etcd', 1), up('kube-apiserver'), up('kube-controller-manager')],
    readyz: { error: 'context deadline exceeded' },
    lease: { state: 'unknown', error: 'no answer' },
  };
  const cases: Array<{ name: string; p: ProbeResults; died: string[]; component?: string; message?: RegExp }> = [
    {
      name: 'etcd back, the apiserver timed out meanwhile: etcd is named, with its restart',
      p: etcdBack,
      died: ['etcd'],
      component: 'etcd',
      message: /^etcd: etcd exited and was restarted \(1 restarts\)$/,
    },
    {
      name: 'etcd back and everything healthy: etcd is still named once',
      p: { ...healthy, components: [up('etcd', 1), up('kube-apiserver'), up('kube-controller-manager')] },
      died: ['etcd'],
      component: 'etcd',
      message: /^etcd: etcd exited/,
    },
    { name: 'nothing died: nothing to add', p: etcdBack, died: [] },
    {
      name: 'the probe saw it down itself: its own verdict stands',
      p: { ...healthy, components: [{ name: 'etcd', running: false, restarts: 0 }, up('kube-apiserver')] },
      died: ['etcd'],
    },
    {
      name: 'a component the provisioner does not report: nothing to add',
      p: { ...healthy, components: [up('kube-apiserver')] },
      died: ['etcd'],
    },
  ];
  it.each(cases)('$name', ({ p, died, component, message }) => {
    const v = missedDeath(p, judge(p, NOW), died, NOW, DEFAULT_HEALTH_LIMITS);
    if (!component) return expect(v).toBeUndefined();
    expect(v).toMatchObject({ healthy: false, component, reason: COMPONENT_DOWN });
    expect(v!.message).toMatch(message!);
  });
});
