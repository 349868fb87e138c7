// The scheduler's annotations, as the original VirtualCluster names them: a tenant namespace's slice (the unit it is
// spread in), the placements the scheduler wrote (slices per super cluster), and a tenant Pod's super cluster.
// Parsing is strict: anything malformed is an AnnotationError naming the object, the annotation and the field, so
// the controller can put it in an Event and a condition instead of guessing.

import { formatMilli, parseQuantity, QuantityError, type Milli } from './quantity.ts';

/** SLICE is the namespace annotation holding one slice as a JSON resource list: {"cpu":"100m","memory":"100Mi"}. */
export const SLICE = 'scheduler.tenancy.x-k8s.io/slice';
/** PLACEMENTS is the namespace annotation the scheduler writes: slices per super cluster, {"r1":1,"r2":1}. */
export const PLACEMENTS = 'scheduler.tenancy.x-k8s.io/placements';
/** SUPER_CLUSTER is the Pod annotation the scheduler writes: the super cluster the Pod runs on. */
export const SUPER_CLUSTER = 'scheduler.tenancy.x-k8s.io/superCluster';

/** Resources maps a resource name (cpu, memory, nvidia.com/gpu...) to an exact amount in milli-units. */
export type Resources = Readonly<Record<string, Milli>>;

/** Placements maps a super cluster name to the number of the namespace's slices placed on it (always >= 1). */
export type Placements = ReadonlyMap<string, number>;

/** AnnotationError is a malformed scheduler annotation; the message names the object, annotation and field. */
export class AnnotationError extends Error {
  constructor(
    readonly object: string,
    readonly annotation: string,
    readonly field: string | undefined,
    detail: string,
  ) {
    super(`${object}: annotation ${annotation}${field === undefined ? '' : ` field "${field}"`}: ${detail}`);
  }
}

// A resource name: an optional DNS-subdomain prefix and a qualified name, as Kubernetes resource names are.
const RESOURCE = /^(?:[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
// A super cluster name is a DNS label, as it names a Cluster object and appears in Pod annotations.
const CLUSTER = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function parseObject(object: string, annotation: string, value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (e) {
    throw new AnnotationError(object, annotation, undefined, `not JSON (${(e as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new AnnotationError(object, annotation, undefined, 'must be a JSON object');
  return parsed as Record<string, unknown>;
}

/** parseSlice reads a slice annotation: at least one resource, each a positive quantity written as a string. */
export function parseSlice(object: string, value: string): Resources {
  const out: Record<string, Milli> = {};
  for (const [name, q] of Object.entries(parseObject(object, SLICE, value))) {
    if (!RESOURCE.test(name)) throw new AnnotationError(object, SLICE, name, 'is not a resource name');
    if (typeof q !== 'string')
      throw new AnnotationError(object, SLICE, name, `must be a quantity string like "100m", not ${JSON.stringify(q)}`);
    let amount: Milli;
    try {
      amount = parseQuantity(q);
    } catch (e) {
      if (e instanceof QuantityError) throw new AnnotationError(object, SLICE, name, e.message);
      throw e;
    }
    if (amount === 0n) throw new AnnotationError(object, SLICE, name, 'must be greater than zero');
    out[name] = amount;
  }
  if (Object.keys(out).length === 0) throw new AnnotationError(object, SLICE, undefined, 'names no resource');
  return out;
}

/** parsePlacements reads a placements annotation: super cluster names to positive whole slice counts. */
export function parsePlacements(object: string, value: string): Placements {
  const out = new Map<string, number>();
  for (const [name, n] of Object.entries(parseObject(object, PLACEMENTS, value))) {
    if (!CLUSTER.test(name)) throw new AnnotationError(object, PLACEMENTS, name, 'is not a super cluster name');
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1)
      throw new AnnotationError(object, PLACEMENTS, name, `must be a whole number of slices >= 1, not ${String(n)}`);
    out.set(name, n);
  }
  return out;
}

/** formatPlacements writes placements as the annotation value, clusters sorted, so equal placements compare equal. */
export function formatPlacements(placements: Placements): string {
  const sorted = [...placements].filter(([, n]) => n > 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(Object.fromEntries(sorted));
}

/** parseSuperCluster reads a Pod's super cluster annotation: one super cluster name. */
export function parseSuperCluster(object: string, value: string): string {
  if (!CLUSTER.test(value))
    throw new AnnotationError(object, SUPER_CLUSTER, undefined, `${JSON.stringify(value)} is not a super cluster name`);
  return value;
}

/** formatResources writes resources for messages, sorted by name: cpu=100m,memory=100Mi. */
export function formatResources(r: Resources): string {
  return (
    Object.keys(r)
      .sort()
      .map((k) => `${k}=${formatMilli(r[k]!)}`)
      .join(',') || '(none)'
  );
}
