import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { PLACEMENTS, SUPER_CLUSTER } from '../scheduler/annotations.ts';
import { sign, SIGNATURE } from '../scheduler/signature.ts';
import { recordConfigMap } from '../scheduler/placementrecord.ts';
import type { SharedInformer } from '../kube/factory.ts';
import type { EventHandler } from '../kube/informer.ts';
import {
  PLACEMENT_ANNOTATIONS,
  placedOn,
  placementChanged,
  placementVerdict,
  podEndsPresence,
  recordedPlacements,
  signedPlacements,
  tenantOnCluster,
  UP_OWNER_LABEL,
  upOwned,
  type PlacementKind,
} from './placement.ts';

const key = Buffer.alloc(32, 1);
const signed = signedPlacements(key);
const T = 'default-abc123-t1';

/** ns is a tenant namespace; placements signed by the scheduler unless `forged`. */
function ns(placements?: string, forged = false): KubeObject {
  const m = { name: 'team', uid: 'nsuid', annotations: {} as Record<string, string> };
  if (placements !== undefined) {
    m.annotations[PLACEMENTS] = placements;
    m.annotations[SIGNATURE] = forged
      ? 'v1.forged'
      : sign(key, { tenant: T, kind: 'Namespace', namespace: 'team', name: 'team', uid: 'nsuid', value: placements });
  }
  return { metadata: m };
}

function pod(cluster?: string, forged = false): KubeObject {
  const m = { namespace: 'team', name: 'web-1', uid: 'poduid', annotations: {} as Record<string, string> };
  if (cluster !== undefined) {
    m.annotations[SUPER_CLUSTER] = cluster;
    m.annotations[SIGNATURE] = forged
      ? 'v1.forged'
      : sign(key, { tenant: T, kind: 'Pod', namespace: 'team', name: 'web-1', uid: 'poduid', value: cluster });
  }
  return { metadata: m };
}

type Row = [string, PlacementKind, KubeObject | undefined, KubeObject | undefined, true | string];

// The syncer asking is always the one of super cluster r1.
const rows: Row[] = [
  ['a cluster-scoped object goes everywhere', 'cluster', undefined, undefined, true],
  ['an unplaced namespace is not synced', 'namespace', ns(), undefined, 'NamespaceNotPlaced'],
  ['a namespace missing from the cache is not synced', 'namespaced', undefined, undefined, 'NamespaceNotPlaced'],
  ['a namespace placed here', 'namespace', ns('{"r1":1}'), undefined, true],
  ['a namespace spread here and elsewhere', 'namespace', ns('{"r1":1,"r2":1}'), undefined, true],
  ['a namespace placed elsewhere only', 'namespace', ns('{"r2":2}'), undefined, 'NotPlacedHere'],
  ['a forged placement counts as none', 'namespace', ns('{"r1":1}', true), undefined, 'NamespaceNotPlaced'],
  ['a signed but malformed placement', 'namespace', ns('{"r1":0}'), undefined, 'MalformedPlacement'],
  ['a ConfigMap of a namespace spread here', 'namespaced', ns('{"r1":1,"r2":1}'), undefined, true],
  ['a ConfigMap of a namespace placed elsewhere', 'namespaced', ns('{"r2":1}'), undefined, 'NotPlacedHere'],
  ['a Pod placed here', 'pod', ns('{"r1":1,"r2":1}'), pod('r1'), true],
  ['a Pod placed on the other cluster', 'pod', ns('{"r1":1,"r2":1}'), pod('r2'), 'PodOnOtherCluster'],
  ['a Pod not scheduled yet in a spread namespace', 'pod', ns('{"r1":1,"r2":1}'), pod(), 'PodNotScheduled'],
  ['a Pod of a namespace placed whole here', 'pod', ns('{"r1":3}'), pod(), true],
  ['a Pod of a namespace placed whole elsewhere', 'pod', ns('{"r2":1}'), pod(), 'NotPlacedHere'],
  ['a Pod of an unplaced namespace', 'pod', ns(), pod(), 'NamespaceNotPlaced'],
  [
    'a Pod with a forged super cluster in a spread namespace',
    'pod',
    ns('{"r1":1,"r2":1}'),
    pod('r1', true),
    'PodNotScheduled',
  ],
  ['a Pod with a forged super cluster, namespace elsewhere', 'pod', ns('{"r2":1}'), pod('r1', true), 'NotPlacedHere'],
  ['a forged Pod annotation cannot leave a whole placement', 'pod', ns('{"r1":1}'), pod('r2', true), true],
  ['a Pod left here after its namespace lost r1 keeps being served', 'pod', ns('{"r2":1}'), pod('r1'), true],
  ['a signed but malformed Pod annotation', 'pod', ns('{"r1":1}'), pod('R1!'), 'MalformedPlacement'],
];

describe('placementVerdict', () => {
  it.each(rows)('%s', (_name, kind, namespace, p, want) => {
    const v = placementVerdict({ cluster: 'r1', tenant: T, kind, namespace, pod: p, signed });
    expect(v.sync ? true : v.reason).toBe(want);
    if (!v.sync) expect(v.message).not.toBe('');
  });

  it('another tenant cannot reuse a signed namespace', () => {
    const v = placementVerdict({
      cluster: 'r1',
      tenant: 'x-000000-t2',
      kind: 'namespace',
      namespace: ns('{"r1":1}'),
      signed,
    });
    expect(v.sync).toBe(false);
  });
});

describe('placementChanged', () => {
  it.each([
    [ns('{"r1":1}'), ns('{"r1":1}'), false],
    [ns('{"r1":1}'), ns('{"r1":1,"r2":1}'), true],
    [ns(), ns('{"r1":1}'), true],
    [undefined, ns(), false],
  ])('%#', (a, b, want) => {
    expect(placementChanged(a, b, PLACEMENT_ANNOTATIONS)).toBe(want);
  });
});

describe('upOwned: one syncer keeps each tenant object that flows up', () => {
  const obj = (owner?: string): KubeObject => ({
    metadata: { name: 'fast', labels: owner === undefined ? {} : { [UP_OWNER_LABEL]: owner } },
  });
  it.each([
    { name: 'owned here, source here: updates it', owner: 'r1', hasSource: true, want: true },
    { name: 'owned here, source gone (super node deleted): deletes it', owner: 'r1', hasSource: false, want: true },
    {
      name: "another super cluster's, same-named source here: leaves it (no fight)",
      owner: 'r2',
      hasSource: true,
      want: false,
    },
    { name: "another super cluster's, no source here: leaves it", owner: 'r2', hasSource: false, want: false },
    { name: 'no owner recorded, source here: takes it', owner: undefined, hasSource: true, want: true },
    { name: 'no owner recorded, no source here: leaves it', owner: undefined, hasSource: false, want: false },
    { name: 'an empty owner counts as none', owner: '', hasSource: false, want: false },
  ])('$name', ({ owner, hasSource, want }) => {
    expect(upOwned({ cluster: 'r1', tenantObj: obj(owner), hasSource })).toBe(want);
  });
});

describe('dnsFollows: the tenant DNS namespace is copied, down only, wherever the tenant is', () => {
  const sys = (placements: string): KubeObject => {
    const m = {
      name: 'kube-system',
      uid: 'sysuid',
      annotations: { [PLACEMENTS]: placements } as Record<string, string>,
    };
    m.annotations[SIGNATURE] = sign(key, {
      tenant: T,
      kind: 'Namespace',
      namespace: 'kube-system',
      name: 'kube-system',
      uid: 'sysuid',
      value: placements,
    });
    return { metadata: m };
  };
  const sysPod = (labels: Record<string, string>): KubeObject => ({
    metadata: { namespace: 'kube-system', name: 'coredns-1', uid: 'p', labels },
  });
  const dnsPod = sysPod({ 'k8s-app': 'kube-dns' });
  // The syncer asking is r2's; the tenant's home (kube-system) is r1.
  it.each([
    { name: 'kube-system where the tenant is', kind: 'namespace', ns: sys('{"r1":1}'), on: true, want: 'follow' },
    { name: 'its kube-dns Service or Corefile', kind: 'namespaced', ns: sys('{"r1":1}'), on: true, want: 'follow' },
    { name: 'its DNS Pod', kind: 'pod', ns: sys('{"r1":1}'), pod: dnsPod, on: true, want: 'follow' },
    {
      name: 'another Pod of kube-system stays home',
      kind: 'pod',
      ns: sys('{"r1":1}'),
      pod: sysPod({ app: 'x' }),
      on: true,
      want: 'NotPlacedHere',
    },
    // Where the tenant is not (never came, or left): every copy of its kube-system there is removed.
    { name: 'removed where the tenant is not', kind: 'namespaced', ns: sys('{"r1":1}'), on: false, want: 'remove' },
    { name: 'its namespace removed there', kind: 'namespace', ns: sys('{"r1":1}'), on: false, want: 'remove' },
    { name: 'its DNS Pod removed there', kind: 'pod', ns: sys('{"r1":1}'), pod: dnsPod, on: false, want: 'remove' },
    {
      name: 'any other Pod of kube-system removed there',
      kind: 'pod',
      ns: sys('{"r1":1}'),
      pod: sysPod({ app: 'x' }),
      on: false,
      want: 'remove',
    },
    { name: 'never removed at home', kind: 'namespace', ns: sys('{"r2":1}'), on: false, want: 'sync' },
    { name: 'at home it is a plain sync', kind: 'pod', ns: sys('{"r2":1}'), pod: dnsPod, on: true, want: 'sync' },
    {
      name: 'another namespace never follows',
      kind: 'namespaced',
      ns: ns('{"r1":1}'),
      on: true,
      want: 'NotPlacedHere',
    },
    {
      name: 'another namespace is never removed: it stays until the tenant deletes it',
      kind: 'namespace',
      ns: ns('{"r1":1}'),
      on: false,
      want: 'NotPlacedHere',
    },
    {
      name: 'an unplaced kube-system is never removed',
      kind: 'namespace',
      ns: { metadata: { name: 'kube-system' } },
      on: false,
      want: 'NamespaceNotPlaced',
    },
    {
      name: 'an unplaced kube-system has no home yet',
      kind: 'namespace',
      ns: { metadata: { name: 'kube-system' } },
      on: true,
      want: 'NamespaceNotPlaced',
    },
  ] as Array<{ name: string; kind: PlacementKind; ns: KubeObject; pod?: KubeObject; on: boolean; want: string }>)(
    '$name',
    ({ kind, ns: namespace, pod: p, on, want }) => {
      const asked: string[] = [];
      const v = placementVerdict({
        cluster: 'r2',
        tenant: T,
        kind,
        namespace,
        pod: p,
        signed,
        tenantOn: (c) => (asked.push(c), on),
      });
      expect(v.sync ? (v.follow ? 'follow' : 'sync') : v.remove ? 'remove' : v.reason).toBe(want);
      if (want === 'follow' || want === 'remove') expect(asked).toEqual(['r2']);
    },
  );
});

describe('tenantOnCluster: where a tenant is, as its DNS follows it', () => {
  const other = (placements: string, name = 'team'): KubeObject => {
    const o = ns(placements);
    o.metadata!.name = name;
    // signed for 'team': another name keeps the signature of 'team', which no longer verifies
    return o;
  };
  const ended = (phase: string): KubeObject => ({ ...pod('r2'), status: { phase } }) as KubeObject;
  const sysPinned: KubeObject = (() => {
    const m = { namespace: 'kube-system', name: 'web-1', uid: 'poduid', annotations: {} as Record<string, string> };
    m.annotations[SUPER_CLUSTER] = 'r2';
    m.annotations[SIGNATURE] = sign(key, {
      tenant: T,
      kind: 'Pod',
      namespace: 'kube-system',
      name: 'web-1',
      uid: 'poduid',
      value: 'r2',
    });
    return { metadata: m };
  })();
  it.each([
    { name: 'a namespace placed there', namespaces: [ns('{"r1":1,"r2":1}')], pods: [], want: true },
    { name: 'namespaces placed elsewhere only', namespaces: [ns('{"r1":2}')], pods: [], want: false },
    { name: 'a forged placement there', namespaces: [ns('{"r2":1}', true)], pods: [], want: false },
    { name: 'a signature for another namespace', namespaces: [other('{"r2":1}', 'x')], pods: [], want: false },
    {
      name: 'kube-system itself does not count',
      namespaces: [other('{"r2":1}', 'kube-system')],
      pods: [],
      want: false,
    },
    { name: 'a running Pod left there', namespaces: [ns('{"r1":2}')], pods: [pod('r2')], want: true },
    { name: 'a forged Pod there', namespaces: [ns('{"r1":2}')], pods: [pod('r2', true)], want: false },
    { name: 'a Pod on another super cluster', namespaces: [ns('{"r1":2}')], pods: [pod('r1')], want: false },
    { name: 'a Succeeded Pod there', namespaces: [], pods: [ended('Succeeded')], want: false },
    { name: 'a Failed Pod there', namespaces: [], pods: [ended('Failed')], want: false },
    { name: 'a Pending Pod there', namespaces: [], pods: [ended('Pending')], want: true },
    { name: 'a Pod of kube-system there does not count', namespaces: [], pods: [sysPinned], want: false },
    { name: 'nothing at all', namespaces: [], pods: [], want: false },
  ] as Array<{ name: string; namespaces: KubeObject[]; pods: KubeObject[]; want: boolean }>)(
    '$name',
    ({ namespaces, pods, want }) => {
      expect(tenantOnCluster(T, 'r2', signed, { namespaces: () => namespaces, pods: () => pods })).toBe(want);
    },
  );
});

describe('podEndsPresence: which Pod events may end the tenant on a super cluster', () => {
  const phase = (p: KubeObject, ph?: string): KubeObject => ({ ...p, status: ph ? { phase: ph } : {} }) as KubeObject;
  const sysPod: KubeObject = { metadata: { ...pod('r2').metadata, namespace: 'kube-system' } };
  sysPod.metadata!.annotations = {
    [SUPER_CLUSTER]: 'r2',
    [SIGNATURE]: sign(key, {
      tenant: T,
      kind: 'Pod',
      namespace: 'kube-system',
      name: 'web-1',
      uid: 'poduid',
      value: 'r2',
    }),
  };
  it.each([
    { name: 'a Pod there deleted', before: pod('r2'), after: undefined, want: true },
    {
      name: 'a Pod there just Succeeded',
      before: phase(pod('r2'), 'Running'),
      after: phase(pod('r2'), 'Succeeded'),
      want: true,
    },
    { name: 'a Pod there just Failed', before: phase(pod('r2')), after: phase(pod('r2'), 'Failed'), want: true },
    {
      name: 'an ended Pod updated again',
      before: phase(pod('r2'), 'Failed'),
      after: phase(pod('r2'), 'Failed'),
      want: false,
    },
    {
      name: 'a Pod there still Running',
      before: phase(pod('r2'), 'Pending'),
      after: phase(pod('r2'), 'Running'),
      want: false,
    },
    { name: 'a Pod elsewhere deleted', before: pod('r1'), after: undefined, want: false },
    { name: 'an unplaced Pod deleted', before: pod(), after: undefined, want: false },
    { name: 'a forged Pod there deleted', before: pod('r2', true), after: undefined, want: false },
    { name: 'a kube-system Pod is never the one', before: sysPod, after: undefined, want: false },
  ] as Array<{ name: string; before: KubeObject; after?: KubeObject; want: boolean }>)(
    '$name',
    ({ before, after, want }) => {
      expect(podEndsPresence(T, 'r2', signed, before, after)).toBe(want);
    },
  );
});

describe('placedOn', () => {
  it.each([
    ['{"r1":1,"r2":2}', 'r2', true],
    ['{"r1":1}', 'r2', false],
    ['{"r2":0}', 'r2', false],
    ['not json', 'r2', false],
  ])('%s on %s', (raw, c, want) => expect(placedOn(raw, c)).toBe(want));
});

describe('recordedPlacements', () => {
  /** cache is the records informer's cache, fed by hand: add, update or delete calls its handlers as a watch would. */
  function cache() {
    const store = new Map<string, KubeObject>();
    const handlers: Array<EventHandler<KubeObject>> = [];
    const informer: SharedInformer<KubeObject> = {
      addHandler: (h) => handlers.push(h),
      get: (k) => store.get(k),
      list: () => [...store.values()],
      hasSynced: () => true,
      waitForSync: async () => {},
      start: () => {},
      stop: async () => {},
    };
    const put = (cm: KubeObject) => {
      const k = `${cm.metadata!.namespace}/${cm.metadata!.name}`;
      const old = store.get(k);
      store.set(k, cm);
      for (const h of handlers) {
        if (old) h.onUpdate?.(old, cm);
        else h.onAdd?.(cm);
      }
    };
    const del = (cm: KubeObject) => {
      store.delete(`${cm.metadata!.namespace}/${cm.metadata!.name}`);
      for (const h of handlers) h.onDelete?.(cm);
    };
    return { informer, put, del };
  }
  const record = (entries: Record<string, [string, string]>, namespace = 'vc-system', rv = '1') => {
    const cm = recordConfigMap(
      namespace,
      T,
      new Map(Object.entries(entries).map(([n, [uid, placements]]) => [n, { uid, placements }])),
    );
    cm.metadata!.resourceVersion = rv;
    return cm;
  };

  it('reads the record, whatever the signed annotation says; a namespace made again is not placed', () => {
    const c = cache();
    const r = recordedPlacements(key, c.informer, 'vc-system');
    c.put(record({ team: ['nsuid', '{"r2":1}'] }));
    expect(r.namespacePlacements(T, ns('{"r1":1}'))).toBe('{"r2":1}');
    c.put(record({ team: ['otheruid', '{"r2":1}'] }, 'vc-system', '2'));
    expect(r.namespacePlacements(T, ns('{"r1":1}'))).toBeUndefined();
    c.put(record({}, 'vc-system', '3'));
    expect(r.namespacePlacements(T, ns('{"r1":1}'))).toBeUndefined();
  });

  it('reads the signed annotation of a tenant with no record, and only a record of its name in its namespace', () => {
    const c = cache();
    const r = recordedPlacements(key, c.informer, 'vc-system');
    expect(r.namespacePlacements(T, ns('{"r1":1}'))).toBe('{"r1":1}');
    expect(r.namespacePlacements(T, ns('{"r1":1}', true))).toBeUndefined();
    c.put(record({ team: ['nsuid', '{"r2":1}'] }, 'elsewhere'));
    expect(r.namespacePlacements(T, ns('{"r1":1}'))).toBe('{"r1":1}');
  });

  it('reports the namespaces whose entry changed', () => {
    const c = cache();
    const r = recordedPlacements(key, c.informer, 'vc-system');
    const seen: Array<[string, string[]]> = [];
    const off = r.onChange!((t, names) => seen.push([t, names]));
    c.put(record({ team: ['nsuid', '{"r1":1}'], other: ['u2', '{"r1":1}'] }));
    c.put(record({ team: ['nsuid', '{"r2":1}'], other: ['u2', '{"r1":1}'] }, 'vc-system', '2'));
    c.put(record({ team: ['nsuid', '{"r2":1}'], other: ['u2', '{"r1":1}'] }, 'vc-system', '3'));
    c.del(record({ team: ['nsuid', '{"r2":1}'] }, 'vc-system', '3'));
    off();
    c.put(record({ team: ['nsuid', '{"r1":1}'] }, 'vc-system', '4'));
    expect(seen).toEqual([
      [T, ['other', 'team']],
      [T, ['team']],
      [T, ['other', 'team']],
    ]);
  });

  it('reads Pods by their signature', () => {
    const r = recordedPlacements(key, cache().informer, 'vc-system');
    expect(r.podSuperCluster(T, pod('r2'))).toBe('r2');
    expect(r.podSuperCluster(T, pod('r2', true))).toBeUndefined();
  });
});
