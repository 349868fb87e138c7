import { describe, expect, it } from 'vitest';
import { countPhases } from './phases.ts';
import type { VirtualCluster } from '../api/virtualcluster.ts';

type Phase = NonNullable<VirtualCluster['status']>['phase'];

const vc = (phase?: Phase): VirtualCluster => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name: 'x', namespace: 'y' },
  spec: {},
  ...(phase && { status: { phase } }),
});

describe('countPhases', () => {
  it.each([
    ['none', [], []],
    ['no status yet counts as Pending', [vc(), vc('Pending')], [['Pending', 2]]],
    [
      'one count per phase, in the order first seen',
      [vc('Running'), vc('Error'), vc('Running'), vc()],
      [
        ['Running', 2],
        ['Error', 1],
        ['Pending', 1],
      ],
    ],
  ] as Array<[string, VirtualCluster[], Array<[string, number]>]>)('%s', (_n, vcs, want) => {
    expect(countPhases(vcs)).toEqual(want);
  });
});
