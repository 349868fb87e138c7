import { describe, expect, it } from 'vitest';
import { upNumbers } from './up.ts';
import type { EmbeddedShape } from '../../dev/embedded/shape.ts';

describe('upNumbers', () => {
  const base = { nodes: '3', superClusters: '1' };

  it.each([
    [{}, { nodes: 3, superClusters: 1, realNodeSuper: 'r1', realNodeSupers: ['r1'], meta: false }],
    [
      { realNodes: '0' },
      { nodes: 3, superClusters: 1, realNodeSuper: 'r1', realNodeSupers: ['r1'], meta: false, realNodes: 0 },
    ],
    [
      { realNodes: '1', nodes: '0' },
      { nodes: 0, superClusters: 1, realNodeSuper: 'r1', realNodeSupers: ['r1'], meta: false, realNodes: 1 },
    ],
    [
      { superClusters: '2', realNodeSuper: 'r2' },
      { nodes: 3, superClusters: 2, realNodeSuper: 'r2', realNodeSupers: ['r2'], meta: false },
    ],
    // --meta: the meta cluster apart; the real node may sit on any super cluster, r1 alone included
    [{ meta: true }, { nodes: 3, superClusters: 1, realNodeSuper: 'r1', realNodeSupers: ['r1'], meta: true }],
    [
      { meta: true, superClusters: '2', realNodeSuper: 'r2' },
      { nodes: 3, superClusters: 2, realNodeSuper: 'r2', realNodeSupers: ['r2'], meta: true },
    ],
    // a real node on each of several super clusters (each in a network namespace of its own)
    [
      { meta: true, superClusters: '2', realNodeSuper: 'r1,r2' },
      { nodes: 3, superClusters: 2, realNodeSuper: 'r1,r2', realNodeSupers: ['r1', 'r2'], meta: true },
    ],
    [
      { superClusters: '3', realNodeSuper: 'r3, r1' },
      { nodes: 3, superClusters: 3, realNodeSuper: 'r3, r1', realNodeSupers: ['r3', 'r1'], meta: false },
    ],
  ])('%j is accepted', (o, want) => {
    expect(upNumbers({ ...base, ...o })).toEqual(want);
  });

  it.each([
    [{ realNodes: 'abc' }, '--real-nodes "abc": must be a whole number from 0 to 4'],
    [{ realNodes: '-1' }, '--real-nodes "-1": must be a whole number from 0 to 4'],
    [{ realNodes: '1.5' }, '--real-nodes "1.5": must be a whole number from 0 to 4'],
    [{ realNodes: '' }, '--real-nodes "": must be a whole number from 0 to 4'],
    [{ realNodes: '9' }, '--real-nodes "9": must be a whole number from 0 to 4'],
    [{ nodes: 'three' }, '--nodes "three": must be a whole number from 0 to 1000'],
    [{ superClusters: '0' }, '--super-clusters "0": must be a whole number from 1 to 9'],
    [{ superClusters: '10' }, '--super-clusters "10": must be a whole number from 1 to 9'],
    [{ realNodeSuper: 'r2' }, '--real-node-super r2: must be one of r1..r1 (--super-clusters)'],
    [{ superClusters: '2', realNodeSuper: 'r3' }, '--real-node-super r3: must be one of r1..r2 (--super-clusters)'],
    [{ meta: true, realNodeSuper: 'r2' }, '--real-node-super r2: must be one of r1..r1 (--super-clusters)'],
    [{ meta: true, realNodeSuper: 'meta' }, '--real-node-super meta: must be one of r1..r1 (--super-clusters)'],
    [{ superClusters: '2', realNodeSuper: 'r1,r3' }, '--real-node-super r3: must be one of r1..r2 (--super-clusters)'],
    [{ superClusters: '2', realNodeSuper: 'r2,r2' }, '--real-node-super r2,r2: names r2 twice'],
    [{ superClusters: '2', realNodeSuper: 'r1,' }, '--real-node-super : must be one of r1..r2 (--super-clusters)'],
  ])('%j is refused naming the option, the value and what it takes', (o, msg) => {
    expect(() => upNumbers({ ...base, ...o })).toThrow(msg);
  });

  // vc up again on a state directory: what it ran is the default, and the options may not strand what it holds
  const apart: EmbeddedShape = { meta: true, superClusters: 2 };
  const plain: EmbeddedShape = { meta: false, superClusters: 1 };
  it.each([
    [{}, apart, { superClusters: 2, realNodeSuper: 'r1', meta: true }],
    [{ realNodeSuper: 'r2' }, apart, { superClusters: 2, realNodeSuper: 'r2', meta: true }],
    [{ meta: true, superClusters: '3' }, apart, { superClusters: 3, realNodeSuper: 'r1', meta: true }],
    [{}, plain, { superClusters: 1, meta: false }],
    [{ superClusters: '2' }, plain, { superClusters: 2, meta: false }],
  ])('%j on a state directory that ran %j runs %j', (o, shape, want) => {
    expect(upNumbers({ nodes: '3', ...o }, { dir: '/s', shape })).toMatchObject(want);
  });

  it.each([
    [{ superClusters: '1' }, apart, '--super-clusters 1: /s runs 2 super clusters (r1..r2)'],
    [{ meta: true }, plain, '--meta: /s was started without --meta'],
    [{ superClusters: '3', realNodeSuper: 'r4' }, apart, '--real-node-super r4: must be one of r1..r3'],
  ])('%j on a state directory that ran %j is refused naming the option', (o, shape, msg) => {
    expect(() => upNumbers({ nodes: '3', ...o }, { dir: '/s', shape })).toThrow(msg);
  });
});
