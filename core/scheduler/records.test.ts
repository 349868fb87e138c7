import { describe, expect, it } from 'vitest';
import type { Placements, Resources } from './annotations.ts';
import {
  clusterKey,
  isReadyNode,
  olderThan,
  samePlacements,
  sameResources,
  splitKey,
  terminal,
  type Obj,
} from './records.ts';

const p = (o: Record<string, number>): Placements => new Map(Object.entries(o));
const node = (spec: Record<string, unknown>, conditions: Array<Record<string, unknown>>): Obj => ({
  metadata: { name: 'n1' },
  spec,
  status: { conditions },
});
const pod = (phase?: string): Obj => ({ metadata: { name: 'p' }, ...(phase && { status: { phase } }) });

describe('splitKey', () => {
  it.each([
    ['ns1-abc123-t1/default', ['ns1-abc123-t1', 'default']],
    ['t/a/b', ['t', 'a/b']],
    ['t/', ['t', '']],
  ])('%s -> %j', (key, want) => {
    expect(splitKey(key)).toEqual(want);
  });

  it('a cluster key names its super cluster after the prefix the reconcile dispatches on', () => {
    expect(clusterKey('east')).toBe('@cluster/east');
  });
});

describe('samePlacements', () => {
  it.each([
    [p({ a: 1, b: 2 }), p({ b: 2, a: 1 }), true],
    [p({ a: 1 }), p({ a: 2 }), false],
    [p({ a: 1 }), p({ a: 1, b: 1 }), false],
    [p({}), p({}), true],
  ])('%j vs %j -> %s', (a, b, want) => {
    expect(samePlacements(a, b)).toBe(want);
  });
});

describe('sameResources', () => {
  const r = (o: Record<string, bigint>): Resources => o as Resources;
  it.each([
    [r({ cpu: 100n, memory: 5n }), r({ memory: 5n, cpu: 100n }), true],
    [r({ cpu: 100n }), r({ cpu: 101n }), false],
    [r({ cpu: 100n }), r({ cpu: 100n, memory: 0n }), false],
    [r({ cpu: 100n }), r({ memory: 100n }), false],
    [r({}), r({}), true],
  ])('%o vs %o -> %s', (a, b, want) => {
    expect(sameResources(a, b)).toBe(want);
  });
});

describe('isReadyNode', () => {
  it.each([
    ['Ready', node({}, [{ type: 'Ready', status: 'True' }]), true],
    ['not Ready', node({}, [{ type: 'Ready', status: 'False' }]), false],
    ['Ready unknown', node({}, [{ type: 'Ready', status: 'Unknown' }]), false],
    ['no conditions', node({}, []), false],
    ['cordoned', node({ unschedulable: true }, [{ type: 'Ready', status: 'True' }]), false],
    ['only other conditions', node({}, [{ type: 'MemoryPressure', status: 'True' }]), false],
  ])('%s -> %s', (_, n, want) => {
    expect(isReadyNode(n)).toBe(want);
  });
});

describe('olderThan', () => {
  it.each([
    ['9', '10', true],
    ['10', '9', false],
    ['10', '10', false],
    ['99999999999999999998', '99999999999999999999', true],
    [undefined, '10', false],
    ['abc', '10', false],
    ['9', 'x', false],
  ])('%s older than %s -> %s', (rv, than, want) => {
    expect(olderThan(rv, than)).toBe(want);
  });
});

describe('terminal', () => {
  it.each([
    ['Succeeded', true],
    ['Failed', true],
    ['Running', false],
    ['Pending', false],
    [undefined, false],
  ])('phase %s -> %s', (phase, want) => {
    expect(terminal(pod(phase))).toBe(want);
  });
});
