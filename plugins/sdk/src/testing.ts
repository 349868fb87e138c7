import { isDeepStrictEqual } from 'node:util';
import type {
  CacheReader,
  Decision,
  MutatorPlugin,
  Naming,
  PluginContext,
  ResourcePlugin,
  TenantView,
} from './contract.ts';
import type { KubeObject, Resource } from './kube.ts';

/**
 * The test kit: run a plugin's transforms from tables of tenant and super state, without any server. A plugin is a
 * pure transform, so its tests give it the objects it would find in the informer caches and compare decisions.
 */

/**
 * MapCache is a CacheReader over plain arrays of objects, for table-driven plugin tests: a plugin is a pure
 * transform, so its tests give it the tenant and super state it would find in the informer caches.
 */
export class MapCache implements CacheReader {
  private readonly byResource = new Map<string, KubeObject[]>();

  constructor(entries: Array<[Resource, KubeObject[]]> = []) {
    for (const [r, objs] of entries) this.byResource.set(r.resource, objs);
  }

  get<T extends KubeObject = KubeObject>(r: Resource, namespace: string | undefined, name: string): T | undefined {
    return this.list<T>(r).find(
      (o) => o.metadata?.name === name && (o.metadata?.namespace ?? '') === (namespace ?? ''),
    );
  }

  list<T extends KubeObject = KubeObject>(r: Resource, namespace?: string): T[] {
    const all = (this.byResource.get(r.resource) ?? []) as T[];
    return namespace === undefined ? all : all.filter((o) => o.metadata?.namespace === namespace);
  }
}

/** testTenant returns a tenant with sensible defaults for unit tests. */
export function testTenant(over: Partial<TenantView> = {}): TenantView {
  return {
    key: 'team-a-1a2b3c-dev',
    vcName: 'dev',
    vcNamespace: 'team-a',
    vcUid: '00000000-0000-0000-0000-00000000000a',
    clusterDomain: 'cluster.local',
    podSecurityLevel: 'baseline',
    opaqueMetaPrefixes: [],
    transparentMetaPrefixes: [],
    ...over,
  };
}

/**
 * testNaming is a Naming for tests: the super namespace of tenant namespace `ns` is `<tenant key>-<ns>`. The core's
 * names module shortens names longer than 63 characters with a hash; tests of long names pass their own Naming.
 */
export function testNaming(tenant: Pick<TenantView, 'key'>): Naming {
  const prefix = `${tenant.key}-`;
  return {
    superNamespace: (ns) => `${prefix}${ns}`,
    tenantNamespace: (sns) => (sns.startsWith(prefix) && sns.length < 63 ? sns.slice(prefix.length) : undefined),
  };
}

/** TestContextOptions are the parts of a PluginContext a test may set; the rest get defaults. */
export interface TestContextOptions {
  tenant?: TenantView;
  names?: Naming;
  tenantCache?: CacheReader;
  superCache?: CacheReader;
  now?: Date;
  superCluster?: string;
  /** PluginContext.sharedTenants */
  sharedTenants?: boolean;
}

/** testContext builds a PluginContext over the given tenant and caches. */
export function testContext(o: TestContextOptions = {}): PluginContext {
  const tenant = o.tenant ?? testTenant();
  return {
    tenant,
    names: o.names ?? testNaming(tenant),
    tenantCache: o.tenantCache ?? new MapCache(),
    superCache: o.superCache ?? new MapCache(),
    now: o.now ?? new Date('2026-01-01T00:00:00Z'),
    ...(o.superCluster === undefined ? {} : { superCluster: o.superCluster }),
    ...(o.sharedTenants ? { sharedTenants: true } : {}),
  };
}

/** TransformCase is one row of a plugin table: the object on each side (absent: it does not exist) and the caches. */
export interface TransformCase<T extends KubeObject = KubeObject> {
  tenantObj?: T;
  superObj?: T;
  /** the rest of the tenant state the plugin may consult, by resource */
  tenantState?: Array<[Resource, KubeObject[]]>;
  /** the rest of the super state the plugin may consult, by resource */
  superState?: Array<[Resource, KubeObject[]]>;
  tenant?: TenantView;
  names?: Naming;
  now?: Date;
}

/** TransformResult is what a plugin decided for one row: `down` (tenant->super) and `up` (super->tenant) where they ran. */
export interface TransformResult<T extends KubeObject = KubeObject> {
  down?: Decision<T>;
  up?: Decision<T>;
}

/** enabledFor is the host's per-tenant rule: opt-in plugins need the tenant to enable them, and a tenant can disable any. */
function enabledFor(tenant: TenantView, p: { manifest: { name: string; optIn?: boolean } }): boolean {
  if (tenant.plugins?.disable?.includes(p.manifest.name)) return false;
  return !p.manifest.optIn || !!tenant.plugins?.enable?.includes(p.manifest.name);
}

/**
 * runTransforms runs a plugin's transforms for one row the way the core chooses directions: a resource plugin's
 * toSuper when the tenant object exists, then the chain of `mutators` in order over its desired object (as the core
 * runs it: a skip or a null object ends the chain, a mutator not enabled for the tenant is passed over), its toTenant
 * for up plugins and, for `both` plugins, when the object exists on both sides; a mutator's mutate over the super
 * object as the desired object. It throws if a transform changed an object it was given (plugins are pure).
 * `wrap`, when given, wraps the row's caches (checkConformance watches what the plugin reads through it).
 */
export function runTransforms<T extends KubeObject = KubeObject>(
  plugin: ResourcePlugin<T> | MutatorPlugin<T>,
  c: TransformCase<T>,
  mutators: Array<MutatorPlugin<T>> = [],
  wrap: (side: 'tenant' | 'super', cache: CacheReader) => CacheReader = (_, cache) => cache,
): TransformResult<T> {
  const tenant = c.tenant ?? testTenant();
  const ctx = testContext({
    tenant,
    tenantCache: wrap('tenant', new MapCache(c.tenantState ?? [])),
    superCache: wrap('super', new MapCache(c.superState ?? [])),
    ...(c.names ? { names: c.names } : {}),
    ...(c.now ? { now: c.now } : {}),
  });
  const before = structuredClone(c);
  const out: TransformResult<T> = {};
  if ('mutate' in plugin) {
    if (c.superObj && c.tenantObj)
      out.down = plugin.mutate(structuredClone(c.superObj), structuredClone(c.tenantObj), ctx);
  } else {
    const p = plugin;
    const dir = p.manifest.direction;
    if (c.tenantObj && p.toSuper && (dir === 'down' || dir === 'both')) {
      let d = p.toSuper(structuredClone(c.tenantObj), c.superObj && structuredClone(c.superObj), ctx);
      const effects = [...(d.effects ?? [])];
      for (const m of mutators) {
        if (!d.object || d.skip) break;
        if (!enabledFor(tenant, m)) continue;
        const md = m.mutate(d.object, structuredClone(c.tenantObj), ctx);
        effects.push(...(md.effects ?? []));
        d = { ...d, object: md.object, skip: md.skip ?? d.skip, requeueAfterMs: md.requeueAfterMs ?? d.requeueAfterMs };
      }
      d = { ...d, effects };
      if (!effects.length) delete d.effects;
      if (d.skip === undefined) delete d.skip;
      if (d.requeueAfterMs === undefined) delete d.requeueAfterMs;
      out.down = d;
    }
    if (p.toTenant && (dir === 'up' || (dir === 'both' && c.tenantObj && c.superObj))) {
      out.up = p.toTenant(c.superObj && structuredClone(c.superObj), c.tenantObj && structuredClone(c.tenantObj), ctx);
    }
  }
  if (!isDeepStrictEqual(before, c)) throw new Error(`plugin ${plugin.manifest.name} changed an object it was given`);
  return out;
}

/**
 * runTable runs runTransforms over named rows and returns each row's result under its name, ready for one
 * `toStrictEqual` against the expected table.
 */
export function runTable<T extends KubeObject = KubeObject>(
  plugin: ResourcePlugin<T> | MutatorPlugin<T>,
  rows: Record<string, TransformCase<T>>,
  mutators: Array<MutatorPlugin<T>> = [],
): Record<string, TransformResult<T>> {
  return Object.fromEntries(Object.entries(rows).map(([name, c]) => [name, runTransforms(plugin, c, mutators)]));
}

export {
  checkConformance,
  type ConformanceOptions,
  type ConformanceReport,
  SANDBOX_EFFECTS,
} from './conformance.testing.ts';
