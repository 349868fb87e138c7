import { describe, expect, it } from 'vitest';
import { kwokNode } from '../dev/local/controlplane.ts';
import { KUBELET_KINDS } from './routes.ts';
import { isSimulatedNode, simulatedNodeRefusal } from './simulated.ts';
import type { SuperNode } from './superview.ts';

const real: SuperNode = { metadata: { name: 'worker-1', labels: { 'kubernetes.io/hostname': 'worker-1' } } };

describe('isSimulatedNode', () => {
  it.each<[string, SuperNode, boolean]>([
    ['the local super cluster kwok node', kwokNode('kwok-node-0') as SuperNode, true],
    ['kwok annotation only', { metadata: { name: 'n', annotations: { 'kwok.x-k8s.io/node': 'fake' } } }, true],
    [
      'kwok annotation with another value',
      { metadata: { name: 'n', annotations: { 'kwok.x-k8s.io/node': 'custom' } } },
      true,
    ],
    ['kwok type label only', { metadata: { name: 'n', labels: { type: 'kwok' } } }, true],
    ['a real node', real, false],
    ['empty kwok annotation', { metadata: { name: 'n', annotations: { 'kwok.x-k8s.io/node': '' } } }, false],
    ['another type label', { metadata: { name: 'n', labels: { type: 'virtual-kubelet' } } }, false],
    ['no metadata', {}, false],
  ])('%s', (_, node, want) => expect(isSimulatedNode(node)).toBe(want));
});

describe('simulatedNodeRefusal', () => {
  const kwok = kwokNode('kwok-node-0') as SuperNode;
  it.each([
    ['exec', 'exec is not available: pod default/web-0 runs on simulated node kwok-node-0 (no container runtime)'],
    ['attach', 'attach is not available: pod default/web-0 runs on simulated node kwok-node-0 (no container runtime)'],
    [
      'portForward',
      'port-forward is not available: pod default/web-0 runs on simulated node kwok-node-0 (no container runtime)',
    ],
    ['run', 'run is not available: pod default/web-0 runs on simulated node kwok-node-0 (no container runtime)'],
    ['containerLogs', undefined],
  ] as const)('%s on a simulated node', (kind, want) =>
    expect(simulatedNodeRefusal(kind, 'default/web-0', kwok)).toBe(want),
  );

  it('lets every kind through to a real node', () => {
    for (const kind of KUBELET_KINDS) expect(simulatedNodeRefusal(kind, 'default/web-0', real)).toBeUndefined();
  });
});
