import type { KubeObject, ObjectMeta } from '../kube/client.ts';
import { stripDown } from '../names/names.ts';
import type { PluginContext } from './contract.ts';

/** clone deep-copies an object; plugins never edit what they were given. */
export function clone<T>(o: T): T {
  return structuredClone(o);
}

/**
 * downMeta returns the metadata of a desired super object: built on the existing super object's metadata when
 * there is one (so server-set fields survive), with the tenant's labels and annotations minus reserved and opaque
 * keys, plus `extraAnnotations`. The core adds the ownership annotations afterwards.
 */
export function downMeta(
  tenantObj: KubeObject,
  superObj: KubeObject | undefined,
  ctx: PluginContext,
  target: { namespace?: string; name: string },
  extraAnnotations: Record<string, string> = {},
): ObjectMeta {
  const tm = tenantObj.metadata ?? {};
  const base: ObjectMeta = superObj?.metadata ? clone(superObj.metadata) : {};
  base.name = target.name;
  if (target.namespace !== undefined) base.namespace = target.namespace;
  else delete base.namespace;
  const labels = stripDown(tm.labels, ctx.tenant.opaqueMetaPrefixes);
  const annotations = { ...stripDown(tm.annotations, ctx.tenant.opaqueMetaPrefixes), ...extraAnnotations };
  if (labels) base.labels = labels;
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
 * upMeta returns the metadata of a desired tenant object mirrored from a super object (up plugins): built on the
 * existing tenant object's metadata when there is one, with the super's labels and annotations minus the project's
 * reserved keys; reserved keys the core stamped on the tenant object (managed-by) are kept.
 */
export function upMeta(superObj: KubeObject, tenantObj: KubeObject | undefined): ObjectMeta {
  const meta: ObjectMeta = tenantObj?.metadata ? clone(tenantObj.metadata) : { name: superObj.metadata?.name };
  for (const field of ['labels', 'annotations'] as const) {
    const own = meta[field] ?? {};
    const ownPlain = stripDown(own) ?? {};
    const merged = { ...stripDown(superObj.metadata?.[field]), ...Object.fromEntries(Object.entries(own).filter(([k]) => !(k in ownPlain))) };
    if (Object.keys(merged).length) meta[field] = merged;
    else delete meta[field];
  }
  return meta;
}
