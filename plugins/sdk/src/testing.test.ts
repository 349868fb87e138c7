import { describe, expect, it } from 'vitest';
import { PLUGIN_API_VERSION, type MutatorPlugin, type ResourcePlugin } from './contract.ts';
import type { KubeObject } from './kube.ts';
import { MapCache, runTable, runTransforms, testContext, testTenant } from './testing.ts';

const CM = { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true } as const;

interface Cm extends KubeObject {
  data?: Record<string, string>;
}

const cm = (ns: string, data: Record<string, string>): Cm => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace: ns, name: 'c' },
  data,
});

const both: ResourcePlugin<Cm> = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'cms',
    version: '1.0.0',
    direction: 'both',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
    resource: CM,
  },
  toSuper: (t, _s, ctx) => ({
    object: { ...t, metadata: { ...t.metadata, namespace: ctx.names.superNamespace(t.metadata?.namespace ?? '') } },
  }),
  toTenant: (s, t) => ({ object: t ? { ...t, data: { ...t.data, seen: String(!!s) } } : null }),
};

const stamp: MutatorPlugin<Cm> = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'stamp',
    version: '1.0.0',
    direction: 'mutator',
    mutates: 'cms',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  mutate: (d) => ({
    object: { ...d, data: { ...d.data, stamped: 'yes' } },
    effects: [
      {
        type: 'event',
        side: 'tenant',
        regarding: { apiVersion: 'v1', kind: 'ConfigMap', name: 'c' },
        eventType: 'Normal',
        reason: 'Stamped',
        message: 'stamped',
      },
    ],
  }),
};

describe('runTransforms', () => {
  it('runs the directions the core would run for each row, mutators after toSuper', () => {
    const got = runTable(
      both,
      {
        'only tenant': { tenantObj: cm('web', { a: '1' }) },
        both: { tenantObj: cm('web', { a: '1' }), superObj: cm('team-a-1a2b3c-dev-web', { a: '0' }) },
        'only super': { superObj: cm('team-a-1a2b3c-dev-web', { a: '0' }) },
      },
      [stamp],
    );
    expect(got['only tenant']).toStrictEqual({
      down: {
        object: cm('team-a-1a2b3c-dev-web', { a: '1', stamped: 'yes' }),
        effects: [expect.objectContaining({ reason: 'Stamped' })],
      },
    });
    expect(got.both!.up).toStrictEqual({ object: cm('web', { a: '1', seen: 'true' }) });
    expect(got['only super']).toStrictEqual({});
  });

  it('runs the mutator chain as the core does: a disabled mutator is passed over, a skip ends the chain', () => {
    const named = (name: string, out: 'label' | 'skip'): MutatorPlugin<Cm> => ({
      manifest: { ...stamp.manifest, name },
      mutate: (d) =>
        out === 'skip'
          ? { object: d, skip: { reason: `By-${name}`, message: name } }
          : { object: { ...d, data: { ...d.data, [name]: 'yes' } } },
    });
    const tenant = testTenant({ plugins: { disable: ['first'] } });
    const got = runTransforms(both, { tenant, tenantObj: cm('web', {}) }, [
      named('first', 'label'),
      named('second', 'label'),
      named('stop', 'skip'),
      named('never', 'label'),
    ]);
    expect(got.down).toStrictEqual({
      object: cm('team-a-1a2b3c-dev-web', { second: 'yes' }),
      skip: { reason: 'By-stop', message: 'stop' },
    });
  });

  it('fails a plugin that edits an object it was given', () => {
    const impure: ResourcePlugin<Cm> = {
      ...both,
      toSuper: (t, _s, ctx) => {
        ctx.tenantCache.list<Cm>(CM)[0]!.data = {};
        return { object: t };
      },
    };
    expect(() =>
      runTransforms(impure, { tenantObj: cm('web', {}), tenantState: [[CM, [cm('web', { x: '1' })]]] }),
    ).toThrow(/changed an object it was given/);
  });

  it('gives the plugin the caches of the row', () => {
    const ctx = testContext({ tenantCache: new MapCache([[CM, [cm('web', { x: '1' })]]]) });
    expect(ctx.tenantCache.get<Cm>(CM, 'web', 'c')?.data).toEqual({ x: '1' });
    expect(ctx.names.tenantNamespace('team-a-1a2b3c-dev-web')).toBe('web');
  });
});
