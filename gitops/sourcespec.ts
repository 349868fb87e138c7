/**
 * What a GitSource asks of the source, read from its spec and Secrets: the ref to follow, the credentials, the keys
 * that verify signatures, and the path its webhook is served at. Pure: the controller reads the objects.
 */
import type { KubeObject } from '../core/kube/client.ts';
import type { GitSource } from './applier/gitsource.ts';
import { credentialHosts } from './source/credentials.ts';
import type { Credentials, GitRef } from './source/source.ts';
import type { VerifyKeys } from './source/verify.ts';

/** hookPath is the path of a GitSource's webhook on the receiver. */
export function hookPath(namespace: string, name: string): string {
  return `/hook/${namespace}/${name}`;
}

/** gitRefOf is the ref a GitSource follows (spec.ref: branch, tag, semver range or commit, first named wins). */
export function gitRefOf(gs: GitSource): GitRef {
  const r = gs.spec.ref;
  if (r.branch) return { branch: r.branch };
  if (r.tag) return { tag: r.tag };
  if (r.semver) return { semver: r.semver };
  if (r.commit) return { commit: r.commit };
  throw new Error('spec.ref names no branch, tag, semver range or commit');
}

/** secretValue is one key of a Secret, decoded, or undefined. */
export function secretValue(s: { data?: Record<string, string> }, key: string): string | undefined {
  const v = s.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
}

/**
 * credentialsOf reads the credentials of spec.secretRef: a token, else username and password; only from a Secret
 * marked as git credentials, and only for the hosts it names (gitops/source/credentials.ts), which the fetcher sends
 * them nowhere beyond.
 */
export function credentialsOf(gs: GitSource, s: KubeObject & { data?: Record<string, string> }): Credentials {
  const hosts = credentialHosts(s, gs.spec.url);
  const token = secretValue(s, 'token');
  if (token) return { token, username: secretValue(s, 'username'), hosts };
  const username = secretValue(s, 'username');
  const password = secretValue(s, 'password');
  if (username && password) return { username, password, hosts };
  throw new Error(
    `Secret ${gs.metadata.namespace}/${gs.spec.secretRef!.name} needs keys username and password, or token (spec.secretRef)`,
  );
}

/** verifyKeysOf sorts the public keys of a Secret into OpenPGP and SSH keys. */
export function verifyKeysOf(s: { data?: Record<string, string> }): VerifyKeys {
  const values = Object.keys(s.data ?? {}).map((k) => secretValue(s, k)!);
  return {
    openpgp: values.filter((v) => v.includes('BEGIN PGP PUBLIC KEY')),
    ssh: values.filter((v) => !v.includes('BEGIN PGP')),
  };
}
