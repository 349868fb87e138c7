import type { KubeObject } from '../kube/client.ts';

/**
 * statusOnly reports whether an update changed nothing but status (and the bookkeeping that comes with every write:
 * resourceVersion, managedFields): the generation, labels, annotations, finalizers, owners and deletion are as
 * before. An object without a generation (a kind with no status subresource) never counts as status-only, since its
 * spec changes leave no trace in metadata.
 */
export function statusOnly(a: KubeObject, b: KubeObject): boolean {
  const x = a.metadata ?? {};
  const y = b.metadata ?? {};
  if (x.generation === undefined || x.generation !== y.generation) return false;
  const same = (p: unknown, q: unknown) => JSON.stringify(p ?? null) === JSON.stringify(q ?? null);
  return (
    same(x.labels, y.labels) &&
    same(x.annotations, y.annotations) &&
    same(x.finalizers, y.finalizers) &&
    same(x.ownerReferences, y.ownerReferences) &&
    x.deletionTimestamp === y.deletionTimestamp
  );
}
