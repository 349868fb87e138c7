import { describe, expect, it } from 'vitest';
import {
  AnnotationError,
  formatPlacements,
  formatResources,
  parsePlacements,
  parseSlice,
  parseSuperCluster,
  PLACEMENTS,
  SLICE,
} from './annotations.ts';

const NS = 'namespace team-a/dev/default';

describe('slice annotation', () => {
  it('reads the issue demo slice exactly', () => {
    // written as in the original's demo, with a space after the comma
    expect(parseSlice(NS, '{"cpu":"100m", "memory":"100Mi"}')).toEqual({
      cpu: 100n,
      memory: 100n * 1024n ** 2n * 1000n,
    });
  });

  it('accepts extended resource names', () => {
    expect(parseSlice(NS, '{"nvidia.com/gpu":"1"}')).toEqual({ 'nvidia.com/gpu': 1000n });
  });

  it.each([
    ['not JSON', '{cpu:1}', `${NS}: annotation ${SLICE}: not JSON`],
    ['an array', '["cpu"]', `${NS}: annotation ${SLICE}: must be a JSON object`],
    ['null', 'null', `${NS}: annotation ${SLICE}: must be a JSON object`],
    ['empty', '{}', `${NS}: annotation ${SLICE}: names no resource`],
    [
      'a number, not a quantity string',
      '{"cpu":1}',
      `${NS}: annotation ${SLICE} field "cpu": must be a quantity string`,
    ],
    ['a bad quantity', '{"cpu":"100m","memory":"1Kb"}', `${NS}: annotation ${SLICE} field "memory": "1Kb" is not`],
    ['zero', '{"cpu":"0"}', `${NS}: annotation ${SLICE} field "cpu": must be greater than zero`],
    ['negative', '{"cpu":"-1"}', `${NS}: annotation ${SLICE} field "cpu": "-1" is negative`],
    ['a bad resource name', '{"c p u":"1"}', `${NS}: annotation ${SLICE} field "c p u": is not a resource name`],
  ])('refuses %s, naming the annotation and field', (_, value, message) => {
    const err = (() => {
      try {
        parseSlice(NS, value);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(AnnotationError);
    expect((err as Error).message.startsWith(message)).toBe(true);
  });
});

describe('placements annotation', () => {
  it('reads and writes the issue demo placements', () => {
    const p = parsePlacements(NS, '{"r1":1,"r2":1}');
    expect([...p]).toEqual([
      ['r1', 1],
      ['r2', 1],
    ]);
    expect(formatPlacements(p)).toBe('{"r1":1,"r2":1}');
  });

  it('writes clusters sorted and drops zero counts, so equal placements give equal annotations', () => {
    expect(
      formatPlacements(
        new Map([
          ['r2', 2],
          ['r1', 1],
          ['r3', 0],
        ]),
      ),
    ).toBe('{"r1":1,"r2":2}');
    expect(formatPlacements(new Map())).toBe('{}');
  });

  it.each([
    ['zero slices', '{"r1":0}', ` field "r1": must be a whole number of slices >= 1, not 0`],
    ['a fraction', '{"r1":1.5}', ` field "r1": must be a whole number of slices >= 1, not 1.5`],
    ['a string count', '{"r1":"1"}', ` field "r1": must be a whole number of slices >= 1, not 1`],
    ['a bad cluster name', '{"R_1":1}', ` field "R_1": is not a super cluster name`],
    ['an array', '[1]', ': must be a JSON object'],
  ])('refuses %s', (_, value, message) => {
    expect(() => parsePlacements(NS, value)).toThrow(`${NS}: annotation ${PLACEMENTS}${message}`);
  });
});

describe('superCluster annotation', () => {
  it('reads a super cluster name', () => {
    expect(parseSuperCluster('pod default/web-1', 'r1')).toBe('r1');
  });

  it.each(['', 'R1', 'r1/x', '-r1', 'x'.repeat(64)])('refuses %j', (v) => {
    expect(() => parseSuperCluster('pod default/web-1', v)).toThrow(
      /^pod default\/web-1: annotation scheduler\.tenancy\.x-k8s\.io\/superCluster: /,
    );
  });
});

describe('formatResources', () => {
  it('writes sorted, short quantities', () => {
    expect(formatResources({ memory: 100n * 1024n ** 2n * 1000n, cpu: 100n })).toBe('cpu=100m,memory=100Mi');
    expect(formatResources({})).toBe('(none)');
  });
});
