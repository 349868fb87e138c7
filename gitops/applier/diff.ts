import type { Artifact } from '../artifact.ts';
import type { KubeObject } from '../../core/kube/client.ts';
import { differingFields, ownedLeaves } from './fields.ts';
import {
  TENANT_KINDS,
  objectKey,
  renderDesired,
  type DocumentError,
  type ObjectRef,
  type GitSourceRef,
} from './objects.ts';

/** PlannedObject is a desired object with the file it comes from. */
export type PlannedObject = ObjectRef & { file: string };

/** Diff is how applying an artifact would change a set of live objects. */
export interface Diff {
  /** desired objects with no live counterpart */
  create: PlannedObject[];
  /** desired objects whose live counterpart differs, with the JSON pointers that differ */
  change: Array<{ object: PlannedObject; fields: string[] }>;
  /** live objects of a tenant kind the artifact does not name (valid or not) */
  delete: ObjectRef[];
  /** problems of the artifact: the objects they concern are left out of create and change */
  errors: DocumentError[];
}

function liveRef(o: KubeObject): ObjectRef | undefined {
  const kind = o.kind;
  const name = o.metadata?.name;
  if (!kind || !name || !TENANT_KINDS[kind]) return undefined;
  const ref: ObjectRef = { apiVersion: o.apiVersion ?? '', kind, name };
  if (o.metadata?.namespace) ref.namespace = o.metadata.namespace;
  return ref;
}

/**
 * planDiff compares an artifact with live objects (as read from the apiserver, kind set) without changing anything.
 * A live object differs where a field the artifact sets has another value, or where a field the manager `vc-gitops`
 * applied before is no longer set by the artifact (the next apply removes it). With a source, the
 * tenancy.x-k8s.io/gitsource label counts as a desired field. Live objects of other kinds are ignored.
 */
export function planDiff(artifact: Artifact, liveObjects: readonly KubeObject[], source?: GitSourceRef): Diff {
  const { objects, errors, named } = renderDesired(artifact, source);
  const live = new Map<string, KubeObject>();
  const refs: ObjectRef[] = [];
  for (const o of liveObjects) {
    const ref = liveRef(o);
    if (!ref) continue;
    live.set(objectKey(ref), o);
    refs.push(ref);
  }
  const diff: Diff = { create: [], change: [], delete: [], errors };
  for (const d of objects) {
    const planned: PlannedObject = { ...d.ref, file: d.file };
    const l = live.get(d.key);
    if (!l) {
      diff.create.push(planned);
      continue;
    }
    const fields = differingFields(d.object, l, ownedLeaves(l));
    if (fields.length) diff.change.push({ object: planned, fields });
  }
  diff.delete = refs.filter((r) => !named.has(objectKey(r)));
  return diff;
}
