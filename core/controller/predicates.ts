import { sameJSON } from './status.ts';
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

/**
 * OwnStatus remembers the status a controller last wrote for each key, so that its event filter can tell the echo of
 * its own write (nothing to do) from a status someone else wrote (reconciled, so the controller puts its own answer
 * back: status is an output, and a forged one must not stand).
 */
export class OwnStatus {
  private readonly written = new Map<string, unknown>();

  /** remember records the status just written for key. */
  remember(key: string, status: unknown): void {
    this.written.set(key, structuredClone(status ?? {}));
  }

  /** isOwn reports whether status is the one this controller last wrote for key (as JSON: key order does not count). */
  isOwn(key: string, status: unknown): boolean {
    return this.written.has(key) && sameJSON(this.written.get(key), status ?? {});
  }

  /** forget drops what was recorded for key (its object is gone). */
  forget(key: string): void {
    this.written.delete(key);
  }
}
