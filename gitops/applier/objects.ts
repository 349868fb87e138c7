import type { Artifact, SourceDocument } from '../artifact.ts';
import type { KubeObject, Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, sourceLabelValue } from '../../core/names/names.ts';
import { parseRenewalRequest } from '../../core/pki/renewal.ts';
import { validate, type SchemaName } from '../../schemas/validate.ts';

/** SOURCE_LABEL marks every applied object with the GitSource it came from (`<namespace>.<name>`). */
export const SOURCE_LABEL = LABEL.gitSource;

export { sourceLabelValue };

/**
 * CONFIRM_DELETION_ANNOTATION, set on a GitSource to a revision, allows that revision (and no other) to delete more
 * than spec.safety allows, or to prune everything when its path holds no objects.
 */
export const CONFIRM_DELETION_ANNOTATION = ANN.confirmDeletion;

/** TenantKind describes one kind a GitSource may carry: the schema its documents must pass and where it is served. */
export interface TenantKind {
  schema: SchemaName;
  resource: Resource;
  /** apply order: lower first; pruning goes the other way */
  order: number;
}

/** TENANT_KINDS are the only kinds accepted from a GitSource: tenant definitions. */
export const TENANT_KINDS: Readonly<Record<string, TenantKind>> = {
  ClusterVersion: { schema: 'clusterVersion', resource: R.clusterversions, order: 0 },
  VirtualCluster: { schema: 'virtualCluster', resource: R.virtualclusters, order: 1 },
  // Tenants made through Cluster API: the provider's objects before the Cluster that names them, which is pruned first.
  VirtualClusterControlPlane: {
    schema: 'virtualClusterControlPlane',
    resource: R.virtualclustercontrolplanes,
    order: 2,
  },
  VirtualClusterInfraCluster: {
    schema: 'virtualClusterInfraCluster',
    resource: R.virtualclusterinfraclusters,
    order: 2,
  },
  Cluster: { schema: 'capiCluster', resource: R.capiclusters, order: 3 },
};

/** kindList names the tenant kinds as a sentence does: `A, B and C`. */
const kindList = (): string => {
  const k = Object.keys(TENANT_KINDS);
  return k.length > 1 ? `${k.slice(0, -1).join(', ')} and ${k.at(-1)}` : (k[0] ?? '');
};

/** ObjectRef names one object. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  /** absent for a cluster-scoped object */
  namespace?: string;
  name: string;
}

/** InventoryEntry is one object applied by a GitSource, with the uid it had then (status.inventory[]). */
export interface InventoryEntry extends ObjectRef {
  uid: string;
}

/** GitSourceRef names the GitSource an artifact belongs to. */
export interface GitSourceRef {
  namespace: string;
  name: string;
}

/** DesiredObject is a valid tenant definition of an artifact, as it will be applied. */
export interface DesiredObject {
  ref: ObjectRef;
  /** objectKey(ref) */
  key: string;
  file: string;
  index: number;
  resource: Resource;
  /** the body sent with server-side apply */
  object: KubeObject;
  /** its apply wave (APPLY_WAVE_ANNOTATION; 0 when unset) */
  wave: number;
}

/** APPLY_WAVE_ANNOTATION orders the objects of one revision in waves: an integer, lower first, default 0. */
export const APPLY_WAVE_ANNOTATION = ANN.applyWave;
const WAVE_POINTER = `/metadata/annotations/${APPLY_WAVE_ANNOTATION.replace('/', '~1')}`;

/** waveOf reads an object's apply wave: an integer from -1000 to 1000, or why the annotation is refused. */
export function waveOf(o: Record<string, unknown>): number | { error: string } {
  const meta = o.metadata as { annotations?: Record<string, unknown> } | undefined;
  const v = meta?.annotations?.[APPLY_WAVE_ANNOTATION];
  if (v === undefined) return 0;
  const n = typeof v === 'string' && /^-?\d{1,4}$/.test(v) ? Number(v) : NaN;
  return Number.isInteger(n) && Math.abs(n) <= 1000
    ? n
    : { error: `${JSON.stringify(v)} is not an apply wave: an integer from -1000 to 1000, as a string` };
}

const RENEW_POINTER = `/metadata/annotations/${ANN.renewCertificates.replace('/', '~1')}`;

/**
 * renewalRequestError says why a VirtualCluster's renew-certificates annotation (`vc certs renew`) is refused, if it
 * is: a definition in git that asks for a renewal the manager would ignore is refused before it is applied.
 */
export function renewalRequestError(kind: string, o: Record<string, unknown>): string | undefined {
  if (kind !== 'VirtualCluster') return undefined;
  const v = (o.metadata as { annotations?: Record<string, unknown> } | undefined)?.annotations?.[ANN.renewCertificates];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') return `${JSON.stringify(v)} is not a renewal request: write [NAME[,NAME...]@]TIME`;
  const r = parseRenewalRequest(v, RENEW_POINTER);
  return 'refused' in r ? r.refused.slice(RENEW_POINTER.length + 2) : undefined;
}

/**
 * DocumentErrorReason is why a document of an artifact cannot be applied: it cannot be parsed, it is invalid, it lies
 * outside what the platform allows its GitSource (OutOfScope), or it names an existing object that is not the
 * source's own (NotOwned).
 */
export type DocumentErrorReason = 'ParseFailed' | 'ValidationFailed' | 'OutOfScope' | 'NotOwned';

/** DocumentError is one problem of an artifact, located by file (and object and field when known). */
export interface DocumentError {
  reason: DocumentErrorReason;
  file: string;
  /** set when the file holds several documents */
  index?: number;
  /** e.g. `VirtualCluster team-a/dev` */
  object?: string;
  /** JSON pointer of the field at fault */
  pointer?: string;
  /** the whole text: file, object, pointer and problem */
  message: string;
}

/** Rendered is an artifact turned into what can be applied and what cannot. */
export interface Rendered {
  objects: DesiredObject[];
  errors: DocumentError[];
  /** keys of every object the artifact names, valid or not: none of them is pruned */
  named: Set<string>;
}

/** objectKey identifies an object across revisions: kind, namespace and name (the group is always tenancy). */
export function objectKey(ref: Pick<ObjectRef, 'kind' | 'namespace' | 'name'>): string {
  return `${ref.kind}/${ref.namespace ?? ''}/${ref.name}`;
}

/** describeRef renders `VirtualCluster team-a/dev` or `ClusterVersion v1-36`. */
export function describeRef(ref: Pick<ObjectRef, 'kind' | 'namespace' | 'name'>): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function where(doc: SourceDocument, several: boolean): string {
  return several ? `${doc.file} (document ${doc.index + 1})` : doc.file;
}

function refOf(doc: SourceDocument): { kind?: string; apiVersion?: string; namespace?: string; name?: string } {
  const o = doc.object;
  const meta = o.metadata && typeof o.metadata === 'object' ? (o.metadata as Record<string, unknown>) : {};
  return { kind: str(o.kind), apiVersion: str(o.apiVersion), namespace: str(meta.namespace), name: str(meta.name) };
}

/**
 * desiredBody is what is applied for a valid document: apiVersion, kind, name, namespace, labels (with SOURCE_LABEL
 * when a source is given), annotations and spec. Anything else of the document (status, uid, resourceVersion,
 * managedFields…) belongs to the apiserver and is left out.
 */
function desiredBody(o: Record<string, unknown>, source: GitSourceRef | undefined): KubeObject {
  const meta = o.metadata as Record<string, unknown>;
  const labels = { ...((meta.labels as Record<string, string> | undefined) ?? {}) };
  if (source) labels[SOURCE_LABEL] = sourceLabelValue(source);
  const metadata: Record<string, unknown> = { name: meta.name };
  if (meta.namespace !== undefined) metadata.namespace = meta.namespace;
  if (Object.keys(labels).length) metadata.labels = labels;
  if (meta.annotations !== undefined) metadata.annotations = meta.annotations;
  const body: KubeObject = { apiVersion: o.apiVersion as string, kind: o.kind as string, metadata };
  if (o.spec !== undefined) body.spec = o.spec;
  return body;
}

/**
 * renderDesired checks every document of an artifact and returns the valid tenant definitions in apply order (by
 * wave, then ClusterVersions first), with one error per problem. A document is refused when its kind is not a tenant kind,
 * when it fails its schema, or when another document names the same object (both are refused: which one is meant
 * is not knowable). Parse errors of the artifact come first.
 */
export function renderDesired(artifact: Artifact, source?: GitSourceRef): Rendered {
  const errors: DocumentError[] = artifact.parseErrors.map((p) => {
    const at = p.line !== undefined ? `${p.file}:${p.line}${p.column !== undefined ? `:${p.column}` : ''}` : p.file;
    return { reason: 'ParseFailed', file: p.file, message: `${at}: cannot be parsed as YAML: ${p.message}` };
  });
  const perFile = new Map<string, number>();
  for (const d of artifact.documents) perFile.set(d.file, (perFile.get(d.file) ?? 0) + 1);

  const candidates: DesiredObject[] = [];
  const named = new Set<string>();
  for (const doc of artifact.documents) {
    const several = (perFile.get(doc.file) ?? 0) > 1;
    const at = where(doc, several);
    const index = several ? doc.index : undefined;
    const r = refOf(doc);
    const object = r.kind
      ? describeRef({ kind: r.kind, namespace: r.namespace, name: r.name ?? '<unnamed>' })
      : undefined;
    const fail = (message: string, pointer?: string): void => {
      errors.push({ reason: 'ValidationFailed', file: doc.file, index, object, pointer, message });
    };
    if (r.kind && r.name) named.add(objectKey({ kind: r.kind, namespace: r.namespace, name: r.name }));
    if (!r.kind) {
      fail(`${at}: document has no kind: only ${kindList()} objects may come from a GitSource`, '/kind');
      continue;
    }
    const tk = TENANT_KINDS[r.kind];
    if (!tk) {
      fail(
        `${at}: ${object}: kind ${r.kind} is refused: only tenant definitions (${Object.keys(TENANT_KINDS).join(', ')}) may come from a GitSource`,
        '/kind',
      );
      continue;
    }
    const fieldErrors = validate(tk.schema, doc.object);
    if (!tk.resource.namespaced && r.namespace !== undefined) {
      fieldErrors.push({ pointer: '/metadata/namespace', message: `must not be set: ${r.kind} is cluster-scoped` });
    }
    if (fieldErrors.length) {
      for (const e of fieldErrors) fail(`${at}: ${object}: ${e.pointer} ${e.message}`, e.pointer);
      continue;
    }
    const wave = waveOf(doc.object);
    if (typeof wave !== 'number') {
      fail(`${at}: ${object}: ${WAVE_POINTER} ${wave.error}`, WAVE_POINTER);
      continue;
    }
    const renewal = renewalRequestError(r.kind, doc.object);
    if (renewal) {
      fail(`${at}: ${object}: ${RENEW_POINTER} ${renewal}`, RENEW_POINTER);
      continue;
    }
    const ref: ObjectRef = { apiVersion: r.apiVersion!, kind: r.kind, name: r.name! };
    if (r.namespace !== undefined) ref.namespace = r.namespace;
    candidates.push({
      ref,
      key: objectKey(ref),
      file: doc.file,
      index: doc.index,
      resource: tk.resource,
      object: desiredBody(doc.object, source),
      wave,
    });
  }

  const byKey = new Map<string, DesiredObject[]>();
  for (const c of candidates) byKey.set(c.key, [...(byKey.get(c.key) ?? []), c]);
  const objects: DesiredObject[] = [];
  for (const [, group] of byKey) {
    if (group.length === 1) {
      objects.push(group[0]!);
      continue;
    }
    const places = group.map((g) => (perFile.get(g.file)! > 1 ? `${g.file} (document ${g.index + 1})` : g.file));
    const object = describeRef(group[0]!.ref);
    errors.push({
      reason: 'ValidationFailed',
      file: group[0]!.file,
      object,
      message: `${object} is defined more than once: in ${places.join(' and ')}; none of them is applied`,
    });
  }
  objects.sort(
    (a, b) =>
      a.wave - b.wave ||
      TENANT_KINDS[a.ref.kind]!.order - TENANT_KINDS[b.ref.kind]!.order ||
      a.key.localeCompare(b.key),
  );
  return { objects, errors, named };
}
