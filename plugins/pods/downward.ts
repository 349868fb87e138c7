import { createHash } from 'node:crypto';
import { ANN, PREFIX } from '@virtualcluster-ts/plugin-sdk';
import type { Pod, PodRefusal, PodSpec, Volume } from '@virtualcluster-ts/plugin-sdk/pods';

const KEYED = /^metadata\.(labels|annotations)\['(.+)'\]$/;

/**
 * tenantFieldValue is the value a container environment variable's downward API fieldRef has on the tenant Pod, for
 * the fields whose super value differs (its namespace, uid and ServiceAccount, and labels and annotations, which are
 * copied down only where allow-listed); undefined for the fields the super Pod answers the same or only the node
 * knows (name, nodeName, IPs).
 */
export function tenantFieldValue(tenantPod: Pod, fieldPath: string): string | undefined {
  const m = tenantPod.metadata ?? {};
  if (fieldPath === 'metadata.namespace') return m.namespace ?? '';
  if (fieldPath === 'metadata.uid') return m.uid ?? '';
  if (fieldPath === 'spec.serviceAccountName') return tenantPod.spec?.serviceAccountName ?? 'default';
  const k = KEYED.exec(fieldPath);
  if (!k) return undefined;
  const map = (k[1] === 'labels' ? m.labels : m.annotations) ?? {};
  return map[k[2]!] ?? '';
}

/**
 * resolveTenantFieldRefs replaces, in the super Pod's spec, each env fieldRef that tenantFieldValue answers with the
 * tenant's value as a literal: the kubelet resolves a fieldRef against the super Pod, which would hand the container
 * the super namespace and the syncer's ServiceAccount, and miss a label or annotation not copied down (an Indexed
 * Job's `batch.kubernetes.io/job-completion-index` annotation, read through JOB_COMPLETION_INDEX). Environment
 * variables are set once at container start, so a literal is what the tenant Pod's container would have seen.
 */
export function resolveTenantFieldRefs(spec: PodSpec, tenantPod: Pod): void {
  for (const c of [...spec.containers, ...(spec.initContainers ?? [])])
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.fieldRef as { fieldPath?: string } | undefined;
      const v = ref?.fieldPath === undefined ? undefined : tenantFieldValue(tenantPod, ref.fieldPath);
      if (v === undefined) continue;
      delete e.valueFrom;
      e.value = v;
    }
}

/** DOWNWARD_PREFIX is the domain of the annotations that carry a tenant label or annotation for a downward volume. */
export const DOWNWARD_PREFIX = `downward.${PREFIX}`;

/** downwardKey is the super Pod annotation that carries the tenant Pod's label (or annotation) `key`. */
export function downwardKey(map: 'labels' | 'annotations', key: string): string {
  const h = createHash('sha256').update(key).digest('hex').slice(0, 20);
  return `${DOWNWARD_PREFIX}/${map === 'labels' ? 'l' : 'a'}-${h}`;
}

const annotationPath = (key: string): string => `metadata.annotations['${key}']`;

/** WHOLE_MAP tells why a downward volume item of all labels or all annotations is refused. */
const WHOLE_MAP =
  'the kubelet would write the super Pod\u2019s, which carry the syncer\u2019s keys naming the super namespace; ' +
  "name the keys one by one (metadata.labels['key'])";

type Item = { path?: string; fieldRef?: { fieldPath?: string; [f: string]: unknown }; [f: string]: unknown };

/** downwardItems lists every downward API volume item of a spec (downwardAPI volumes and projections), with its path. */
function downwardItems(spec: PodSpec): Array<{ item: Item; at: string }> {
  const out: Array<{ item: Item; at: string }> = [];
  const items = (src: unknown, at: string) => {
    for (const [i, item] of (((src as { items?: Item[] } | undefined)?.items ?? []) as Item[]).entries())
      out.push({ item, at: `${at}.items[${i}]` });
  };
  for (const [i, v] of (spec.volumes ?? ([] as Volume[])).entries()) {
    items(v.downwardAPI, `spec.volumes[${i}].downwardAPI`);
    for (const [j, s] of (v.projected?.sources ?? []).entries())
      items(s.downwardAPI, `spec.volumes[${i}].projected.sources[${j}].downwardAPI`);
  }
  return out;
}

/**
 * superFieldPath is the fieldPath a downward volume item of the tenant Pod reads on the super Pod: the tenant's name,
 * namespace and uid are the ownership annotations the syncer sets on every super object, a tenant label or annotation
 * an annotation of DOWNWARD_PREFIX the syncer keeps at the tenant's value (so a file follows the tenant Pod's labels as
 * the kubelet's does); undefined when the path reads the same on both sides (or is no metadata the kubelet knows).
 */
export function superFieldPath(fieldPath: string): string | undefined {
  if (fieldPath === 'metadata.name') return annotationPath(ANN.name);
  if (fieldPath === 'metadata.namespace') return annotationPath(ANN.namespace);
  if (fieldPath === 'metadata.uid') return annotationPath(ANN.uid);
  const k = KEYED.exec(fieldPath);
  return k ? annotationPath(downwardKey(k[1] as 'labels' | 'annotations', k[2]!)) : undefined;
}

/**
 * checkDownwardVolumes refuses a downward volume item of all labels or all annotations: the super Pod's maps hold the
 * syncer's keys (the tenant's root namespace among them) and lack the tenant keys not copied down, and no fieldPath
 * of the super Pod gives the tenant's whole map.
 */
export function checkDownwardVolumes(spec: PodSpec): PodRefusal | undefined {
  for (const { item, at } of downwardItems(spec)) {
    const p = item.fieldRef?.fieldPath;
    if (p === 'metadata.labels' || p === 'metadata.annotations')
      return { field: `${at}.fieldRef.fieldPath`, message: `${at}.fieldRef.fieldPath ${p} is refused: ${WHOLE_MAP}` };
  }
  return undefined;
}

/** translateDownwardVolumes points each downward volume item of the super Pod's spec at superFieldPath. */
export function translateDownwardVolumes(spec: PodSpec): void {
  for (const { item } of downwardItems(spec)) {
    const p = item.fieldRef?.fieldPath;
    const to = p === undefined ? undefined : superFieldPath(p);
    if (to !== undefined) item.fieldRef!.fieldPath = to;
  }
}

/**
 * downwardAnnotations are the annotations of DOWNWARD_PREFIX the super Pod carries for the tenant Pod's downward
 * volumes: each tenant label or annotation a volume item names, at its tenant value ('' when absent, as the kubelet
 * writes a missing key). Read from the tenant spec, whose volumes cannot change, so create and update agree.
 */
export function downwardAnnotations(tenantPod: Pod): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { item } of downwardItems(tenantPod.spec ?? { containers: [] })) {
    const k = KEYED.exec(item.fieldRef?.fieldPath ?? '');
    if (k) out[downwardKey(k[1] as 'labels' | 'annotations', k[2]!)] = tenantFieldValue(tenantPod, k[0])!;
  }
  return out;
}
