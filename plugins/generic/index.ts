import {
  buildOn,
  clone,
  type Decision,
  downMeta,
  isPublic,
  type KubeObject,
  type Naming,
  PLUGIN_API_VERSION,
  type PluginContext,
  provenanceOf,
  type ResourcePlugin,
  type RouteContext,
  routeToAllTenants,
  superClusterName,
  type TenantKey,
  type TenantView,
  upMeta,
} from '@virtualcluster-ts/plugin-sdk';
import { compileEntry, type Compiled, type GenericSyncConfig, resourceKey, type Translation } from './config.ts';
import { contentRefusals } from './content.ts';
import { copyPath, dropPath, mapPath } from './paths.ts';

export { type GenericSyncConfig, DENIED_CORE, DENIED_GROUPS } from './config.ts';

/** NAME_TOO_LONG is the skip reason of a tenant object whose super name (prefix + name + suffix) is over 253 characters. */
export const NAME_TOO_LONG = 'NameTooLong';

/**
 * GENERIC_FIELDS_REFUSED is the skip reason (and the tenant event's) of a tenant object whose copied fields carry what
 * only the syncer or the platform sets: provenance keys, owner references, finalizers, another namespace
 * (contentRefusals). It is refused whole, as an apiserver refuses an object: a super copy of an earlier version stays.
 */
export const GENERIC_FIELDS_REFUSED = 'GenericFieldRefused';

/** MAX_OBJECT_NAME is the longest name the apiserver accepts for most kinds (a DNS subdomain). */
const MAX_OBJECT_NAME = 253;

type NameCtx = { names: Naming; tenant: TenantView };

/**
 * superNameOf is the super name of a tenant object's name: prefix + name + suffix for a namespaced resource; for a
 * cluster-scoped one synced down, the tenant's own name space (`<root>-<name>`, superClusterName), so no tenant names
 * another's object or a platform one; a cluster-scoped one synced up keeps its name.
 */
function superNameOf(c: Compiled, name: string, ctx: NameCtx): string {
  if (!c.config.resource.namespaced)
    return c.config.direction === 'down' ? superClusterName(ctx.tenant.key, name) : name;
  return `${c.prefix}${name}${c.suffix}`;
}

/** tenantNameOf is the tenant name of a super name, or undefined when the name is not one this entry makes. */
function tenantNameOf(c: Compiled, name: string, tenantKey: string): string | undefined {
  if (!c.config.resource.namespaced) {
    if (c.config.direction === 'up') return name;
    const prefix = `${tenantKey}-`;
    return name.startsWith(prefix) && superClusterName(tenantKey, name.slice(prefix.length)) === name
      ? name.slice(prefix.length)
      : undefined;
  }
  const inner = name.length - c.prefix.length - c.suffix.length;
  if (inner <= 0 || !name.startsWith(c.prefix) || !name.endsWith(c.suffix)) return undefined;
  return name.slice(c.prefix.length, c.prefix.length + inner);
}

const selected = (c: Compiled, namespace: string): boolean =>
  !c.namespaces || c.namespaces.some((re) => re.test(namespace));

/** translateDown rewrites a tenant value for the super cluster: namespaces to super namespaces, names by the entry. */
function translateDown(c: Compiled, to: Translation, v: string, ctx: NameCtx): string {
  return to === 'namespace' ? ctx.names.superNamespace(v) : superNameOf(c, v, ctx);
}

/** translateUp rewrites a super value for the tenant, or undefined when it names nothing of this tenant. */
function translateUp(c: Compiled, to: Translation, v: string, ctx: NameCtx): string | undefined {
  return to === 'namespace' ? ctx.names.tenantNamespace(v) : tenantNameOf(c, v, ctx.tenant.key);
}

/**
 * fill copies the entry's fields from `from` onto `desired`, drops what it drops, and translates what it translates;
 * going up, a value that names another tenant's or the platform's namespace or object is left out.
 */
function fill(c: Compiled, from: KubeObject, desired: KubeObject, ctx: NameCtx, status: boolean): void {
  for (const p of c.copy) copyPath(from, desired, p);
  if (status) copyPath(from, desired, [{ field: 'status', each: false }]);
  for (const p of c.drop) dropPath(desired, p);
  const fn = c.config.direction === 'down' ? translateDown : translateUp;
  for (const t of c.translate) mapPath(desired, t.path, (v) => fn(c, t.to, v, ctx));
}

function superName(c: Compiled, tenantNamespace: string, tenantName: string, ctx: NameCtx) {
  const name = superNameOf(c, tenantName, ctx);
  return c.config.resource.namespaced ? { namespace: ctx.names.superNamespace(tenantNamespace), name } : { name };
}

function toSuper(c: Compiled, tenantObj: KubeObject, superObj: KubeObject | undefined, ctx: PluginContext): Decision {
  const tm = tenantObj.metadata ?? {};
  if (c.config.resource.namespaced && !selected(c, tm.namespace ?? '')) return { object: null };
  const target = superName(c, tm.namespace ?? '', tm.name ?? '', ctx);
  if (target.name.length > MAX_OBJECT_NAME)
    return {
      object: null,
      skip: { reason: NAME_TOO_LONG, message: `the super name ${target.name} is over ${MAX_OBJECT_NAME} characters` },
    };
  const desired = buildOn(superObj, tenantObj, downMeta(tenantObj, superObj, ctx, target));
  fill(c, tenantObj, desired, ctx, false);
  const copied: Record<string, unknown> = {};
  for (const p of c.copy) copyPath(desired, copied, p);
  const refused = contentRefusals(copied, ctx.names);
  if (refused.length) {
    const what = `${tenantObj.kind} ${tm.namespace ? `${tm.namespace}/` : ''}${tm.name}`;
    const message = `${what} is not copied to the super cluster by plugin ${c.config.name}: ${refused.join('; ')}`;
    return {
      object: null,
      skip: { reason: GENERIC_FIELDS_REFUSED, message },
      effects: [
        {
          type: 'event',
          side: 'tenant',
          regarding: {
            apiVersion: tenantObj.apiVersion ?? '',
            kind: tenantObj.kind ?? '',
            ...(tm.namespace && { namespace: tm.namespace }),
            name: tm.name ?? '',
            uid: tm.uid,
          },
          eventType: 'Warning',
          reason: GENERIC_FIELDS_REFUSED,
          message,
        },
      ],
    };
  }
  return { object: desired };
}

function statusToTenant(superObj: KubeObject | undefined, tenantObj: KubeObject | undefined): Decision {
  if (!tenantObj) return { object: null };
  const desired = clone(tenantObj);
  copyPath(superObj, desired, [{ field: 'status', each: false }]);
  return { object: desired };
}

function toTenant(
  c: Compiled,
  superObj: KubeObject | undefined,
  tenantObj: KubeObject | undefined,
  ctx: PluginContext,
): Decision {
  if (!superObj || provenanceOf(superObj)) return { object: null };
  const sm = superObj.metadata ?? {};
  const name = tenantNameOf(c, sm.name ?? '', ctx.tenant.key);
  if (name === undefined) return { object: null };
  const meta = upMeta(superObj, tenantObj);
  meta.name = name;
  if (c.config.resource.namespaced) {
    const namespace = ctx.names.tenantNamespace(sm.namespace ?? '');
    if (namespace === undefined || !selected(c, namespace)) return { object: null };
    meta.namespace = namespace;
  } else if (!isPublic(superObj)) return { object: null };
  const desired = buildOn(tenantObj, superObj, meta);
  fill(c, superObj, desired, ctx, !!c.config.statusUp);
  return { object: desired };
}

function route(c: Compiled, superObj: KubeObject, rctx: RouteContext): TenantKey[] {
  if (provenanceOf(superObj)) return [];
  const sm = superObj.metadata ?? {};
  if (!c.config.resource.namespaced) return isPublic(superObj) ? routeToAllTenants(superObj, rctx) : [];
  const owner = rctx.tenantOfNamespace(sm.namespace ?? '');
  if (!owner || !selected(c, owner.namespace)) return [];
  const name = tenantNameOf(c, sm.name ?? '', owner.tenant);
  return name === undefined ? [] : [{ tenant: owner.tenant, namespace: owner.namespace, name }];
}

/**
 * genericPlugin is the plugin of one compiled entry of `plugins.generic`. Down entries copy the tenant object into
 * the super namespace of its namespace (the only namespace mapping there is: the core refuses a create in any super
 * namespace that is not the tenant's own for that namespace), statusUp carries the super status back; up entries copy
 * the super objects in a tenant's super namespaces (or, cluster-scoped, those labelled public) into the tenant.
 */
export function genericPlugin(c: Compiled): ResourcePlugin {
  const cfg = c.config;
  const r = cfg.resource;
  const verbs =
    cfg.direction === 'down'
      ? ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']
      : ['get', 'list', 'watch'];
  const plugin: ResourcePlugin = {
    manifest: {
      apiVersion: PLUGIN_API_VERSION,
      name: cfg.name,
      version: '0.1.0',
      description: `Generic ${cfg.direction} sync of ${r.group ? `${r.resource}.${r.group}` : r.resource}, by configuration.`,
      resource: { ...r },
      direction: cfg.direction === 'up' ? 'up' : cfg.statusUp ? 'both' : 'down',
      sourceOfTruth: cfg.direction === 'up' ? 'super' : 'tenant',
      processes: ['manager'],
      ...(cfg.optIn && { optIn: true }),
      rbac: [{ apiGroups: [r.group], resources: [r.resource], verbs }],
    },
    superName: (ns, name, ctx) => superName(c, ns, name, ctx),
  };
  if (cfg.direction === 'down') {
    plugin.toSuper = (t, s, ctx) => toSuper(c, t, s, ctx);
    if (cfg.statusUp) plugin.toTenant = (s, t) => statusToTenant(s, t);
  } else {
    plugin.toTenant = (s, t, ctx) => toTenant(c, s, t, ctx);
    plugin.route = (s, rctx) => route(c, s, rctx);
  }
  return plugin;
}

/** GenericFailure is an entry of `plugins.generic` that was refused, by name, with every reason. */
export interface GenericFailure {
  plugin: string;
  reason: string;
}

/**
 * genericPlugins builds the plugins of `plugins.generic`. `taken` are the plugins already loaded (the built-ins): an
 * entry for a resource one of them owns, or one an earlier entry syncs, is refused like any entry that breaks a rule
 * of compileEntry; the others are built.
 */
export function genericPlugins(
  entries: readonly GenericSyncConfig[],
  taken: ReadonlyArray<{ manifest: { name: string; resource?: { group: string; resource: string } } }>,
): { plugins: ResourcePlugin[]; failures: GenericFailure[] } {
  const owned = new Map<string, string>();
  for (const p of taken) if (p.manifest.resource) owned.set(resourceKey(p.manifest.resource), p.manifest.name);
  const plugins: ResourcePlugin[] = [];
  const failures: GenericFailure[] = [];
  for (const e of entries) {
    const out = compileEntry(e, owned);
    if ('problems' in out) {
      failures.push({ plugin: e.name, reason: `generic sync refused: ${out.problems.join('; ')}` });
      continue;
    }
    owned.set(resourceKey(e.resource), e.name);
    plugins.push(genericPlugin(out.compiled));
  }
  return { plugins, failures };
}
