/**
 * The project's reserved metadata rules, as plugins need them: which label and annotation keys belong to the
 * project (a tenant must not forge them) and how tenant and super metadata are filtered when copied.
 */

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
