import type { KubeObject } from '../../core/kube/client.ts';
import { IDENTITY } from '../../core/names/names.ts';

/**
 * Field-level comparison of a desired object with a live one, in JSON pointers. Objects are walked down to their
 * leaves; a list is one leaf (the lists of tenant definitions are atomic or sets, replaced whole by an apply).
 */

type Json = Record<string, unknown>;

const isMap = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** escapePointer escapes one JSON pointer segment (RFC 6901). */
export function escapePointer(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** pointerGet reads the value at a JSON pointer, or undefined when a segment is missing. */
export function pointerGet(obj: unknown, pointer: string): unknown {
  if (pointer === '' || pointer === '/') return obj;
  let node: unknown = obj;
  for (const raw of pointer.slice(1).split('/')) {
    const seg = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (isMap(node)) node = node[seg];
    else if (Array.isArray(node) && /^\d+$/.test(seg)) node = node[Number(seg)];
    else return undefined;
  }
  return node;
}

/** deepEqual compares JSON values, ignoring the order of object keys. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  if (isMap(a) && isMap(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}

// An empty map sets nothing: `spec: {}` leaves every field to defaults and other managers.
function leaves(node: unknown, prefix: string, out: string[]): void {
  if (isMap(node)) {
    for (const [k, v] of Object.entries(node)) leaves(v, `${prefix}/${escapePointer(k)}`, out);
  } else {
    out.push(prefix);
  }
}

/**
 * desiredLeaves lists the pointers of the fields an apply of this object sets: its labels, annotations and the leaves
 * of everything outside metadata but apiVersion and kind (name and namespace are its identity, not fields).
 */
export function desiredLeaves(desired: KubeObject): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(desired)) {
    if (k === 'apiVersion' || k === 'kind' || k === 'status') continue;
    if (k === 'metadata') {
      const meta = (v ?? {}) as Json;
      for (const m of ['labels', 'annotations'] as const) {
        if (isMap(meta[m])) for (const key of Object.keys(meta[m])) out.push(`/metadata/${m}/${escapePointer(key)}`);
      }
      continue;
    }
    leaves(v, `/${escapePointer(k)}`, out);
  }
  return out.sort();
}

/**
 * ownedLeaves lists the pointers of the fields the given manager owns through server-side apply on the main
 * resource, read from managedFields (fieldsV1). Entries below a list element (`k:`, `v:`, `i:`) count as the list.
 */
export function ownedLeaves(live: KubeObject, manager: string = IDENTITY.gitops): string[] {
  const entries = (live.metadata?.managedFields ?? []) as Array<{
    manager?: string;
    operation?: string;
    subresource?: string;
    fieldsV1?: unknown;
  }>;
  const out = new Set<string>();
  for (const e of entries) {
    if (e.manager !== manager || e.operation !== 'Apply' || e.subresource) continue;
    walkFieldsV1(e.fieldsV1, '', out);
  }
  return [...out].sort();
}

function walkFieldsV1(node: unknown, prefix: string, out: Set<string>): void {
  if (!isMap(node)) return;
  const fields = Object.keys(node).filter((k) => k.startsWith('f:'));
  const elements = Object.keys(node).some((k) => k.startsWith('k:') || k.startsWith('v:') || k.startsWith('i:'));
  if (prefix && (elements || fields.length === 0)) {
    out.add(prefix);
    return;
  }
  for (const f of fields) walkFieldsV1(node[f], `${prefix}/${escapePointer(f.slice(2))}`, out);
}

const within = (pointer: string, ancestor: string): boolean =>
  pointer === ancestor || pointer.startsWith(`${ancestor}/`);

/**
 * differingFields lists, sorted, the pointers where a live object departs from the desired one: every field the
 * desired object sets whose live value differs (or is missing), and every field of `owned` (what the manager applied
 * before) that the desired object no longer sets but the live object still has, which the next apply removes.
 */
export function differingFields(desired: KubeObject, live: KubeObject, owned: readonly string[] = []): string[] {
  const want = desiredLeaves(desired);
  const out = new Set<string>();
  for (const p of want) if (!deepEqual(pointerGet(desired, p), pointerGet(live, p))) out.add(p);
  for (const p of owned) {
    if (want.some((w) => within(p, w) || within(w, p))) continue;
    if (pointerGet(live, p) !== undefined) out.add(p);
  }
  return [...out].sort();
}
