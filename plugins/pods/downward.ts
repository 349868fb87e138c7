import type { Pod, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';

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
