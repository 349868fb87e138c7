// Who may say where a tenant's namespace and Pods run. Tenants are admins of their own control plane, so any
// annotation on their namespaces and Pods may have been written by them. The scheduler therefore signs what it
// writes: an HMAC over the annotation's value bound to the tenant, the object's name and its uid, under a key only
// the platform holds (a Secret in the manager's namespace of the meta cluster). The scheduler rebuilds its cache only
// from values that verify, overwrites any that do not, and the syncers sync only what verifies. A value copied to
// another object (another namespace, a recreated Pod with a new uid, another tenant) does not verify there.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { isAlreadyExists, type KubeClient, type KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';

/** SIGNATURE is the annotation, on a tenant namespace or Pod, that signs the scheduler's PLACEMENTS or SUPER_CLUSTER. */
export const SIGNATURE = 'scheduler.tenancy.x-k8s.io/signature';

/** SIGNING_KEY_SECRET is the Secret in the manager's namespace of the meta cluster holding the key, under `key`. */
export const SIGNING_KEY_SECRET = { name: 'vc-scheduler-signing-key', key: 'key' } as const;

const VERSION = 'v1';

/** Signed names what a signature covers: the tenant, the object, its uid, and the annotation's value. */
export interface Signed {
  /** tenant is the tenant's key (its root namespace in the super clusters). */
  tenant: string;
  kind: 'Namespace' | 'Pod';
  /** namespace is the tenant namespace (for a Namespace, its own name). */
  namespace: string;
  name: string;
  uid: string;
  /** value is the PLACEMENTS value (Namespace) or the SUPER_CLUSTER value (Pod). */
  value: string;
}

function mac(key: Uint8Array, s: Signed): Buffer {
  const message = JSON.stringify([VERSION, s.tenant, s.kind, s.namespace, s.name, s.uid, s.value]);
  return createHmac('sha256', key).update(message).digest();
}

/** sign returns the SIGNATURE value for what the scheduler writes: `v1.<base64url HMAC-SHA256>`. */
export function sign(key: Uint8Array, s: Signed): string {
  return `${VERSION}.${mac(key, s).toString('base64url')}`;
}

/** verify reports whether a SIGNATURE value signs exactly this tenant, object, uid and value. */
export function verify(key: Uint8Array, s: Signed, signature: string | undefined): boolean {
  if (signature === undefined || !signature.startsWith(`${VERSION}.`)) return false;
  const given = Buffer.from(signature.slice(VERSION.length + 1), 'base64url');
  const want = mac(key, s);
  return given.length === want.length && timingSafeEqual(given, want);
}

/** signedValue returns an object's annotation `annotation` when SIGNATURE verifies it, else undefined. */
export function signedValue(
  key: Uint8Array,
  tenant: string,
  obj: KubeObject,
  annotation: string,
  kind: Signed['kind'],
): string | undefined {
  const m = obj.metadata ?? {};
  const value = m.annotations?.[annotation];
  if (value === undefined || !m.uid || !m.name) return undefined;
  const namespace = kind === 'Namespace' ? m.name : (m.namespace ?? '');
  return verify(key, { tenant, kind, namespace, name: m.name, uid: m.uid, value }, m.annotations?.[SIGNATURE])
    ? value
    : undefined;
}

/** MIN_KEY_BYTES is the shortest signing key accepted. */
export const MIN_KEY_BYTES = 32;

/**
 * loadSigningKey reads the signing key from its Secret in `namespace` of the meta cluster, creating it with 32 random
 * bytes when absent (two managers racing to create it both end up with the one that won). A key shorter than
 * MIN_KEY_BYTES is an error naming the Secret.
 */
export async function loadSigningKey(meta: KubeClient, namespace: string): Promise<Buffer> {
  const read = async () => {
    const s = await meta.getOrNull<KubeObject & { data?: Record<string, string> }>(
      R.secrets,
      namespace,
      SIGNING_KEY_SECRET.name,
    );
    if (!s) return undefined;
    const key = Buffer.from(s.data?.[SIGNING_KEY_SECRET.key] ?? '', 'base64');
    if (key.length < MIN_KEY_BYTES)
      throw new Error(
        `Secret ${namespace}/${SIGNING_KEY_SECRET.name}: data.${SIGNING_KEY_SECRET.key} must hold at least ${MIN_KEY_BYTES} bytes, has ${key.length}`,
      );
    return key;
  };
  const found = await read();
  if (found) return found;
  try {
    await meta.create(R.secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: SIGNING_KEY_SECRET.name, namespace },
      type: 'Opaque',
      data: { [SIGNING_KEY_SECRET.key]: randomBytes(MIN_KEY_BYTES).toString('base64') },
    } as KubeObject);
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
  }
  const key = await read();
  if (!key) throw new Error(`Secret ${namespace}/${SIGNING_KEY_SECRET.name} vanished right after it was created`);
  return key;
}
