import { describe, expect, it } from 'vitest';
import { KubeClient } from '../../kube/client.ts';
import type { ClusterState } from '../../superclusters/registration.ts';
import { planFollow, planSyncers } from './registered.ts';

const client = () => KubeClient.fromSafe({ server: 'https://127.0.0.1:1', context: 'x' });
const a = client();
const b = client();
const reg = (name: string, state: ClusterState, c?: KubeClient) => ({ name, state, client: c });

describe('planSyncers', () => {
  it.each([
    ['a ready registration gets a syncer', [reg('r1', 'ready', a)], [], { stop: [], start: ['r1'] }],
    ['a draining one keeps serving its placements', [reg('r1', 'draining', a)], [], { stop: [], start: ['r1'] }],
    ['no client, no syncer', [reg('r1', 'ready')], [], { stop: [], start: [] }],
    ['never started while unreachable', [reg('r1', 'unreachable', a)], [], { stop: [], start: [] }],
    ['kept through an outage', [reg('r1', 'unreachable', a)], [['r1', a]], { stop: [], start: [] }],
    ['nothing to do when running', [reg('r1', 'ready', a)], [['r1', a]], { stop: [], start: [] }],
    ['new credentials restart it', [reg('r1', 'ready', b)], [['r1', a]], { stop: ['r1'], start: ['r1'] }],
    [
      'an outage with new credentials stops it',
      [reg('r1', 'unreachable', b)],
      [['r1', a]],
      { stop: ['r1'], start: [] },
    ],
    ['deregistered stops it', [reg('r1', 'deregistered')], [['r1', a]], { stop: ['r1'], start: [] }],
    ['a deleted Cluster stops it', [], [['r1', a]], { stop: ['r1'], start: [] }],
    [
      'several at once, sorted',
      [reg('r3', 'ready', b), reg('r2', 'ready', a), reg('r1', 'deregistered')],
      [['r1', a]],
      { stop: ['r1'], start: ['r2', 'r3'] },
    ],
  ] as const)('%s', (_what, regs, running, want) => {
    expect(planSyncers(regs, new Map(running as ReadonlyArray<[string, KubeClient]>))).toEqual(want);
  });
});

describe('planFollow: whose Pods the fence of confined control planes follows', () => {
  it.each([
    ['a ready registration is followed', [reg('r1', 'ready', a)], [], { leave: [], follow: ['r1'] }],
    ['an unreachable one still runs Pods', [reg('r1', 'unreachable', a)], [], { leave: [], follow: ['r1'] }],
    ['a draining one too', [reg('r1', 'draining', a)], [], { leave: [], follow: ['r1'] }],
    ['no verified client, nothing to follow', [reg('r1', 'ready')], [], { leave: [], follow: [] }],
    ['nothing to do when followed', [reg('r1', 'ready', a)], [['r1', a]], { leave: [], follow: [] }],
    [
      'new credentials: left and followed again',
      [reg('r1', 'ready', b)],
      [['r1', a]],
      { leave: ['r1'], follow: ['r1'] },
    ],
    ['deregistered is left', [reg('r1', 'deregistered', a)], [['r1', a]], { leave: ['r1'], follow: [] }],
    ['a deleted Cluster is left', [], [['r1', a]], { leave: ['r1'], follow: [] }],
  ] as const)('%s', (_what, regs, followed, want) => {
    expect(planFollow(regs, new Map(followed as ReadonlyArray<[string, KubeClient]>))).toEqual(want);
  });
});
