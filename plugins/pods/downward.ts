import { createHash } from 'node:crypto';
import { ANN, PREFIX } from '@virtualcluster-ts/plugin-sdk';
import type { Pod, PodSpec, Volume } from '@virtualcluster-ts/plugin-sdk/pods';

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
 * resolveTenantFieldRefs makes each env fieldRef that tenantFieldValue answers read the tenant's value on the super
 * Pod: the kubelet resolves a fieldRef against the super Pod, which would hand the container the super namespace and
 * the syncer's ServiceAccount, and miss a label or annotation not copied down (an Indexed Job's
 * `batch.kubernetes.io/job-completion-index` annotation, read through JOB_COMPLETION_INDEX). A tenant label or
 * annotation is read, with `follow`, from the annotation of DOWNWARD_PREFIX the syncer keeps at the tenant's value
 * (downwardAnnotations): the kubelet resolves env again at every container start, so a container restarted after the
 * tenant changed the key sees the new value, as upstream (a subPathExpr that failed on a missing annotation works once
 * the tenant sets it). Without `follow`, and for namespace, uid and ServiceAccount (which never change), the value is
 * written as a literal; ephemeral containers, which start once, take literals.
 */
export function resolveTenantFieldRefs(spec: PodSpec, tenantPod: Pod, follow: boolean): void {
  for (const c of [...spec.containers, ...(spec.initContainers ?? [])])
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.fieldRef as { fieldPath?: string } | undefined;
      const path = ref?.fieldPath;
      const v = path === undefined ? undefined : tenantFieldValue(tenantPod, path);
      if (v === undefined) continue;
      if (follow && KEYED.test(path!)) {
        ref!.fieldPath = superFieldPath(path!);
        continue;
      }
      delete e.valueFrom;
      e.value = v;
    }
}

/** envFieldPaths lists the tenant labels and annotations the env of a spec's containers and init containers read. */
function envFieldPaths(spec: PodSpec): string[] {
  const out: string[] = [];
  for (const c of [...spec.containers, ...(spec.initContainers ?? [])])
    for (const e of c.env ?? []) {
      const p = (e.valueFrom?.fieldRef as { fieldPath?: string } | undefined)?.fieldPath;
      if (p !== undefined && KEYED.test(p)) out.push(p);
    }
  return out;
}

/** DOWNWARD_PREFIX is the domain of the annotations that carry a tenant label or annotation for a downward volume. */
export const DOWNWARD_PREFIX = `downward.${PREFIX}`;

/** downwardKey is the super Pod annotation that carries the tenant Pod's label (or annotation) `key`. */
export function downwardKey(map: 'labels' | 'annotations', key: string): string {
  const h = createHash('sha256').update(key).digest('hex').slice(0, 20);
  return `${DOWNWARD_PREFIX}/${map === 'labels' ? 'l' : 'a'}-${h}`;
}

const annotationPath = (key: string): string => `metadata.annotations['${key}']`;

/** wholeMapKey is the super Pod annotation that carries all the tenant Pod's labels (or annotations) as a file. */
export function wholeMapKey(map: 'labels' | 'annotations'): string {
  return `${DOWNWARD_PREFIX}/${map}`;
}

const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;
const ESCAPES: Record<string, string> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
  '\\': '\\\\',
  '"': '\\"',
};

/** goQuote quotes a string as Go's %q does (strconv.Quote): printable characters as they are, others escaped. */
export function goQuote(v: string): string {
  let out = '"';
  for (const ch of v) {
    const c = ch.codePointAt(0)!;
    if (ESCAPES[ch]) out += ESCAPES[ch];
    else if (c < 0x80 && (c < 0x20 || c === 0x7f)) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else if (PRINTABLE.test(ch)) out += ch;
    else if (c < 0x10000) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += `\\U${c.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

/**
 * formatMap renders labels or annotations as the kubelet writes a downward volume file of a whole map: one
 * `key="value"` line per key in sorted order, the value quoted as Go's %q, no newline after the last.
 */
export function formatMap(m: Record<string, string>): string {
  return Object.keys(m)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((k) => `${k}=${goQuote(m[k]!)}`)
    .join('\n');
}

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
 * the kubelet's does), and all of them an annotation holding the file the kubelet would write (formatMap); undefined
 * when the path reads the same on both sides (or is no metadata the kubelet knows).
 */
export function superFieldPath(fieldPath: string): string | undefined {
  if (fieldPath === 'metadata.labels') return annotationPath(wholeMapKey('labels'));
  if (fieldPath === 'metadata.annotations') return annotationPath(wholeMapKey('annotations'));
  if (fieldPath === 'metadata.name') return annotationPath(ANN.name);
  if (fieldPath === 'metadata.namespace') return annotationPath(ANN.namespace);
  if (fieldPath === 'metadata.uid') return annotationPath(ANN.uid);
  const k = KEYED.exec(fieldPath);
  return k ? annotationPath(downwardKey(k[1] as 'labels' | 'annotations', k[2]!)) : undefined;
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
 * volumes and env: each tenant label or annotation a volume item or a container's env names, at its tenant value (''
 * when absent, as the kubelet resolves a missing key), and for a volume item of all labels or all annotations the whole
 * map as the kubelet formats it, less the keys under the tenant's opaque prefixes (`opaque`), which never reach the
 * super cluster. Read from the tenant spec, whose volumes and containers cannot change, so create and update agree.
 */
export function downwardAnnotations(tenantPod: Pod, opaque: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  const m = tenantPod.metadata ?? {};
  const spec = tenantPod.spec ?? { containers: [] };
  const paths = [...downwardItems(spec).map(({ item }) => item.fieldRef?.fieldPath ?? ''), ...envFieldPaths(spec)];
  for (const p of paths) {
    if (p === 'metadata.labels' || p === 'metadata.annotations') {
      const map = (p === 'metadata.labels' ? m.labels : m.annotations) ?? {};
      const kept = Object.entries(map).filter(([k]) => !opaque.some((o) => k.startsWith(o)));
      out[wholeMapKey(p === 'metadata.labels' ? 'labels' : 'annotations')] = formatMap(Object.fromEntries(kept));
      continue;
    }
    const k = KEYED.exec(p);
    if (k) out[downwardKey(k[1] as 'labels' | 'annotations', k[2]!)] = tenantFieldValue(tenantPod, k[0])!;
  }
  return out;
}
