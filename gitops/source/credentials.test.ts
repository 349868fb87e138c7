import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startGitServer, type GitServer } from '../../test/git/server.ts';
import {
  credentialHosts,
  defaultHosts,
  GIT_CREDENTIALS_LABEL,
  GIT_HOSTS_ANNOTATION,
  mayReceive,
  urlAuthorityRefusal,
  urlCredentialsRefusal,
  withCredentialsFor,
  type CredentialSecret,
} from './credentials.ts';
import { type SourceError } from './errors.ts';
import { GitSourceFetcher } from './source.ts';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

const secret = (labels: Record<string, string>, hosts?: string): CredentialSecret => ({
  metadata: {
    name: 'git',
    namespace: 'team-a',
    labels,
    ...(hosts !== undefined && { annotations: { [GIT_HOSTS_ANNOTATION]: hosts } }),
  },
});
const marked = { [GIT_CREDENTIALS_LABEL]: 'true' };

describe('credentialHosts', () => {
  it.each<[string, CredentialSecret, string, string[] | RegExp]>([
    [
      'a marked Secret for the url host',
      secret(marked, 'git.example.com, other.example.com'),
      'https://git.example.com/r.git',
      ['git.example.com', 'other.example.com'],
    ],
    [
      'host:port entries',
      secret(marked, 'git.example.com:8443'),
      'https://git.example.com:8443/r.git',
      ['git.example.com:8443'],
    ],
    [
      'an unmarked Secret (a kubeconfig, a token)',
      secret({}, 'git.example.com'),
      'https://git.example.com/r.git',
      /lacks the label tenancy\.x-k8s\.io\/git-credentials: "true"/,
    ],
    [
      'a label other than "true"',
      secret({ [GIT_CREDENTIALS_LABEL]: 'yes' }, 'git.example.com'),
      'https://git.example.com/r.git',
      /lacks the label/,
    ],
    [
      'no host list',
      secret(marked),
      'https://git.example.com/r.git',
      /names no host .*annotation tenancy\.x-k8s\.io\/git-hosts/,
    ],
    [
      'a url pointed at another host',
      secret(marked, 'git.example.com'),
      'https://evil.example.net/r.git',
      /spec\.url host evil\.example\.net is not one of them/,
    ],
    [
      'another port of a host listed with its port',
      secret(marked, 'git.example.com:443'),
      'https://git.example.com:8443/r.git',
      /is not one of them/,
    ],
  ])('%s', (_name, s, url, want) => {
    if (Array.isArray(want)) expect(credentialHosts(s, url)).toEqual(want);
    else expect(() => credentialHosts(s, url)).toThrow(want);
  });
});

describe('urlAuthorityRefusal: a host parsers could read differently', () => {
  it.each<[string, boolean]>([
    ['https://git.example.com/t.git', false],
    ['https://git.example.com/a%2e%2e/t.git', false],
    ['http://[::1]:8080/t.git', false],
    // WHATWG reads 127.0.0.1.a.evil.example (a public name), the legacy parser the git client uses 127.0.0.1
    ['http://127.0.0.1%2ea.evil.example/r.git', true],
    ['https://git%2eexample.com/t.git', true],
    ['http://127.0.0.1\\.evil.example/r.git', true],
  ])('%s: refused %s', (url, refused) => {
    const why = urlAuthorityRefusal(url);
    expect(why !== undefined).toBe(refused);
    if (refused) expect(why).toMatch(/^spec\.url has a percent-escape or a backslash in its host/);
  });
});

describe('urlCredentialsRefusal', () => {
  it.each<[string, boolean]>([
    ['https://git.example.com/t.git', false],
    ['https://git.example.com/users/a@b/t.git', false],
    ['http://127.0.0.1:8080/t.git?x=a@b', false],
    ['https://flux:s3cret@git.example.com/t.git', true],
    ['https://x-access-token@git.example.com/t.git', true],
    ['https://:token@git.example.com/t.git', true],
    ['https://us%40er:p@git.example.com/t.git', true],
  ])('%s: refused %s', (url, refused) => {
    expect(urlCredentialsRefusal(url) !== undefined).toBe(refused);
  });
  it('names the field and the Secret field, never the credentials', () => {
    const why = urlCredentialsRefusal(
      'https://u:s3cret@h.example/x',
      'spec.notifications[].url',
      'spec.notifications[].secretRef',
    );
    expect(why).toMatch(/^spec\.notifications\[\]\.url carries credentials.*spec\.notifications\[\]\.secretRef/);
    expect(why).not.toContain('s3cret');
  });
});

describe('mayReceive and withCredentialsFor', () => {
  it.each<[readonly string[], string, boolean]>([
    [['git.example.com'], 'https://git.example.com/x', true],
    [['git.example.com'], 'https://GIT.example.com:9000/x', true],
    [['git.example.com:443'], 'https://git.example.com/x', true],
    [['git.example.com:443'], 'http://git.example.com/x', false],
    [['git.example.com'], 'https://git.example.com.evil.net/x', false],
    [['[::1]:8080'], 'http://[::1]:8080/x', true],
    // plain http only to a port the entry names: a bare host is for https
    [['::1'], 'http://[::1]:8080/x', false],
    [['git.example.com'], 'http://git.example.com/x', false],
    [['git.example.com'], 'http://git.example.com:8080/x', false],
    [['git.example.com:8080'], 'http://git.example.com:8080/x', true],
    [defaultHosts('http://127.0.0.1:3000/r.git'), 'http://127.0.0.1:3001/r.git', false],
  ])('%j may receive %s: %s', (hosts, url, want) => expect(mayReceive(hosts, url)).toBe(want));

  it('drops the Authorization header for another host and for a move from https to http', () => {
    const h = { Authorization: 'Basic eA==', 'user-agent': 'git/isomorphic-git' };
    const hosts = ['git.example.com'];
    expect(withCredentialsFor(h, 'https://git.example.com/a', hosts, 'https://git.example.com/r')).toBe(h);
    expect(withCredentialsFor(h, 'https://evil.net/a', hosts, 'https://git.example.com/r')).toEqual({
      'user-agent': 'git/isomorphic-git',
    });
    expect(withCredentialsFor(h, 'http://git.example.com/a', hosts, 'https://git.example.com/r')).toEqual({
      'user-agent': 'git/isomorphic-git',
    });
  });
});

describe('credentials on the real git server', () => {
  const creds = { username: 'flux', password: 's3cret-pw' };
  let target: GitServer;
  let redirector: Server;
  let front: string;
  let cacheRoot: string;

  beforeAll(async () => {
    target = await startGitServer({ auth: creds });
    await target.initRepo('private');
    await target.commitFiles('private', { 'a.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n' }, 'a');
    // A front the GitSource names, which sends every request on to another host (port) with a redirect.
    redirector = createServer((req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${target.port}${req.url}` });
      res.end();
    });
    await new Promise<void>((ok) => redirector.listen(0, '127.0.0.1', ok));
    front = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/private.git`;
    cacheRoot = await mkdtemp(join(tmpdir(), 'source-creds-'));
  });

  afterAll(async () => {
    await new Promise((ok) => redirector?.close(ok));
    await target?.close();
    await rm(cacheRoot, { recursive: true, force: true });
  });

  const fetcher = () => new GitSourceFetcher({ cacheRoot, addresses: { allowPrivateAddresses: ['127.0.0.0/8'] } });

  it('sends no credentials to the host a redirect names, unless the Secret lists it', async () => {
    const resolve = (hosts: string[]) =>
      fetcher()
        .resolve({ url: front, ref: { branch: 'main' }, credentials: { ...creds, hosts } })
        .then(
          () => undefined,
          (e: unknown) => e as SourceError,
        );
    const before = { ...target.stats };
    const err = await resolve(defaultHosts(front));
    expect(err?.reason).toBe('AuthenticationFailed');
    // The redirected ref listing reached the other host without the credentials: refused there, never answered.
    expect(target.stats.unauthorized).toBeGreaterThan(before.unauthorized);
    expect(target.stats.infoRefs).toBe(before.infoRefs);
    // Listed, the same credentials go with the redirect and the other host answers the ref listing.
    await resolve([...defaultHosts(front), `127.0.0.1:${target.port}`]);
    expect(target.stats.infoRefs).toBeGreaterThan(before.infoRefs);
  });

  it('refuses a url whose host the git client would read as a loopback address behind a public-looking name', async () => {
    // resolved as a name, it would be public: the check must not be what lets the connection reach 127.0.0.1
    const f = new GitSourceFetcher({ cacheRoot, resolver: async () => [{ address: '93.184.216.34', family: 4 }] });
    const before = { ...target.stats };
    const err = await f
      .resolve({ url: `http://127.0.0.1%2ea.evil.example:${target.port}/private.git`, ref: { branch: 'main' } })
      .then(
        () => undefined,
        (e: unknown) => e as SourceError,
      );
    expect(err?.reason).toBe('InvalidSpec');
    expect(err?.message).toMatch(/percent-escape or a backslash in its host/);
    expect(target.stats).toEqual(before);
  });

  it('refuses a git server on a private address unless the platform allows it', async () => {
    const f = new GitSourceFetcher({ cacheRoot });
    const err = await f.resolve({ url: target.url('private'), ref: { branch: 'main' } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as SourceError).reason).toBe('AddressRefused');
    expect((err as SourceError).message).toMatch(/127\.0\.0\.1 is a loopback address/);
  });
});
