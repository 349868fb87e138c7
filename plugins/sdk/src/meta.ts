/**
 * The project's reserved metadata rules, as plugins need them: which label and annotation keys belong to the
 * project (a tenant must not forge them) and how tenant and super metadata are filtered when copied.
 */

import type { CopiedMetadataView, TenantView } from './contract.ts';

/** PREFIX is the project's own metadata domain; keys under it (or a subdomain of it) are reserved. */
export const PREFIX = 'tenancy.x-k8s.io';

/** PUBLIC_LABEL is set to "true" by a super-cluster admin on objects (StorageClass, PriorityClass, CRD) tenants may see. */
export const PUBLIC_LABEL = `${PREFIX}/super.public`;

/** isReservedKey tells whether a label or annotation key is under the project's reserved domain. */
export function isReservedKey(key: string): boolean {
  const domain = key.includes('/') ? key.slice(0, key.indexOf('/')) : '';
  return domain === PREFIX || domain.endsWith(`.${PREFIX}`);
}

/**
 * stripDown returns a copy of tenant labels or annotations without the project's reserved keys (a tenant must not
 * forge ownership) and without keys under the tenant's opaque prefixes.
 */
export function stripDown(
  m: Record<string, string> | undefined,
  opaque: readonly string[] = [],
): Record<string, string> | undefined {
  if (!m) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m)) {
    if (isReservedKey(k) || opaque.some((p) => k.startsWith(p))) continue;
    out[k] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

/** pickUp returns the super labels or annotations under the tenant's transparent prefixes (copied up). */
export function pickUp(
  m: Record<string, string> | undefined,
  transparent: readonly string[] = [],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m ?? {})) if (transparent.some((p) => k.startsWith(p))) out[k] = v;
  return out;
}

/**
 * DEFAULT_COPIED_METADATA is the allow-list of tenant label and annotation keys copied to super objects when neither
 * the tenant's policy nor the manager's configuration gives one. On namespaced objects: keys without a prefix (the
 * tenant's own; Service selectors and NetworkPolicy podSelectors, copied down as they are, match on them),
 * app.kubernetes.io, and for labels the workload-controller labels that selectors use; no other prefixed key, since
 * super-side add-ons act on those (sidecar injection, cloud load balancers, ingress controllers, workload identity,
 * Secret replication). On Namespaces: app.kubernetes.io only, since add-ons act on unprefixed namespace labels too
 * (istio-injection).
 */
export const DEFAULT_COPIED_METADATA = {
  labels: [
    '*',
    'app.kubernetes.io/*',
    'statefulset.kubernetes.io/pod-name',
    'apps.kubernetes.io/pod-index',
    'batch.kubernetes.io/job-name',
  ],
  annotations: ['*', 'app.kubernetes.io/*'],
  namespaceLabels: ['app.kubernetes.io/*'],
  namespaceAnnotations: ['app.kubernetes.io/*'],
} as const satisfies Required<CopiedMetadataView>;

/** copiedMetadataOf is a tenant's allow-lists, each list it leaves out taken from DEFAULT_COPIED_METADATA. */
export function copiedMetadataOf(tenant: Pick<TenantView, 'copiedMetadata'>): Required<CopiedMetadataView> {
  return { ...DEFAULT_COPIED_METADATA, ...tenant.copiedMetadata };
}

const patternCache = new Map<string, RegExp>();

/**
 * metaKeyMatches tells whether a label or annotation key matches an allow-list pattern, in which `*` stands for any
 * run of characters without `/` (`*` alone: every key without a prefix; `app.kubernetes.io/*`: every key under it).
 */
export function metaKeyMatches(pattern: string, key: string): boolean {
  let re = patternCache.get(pattern);
  if (!re) {
    const body = pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('[^/]*');
    re = new RegExp(`^${body}$`);
    if (patternCache.size < 1000) patternCache.set(pattern, re);
  }
  return re.test(key);
}

/**
 * allowDown returns a copy of tenant labels or annotations with only the keys an allow-list pattern matches, minus
 * the project's reserved keys (whatever the list says) and keys under the tenant's opaque prefixes.
 */
export function allowDown(
  m: Record<string, string> | undefined,
  allowed: readonly string[],
  opaque: readonly string[] = [],
): Record<string, string> | undefined {
  const kept = Object.entries(stripDown(m, opaque) ?? {}).filter(([k]) => allowed.some((p) => metaKeyMatches(p, k)));
  return kept.length ? Object.fromEntries(kept) : undefined;
}
