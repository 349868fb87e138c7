import { describe, expect, it } from 'vitest';
import type { Placements } from './annotations.ts';
import { buildCapacity } from './capacity.ts';
import { parseQuantity } from './quantity.ts';
import { summarize } from './state.ts';

const p = (o: Record<string, number>): Placements => new Map(Object.entries(o));

describe('summarize', () => {
  it('counts slices of sliced namespaces and every placed namespace, with what is free', () => {
    const slice = { cpu: parseQuantity('100m'), memory: parseQuantity('100Mi') };
    const clusters = [
      { name: 'r1', state: 'ready' as const, allocatable: { cpu: parseQuantity('1'), memory: parseQuantity('1Gi') } },
      {
        name: 'r2',
        state: 'draining' as const,
        allocatable: { cpu: parseQuantity('1'), memory: parseQuantity('1Gi') },
      },
    ];
    const namespaces = [
      { key: 'a', tenant: 't1', slice, placements: p({ r1: 2, r2: 1 }) },
      { key: 'b', tenant: 't1', placements: p({ r1: 1 }) },
      { key: 'c', tenant: 't0', slice, placements: p({ r9: 1 }) },
    ];
    const capacity = buildCapacity(clusters, namespaces);
    const s = summarize(
      capacity,
      namespaces.map((n) => ({ tenant: n.tenant, sliced: !!n.slice, placements: n.placements })),
    );
    expect(s).toEqual({
      clusters: {
        r1: {
          state: 'ready',
          placedSlices: 2,
          placedNamespaces: 2,
          allocatable: { cpu: '1', memory: '1Gi' },
          free: { cpu: '800m', memory: '824Mi' },
        },
        r2: {
          state: 'draining',
          placedSlices: 1,
          placedNamespaces: 1,
          allocatable: { cpu: '1', memory: '1Gi' },
          free: { cpu: '900m', memory: '924Mi' },
        },
        r9: {
          state: 'deregistered',
          placedSlices: 1,
          placedNamespaces: 1,
          allocatable: {},
          free: { cpu: '-100m', memory: '-100Mi' },
        },
      },
      tenants: {
        t0: { namespaces: { r9: 1 }, slices: { r9: 1 } },
        t1: { namespaces: { r1: 2, r2: 1 }, slices: { r1: 2, r2: 1 } },
      },
    });
    expect(Object.keys(s.tenants)).toEqual(['t0', 't1']);
  });
});
