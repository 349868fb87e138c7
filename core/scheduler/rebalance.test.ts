import { describe, expect, it } from 'vitest';
import { AnnotationError, formatPlacements, type Placements, type Resources } from './annotations.ts';
import type { ClusterState } from '../superclusters/registration.ts';
import { buildCapacity, unitOf, type SuperCluster } from './capacity.ts';
import type { Policy } from './namespace.ts';
import { parseQuantity } from './quantity.ts';
import {
  excessPods,
  parseRebalanceRequest,
  planRebalance,
  type RebalanceNamespace,
  type RunningPod,
} from './rebalance.ts';

const res = (r: Record<string, string>): Resources =>
  Object.fromEntries(Object.entries(r).map(([k, v]) => [k, parseQuantity(v)]));
const p = (o: Record<string, number>): Placements => new Map(Object.entries(o));
const sc = (name: string, cpu: string, state: ClusterState = 'ready'): SuperCluster => ({
  name,
  state,
  allocatable: res({ cpu, memory: '64Gi' }),
});
const slice = res({ cpu: '1' });
const sliced = (key: string, placements: Record<string, number>, pinned?: string): RebalanceNamespace => ({
  key,
  sliced: true,
  unit: slice,
  placements: p(placements),
  ...(pinned !== undefined && { pinned }),
});
const whole = (key: string, placements: Record<string, number>, quota = '2'): RebalanceNamespace => ({
  key,
  sliced: false,
  unit: unitOf({ quota: res({ cpu: quota }) }),
  placements: p(placements),
});

// buildCapacity reads a namespace's unit from its slice (or its quota when placed whole).
const records = (ns: readonly RebalanceNamespace[]) =>
  ns.map((n) => ({ ...n, ...(n.sliced ? { slice: n.unit } : { quota: n.unit }) }));

interface Row {
  clusters: SuperCluster[];
  namespaces: RebalanceNamespace[];
  policy: Policy;
  limit?: number;
  /** the moves as `key from>to`, in order */
  moves: string[];
  /** every namespace's placements after the plan */
  after: Record<string, string>;
}

const rows: Record<string, Row> = {
  'spread: a super cluster undrained (or added) empty takes half of the slices': {
    clusters: [sc('r1', '4'), sc('r2', '4')],
    namespaces: [sliced('a', { r1: 2 }), sliced('b', { r1: 2 })],
    policy: 'spread',
    moves: ['a r1>r2', 'b r1>r2'],
    after: { a: '{"r1":1,"r2":1}', b: '{"r1":1,"r2":1}' },
  },
  'spread: the bound stops the plan; the first moves are those an unbounded plan starts with': {
    clusters: [sc('r1', '4'), sc('r2', '4')],
    namespaces: [sliced('a', { r1: 2 }), sliced('b', { r1: 2 })],
    policy: 'spread',
    limit: 1,
    moves: ['a r1>r2'],
    after: { a: '{"r1":1,"r2":1}', b: '{"r1":2}' },
  },
  'spread: balanced to within one slice, nothing moves': {
    clusters: [sc('r1', '4'), sc('r2', '4')],
    namespaces: [sliced('a', { r1: 2, r2: 1 })],
    policy: 'spread',
    moves: [],
    after: { a: '{"r1":2,"r2":1}' },
  },
  'spread: evens out free room, not slice counts: the larger cluster takes more': {
    clusters: [sc('r1', '2'), sc('r2', '8')],
    namespaces: [sliced('a', { r1: 2 })],
    policy: 'spread',
    moves: ['a r1>r2', 'a r1>r2'],
    after: { a: '{"r2":2}' },
  },
  'spread: the widest gap first, until free room is even': {
    clusters: [sc('r1', '4'), sc('r2', '4'), sc('r3', '8')],
    namespaces: [sliced('a', { r1: 4 })],
    policy: 'spread',
    moves: ['a r1>r3', 'a r1>r3', 'a r1>r3', 'a r1>r3'],
    after: { a: '{"r3":4}' },
  },
  'draining, unreachable and deregistered clusters neither give nor take': {
    clusters: [sc('r1', '4'), sc('r2', '4', 'draining'), sc('r3', '4', 'unreachable'), sc('r4', '4')],
    namespaces: [sliced('a', { r1: 4 }), sliced('b', { r2: 2, r3: 2 }), sliced('c', { gone: 1 })],
    policy: 'spread',
    moves: ['a r1>r4', 'a r1>r4'],
    after: { a: '{"r1":2,"r4":2}', b: '{"r2":2,"r3":2}', c: '{"gone":1}' },
  },
  'pinned and whole namespaces never move; their use still counts': {
    clusters: [sc('r1', '8'), sc('r2', '8')],
    namespaces: [sliced('pin', { r1: 3 }, 'r1'), whole('home', { r1: 1 }, '3'), sliced('a', { r1: 2 })],
    policy: 'spread',
    moves: ['a r1>r2', 'a r1>r2'],
    after: { pin: '{"r1":3}', home: '{"r1":1}', a: '{"r2":2}' },
  },
  'spread: stops once no move narrows a gap by two slices; a small cluster takes nothing': {
    clusters: [sc('r1', '6'), sc('r2', '1'), sc('r3', '4')],
    namespaces: [sliced('a', { r1: 6 })],
    policy: 'spread',
    moves: ['a r1>r3', 'a r1>r3'],
    after: { a: '{"r1":4,"r3":2}' },
  },
  'spread: slices larger than any room elsewhere stay': {
    clusters: [sc('r1', '8'), sc('r2', '1500m')],
    namespaces: [
      { key: 'big', sliced: true, unit: res({ cpu: '2' }), placements: p({ r1: 2 }) },
      sliced('a', { r1: 2 }),
    ],
    policy: 'spread',
    moves: [],
    after: { big: '{"r1":2}', a: '{"r1":2}' },
  },
  'spread: the scarcest resource of the slice decides the room': {
    clusters: [
      { name: 'r1', state: 'ready', allocatable: res({ cpu: '8', memory: '8Gi' }) },
      { name: 'r2', state: 'ready', allocatable: res({ cpu: '8', memory: '1Gi' }) },
    ],
    namespaces: [{ key: 'a', sliced: true, unit: res({ cpu: '1', memory: '1Gi' }), placements: p({ r1: 4 }) }],
    policy: 'spread',
    moves: [],
    after: { a: '{"r1":4}' },
  },
  'pack: the emptier cluster is emptied into the fuller one while it has room': {
    clusters: [sc('r1', '6'), sc('r2', '4')],
    namespaces: [sliced('a', { r1: 1 }), sliced('b', { r2: 1 }), sliced('c', { r1: 1 })],
    policy: 'pack',
    moves: ['a r1>r2', 'c r1>r2'],
    after: { a: '{"r2":1}', b: '{"r2":1}', c: '{"r2":1}' },
  },
  'pack: no room on the fuller cluster, nothing moves': {
    clusters: [sc('r1', '4'), sc('r2', '3')],
    namespaces: [sliced('a', { r1: 1, r2: 3 })],
    policy: 'pack',
    moves: [],
    after: { a: '{"r1":1,"r2":3}' },
  },
  'pack: the emptiest source first, into the fullest target': {
    clusters: [sc('r1', '8'), sc('r2', '8'), sc('r3', '8')],
    namespaces: [sliced('a', { r1: 1, r2: 3, r3: 6 })],
    policy: 'pack',
    limit: 2,
    moves: ['a r1>r3', 'a r2>r3'],
    after: { a: '{"r2":2,"r3":8}' },
  },
  'pack: a pinned namespace keeps the emptier cluster in use': {
    clusters: [sc('r1', '4'), sc('r2', '4')],
    namespaces: [sliced('pin', { r1: 1 }, 'r1'), sliced('a', { r2: 2 })],
    policy: 'pack',
    moves: [],
    after: { pin: '{"r1":1}', a: '{"r2":2}' },
  },
};

describe('planRebalance', () => {
  it.each(Object.entries(rows))('%s', (_, r) => {
    const cap = buildCapacity(r.clusters, records(r.namespaces));
    const plan = planRebalance(cap, r.namespaces, r.policy, r.limit ?? 100);
    expect(plan.moves.map((m) => `${m.key} ${m.from}>${m.to}`)).toEqual(r.moves);
    expect(Object.fromEntries([...plan.placements].map(([k, v]) => [k, formatPlacements(v)]))).toEqual(r.after);
    // The cache after the plan is the cache rebuilt from the planned placements: nothing counted twice or lost.
    const rebuilt = buildCapacity(
      r.clusters,
      records(r.namespaces).map((ns) => ({ ...ns, placements: plan.placements.get(ns.key)! })),
    );
    for (const [name, c] of rebuilt) {
      expect(plan.capacity.get(name)?.placed, name).toBe(c.placed);
      expect(plan.capacity.get(name)?.free, name).toEqual(c.free);
    }
  });

  it('a bounded plan is the start of the unbounded one', () => {
    const ns = [sliced('a', { r1: 5 }), sliced('b', { r1: 3 }), sliced('c', { r1: 2 })];
    const cap = buildCapacity([sc('r1', '12'), sc('r2', '12'), sc('r3', '12')], records(ns));
    const all = planRebalance(cap, ns, 'spread', 100).moves;
    expect(all.length).toBeGreaterThan(3);
    for (const n of [1, 2, 3]) expect(planRebalance(cap, ns, 'spread', n).moves).toEqual(all.slice(0, n));
  });
});

describe('excessPods', () => {
  const pod = (name: string, created: string, superCluster: string, cpu = '400m'): RunningPod => ({
    name,
    created,
    superCluster,
    requests: res({ cpu, memory: '100Mi' }),
  });
  const pods = [
    pod('old', '2026-01-01T00:00:00Z', 'r1'),
    pod('mid', '2026-01-02T00:00:00Z', 'r1'),
    pod('new', '2026-01-03T00:00:00Z', 'r1'),
    pod('there', '2026-01-04T00:00:00Z', 'r2'),
  ];
  it.each<[string, number, string[]]>([
    ['they fit in two slices: none goes', 2, []],
    ['one slice left: the newest go until the rest fit', 1, ['new']],
    ['no slice left: all of them go', 0, ['new', 'mid', 'old']],
  ])('%s', (_, slices, want) => {
    expect(excessPods(pods, slice, 'r1', slices)).toEqual(want);
  });
  it('counts only the slice resources', () => {
    expect(excessPods([pod('a', '1', 'r1', '1'), pod('b', '2', 'r1', '0')], slice, 'r1', 1)).toEqual([]);
  });
});

describe('parseRebalanceRequest', () => {
  it('reads a request, with defaults', () => {
    expect(parseRebalanceRequest('cm', '{"requestedAt":"t1"}')).toEqual({
      requestedAt: 't1',
      maxMoves: 10,
      dryRun: false,
    });
    expect(parseRebalanceRequest('cm', '{"requestedAt":"t2","maxMoves":3,"dryRun":true}')).toEqual({
      requestedAt: 't2',
      maxMoves: 3,
      dryRun: true,
    });
  });
  it.each<[string, string]>([
    ['[]', 'must be a JSON object'],
    ['{', 'not JSON'],
    ['{"maxMoves":3}', 'field "requestedAt": must be a non-empty string'],
    ['{"requestedAt":"t","maxMoves":0}', 'field "maxMoves": must be a whole number from 1 to 1000, not 0'],
    ['{"requestedAt":"t","maxMoves":"3"}', 'field "maxMoves": must be a whole number from 1 to 1000, not "3"'],
    ['{"requestedAt":"t","dryRun":"yes"}', 'field "dryRun": must be true or false, not "yes"'],
    ['{"requestedAt":"t","max":3}', 'field "max": is not a field'],
  ])('%s is refused: %s', (value, message) => {
    const e = (() => {
      try {
        parseRebalanceRequest('configmap kube-system/vc-scheduler-state', value);
      } catch (err) {
        return err;
      }
    })();
    expect(e).toBeInstanceOf(AnnotationError);
    expect((e as Error).message).toContain('configmap kube-system/vc-scheduler-state: annotation');
    expect((e as Error).message).toContain(message);
  });
});
