import { describe, expect, it } from 'vitest';
import { formatPlacements, type Placements, type Resources } from './annotations.ts';
import type { ClusterState } from '../superclusters/registration.ts';
import { buildCapacity, type SuperCluster } from './capacity.ts';
import { drainPlacements } from './drain.ts';
import type { Policy } from './namespace.ts';
import { parseQuantity } from './quantity.ts';

const res = (r: Record<string, string>): Resources =>
  Object.fromEntries(Object.entries(r).map(([k, v]) => [k, parseQuantity(v)]));
const p = (o: Record<string, number>): Placements => new Map(Object.entries(o));
const sc = (name: string, cpu: string, state: ClusterState = 'ready'): SuperCluster => ({
  name,
  state,
  allocatable: res({ cpu }),
});
const unit = res({ cpu: '1' });

describe('drainPlacements', () => {
  it.each<[string, SuperCluster[], Record<string, number>, Policy, string | undefined, string, string, string]>([
    [
      'moves every slice to the ready cluster',
      [sc('r1', '4', 'draining'), sc('r2', '4')],
      { r1: 2 },
      'spread',
      undefined,
      '{"r2":2}',
      '{"r1":2}',
      '{}',
    ],
    [
      'spreads over the ready ones',
      [sc('r1', '4', 'draining'), sc('r2', '4'), sc('r3', '4')],
      { r1: 2 },
      'spread',
      undefined,
      '{"r2":1,"r3":1}',
      '{"r1":2}',
      '{}',
    ],
    [
      'leaves what finds no room',
      [sc('r1', '4', 'draining'), sc('r2', '1')],
      { r1: 3 },
      'spread',
      undefined,
      '{"r1":2,"r2":1}',
      '{"r1":1}',
      '{"r1":2}',
    ],
    [
      'skips unreachable and deregistered targets',
      [sc('r1', '4', 'draining'), sc('r2', '4', 'unreachable')],
      { r1: 1 },
      'pack',
      undefined,
      '{"r1":1}',
      '{}',
      '{"r1":1}',
    ],
    [
      'keeps slices on clusters not draining',
      [sc('r1', '4', 'draining'), sc('r2', '4'), sc('r3', '4', 'unreachable')],
      { r1: 1, r3: 1 },
      'spread',
      undefined,
      '{"r2":1,"r3":1}',
      '{"r1":1}',
      '{}',
    ],
    [
      'keeps a pinned namespace where it is',
      [sc('r1', '4', 'draining'), sc('r2', '4')],
      { r1: 1 },
      'spread',
      'r1',
      '{"r1":1}',
      '{}',
      '{"r1":1}',
    ],
  ])('%s', (_, clusters, placed, policy, pinned, want, moved, stuck) => {
    const placements = p(placed);
    const capacity = buildCapacity(clusters, [{ key: 'ns', slice: unit, placements }]);
    const d = drainPlacements(capacity, unit, placements, policy, pinned);
    expect(formatPlacements(d.placements)).toBe(want);
    expect(JSON.stringify(Object.fromEntries(d.moved))).toBe(moved);
    expect(JSON.stringify(Object.fromEntries(d.stuck))).toBe(stuck);
    for (const [name, n] of d.placements) expect(d.capacity.get(name)!.placed).toBe(n);
  });
});
