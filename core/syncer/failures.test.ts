/**
 * A plugin that throws, in each hook the core calls, is reported (vc_plugin_errors_total, the log) and skipped; the
 * other objects, plugins and tenants go on, and nothing escapes as an exception or a rejection.
 */
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import {
  type BindEffect,
  type MutatorPlugin,
  PLUGIN_API_VERSION,
  type PluginManifest,
  type ResourcePlugin,
} from '../plugins/contract.ts';
import { PluginError, pluginErrorsTotal } from '../plugins/failures.ts';
import { PluginHost } from '../plugins/host.ts';
import { MapCache, testContext, testTenant } from '../plugins/testing.ts';
import { MutableTenantRegistry, tenantFrom, type TenantEvent } from '../tenancy/tenant.ts';
import { Effects } from './effects.ts';
import { patrol } from './patrol.ts';
import { planKey, type Plan } from './plan.ts';
import { makeKey, Router } from './routing.ts';
import type { TenantSession } from '../sessions/tenants.ts';
import type { TokenMinter } from './tokens.ts';

const tenant = testTenant();

async function errorsOf(plugin: string, hook: string, t: string): Promise<number> {
  const m = await pluginErrorsTotal.get();
  return (
    m.values.find((v) => v.labels.plugin === plugin && v.labels.hook === hook && v.labels.tenant === t)?.value ?? 0
  );
}

const boom = (): never => {
  throw new Error('boom');
};

const manifest = (name: string, over: Partial<PluginManifest> = {}): PluginManifest => ({
  apiVersion: PLUGIN_API_VERSION,
  name,
  version: '0.1.0',
  resource: { ...R.configmaps },
  direction: 'down',
  sourceOfTruth: 'tenant',
  processes: ['manager'],
  ...over,
});

const cm = (name: string, ns = 'default'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: ns, uid: `uid-${name}` },
});

/** copy is a down plugin of ConfigMaps that throws for objects named `boom*` in the hook it is given. */
const copy = (name: string, hook?: 'toSuper' | 'superName'): ResourcePlugin => ({
  manifest: manifest(name),
  toSuper: (t, _s, ctx) => {
    if (hook === 'toSuper' && t.metadata?.name?.startsWith('boom')) boom();
    return { object: { ...t, metadata: { name: t.metadata!.name!, namespace: ctx.names.superNamespace('default') } } };
  },
  ...(hook === 'superName' && {
    superName: (ns, n, ctx) => (n.startsWith('boom') ? boom() : { namespace: ctx.names.superNamespace(ns), name: n }),
  }),
});

const upThrowing: ResourcePlugin = {
  manifest: manifest('up-boom', { resource: { ...R.persistentvolumes }, direction: 'up', sourceOfTruth: 'super' }),
  toTenant: boom,
};

const mutatorThrowing: MutatorPlugin = {
  manifest: { ...manifest('mutate-boom', { direction: 'mutator', mutates: 'copy' }), resource: undefined },
  mutate: boom,
};

/** plans runs planKey and returns the plan or the PluginError it threw. */
function plans(p: ResourcePlugin, name: string, mutators: MutatorPlugin[] = []): Plan | PluginError {
  const ctx = testContext({
    tenant,
    tenantCache: new MapCache([[R.configmaps, [cm(name)]]]),
    superCache: new MapCache([
      [R.persistentvolumes, [{ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name } }]],
    ]),
  });
  try {
    return planKey({ mutatorsOf: () => mutators, enabledFor: () => true }, p, ctx, {
      namespace: p.manifest.resource!.namespaced ? 'default' : '',
      name,
    });
  } catch (e) {
    if (e instanceof PluginError) return e;
    throw e;
  }
}

describe('the planner names the plugin and hook that threw', () => {
  it.each([
    ['toSuper', copy('copy', 'toSuper'), 'copy', []],
    ['superName', copy('copy', 'superName'), 'copy', []],
    ['toTenant', upThrowing, 'up-boom', []],
    ['mutate', copy('copy'), 'mutate-boom', [mutatorThrowing]],
  ] as const)('%s', (hook, p, plugin, mutators) => {
    const got = plans(p, 'boom-1', [...mutators]);
    expect(got).toBeInstanceOf(PluginError);
    expect(got).toMatchObject({ plugin, hook });
  });

  it('plans the objects the plugin does not throw on', () => {
    const got = plans(copy('copy', 'toSuper'), 'fine');
    // toSuper ran: its object waits for its super namespace, which this cache does not hold.
    expect(got).toMatchObject({ skip: { reason: 'WaitingForNamespace' } });
  });
});

/** routed is a super-truth plugin whose route, watch and index throw for objects named `boom*`. */
const routed: ResourcePlugin = {
  manifest: manifest('routed', { resource: { ...R.nodes }, direction: 'up', sourceOfTruth: 'super' }),
  toTenant: (s) => ({ object: s ?? null }),
  route: (o) => (o.metadata?.name?.startsWith('boom') ? boom() : [{ tenant: tenant.key, namespace: '', name: 'n' }]),
  watches: [
    {
      resource: R.configmaps,
      side: 'tenant',
      map: (o) => (o.metadata?.name?.startsWith('boom') ? boom() : [{ namespace: '', name: 'n' }]),
    },
    {
      resource: R.pods,
      side: 'super',
      map: (o) => (o.metadata?.name?.startsWith('boom') ? boom() : [{ tenant: tenant.key, namespace: '', name: 'n' }]),
    },
  ],
  indexes: [
    { name: 'routed/idx', resource: R.pods, values: (o) => (o.metadata?.name?.startsWith('boom') ? boom() : ['v']) },
  ],
};

const host = await PluginHost.load({
  process: 'manager',
  builtins: [routed, copy('copy', 'toSuper'), mutatorThrowing],
});

function routerOver() {
  const keys: string[] = [];
  const session = {
    tenant: { ...tenant, kubeconfig: '', weight: 1 },
    view: tenant,
    ready: true,
  } as unknown as TenantSession;
  const router = new Router({
    host,
    queue: { add: (k: string) => void keys.push(k) },
    sessions: { get: (k: string) => (k === tenant.key ? session : undefined), all: () => [session] },
    superCache: new MapCache(),
  });
  return { router, session, keys };
}

const superPod = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name,
    namespace: 'x',
    labels: { [LABEL.managedBy]: MANAGER },
    annotations: { [ANN.cluster]: tenant.key, [ANN.namespace]: 'default', [ANN.name]: name, [ANN.uid]: 'u' },
  },
});

describe('routing skips what a plugin throws on, and counts it', () => {
  it('route: the object routes nowhere, counted without a tenant (it is what route was to find)', async () => {
    expect(host.failures).toEqual([]);
    const { router } = routerOver();
    const before = await errorsOf('routed', 'route', '');
    expect(router.routeOf(routed, { metadata: { name: 'boom-node' } })).toEqual([]);
    expect(router.routeOf(routed, { metadata: { name: 'node-1' } })).toEqual([
      { tenant: tenant.key, namespace: '', name: 'n' },
    ]);
    expect(await errorsOf('routed', 'route', '')).toBe(before + 1);
  });

  it('a tenant watch: the event maps to nothing for that plugin, the owning plugin still gets its key', async () => {
    const { router, session, keys } = routerOver();
    const before = await errorsOf('routed', 'watch', tenant.key);
    router.tenantHandler(session, 'configmaps').onAdd!(cm('boom-cm'));
    expect(keys).toEqual([makeKey(tenant.key, 'copy', 'default', 'boom-cm')]);
    expect(await errorsOf('routed', 'watch', tenant.key)).toBe(before + 1);
  });

  it('a super watch and an index: skipped for the object thrown on, served for the others', async () => {
    const { router, keys } = routerOver();
    const w = await errorsOf('routed', 'watch', '');
    const i = await errorsOf('routed', 'index', tenant.key);
    const h = router.superHandler('pods');
    h.onAdd!(superPod('boom-pod'));
    expect(keys).toEqual([]);
    h.onAdd!(superPod('ok-pod'));
    expect(keys).toEqual([makeKey(tenant.key, 'routed', '', 'n')]);
    expect(router.routeContext().tenantsBy('routed/idx', 'v')).toEqual([tenant.key]);
    expect(await errorsOf('routed', 'watch', '')).toBe(w + 1);
    expect(await errorsOf('routed', 'index', tenant.key)).toBe(i + 1);
  });
});

describe('patrol skips the keys a plugin throws on and goes on', () => {
  it('reports the failing key, requeues the drift of the others, and returns', async () => {
    const cache = new MapCache([[R.configmaps, [cm('boom-1'), cm('drifted'), cm('boom-2')]]]);
    const session = {
      tenant: { ...tenant, kubeconfig: '', weight: 1 },
      view: tenant,
      ready: true,
      cache,
    } as unknown as TenantSession;
    const { router } = routerOver();
    const enqueued: string[] = [];
    const before = await errorsOf('copy', 'toSuper', tenant.key);
    const fixes = patrol({
      sessions: [session],
      host,
      superCache: new MapCache(),
      router,
      plan: (key) => {
        if (key.includes('/boom')) throw new PluginError('copy', 'toSuper', new Error('boom'));
        return { steps: [{ op: 'createSuper', obj: cm('x') }], effects: [] };
      },
      enqueue: (k) => enqueued.push(k),
    });
    expect(fixes).toBe(1);
    expect(enqueued).toEqual([makeKey(tenant.key, 'copy', 'default', 'drifted')]);
    expect(await errorsOf('copy', 'toSuper', tenant.key)).toBe(before + 2);
  });

  it('a non-plugin error on one key is logged and skipped as well', () => {
    const cache = new MapCache([[R.configmaps, [cm('a'), cm('b')]]]);
    const session = {
      tenant: { ...tenant, kubeconfig: '', weight: 1 },
      view: tenant,
      ready: true,
      cache,
    } as unknown as TenantSession;
    const enqueued: string[] = [];
    const fixes = patrol({
      sessions: [session],
      host,
      superCache: new MapCache(),
      router: routerOver().router,
      plan: (key) => {
        if (key.endsWith('/a')) throw new Error('cache gone');
        return { steps: [{ op: 'createSuper', obj: cm('x') }], effects: [] };
      },
      enqueue: (k) => enqueued.push(k),
    });
    expect(fixes).toBe(1);
    expect(enqueued).toEqual([makeKey(tenant.key, 'copy', 'default', 'b')]);
  });
});

describe('beforeBind', () => {
  it('a plugin throwing in beforeBind fails the bind with a PluginError before any write', async () => {
    const binder: ResourcePlugin = {
      manifest: manifest('binder', { resource: { ...R.nodes }, direction: 'up', sourceOfTruth: 'super' }),
      toTenant: () => ({ object: null }),
      beforeBind: boom,
    };
    const bindHost = await PluginHost.load({ process: 'manager', builtins: [binder] });
    // No client is given: beforeBind runs before the first write, and throwing there must stop the bind.
    const effects = new Effects({
      superClient: undefined as never,
      superCache: new MapCache(),
      host: bindHost,
      tokens: undefined as unknown as TokenMinter,
    });
    const session = {
      tenant: { ...tenant, kubeconfig: '', weight: 1 },
      view: tenant,
      client: undefined,
    } as unknown as TenantSession;
    const bind: BindEffect = { type: 'bind', namespace: 'default', name: 'web', uid: 'u', node: 'node-1' };
    const target = {
      session,
      key: 'k',
      plugin: 'pods',
      resource: R.pods,
      ctx: testContext({ tenant }),
      superUid: undefined,
    };
    await expect(effects.run(target, bind)).rejects.toMatchObject({ plugin: 'binder', hook: 'beforeBind' });
  });
});

describe('tenant registry', () => {
  it('a subscriber that throws does not keep the others or the caller from going on', () => {
    const r = new MutableTenantRegistry();
    const seen: TenantEvent['type'][] = [];
    r.subscribe(() => {
      throw new Error('subscriber bug');
    });
    r.subscribe((e) => seen.push(e.type));
    const t = tenantFrom({ key: 'k-1', vcName: 'a', vcNamespace: 'b', vcUid: 'u' });
    expect(() => r.upsert(t)).not.toThrow();
    expect(() => r.remove('k-1')).not.toThrow();
    expect(seen).toEqual(['upsert', 'remove']);
  });
});
