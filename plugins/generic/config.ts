import type { Resource } from '@virtualcluster-ts/plugin-sdk';
import { parsePath, type Segment } from './paths.ts';

/** TRANSLATIONS are what a translated field holds: the name of a tenant namespace, or a name this entry maps. */
export const TRANSLATIONS = ['namespace', 'name'] as const;
/** Translation is one of TRANSLATIONS. */
export type Translation = (typeof TRANSLATIONS)[number];

/**
 * GenericSyncConfig is one entry of the manager configuration's `plugins.generic`: a resource (core, built-in or a
 * CRD) synced by configuration instead of by code (schemas/manager-config.schema.json describes every field).
 */
export interface GenericSyncConfig {
  /** the plugin's name (what `plugins.enable`, a tenant's `plugins.disable` and metrics call it) */
  name: string;
  resource: Resource;
  /** down: the tenant's object is the truth and is copied into the super cluster; up: the super's is, into the tenant */
  direction: 'down' | 'up';
  /** down: the super object's status is copied back to the tenant's; up: the status is copied with the fields */
  statusUp?: boolean;
  fields?: {
    /** top-level or nested fields copied from the source of truth (default: spec) */
    copy?: string[];
    /** fields removed from what was copied (`[]` visits every item of a list) */
    drop?: string[];
    /** string fields rewritten on the way (down: tenant to super; up: back, and removed when they cannot be) */
    translate?: Array<{ path: string; to: Translation }>;
  };
  /** the super name of a namespaced object is prefix + tenant name + suffix */
  names?: { prefix?: string; suffix?: string };
  /** tenant namespaces whose objects sync (`*` matches any run of characters); absent: all */
  namespaces?: string[];
  /** a cluster-scoped resource is refused unless the platform sets this */
  allowClusterScoped?: boolean;
  /** runs only for tenants that enable it (or where `plugins.enable` names it) */
  optIn?: boolean;
}

/**
 * DENIED_GROUPS are API groups no generic entry may sync, whatever the platform writes: objects in them grant
 * authority (RBAC, certificates, tokens), change how the super apiserver admits or serves everything (webhooks,
 * policies, CRDs, API services, priority and fairness) or are this project's own.
 */
export const DENIED_GROUPS: readonly string[] = [
  'rbac.authorization.k8s.io',
  'admissionregistration.k8s.io',
  'apiextensions.k8s.io',
  'apiregistration.k8s.io',
  'certificates.k8s.io',
  'authentication.k8s.io',
  'authorization.k8s.io',
  'flowcontrol.apiserver.k8s.io',
  'tenancy.x-k8s.io',
  'cluster.x-k8s.io',
];

/**
 * DENIED_CORE are core resources no generic entry may sync: the syncer's own quota objects in every super namespace,
 * and subresource-like or node-level kinds.
 */
export const DENIED_CORE: readonly string[] = [
  'resourcequotas',
  'limitranges',
  'bindings',
  'componentstatuses',
  'nodes',
  'namespaces',
];

/** Compiled is a valid entry with its paths parsed. */
export interface Compiled {
  config: GenericSyncConfig;
  copy: Segment[][];
  drop: Segment[][];
  translate: Array<{ path: Segment[]; to: Translation }>;
  prefix: string;
  suffix: string;
  namespaces?: RegExp[];
}

/** resourceKey is how two entries or plugins naming the same resource are told apart: `<group>/<resource>`. */
export function resourceKey(r: Pick<Resource, 'group' | 'resource'>): string {
  return `${r.group}/${r.resource}`;
}

const pattern = (p: string): RegExp => new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*')}$`);

/**
 * compileEntry checks one entry against the rules the schema cannot express and parses its paths. `owned` maps each
 * resource key already owned (by a built-in plugin or an earlier entry) to its owner. It returns the problems, one
 * sentence each, or the compiled entry.
 */
export function compileEntry(
  c: GenericSyncConfig,
  owned: ReadonlyMap<string, string>,
): { compiled: Compiled } | { problems: string[] } {
  const problems: string[] = [];
  const r = c.resource;
  const key = resourceKey(r);
  const owner = owned.get(key);
  if (owner) problems.push(`${key || r.resource} is already synced by plugin ${owner}`);
  if (DENIED_GROUPS.includes(r.group))
    problems.push(`the API group ${r.group} grants authority or changes the super apiserver: it is never synced`);
  if (!r.group && DENIED_CORE.includes(r.resource))
    problems.push(`core ${r.resource} belong to the syncer or the super cluster: they are never synced generically`);
  if (!r.namespaced && !c.allowClusterScoped)
    problems.push(
      `${r.resource} is cluster-scoped: set allowClusterScoped: true to sync it (down: one super object per tenant ` +
        `object, named after the tenant; up: only super objects labelled tenancy.x-k8s.io/super.public=true)`,
    );
  if (c.direction === 'up' && !r.namespaced && (c.names?.prefix || c.names?.suffix))
    problems.push('names: a cluster-scoped resource synced up keeps the super names');
  const parse = (where: string, path: string, plain: boolean): Segment[] | undefined => {
    try {
      const s = parsePath(path);
      if (plain && s.some((x) => x.each)) throw new Error(`field path "${path}": [] is for drop and translate only`);
      if (c.direction === 'down' && s[0]!.field === 'status')
        throw new Error(`field path "${path}": status belongs to the super cluster; statusUp carries it back`);
      return s;
    } catch (e) {
      problems.push(`fields.${where}: ${(e as Error).message}`);
      return undefined;
    }
  };
  const copy = (c.fields?.copy ?? ['spec']).map((p) => parse('copy', p, true));
  const drop = (c.fields?.drop ?? []).map((p) => parse('drop', p, false));
  const translate = (c.fields?.translate ?? []).map((t) => ({ path: parse('translate', t.path, false), to: t.to }));
  const copied = [...copy, ...(c.direction === 'up' && c.statusUp ? [[{ field: 'status', each: false }]] : [])];
  const under = (path: Segment[]) =>
    copied.some((cp) => !!cp && cp.length <= path.length && cp.every((s, i) => s.field === path[i]!.field));
  for (const [where, paths] of [
    ['drop', drop],
    ['translate', translate.map((t) => t.path)],
  ] as const) {
    for (const [i, path] of paths.entries())
      if (path && !under(path))
        problems.push(
          `fields.${where}[${i}]: ${path.map((s) => s.field).join('.')} is not inside a copied field, so it would ` +
            'be rewritten again on every pass',
        );
  }
  if (problems.length) return { problems };
  const compiled: Compiled = {
    config: c,
    copy: copy as Segment[][],
    drop: drop as Segment[][],
    translate: translate as Compiled['translate'],
    prefix: c.names?.prefix ?? '',
    suffix: c.names?.suffix ?? '',
  };
  if (c.namespaces) compiled.namespaces = c.namespaces.map(pattern);
  return { compiled };
}
