/**
 * Patrol with a memo plans only the keys whose objects changed since their last plan found nothing, and every key
 * again within memo.fullEvery passes; drift on either side (an edit, a deletion, an orphan) is still found in one pass.
 */
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import { PLUGIN_API_VERSION, type ResourcePlugin } from '../plugins/contract.ts';
import { PluginHost } from '../plugins/host.ts';
import { MapCache, testTenant } from '../plugins/testing.ts';
import { patrol, PatrolMemo, type PatrolSession } from './patrol.ts';
import type { Plan } from './plan.ts';
import { parseKey, Router } from './routing.ts';

const tenant = testTenant();

const copy: ResourcePlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'copy',
    version: '0.1.0',
    resource: { ...R.configmaps },
    direction: 'down',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  toSuper: (t) => ({ object: t }),
};
const host = await PluginHost.load({ process: 'manager', builtins: [copy] });

const cm = (name: string, rv: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion: rv },
});
const superCm = (name: string, rv: string): KubeObject => ({
  ...cm(name, rv),
  metadata: {
    ...cm(name, rv).metadata,
    labels: { [LABEL.managedBy]: MANAGER },
    annotations: {
      [ANN.cluster]: tenant.key,
      [ANN.namespace]: 'default',
      [ANN.name]: name,
      [ANN.uid]: `uid-${name}`,
    },
  },
});

/** world is both sides' ConfigMaps and a planner that reports drift where the versions differ. */
function world(over: { view?: typeof tenant } = {}) {
  const tenantObjs = [cm('a', '1'), cm('b', '1'), cm('c', '1')];
  const superObjs = [superCm('a', '1'), superCm('b', '1'), superCm('c', '1')];
  const session: PatrolSession = {
    tenant: { ...tenant, kubeconfig: '', weight: 1 } as unknown as PatrolSession['tenant'],
    view: over.view ?? tenant,
    ready: true,
    cache: new MapCache([[R.configmaps, tenantObjs]]),
  };
  const superCache = new MapCache([[R.configmaps, superObjs]]);
  const router = new Router({
    host,
    queue: { add: () => undefined },
    sessions: { get: () => undefined, all: () => [] },
    superCache,
  });
  const planned: string[] = [];
  const rvs = (key: string) => {
    const k = parseKey(key);
    const rv = (c: MapCache) => c.get(R.configmaps, 'default', k.name)?.metadata?.resourceVersion ?? '';
    return [rv(session.cache as MapCache), rv(superCache)] as const;
  };
  const waiting = new Set<string>();
  const plan = (key: string): Plan => {
    planned.push(parseKey(key).name);
    const [t, s] = rvs(key);
    if (waiting.has(parseKey(key).name))
      return { steps: [], effects: [], skip: { reason: 'Waiting', message: 'on another object' } };
    return t === s ? { steps: [], effects: [] } : { steps: [{ op: 'createSuper', obj: cm('x', '') }], effects: [] };
  };
  const enqueued: string[] = [];
  const run = (memo?: PatrolMemo) => {
    planned.length = 0;
    enqueued.length = 0;
    const fixes = patrol({
      sessions: [session],
      host,
      superCache,
      router,
      plan,
      ...(memo && { signature: (key: string) => rvs(key).join('/'), memo }),
      enqueue: (k) => enqueued.push(parseKey(k).name),
    });
    return { fixes, planned: [...planned].sort(), enqueued: [...enqueued].sort() };
  };
  return { session, tenantObjs, superObjs, waiting, run };
}

describe('patrol with a memo', () => {
  it('plans only keys whose objects changed, and still finds an edit, a deletion and an orphan in one pass', () => {
    const w = world();
    const memo = new PatrolMemo();
    expect(w.run(memo)).toEqual({ fixes: 0, planned: ['a', 'b', 'c'], enqueued: [] });
    expect(w.run(memo)).toEqual({ fixes: 0, planned: [], enqueued: [] });
    // An edited super object, a deleted one, and an orphan whose tenant object is gone.
    w.superObjs[0] = superCm('a', '2');
    w.superObjs.splice(1, 1);
    w.superObjs.push(superCm('orphan', '5'));
    expect(w.run(memo)).toEqual({ fixes: 3, planned: ['a', 'b', 'orphan'], enqueued: ['a', 'b', 'orphan'] });
    // Drift stays drift until it is repaired: it is planned again on every pass, not remembered.
    expect(w.run(memo).enqueued).toEqual(['a', 'b', 'orphan']);
  });

  it('plans every unchanged key again within fullEvery passes, spread over them', () => {
    const w = world();
    const memo = new PatrolMemo(3);
    w.run(memo);
    const counts = new Map<string, number>();
    const perPass: number[] = [];
    for (let i = 0; i < 6; i++) {
      const { planned } = w.run(memo);
      perPass.push(planned.length);
      for (const k of planned) counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(['a', 'b', 'c']);
    for (const n of counts.values()) expect(n).toBeGreaterThanOrEqual(1);
    expect(Math.max(...perPass)).toBeLessThan(3);
  });

  it('forgets what it remembered of a tenant whose settings changed', () => {
    const w = world();
    const memo = new PatrolMemo();
    w.run(memo);
    w.session.view = { ...tenant, podSecurityLevel: 'restricted' };
    expect(w.run(memo).planned).toEqual(['a', 'b', 'c']);
  });

  it('plans a key whose plan skipped again on every pass: it waits on an object beyond its own two', () => {
    const w = world();
    const memo = new PatrolMemo();
    w.waiting.add('b');
    expect(w.run(memo)).toEqual({ fixes: 0, planned: ['a', 'b', 'c'], enqueued: [] });
    expect(w.run(memo)).toEqual({ fixes: 0, planned: ['b'], enqueued: [] });
    expect(w.run(memo)).toEqual({ fixes: 0, planned: ['b'], enqueued: [] });
    // Once its plan no longer skips, it is remembered like the others.
    w.waiting.delete('b');
    expect(w.run(memo).planned).toEqual(['b']);
    expect(w.run(memo).planned).toEqual([]);
  });

  it('without a memo every key is planned on every pass', () => {
    const w = world();
    expect(w.run().planned).toEqual(['a', 'b', 'c']);
    expect(w.run().planned).toEqual(['a', 'b', 'c']);
  });
});
