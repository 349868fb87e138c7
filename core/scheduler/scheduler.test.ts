import { describe, expect, it } from 'vitest';
import { formatPlacements, parsePlacements, parseSlice, type Placements, type Resources } from './annotations.ts';
import {
  buildCapacity,
  quotaResources,
  reserve,
  ResourceError,
  slicesFor,
  sumAllocatable,
  unitOf,
  type Capacity,
  type NamespaceRecord,
  type SuperCluster,
} from './capacity.ts';
import type { ClusterState } from '../superclusters/registration.ts';
import { homeOf, MAX_SLICES, placeNamespace, type NamespaceRequest, type Policy } from './namespace.ts';
import { placePod, podAnnotation, podRequests, type PlacedPod } from './pod.ts';
import { parseQuantity } from './quantity.ts';

const q = parseQuantity;
const res = (r: Record<string, string>): Resources => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, q(v)]));
const p = (o: Record<string, number>): Placements => new Map(Object.entries(o));
const sc = (name: string, cpu: string, memory: string, state: ClusterState = 'ready'): SuperCluster => ({
  name,
  state,
  allocatable: res({ cpu, memory }),
});
const DEMO_SLICE = parseSlice('namespace demo', '{"cpu":"100m","memory":"100Mi"}');
const DEMO_QUOTA = quotaResources('resourcequota demo/quota', { cpu: '200m', memory: '200Mi' });
const ns = (
  key: string,
  quota: Record<string, string> | undefined,
  extra: Partial<NamespaceRequest> = {},
): NamespaceRequest => ({
  key,
  slice: DEMO_SLICE,
  quota: quota && res(quota),
  placements: new Map(),
  ...extra,
});

function placedOrThrow(capacity: Capacity, req: NamespaceRequest, policy: Policy = 'spread'): Placements {
  const d = placeNamespace(capacity, req, policy);
  if (d.kind !== 'placed') throw new Error(d.message);
  return d.placements;
}

describe('the issue demo', () => {
  it('slice 100m/100Mi, quota 200m/200Mi: placements {"r1":1,"r2":1}; first Pod on r1, second on r2', () => {
    const clusters = [sc('r1', '4', '8Gi'), sc('r2', '4', '8Gi')];
    const capacity = buildCapacity(clusters, []);
    const d = placeNamespace(capacity, ns('team-a/dev/default', { cpu: '200m', memory: '200Mi' }), 'spread');
    expect(d.kind).toBe('placed');
    expect(formatPlacements(d.placements)).toBe('{"r1":1,"r2":1}');

    const namespace = { key: 'team-a/dev/default', slice: DEMO_SLICE, placements: d.placements };
    const requests = res({ cpu: '100m', memory: '100Mi' });
    const first = placePod(namespace, [], { key: 'default/web-1', requests }, 'spread');
    expect(first).toEqual({ kind: 'placed', superCluster: 'r1' });
    const placed: PlacedPod[] = [{ superCluster: 'r1', requests }];
    expect(placePod(namespace, placed, { key: 'default/web-2', requests }, 'spread')).toEqual({
      kind: 'placed',
      superCluster: 'r2',
    });
    placed.push({ superCluster: 'r2', requests });
    const third = placePod(namespace, placed, { key: 'default/web-3', requests }, 'spread');
    expect(third).toMatchObject({ kind: 'pending', reason: 'NoFreeSlice' });
    expect(third.kind === 'pending' && third.message).toBe(
      'pod default/web-3: requests cpu=100m,memory=100Mi fit no placed slice of namespace team-a/dev/default ' +
        '(r1 left cpu=0,memory=0; r2 left cpu=0,memory=0)',
    );
  });
});

describe('slicesFor and quotaResources', () => {
  it.each([
    ['the demo', { cpu: '200m', memory: '200Mi' }, 2n],
    ['the most over resources', { cpu: '250m', memory: '100Mi' }, 3n],
    ['requests.* means the same', { 'requests.cpu': '300m', 'requests.memory': '1Mi' }, 3n],
    ['the larger of cpu and requests.cpu', { cpu: '100m', 'requests.cpu': '500m' }, 5n],
    ['one resource limited', { memory: '1Gi', pods: '10' }, 11n],
    ['limits.* and object counts do not count', { 'limits.cpu': '10', pods: '10', 'count/secrets': '5' }, null],
  ])('%s', (_, hard, n) => {
    expect(slicesFor(DEMO_SLICE, quotaResources('resourcequota a/q', hard))).toBe(n);
  });

  it('names the quota and field of a bad hard value', () => {
    expect(() => quotaResources('resourcequota a/q', { cpu: 'lots' })).toThrow(
      new ResourceError(
        'resourcequota a/q: spec.hard.cpu: "lots" is not a Kubernetes quantity (e.g. 100m, 1.5, 128Mi, 2G, 1e3)',
      ),
    );
  });
});

describe('capacity', () => {
  it('sums nodes allocatable, naming a node whose value does not parse', () => {
    expect(
      sumAllocatable([
        { name: 'n1', allocatable: { cpu: '2', memory: '4Gi', pods: '110' } },
        { name: 'n2', allocatable: { cpu: '1500m', memory: '4Gi' } },
      ]),
    ).toEqual(res({ cpu: '3500m', memory: '8Gi', pods: '110' }));
    expect(() => sumAllocatable([{ name: 'n2', allocatable: { cpu: 'x' } }])).toThrow(
      /^node n2: status\.allocatable\.cpu: "x"/,
    );
  });

  it('takes placed slices (and whole namespaces by their quota) off the allocatable', () => {
    const c = buildCapacity(
      [sc('r1', '1', '1Gi'), sc('r2', '1', '1Gi')],
      [
        { key: 'a', slice: DEMO_SLICE, quota: DEMO_QUOTA, placements: p({ r1: 1, r2: 1 }) },
        { key: 'b', quota: res({ cpu: '300m', memory: '1Mi' }), placements: p({ r2: 1 }) },
        { key: 'c', placements: p({ r1: 1 }) },
      ],
    );
    expect(c.get('r1')!.free).toEqual(res({ cpu: '900m', memory: '924Mi' }));
    expect(c.get('r2')!.free).toEqual(res({ cpu: '600m', memory: '923Mi' }));
  });

  it('keeps a placement on a super cluster no longer registered, as deregistered, still counted', () => {
    const c = buildCapacity([sc('r1', '1', '1Gi')], [{ key: 'a', slice: DEMO_SLICE, placements: p({ r9: 2 }) }]);
    expect(c.get('r9')).toEqual({
      name: 'r9',
      state: 'deregistered',
      allocatable: {},
      used: res({ cpu: '200m', memory: '200Mi' }),
      free: { cpu: -q('200m'), memory: -q('200Mi') },
      placed: 2,
    });
  });
});

describe('namespace placement', () => {
  const two = [sc('r1', '1', '1Gi'), sc('r2', '1', '1Gi')];

  it('is idempotent: placed namespaces get the same placements and nothing added', () => {
    const placements = p({ r1: 1, r2: 1 });
    const capacity = buildCapacity(two, [{ key: 'a', slice: DEMO_SLICE, quota: DEMO_QUOTA, placements }]);
    expect(placeNamespace(capacity, ns('a', { cpu: '200m', memory: '200Mi' }, { placements }), 'spread')).toEqual({
      kind: 'placed',
      placements,
      added: new Map(),
    });
  });

  it('a grown quota adds slices and keeps the placed ones; a shrunk one takes none back', () => {
    const placements = p({ r1: 1, r2: 1 });
    const capacity = buildCapacity(two, [{ key: 'a', slice: DEMO_SLICE, quota: DEMO_QUOTA, placements }]);
    const grown = placeNamespace(capacity, ns('a', { cpu: '500m', memory: '200Mi' }, { placements }), 'spread');
    expect(grown).toEqual({ kind: 'placed', placements: p({ r1: 3, r2: 2 }), added: p({ r1: 2, r2: 1 }) });
    const shrunk = placeNamespace(capacity, ns('a', { cpu: '100m' }, { placements }), 'spread');
    expect(shrunk).toEqual({ kind: 'placed', placements, added: new Map() });
  });

  it('spread goes round-robin, most room first; pack fills the fullest that fits', () => {
    const clusters = [sc('r1', '1', '1Gi'), sc('r2', '2', '2Gi'), sc('r3', '500m', '1Gi')];
    const capacity = buildCapacity(clusters, []);
    const four = ns('a', { cpu: '400m' });
    expect(placedOrThrow(capacity, four, 'spread')).toEqual(p({ r2: 2, r1: 1, r3: 1 }));
    expect(placedOrThrow(capacity, four, 'pack')).toEqual(p({ r3: 4 }));
    expect(placedOrThrow(capacity, ns('a', { cpu: '700m' }), 'pack')).toEqual(p({ r3: 5, r1: 2 }));
  });

  it('capacity exhaustion: a quota that fits nowhere is unschedulable, all or nothing, naming what is free', () => {
    const clusters = [sc('r1', '150m', '1Gi'), sc('r2', '250m', '1Gi')];
    let capacity = buildCapacity(clusters, []);
    const first = placeNamespace(capacity, ns('a', { cpu: '200m' }), 'spread');
    expect(first).toMatchObject({ kind: 'placed', placements: p({ r2: 1, r1: 1 }) });
    capacity = reserve(capacity, DEMO_SLICE, first.placements);
    const second = placeNamespace(capacity, ns('b', { cpu: '200m' }), 'spread');
    expect(second).toEqual({
      kind: 'unschedulable',
      reason: 'NoRoom',
      message:
        'namespace b: needs 2 slices of cpu=100m,memory=100Mi, 0 placed; no ready super cluster has room for 2 more ' +
        '(r1 free cpu=50m,memory=924Mi; r2 free cpu=150m,memory=924Mi)',
      placements: new Map(),
    });
    expect(placeNamespace(capacity, ns('c', { cpu: '100m' }), 'spread')).toMatchObject({ placements: p({ r2: 1 }) });
  });

  it('draining, unreachable and deregistered super clusters take no new slices; their placed ones stay', () => {
    for (const state of ['draining', 'unreachable', 'deregistered'] as const) {
      const clusters = [sc('r1', '1', '1Gi', state), sc('r2', '1', '1Gi')];
      const placements = p({ r1: 1 });
      const capacity = buildCapacity(clusters, [{ key: 'a', slice: DEMO_SLICE, quota: DEMO_QUOTA, placements }]);
      expect(placeNamespace(capacity, ns('a', { cpu: '300m' }, { placements }), 'spread')).toEqual({
        kind: 'placed',
        placements: p({ r1: 1, r2: 2 }),
        added: p({ r2: 2 }),
      });
      expect(capacity.get('r1')!.used).toEqual(DEMO_SLICE);
    }
    const none = buildCapacity([sc('r1', '1', '1Gi', 'draining')], []);
    expect(placeNamespace(none, ns('b', { cpu: '100m' }), 'pack')).toMatchObject({
      kind: 'unschedulable',
      message:
        'namespace b: needs 1 slices of cpu=100m,memory=100Mi, 0 placed; no ready super cluster has room for 1 more (r1 draining)',
    });
  });

  it('a namespace without a slice is placed whole: on spec.superCluster when pinned, else by the policy', () => {
    const clusters = [sc('r1', '1', '1Gi'), sc('r2', '2', '1Gi')];
    const capacity = buildCapacity(clusters, []);
    const whole = (quota: Record<string, string> | undefined, pinned?: string): NamespaceRequest => ({
      key: 'w',
      quota: quota && res(quota),
      pinned,
      placements: new Map(),
    });
    expect(placedOrThrow(capacity, whole({ cpu: '800m' }, 'r1'))).toEqual(p({ r1: 1 }));
    expect(placedOrThrow(capacity, whole({ cpu: '800m' }), 'spread')).toEqual(p({ r2: 1 }));
    expect(placedOrThrow(capacity, whole({ cpu: '800m' }), 'pack')).toEqual(p({ r1: 1 }));
    expect(placedOrThrow(capacity, whole({ cpu: '1500m' }), 'pack')).toEqual(p({ r2: 1 }));
    expect(placedOrThrow(capacity, whole(undefined), 'spread')).toEqual(p({ r1: 1 }));
    expect(placeNamespace(capacity, whole({ cpu: '1500m' }, 'r1'), 'spread')).toMatchObject({
      kind: 'unschedulable',
      reason: 'NoRoom',
      message:
        'namespace w: needs its quota cpu=1500m, 0 placed; no ready super cluster has room for 1 more (r1 free cpu=1,memory=1Gi)',
    });
    expect(placeNamespace(capacity, whole({ cpu: '1' }, 'r7'), 'spread')).toMatchObject({
      reason: 'PinnedUnavailable',
      message: 'namespace w: spec.superCluster r7 is not registered and takes no new placements',
    });
    const drained = buildCapacity([sc('r1', '1', '1Gi', 'draining')], []);
    expect(placeNamespace(drained, whole({ cpu: '1' }, 'r1'), 'spread')).toMatchObject({
      reason: 'PinnedUnavailable',
      message: 'namespace w: spec.superCluster r1 is draining and takes no new placements',
    });
    const moved = placeNamespace(capacity, { ...whole({ cpu: '1' }, 'r2'), placements: p({ r1: 1 }) }, 'spread');
    expect(moved).toEqual({ kind: 'placed', placements: p({ r1: 1 }), added: new Map() });
  });

  it('spread evens out namespaces that take no capacity by their count; pack keeps them together', () => {
    const clusters = [sc('r1', '1', '1Gi'), sc('r2', '1', '1Gi')];
    for (const [policy, want] of [
      ['spread', ['r1', 'r2', 'r1', 'r2']],
      ['pack', ['r1', 'r1', 'r1', 'r1']],
    ] as const) {
      let capacity = buildCapacity(clusters, []);
      const got: string[] = [];
      for (let i = 0; i < 4; i++) {
        const placements = placedOrThrow(capacity, { key: `w${i}`, placements: new Map() }, policy);
        capacity = reserve(capacity, {}, placements);
        got.push(...placements.keys());
      }
      expect(got).toEqual(want);
    }
  });

  // A tenant's namespaces placed whole by spread alone would land default on r1 and kube-system (its DNS) on r2, and
  // the Pods of default would wait on r1 for a copy of the tenant's kube-dns Service that only r2 gets.
  it("a tenant's namespaces without a slice share its home super cluster, where its DNS namespace is", () => {
    const clusters = [sc('r1', '1', '1Gi'), sc('r2', '1', '1Gi')];
    for (const policy of ['spread', 'pack'] as const) {
      let capacity = buildCapacity(clusters, [{ key: 'other', placements: p({ r1: 1 }) }]);
      const whole = new Map<string, Placements>();
      for (const name of ['kube-system', 'default', 'kube-public', 'kube-node-lease', 'team']) {
        const home = homeOf(whole);
        const placements = placedOrThrow(capacity, { key: name, placements: new Map(), ...(home && { home }) }, policy);
        capacity = reserve(capacity, {}, placements);
        whole.set(name, placements);
      }
      const first = [...whole.get('kube-system')!.keys()];
      expect(first).toHaveLength(1);
      for (const [name, placements] of whole) expect([name, [...placements.keys()]]).toEqual([name, first]);
    }
  });

  it('the home is tried first only for a whole, unpinned namespace, and only while it is ready with room', () => {
    const capacity = buildCapacity([sc('r1', '1', '1Gi'), sc('r2', '4', '4Gi'), sc('r3', '4', '4Gi', 'draining')], []);
    const whole = (quota: string | undefined, extra: Partial<NamespaceRequest>): NamespaceRequest => ({
      key: 'w',
      quota: quota === undefined ? undefined : res({ cpu: quota }),
      placements: new Map(),
      ...extra,
    });
    expect(placedOrThrow(capacity, whole('500m', { home: 'r1' }), 'spread')).toEqual(p({ r1: 1 }));
    expect(placedOrThrow(capacity, whole('2', { home: 'r1' }), 'spread')).toEqual(p({ r2: 1 }));
    expect(placedOrThrow(capacity, whole('500m', { home: 'r3' }), 'pack')).toEqual(p({ r1: 1 }));
    expect(placedOrThrow(capacity, whole('500m', { home: 'r1', pinned: 'r2' }), 'spread')).toEqual(p({ r2: 1 }));
    expect(placedOrThrow(capacity, ns('s', { cpu: '200m' }, { home: 'r1' }), 'spread')).toEqual(p({ r1: 1, r2: 1 }));
  });

  it.each([
    ['nothing placed', {}, undefined],
    ['the DNS namespace decides', { 'kube-system': { r2: 1 }, default: { r1: 1 }, a: { r1: 1 } }, 'r2'],
    ['else the most namespaces', { default: { r2: 1 }, a: { r1: 1 }, b: { r2: 1 } }, 'r2'],
    ['ties by name', { default: { r2: 1 }, a: { r1: 1 } }, 'r1'],
  ])('homeOf: %s', (_, placed: Record<string, Record<string, number>>, want) => {
    expect(homeOf(new Map(Object.entries(placed).map(([k, v]) => [k, p(v)])))).toBe(want);
  });

  it('a pinned sliced namespace puts every slice on its super cluster', () => {
    const capacity = buildCapacity([sc('r1', '1', '1Gi'), sc('r2', '1', '1Gi')], []);
    expect(placedOrThrow(capacity, ns('a', { cpu: '300m' }, { pinned: 'r2' }), 'spread')).toEqual(p({ r2: 3 }));
  });

  it.each([
    [
      'no quota',
      ns('a', undefined),
      'NoQuota',
      'namespace a: a sliced namespace needs a ResourceQuota to count its slices',
    ],
    [
      'a quota outside the slice',
      ns('a', { pods: '10' }),
      'QuotaOutsideSlice',
      "namespace a: its ResourceQuota limits none of the slice's resources (cpu, memory)",
    ],
    [
      'too many slices',
      { ...ns('a', { cpu: '1' }), slice: res({ cpu: '1m' }), quota: res({ cpu: `${MAX_SLICES + 1}m` }) },
      'TooManySlices',
      `namespace a: its quota needs ${MAX_SLICES + 1} slices, more than ${MAX_SLICES}; use a larger slice`,
    ],
  ])('%s is unschedulable with a reason', (_, req, reason, message) => {
    const capacity = buildCapacity([sc('r1', '1000', '1Ti')], []);
    expect(placeNamespace(capacity, req, 'spread')).toEqual({
      kind: 'unschedulable',
      reason,
      message,
      placements: new Map(),
    });
  });

  it('restart-safe: the cache rebuilt from the annotations equals the one kept while placing', () => {
    const clusters = [sc('r1', '2', '2Gi'), sc('r2', '1', '4Gi', 'draining'), sc('r3', '3', '1Gi')];
    const quotas = ['300m', '1', '150m', '700m', '50m', '2', '400m'];
    for (const policy of ['spread', 'pack'] as const) {
      let live = buildCapacity(clusters, [
        { key: 'old', slice: DEMO_SLICE, quota: DEMO_QUOTA, placements: p({ r2: 2 }) },
      ]);
      const annotations: Array<{ key: string; quota: Resources; annotation: string }> = [
        { key: 'old', quota: DEMO_QUOTA, annotation: '{"r2":2}' },
      ];
      quotas.forEach((cpu, i) => {
        const req = ns(`n${i}`, { cpu });
        const d = placeNamespace(live, req, policy);
        if (d.kind !== 'placed') return;
        live = reserve(live, unitOf(req), d.added);
        annotations.push({ key: req.key, quota: req.quota!, annotation: formatPlacements(d.placements) });
      });
      expect(annotations.length).toBeGreaterThan(4);
      const records: NamespaceRecord[] = annotations.map((a) => ({
        key: a.key,
        slice: DEMO_SLICE,
        quota: a.quota,
        placements: parsePlacements(`namespace ${a.key}`, a.annotation),
      }));
      const rebuilt = buildCapacity(clusters, records);
      expect(rebuilt).toEqual(live);
      for (const r of records)
        expect(placeNamespace(rebuilt, { ...r }, policy)).toEqual({
          kind: 'placed',
          placements: r.placements,
          added: new Map(),
        });
    }
  });
});

describe('pod placement', () => {
  const slice = res({ cpu: '200m', memory: '200Mi' });
  const namespace = { key: 'a/b/web', slice, placements: p({ r1: 2, r2: 1 }) };
  const small = res({ cpu: '100m', memory: '10Mi' });

  it('never moves a placed Pod, even onto a full slice', () => {
    const full: PlacedPod[] = [{ superCluster: 'r2', requests: slice }];
    expect(placePod(namespace, full, { key: 'd/x', requests: slice, superCluster: 'r2' }, 'spread')).toEqual({
      kind: 'kept',
      superCluster: 'r2',
    });
  });

  it('spread takes the most room left, pack the least', () => {
    const placed: PlacedPod[] = [{ superCluster: 'r1', requests: small }];
    expect(placePod(namespace, placed, { key: 'd/x', requests: small }, 'spread')).toEqual({
      kind: 'placed',
      superCluster: 'r1',
    });
    expect(placePod(namespace, placed, { key: 'd/x', requests: small }, 'pack')).toEqual({
      kind: 'placed',
      superCluster: 'r2',
    });
    const more: PlacedPod[] = [
      ...placed,
      { superCluster: 'r1', requests: small },
      { superCluster: 'r1', requests: small },
    ];
    expect(placePod(namespace, more, { key: 'd/x', requests: small }, 'spread')).toEqual({
      kind: 'placed',
      superCluster: 'r2',
    });
  });

  it('counts only the resources the slice names; a BestEffort Pod fits anywhere placed', () => {
    const gpu = { ...small, 'nvidia.com/gpu': q('1') };
    expect(placePod(namespace, [], { key: 'd/x', requests: gpu }, 'pack')).toEqual({
      kind: 'placed',
      superCluster: 'r2',
    });
    expect(placePod(namespace, [], { key: 'd/x', requests: {} }, 'spread')).toEqual({
      kind: 'placed',
      superCluster: 'r1',
    });
  });

  it('a namespace placed whole runs every Pod on its super cluster', () => {
    expect(
      placePod({ key: 'w', placements: p({ r2: 1 }) }, [], { key: 'd/x', requests: res({ cpu: '64' }) }, 'spread'),
    ).toEqual({
      kind: 'placed',
      superCluster: 'r2',
    });
  });

  it.each([
    [
      'a Pod larger than a slice',
      namespace,
      { key: 'd/x', requests: res({ cpu: '300m' }) },
      'LargerThanSlice',
      'pod d/x: requests cpu=300m,memory=0 exceed one slice cpu=200m,memory=200Mi of namespace a/b/web (cpu)',
    ],
    [
      'a namespace not placed yet',
      { ...namespace, placements: new Map() },
      { key: 'd/x', requests: small },
      'NamespaceNotPlaced',
      'pod d/x: namespace a/b/web is not placed yet',
    ],
    [
      'an annotation naming a super cluster without the namespace',
      namespace,
      { key: 'd/x', requests: small, superCluster: 'r3' },
      'NotPlacedThere',
      "pod d/x: its scheduler.tenancy.x-k8s.io/superCluster r3 is not among namespace a/b/web's placements (r1, r2)",
    ],
  ])('%s stays Pending with a reason', (_, nsx, pod, reason, message) => {
    expect(placePod(nsx, [], pod, 'spread')).toEqual({ kind: 'pending', reason, message });
  });

  it('Pods placed on other super clusters, or of other sizes, are counted where they run', () => {
    const placed: PlacedPod[] = [
      { superCluster: 'r1', requests: res({ cpu: '350m', memory: '1Mi' }) },
      { superCluster: 'r2', requests: res({ cpu: '10m', memory: '150Mi' }) },
    ];
    const d = placePod(namespace, placed, { key: 'd/x', requests: res({ cpu: '60m', memory: '60Mi' }) }, 'spread');
    expect(d).toMatchObject({ kind: 'pending', reason: 'NoFreeSlice' });
    expect(placePod(namespace, placed, { key: 'd/x', requests: res({ cpu: '50m', memory: '50Mi' }) }, 'pack')).toEqual({
      kind: 'placed',
      superCluster: 'r1',
    });
  });
});

describe('podRequests and podAnnotation', () => {
  it('sums containers, takes at least the largest init container, adds the overhead', () => {
    expect(
      podRequests('pod d/x', {
        containers: [
          { name: 'a', resources: { requests: { cpu: '100m', memory: '64Mi' } } },
          { name: 'b', resources: { requests: { cpu: '50m' } } },
          { name: 'c' },
        ],
        initContainers: [{ name: 'i', resources: { requests: { cpu: '500m', memory: '1Mi' } } }],
        overhead: { cpu: '10m' },
      }),
    ).toEqual(res({ cpu: '510m', memory: '64Mi' }));
  });

  it('names the Pod, container and resource of a bad request', () => {
    expect(() =>
      podRequests('pod d/x', {
        containers: [{ name: 'a' }, { name: 'b', resources: { requests: { memory: '1 Gi' } } }],
      }),
    ).toThrow(/^pod d\/x: spec\.containers\[1\]\.resources\.requests\.memory: "1 Gi" is not/);
  });

  it('reads the superCluster annotation, absent or malformed', () => {
    expect(podAnnotation('pod d/x', undefined)).toBeUndefined();
    expect(podAnnotation('pod d/x', { other: 'r1' })).toBeUndefined();
    expect(podAnnotation('pod d/x', { 'scheduler.tenancy.x-k8s.io/superCluster': 'r2' })).toBe('r2');
    expect(() => podAnnotation('pod d/x', { 'scheduler.tenancy.x-k8s.io/superCluster': 'R2!' })).toThrow(
      'pod d/x: annotation scheduler.tenancy.x-k8s.io/superCluster: "R2!" is not a super cluster name',
    );
  });
});
