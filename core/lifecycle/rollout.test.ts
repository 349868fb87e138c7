import { describe, expect, it } from 'vitest';
import type { VirtualCluster, VirtualClusterStatus } from '../api/virtualcluster.ts';
import { nextStatus } from './decisions.ts';
import {
  mayRoll,
  planRoll,
  rollHeld,
  rollResult,
  rollStarts,
  type ComponentSettings,
  type RolloutPeer,
  type RollComponent,
  type RollFailure,
} from './rollout.ts';

const base: ComponentSettings = {
  etcd: { quota: 100 },
  'kube-apiserver': { args: { a: '1', b: '2' }, version: 'v1' },
  'kube-controller-manager': { args: {}, version: 'v1' },
};

describe('planRoll', () => {
  const rows: Array<{ name: string; desired: ComponentSettings; want: RollComponent[] }> = [
    { name: 'nothing changed', desired: base, want: [] },
    {
      name: 'the same flags in another key order',
      desired: { ...base, 'kube-apiserver': { version: 'v1', args: { b: '2', a: '1' } } },
      want: [],
    },
    { name: 'etcd quota only', desired: { ...base, etcd: { quota: 200 } }, want: ['etcd'] },
    {
      name: 'a controller-manager flag only',
      desired: { ...base, 'kube-controller-manager': { args: { x: '1' }, version: 'v1' } },
      want: ['kube-controller-manager'],
    },
    {
      name: 'a version for everything: etcd, apiserver, controller manager in this order',
      desired: {
        'kube-controller-manager': { args: {}, version: 'v2' },
        'kube-apiserver': { args: { a: '1', b: '2' }, version: 'v2' },
        etcd: { quota: 101 },
      },
      want: ['etcd', 'kube-apiserver', 'kube-controller-manager'],
    },
    {
      name: 'a flag removed',
      desired: { ...base, 'kube-apiserver': { args: { a: '1' }, version: 'v1' } },
      want: ['kube-apiserver'],
    },
  ];
  for (const r of rows) it(r.name, () => expect(planRoll(base, r.desired)).toEqual(r.want));
});

function vc(status?: VirtualClusterStatus): VirtualCluster {
  return {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { namespace: 'team', name: 'dev', uid: 'u', generation: 4 },
    spec: {},
    ...(status && { status }),
  };
}
const at = new Date('2026-01-01T00:00:00Z');
const cond = (
  phase: NonNullable<VirtualClusterStatus['phase']>,
  type: string,
  status: 'True' | 'False',
  reason: string,
  message = 'm',
) =>
  vc({
    phase,
    reason: 'Running',
    conditions: [{ type, status, reason, message, lastTransitionTime: at.toISOString() }],
  });

describe('rollStarts', () => {
  const rows: Array<{ name: string; vc: VirtualCluster; plan: RollComponent[]; phase?: string; events: string[] }> = [
    { name: 'a first start is no roll', vc: vc({ phase: 'Provisioning' }), plan: ['kube-apiserver'], events: [] },
    { name: 'an empty plan', vc: vc({ phase: 'Running' }), plan: [], events: [] },
    {
      name: 'a Running tenant turns Updating with an event',
      vc: vc({ phase: 'Running' }),
      plan: ['etcd', 'kube-apiserver'],
      phase: 'Updating',
      events: ['Normal/Updating'],
    },
    {
      name: 'a Degraded tenant rolls too (a fix may be the roll)',
      vc: vc({ phase: 'Degraded' }),
      plan: ['kube-apiserver'],
      phase: 'Updating',
      events: ['Normal/Updating'],
    },
    {
      name: 'one already Updating gets no second event',
      vc: vc({ phase: 'Updating' }),
      plan: ['kube-apiserver'],
      phase: 'Updating',
      events: [],
    },
  ];
  for (const r of rows)
    it(r.name, () => {
      const o = rollStarts(r.vc, r.plan);
      expect(o.status?.phase).toBe(r.phase);
      expect((o.events ?? []).map((e) => `${e.type}/${e.reason}`)).toEqual(r.events);
      if (r.phase) {
        expect(o.publish).toBe(true);
        expect(o.status?.message).toBe(`rolling ${r.plan.join(', then ')} to the new spec`);
        const s = nextStatus(r.vc, o, at);
        expect(s.conditions?.find((c) => c.type === 'SpecApplied')).toMatchObject({ status: 'False' });
      }
    });
});

describe('rollResult', () => {
  const failure: RollFailure = { component: 'kube-apiserver' as const, message: 'exited with code 1', kept: true };
  const skip = 'from v1.34.2 to v1.36.3 skips 1 minor version(s)';
  const refused: RollFailure = { ...failure, message: skip, refused: 'UpgradeRefused' };
  const rows: Array<{
    name: string;
    vc: VirtualCluster;
    rolled: boolean;
    failure?: RollFailure;
    phase?: string;
    specApplied?: [string, string];
    ready?: [string, string];
    events: string[];
  }> = [
    { name: 'never rolled: nothing', vc: vc({ phase: 'Running' }), rolled: false, events: [] },
    {
      name: 'rolled: SpecApplied True',
      vc: cond('Updating', 'SpecApplied', 'False', 'Updating'),
      rolled: true,
      specApplied: ['True', 'Applied'],
      events: [],
    },
    {
      name: 'the failed spec reverted by its author: SpecApplied True again without a roll',
      vc: cond('Running', 'SpecApplied', 'False', 'RolloutFailed'),
      rolled: false,
      specApplied: ['True', 'Applied'],
      events: [],
    },
    {
      name: 'failed, the old apiserver serves again: Running, RolloutFailed, a Warning',
      vc: cond('Updating', 'SpecApplied', 'False', 'Updating'),
      rolled: false,
      failure,
      phase: 'Running',
      specApplied: ['False', 'RolloutFailed'],
      events: ['Warning/RolloutFailed'],
    },
    {
      name: 'failed and nothing serves: Degraded, Ready False',
      vc: cond('Updating', 'SpecApplied', 'False', 'Updating'),
      rolled: false,
      failure: { ...failure, kept: false },
      phase: 'Degraded',
      specApplied: ['False', 'RolloutFailed'],
      ready: ['False', 'RolloutFailed'],
      events: ['Warning/RolloutFailed'],
    },
    {
      name: 'the same failure seen again: no second Warning',
      vc: cond(
        'Running',
        'SpecApplied',
        'False',
        'RolloutFailed',
        'kube-apiserver did not come back healthy with the new spec; the previous kube-apiserver serves again: exited with code 1',
      ),
      rolled: false,
      failure,
      phase: 'Running',
      specApplied: ['False', 'RolloutFailed'],
      events: [],
    },
    {
      name: 'refused before anything restarted: Running, SpecApplied False with the reason, a Warning',
      vc: vc({ phase: 'Running' }),
      rolled: false,
      failure: refused,
      phase: 'Running',
      specApplied: ['False', 'UpgradeRefused'],
      events: ['Warning/UpgradeRefused'],
    },
    {
      name: 'the same refusal seen again: no second Warning',
      vc: cond('Running', 'SpecApplied', 'False', 'UpgradeRefused', skip),
      rolled: false,
      failure: refused,
      phase: 'Running',
      specApplied: ['False', 'UpgradeRefused'],
      events: [],
    },
  ];
  for (const r of rows)
    it(r.name, () => {
      const o = rollResult(r.vc, r.rolled, r.failure);
      const s = nextStatus(r.vc, o, at);
      expect(o.status?.phase).toBe(r.phase);
      const sa = s.conditions?.find((c) => c.type === 'SpecApplied');
      if (r.specApplied) expect([sa?.status, sa?.reason]).toEqual(r.specApplied);
      else expect(o.conditions ?? []).toEqual([]);
      const rd = s.conditions?.find((c) => c.type === 'Ready');
      if (r.ready) expect([rd?.status, rd?.reason]).toEqual(r.ready);
      else expect(rd).toBeUndefined();
      expect((o.events ?? []).map((e) => `${e.type}/${e.reason}`)).toEqual(r.events);
      if (r.failure?.refused) expect(o.status?.message).toBe(skip);
      else if (r.failure) expect(o.status?.message).toMatch(/^kube-apiserver did not come back healthy/);
    });
});

describe('rollHeld', () => {
  it('keeps the phase, says why, and tells it once', () => {
    const first = rollHeld(vc({ phase: 'Running' }), 'waiting to roll: x');
    expect(first).toMatchObject({ stop: true, requeueAfter: 5000 });
    expect(first.status).toBeUndefined();
    expect(first.events).toHaveLength(1);
    const held = vc({ ...nextStatus(vc({ phase: 'Running' }), first, at) });
    expect(rollHeld(held, 'waiting to roll: x').events).toEqual([]);
    expect(rollHeld(held, 'waiting to roll: y').events).toHaveLength(1);
  });
});

describe('mayRoll', () => {
  const rows: Array<{ name: string; peers: RolloutPeer[]; max: number; want: true | RegExp }> = [
    { name: 'alone', peers: [{ key: 'a', phase: 'Running' }], max: 1, want: true },
    {
      name: 'every peer Running',
      peers: [
        { key: 'a', phase: 'Running' },
        { key: 'b', phase: 'Running' },
      ],
      max: 1,
      want: true,
    },
    {
      name: 'one peer Updating with maxUnavailable 1',
      peers: [
        { key: 'a', phase: 'Running' },
        { key: 'b', phase: 'Updating' },
      ],
      max: 1,
      want: /b \(Updating\) is not back yet/,
    },
    {
      name: 'one peer rolling in this manager, its phase not written yet',
      peers: [
        { key: 'a', phase: 'Running' },
        { key: 'b', phase: 'Running', rolling: true },
      ],
      max: 1,
      want: /b \(rolling\)/,
    },
    {
      name: 'a peer that came back Degraded stops the rollout',
      peers: [
        { key: 'a', phase: 'Running' },
        { key: 'b', phase: 'Degraded' },
      ],
      max: 1,
      want: /b \(Degraded\)/,
    },
    {
      name: 'maxUnavailable 2 lets a second go',
      peers: [
        { key: 'a', phase: 'Running' },
        { key: 'b', phase: 'Updating' },
        { key: 'c', phase: 'Running' },
      ],
      max: 2,
      want: true,
    },
    {
      name: 'maxUnavailable 2 and two busy',
      peers: [
        { key: 'a', phase: 'Running' },
        { key: 'b', phase: 'Updating' },
        { key: 'c', phase: 'Degraded' },
      ],
      max: 2,
      want: /b \(Updating\), c \(Degraded\) are not back yet/,
    },
    {
      name: 'itself Updating does not hold itself back',
      peers: [{ key: 'a', phase: 'Updating', rolling: true }],
      max: 1,
      want: true,
    },
    {
      name: 'Provisioning and Error peers do not count (not served)',
      peers: [
        { key: 'a', phase: 'Running' },
        { key: 'b', phase: 'Provisioning' },
        { key: 'c', phase: 'Error' },
      ],
      max: 1,
      want: true,
    },
  ];
  for (const r of rows)
    it(r.name, () => {
      const got = mayRoll('a', 'cv1', r.peers, r.max);
      if (r.want === true) expect(got).toBe(true);
      else expect(got).toMatch(r.want);
    });
});
