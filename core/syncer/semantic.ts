import { createHash } from 'node:crypto';
import { parseQuantity } from '../scheduler/quantity.ts';

/** sameQuantity says whether two strings are the same Kubernetes quantity ("1000" and "1k"), or else equal. */
function sameQuantity(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return parseQuantity(a) === parseQuantity(b);
  } catch {
    return false;
  }
}

/**
 * covers says whether `have` (an object as the apiserver stores it) holds everything `want` (what the syncer applies)
 * says, as server-side apply would leave it: every field of `want` is in `have` with the same value, quantities compared
 * by value (the apiserver writes "1000" back as "1k"); fields only in `have` (defaulted by the apiserver, or another
 * manager's) do not count; lists have the same length and each item covers.
 */
export function covers(have: unknown, want: unknown): boolean {
  if (typeof want === 'string') return typeof have === 'string' && sameQuantity(have, want);
  if (Array.isArray(want))
    return Array.isArray(have) && have.length === want.length && want.every((w, i) => covers(have[i], w));
  if (want !== null && typeof want === 'object') {
    if (have === null || typeof have !== 'object' || Array.isArray(have)) return false;
    const h = have as Record<string, unknown>;
    return Object.entries(want).every(([k, w]) => covers(h[k], w));
  }
  return have === want;
}

/** specHash is a short hash of what the syncer applies, kept on the object to tell a field it dropped since. */
export function specHash(spec: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(spec ?? null))
    .digest('hex')
    .slice(0, 16);
}
