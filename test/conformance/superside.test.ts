import { describe, expect, it } from 'vitest';
import { superRunChanges, type SuiteNode } from './superside.ts';

const LABEL = 'vc.tenancy.x-k8s.io/real-node';
const TAINT = { key: LABEL, value: 'true', effect: 'NoSchedule' };

const node = (name: string, o: { real?: boolean; cordoned?: boolean; taints?: SuiteNode['spec'] } = {}): SuiteNode => ({
  metadata: { name, ...(o.real && { labels: { [LABEL]: 'true' } }) },
  spec: { ...(o.cordoned && { unschedulable: true }), ...o.taints },
});

describe('superRunChanges', () => {
  it.each<[string, SuiteNode[], ReturnType<typeof superRunChanges>]>([
    ['no nodes: nothing', [], { cordon: [], untaint: [] }],
    [
      'simulated nodes are cordoned, sorted; the tainted real node loses its taint',
      [node('kwok-b'), node('kwok-a'), node('real-0', { real: true, taints: { taints: [TAINT] } })],
      { cordon: ['kwok-a', 'kwok-b'], untaint: ['real-0'] },
    ],
    [
      'a node cordoned already is left as it is (and so is not uncordoned afterwards)',
      [node('kwok-a', { cordoned: true }), node('kwok-b')],
      { cordon: ['kwok-b'], untaint: [] },
    ],
    [
      'a real node without the taint, or with the key under another effect, is left alone',
      [
        node('real-0', { real: true }),
        node('real-1', { real: true, taints: { taints: [{ ...TAINT, effect: 'NoExecute' }] } }),
      ],
      { cordon: [], untaint: [] },
    ],
    [
      'a node labelled real-node=false is a simulated one',
      [{ metadata: { name: 'n', labels: { [LABEL]: 'false' } } }],
      { cordon: ['n'], untaint: [] },
    ],
  ])('%s', (_, nodes, want) => expect(superRunChanges(nodes, LABEL, TAINT)).toEqual(want));
});
