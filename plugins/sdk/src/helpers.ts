import type { KubeObject, ObjectMeta } from './kube.ts';
import type { PluginContext, RouteContext, TenantKey } from './contract.ts';
import { allowDown, copiedMetadataOf, PUBLIC_LABEL, stripDown } from './meta.ts';

/** clone deep-copies an object; plugins never edit what they were given. */
export function clone<T>(o: T): T {
  return structuredClone(o);
}

/** DownMetaOptions are the rarer choices of downMeta. */
export interface DownMetaOptions {
  /** the object is a Namespace: the namespace allow-lists apply instead of the object ones */
  namespace?: boolean;
  /** labels the plugin itself sets on the super object (never filtered), like `extraAnnotations` */
  extraLabels?: Record<string, string>;
}

/**
 * downMeta returns the metadata of a desired super object: built on the existing super object's metadata when there
 * is one (so server-set fields survive, finalizers included), with the tenant's labels and annotations that pass
 * the tenant's allow-lists (copiedMetadataOf; never reserved or opaque keys), plus `extraAnnotations` and
 * `opts.extraLabels`, which the plugin sets itself and which are not filtered. The core adds the ownership
 * annotations and labels afterwards.
 */
export function downMeta(
  tenantObj: KubeObject,
  superObj: KubeObject | undefined,
  ctx: Pick<PluginContext, 'tenant'>,
  target: { namespace?: string; name: string },
  extraAnnotations: Record<string, string> = {},
  opts: DownMetaOptions = {},
): ObjectMeta {
  const tm = tenantObj.metadata ?? {};
  const base: ObjectMeta = superObj?.metadata ? clone(superObj.metadata) : {};
  base.name = target.name;
  if (target.namespace !== undefined) base.namespace = target.namespace;
  else delete base.namespace;
  const allow = copiedMetadataOf(ctx.tenant);
  const opaque = ctx.tenant.opaqueMetaPrefixes;
  const labels = {
    ...allowDown(tm.labels, opts.namespace ? allow.namespaceLabels : allow.labels, opaque),
    ...opts.extraLabels,
  };
  const annotations = {
    ...allowDown(tm.annotations, opts.namespace ? allow.namespaceAnnotations : allow.annotations, opaque),
    ...extraAnnotations,
  };
  if (Object.keys(labels).length) base.labels = labels;
  else delete base.labels;
  if (Object.keys(annotations).length) base.annotations = annotations;
  else delete base.annotations;
  // Finalizers on an existing super object belong to super controllers (pvc-protection, load-balancer cleanup).
  if (!superObj) delete base.finalizers;
  delete base.ownerReferences;
  delete base.generateName;
  return base;
}

/** newObject starts a desired object of the same kind as `like` with the given metadata. */
export function newObject<T extends KubeObject>(like: KubeObject, metadata: ObjectMeta, body: Partial<T> = {}): T {
  return { apiVersion: like.apiVersion, kind: like.kind, metadata, ...body } as T;
}

/**
 * buildOn starts a desired object from the existing object on the target side when there is one (a clone, so fields
 * its apiserver defaulted are kept and the diff stays small), or else a new object of the kind of `like`; either way
 * with `metadata` and the fields of `body`.
 */
export function buildOn<T extends KubeObject>(
  existing: T | undefined,
  like: KubeObject,
  metadata: ObjectMeta,
  body: Partial<T> = {},
): T {
  return existing ? { ...clone(existing), metadata, ...body } : newObject<T>(like, metadata, body);
}

/**
 * upMeta returns the metadata of a desired tenant object mirrored from a super object (up plugins): built on the
 * existing tenant object's metadata when there is one, with the super's labels and annotations minus the project's
 * reserved keys; reserved keys the core stamped on the tenant object (managed-by) are kept.
 */
export function upMeta(superObj: KubeObject, tenantObj: KubeObject | undefined): ObjectMeta {
  const meta: ObjectMeta = tenantObj?.metadata ? clone(tenantObj.metadata) : { name: superObj.metadata?.name };
  for (const field of ['labels', 'annotations'] as const) {
    const own = meta[field] ?? {};
    const ownPlain = stripDown(own) ?? {};
    const merged = {
      ...stripDown(superObj.metadata?.[field]),
      ...Object.fromEntries(Object.entries(own).filter(([k]) => !(k in ownPlain))),
    };
    if (Object.keys(merged).length) meta[field] = merged;
    else delete meta[field];
  }
  return meta;
}

/**
 * copyFields sets each of `keys` on `dst` to a deep copy of its value on `src`, and deletes it from `dst` where
 * `src` does not have it: the "take these fields from the source of truth" step of most transforms.
 */
export function copyFields<S extends object, K extends keyof S>(
  src: S | undefined,
  dst: Partial<Pick<S, K>>,
  keys: readonly K[],
): void {
  for (const k of keys) {
    const v = src?.[k];
    if (v === undefined) delete dst[k];
    else dst[k] = clone(v);
  }
}

/**
 * keepSuperOwned returns `desired` (tenant labels or annotations) without the keys `superOwned` claims, plus the
 * super object's values for those keys: keys that super admission or super controllers own are never set by a
 * tenant and never stripped by a write. Undefined when nothing is left.
 */
export function keepSuperOwned(
  desired: Record<string, string> | undefined,
  superValues: Record<string, string> | undefined,
  superOwned: (key: string) => boolean,
): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(desired ?? {})) if (!superOwned(k)) out[k] = v;
  for (const [k, v] of Object.entries(superValues ?? {})) if (superOwned(k)) out[k] = v;
  return Object.keys(out).length ? out : undefined;
}

/** isPublic tells whether a super-cluster admin labelled a super object for every tenant to see (PUBLIC_LABEL = "true"). */
export function isPublic(o: KubeObject): boolean {
  return o.metadata?.labels?.[PUBLIC_LABEL] === 'true';
}

/** routeToAllTenants routes a cluster-scoped super object to the object of the same name in every tenant. */
export function routeToAllTenants(superObj: KubeObject, rctx: Pick<RouteContext, 'tenants'>): TenantKey[] {
  const name = superObj.metadata?.name ?? '';
  return rctx.tenants.map((t) => ({ tenant: t.key, namespace: '', name }));
}
