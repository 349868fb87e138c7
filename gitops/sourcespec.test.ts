import { describe, expect, it } from 'vitest';
import type { GitSource } from './applier/gitsource.ts';
import { GIT_CREDENTIALS_LABEL, GIT_HOSTS_ANNOTATION } from './source/credentials.ts';
import { credentialsOf, gitRefOf, hookPath, secretValue, verifyKeysOf } from './sourcespec.ts';

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
const secret = (o: Record<string, string>) => ({
  data: Object.fromEntries(Object.entries(o).map(([k, v]) => [k, b64(v)])),
});
/** gitSecret is a credentials Secret the platform marked for git, for the host git.example */
const gitSecret = (o: Record<string, string>) => ({
  metadata: {
    namespace: 'platform',
    name: 'git-auth',
    labels: { [GIT_CREDENTIALS_LABEL]: 'true' },
    annotations: { [GIT_HOSTS_ANNOTATION]: 'git.example' },
  },
  ...secret(o),
});
const source = (ref: Record<string, string>): GitSource =>
  ({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'GitSource',
    metadata: { namespace: 'platform', name: 'tenants' },
    spec: { url: 'https://git.example/t.git', ref, secretRef: { name: 'git-auth' } },
  }) as unknown as GitSource;

describe('gitRefOf', () => {
  it.each([
    [{ branch: 'main' }, { branch: 'main' }],
    [{ tag: 'v1.2.0' }, { tag: 'v1.2.0' }],
    [{ semver: '>=1 <2' }, { semver: '>=1 <2' }],
    [{ commit: 'a'.repeat(40) }, { commit: 'a'.repeat(40) }],
    [{ branch: 'main', tag: 'v1' }, { branch: 'main' }],
  ])('%j -> %j', (ref, want) => {
    expect(gitRefOf(source(ref))).toEqual(want);
  });

  it('a ref naming nothing is refused, naming the field', () => {
    expect(() => gitRefOf(source({}))).toThrow(/spec\.ref names no branch/);
  });
});

describe('credentialsOf', () => {
  it.each([
    ['a token', { token: 't0k' }, { token: 't0k', username: undefined }],
    ['a token with a user', { token: 't0k', username: 'bot' }, { token: 't0k', username: 'bot' }],
    ['basic', { username: 'u', password: 'p' }, { username: 'u', password: 'p' }],
    ['a token wins over basic', { token: 't', username: 'u', password: 'p' }, { token: 't', username: 'u' }],
  ])('%s', (_, data, want) => {
    expect(credentialsOf(source({ branch: 'main' }), gitSecret(data))).toEqual({ ...want, hosts: ['git.example'] });
  });

  it('a Secret the platform did not mark for git is refused, whatever it holds', () => {
    expect(() => credentialsOf(source({ branch: 'main' }), secret({ token: 't0k' }))).toThrow(GIT_CREDENTIALS_LABEL);
  });

  it.each([
    ['no keys', {}],
    ['a user without password', { username: 'u' }],
    ['an empty token', { token: '' }],
  ])('%s: refused, naming the Secret and the keys it needs', (_, data) => {
    expect(() => credentialsOf(source({ branch: 'main' }), gitSecret(data))).toThrow(
      'Secret platform/git-auth needs keys username and password, or token (spec.secretRef)',
    );
  });
});

describe('verifyKeysOf', () => {
  it('sorts OpenPGP armoured keys from SSH keys', () => {
    const pgp = '-----BEGIN PGP PUBLIC KEY BLOCK-----\nxyz\n-----END PGP PUBLIC KEY BLOCK-----\n';
    const ssh = 'ssh-ed25519 AAAAC3Nza alice@example';
    expect(verifyKeysOf(secret({ 'alice.asc': pgp, 'alice.pub': ssh }))).toEqual({ openpgp: [pgp], ssh: [ssh] });
    expect(verifyKeysOf({})).toEqual({ openpgp: [], ssh: [] });
  });
});

describe('secretValue and hookPath', () => {
  it('decodes a present key and leaves a missing one undefined', () => {
    expect(secretValue(secret({ token: 'é' }), 'token')).toBe('é');
    expect(secretValue(secret({}), 'token')).toBeUndefined();
  });

  it('serves a source at /hook/<namespace>/<name>', () => {
    expect(hookPath('platform', 'tenants')).toBe('/hook/platform/tenants');
  });
});
