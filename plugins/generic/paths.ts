import { clone } from '@virtualcluster-ts/plugin-sdk';

/**
 * Field paths of the generic sync: `spec.replicas`, `spec.targets[].namespace`. A segment is a field name; `[]` after
 * a name means "every item of this list". Paths never start at metadata, apiVersion or kind: those belong to the
 * core and the naming rules, so no configuration can move an object out of its tenant's namespaces.
 */

/** Segment is one step of a parsed path: a field, and whether the field is a list whose every item is visited. */
export interface Segment {
  field: string;
  each: boolean;
}

/** RESERVED_ROOTS are the top-level fields no path may start at. */
export const RESERVED_ROOTS: readonly string[] = ['metadata', 'apiVersion', 'kind'];

const FIELD = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/** parsePath parses a dotted path into segments, or throws naming what is wrong with it. */
export function parsePath(path: string): Segment[] {
  if (!path) throw new Error('a field path is empty');
  const segments = path.split('.').map((raw) => {
    const each = raw.endsWith('[]');
    const field = each ? raw.slice(0, -2) : raw;
    if (!FIELD.test(field)) throw new Error(`field path "${path}": "${raw}" is not a field name (optionally with [])`);
    if (field === '__proto__' || field === 'constructor' || field === 'prototype')
      throw new Error(`field path "${path}": "${field}" is not allowed`);
    return { field, each };
  });
  if (RESERVED_ROOTS.includes(segments[0]!.field))
    throw new Error(`field path "${path}": ${segments[0]!.field} belongs to the syncer, not to a field rule`);
  return segments;
}

const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * visit calls fn(parent, field) for every place a path names that exists up to its last field (the last field itself
 * may be absent). Lists are entered only where the path says `[]`.
 */
function visit(obj: unknown, path: readonly Segment[], fn: (parent: Record<string, unknown>, field: string) => void) {
  if (!isRecord(obj) || !path.length) return;
  const [head, ...rest] = path as [Segment, ...Segment[]];
  if (!rest.length && !head.each) return fn(obj, head.field);
  const v = obj[head.field];
  if (head.each) {
    if (!Array.isArray(v)) return;
    if (!rest.length) {
      v.forEach((_, i) => fn(v as unknown as Record<string, unknown>, String(i)));
      return;
    }
    for (const item of v) visit(item, rest, fn);
    return;
  }
  visit(v, rest, fn);
}

/**
 * copyPath makes `path` of `dst` what it is on `src`: a deep copy where `src` has it, absent where it does not. Only
 * plain paths (no `[]`) can be copied; the parents of the field are created on `dst` as needed.
 */
export function copyPath(src: unknown, dst: Record<string, unknown>, path: readonly Segment[]): void {
  let from: unknown = src;
  for (const s of path) from = isRecord(from) ? from[s.field] : undefined;
  let at: Record<string, unknown> = dst;
  for (const s of path.slice(0, -1)) {
    if (!isRecord(at[s.field])) {
      if (from === undefined) return;
      at[s.field] = {};
    }
    at = at[s.field] as Record<string, unknown>;
  }
  const last = path[path.length - 1]!.field;
  if (from === undefined) delete at[last];
  else at[last] = clone(from);
}

/** dropPath deletes every field `path` names from `obj` (list items named by a trailing `[]` are emptied out). */
export function dropPath(obj: unknown, path: readonly Segment[]): void {
  if (path[path.length - 1]!.each) {
    visit(obj, [...path.slice(0, -1), { ...path[path.length - 1]!, each: false }], (parent, field) => {
      if (Array.isArray(parent[field])) parent[field] = [];
    });
    return;
  }
  visit(obj, path, (parent, field) => {
    delete parent[field];
  });
}

/**
 * mapPath replaces every string value `path` names with fn(value); fn returning undefined removes the value (from a
 * list, the item). It returns the values fn refused, so a caller can say which ones.
 */
export function mapPath(obj: unknown, path: readonly Segment[], fn: (v: string) => string | undefined): string[] {
  const refused: string[] = [];
  const lists: unknown[][] = [];
  visit(obj, path, (parent, field) => {
    const v = parent[field];
    if (typeof v !== 'string') return;
    const out = fn(v);
    if (out === undefined) {
      refused.push(v);
      if (Array.isArray(parent)) {
        parent[field] = undefined;
        lists.push(parent);
      } else delete parent[field];
    } else parent[field] = out;
  });
  for (const l of new Set(lists)) {
    const kept = l.filter((x) => x !== undefined);
    l.splice(0, l.length, ...kept);
  }
  return refused;
}
