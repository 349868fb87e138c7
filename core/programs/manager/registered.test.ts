import { describe, expect, it } from 'vitest';
import { KubeClient } from '../../kube/client.ts';
import type { ClusterState } from '../../superclusters/registration.ts';
import { planSyncers } from './registered.ts';

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
