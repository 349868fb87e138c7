import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { credentialsFor, parseChallenge, parseImageRef } from './ociref.ts';

describe('parseImageRef', () => {
  const D = `sha256:${'a'.repeat(64)}`;
  it.each([
    ['nginx', { registry: 'docker.io', apiHost: 'registry-1.docker.io', repository: 'library/nginx', tag: 'latest' }],
    ['acme/app:1.2', { registry: 'docker.io', apiHost: 'registry-1.docker.io', repository: 'acme/app', tag: '1.2' }],
    [
      '127.0.0.1:5000/vc/virtualcluster-ts:0.1.0',
      { registry: '127.0.0.1:5000', apiHost: '127.0.0.1:5000', repository: 'vc/virtualcluster-ts', tag: '0.1.0' },
    ],
    ['localhost/a', { registry: 'localhost', apiHost: 'localhost', repository: 'a', tag: 'latest' }],
    [`ghcr.io/o/r@${D}`, { registry: 'ghcr.io', apiHost: 'ghcr.io', repository: 'o/r', tag: undefined, digest: D }],
    [`ghcr.io/o/r:v1@${D}`, { registry: 'ghcr.io', apiHost: 'ghcr.io', repository: 'o/r', tag: 'v1', digest: D }],
  ])('%s', (ref, want) => {
    expect(parseImageRef(ref)).toEqual({ digest: undefined, ...want });
  });

  it.each([
    ['Upper/case:1', 'the repository must be lowercase'],
    ['ghcr.io/o/r@sha256:abc', 'digest "sha256:abc" is not sha256:<64 hex>'],
    ['ghcr.io/o/r:bad tag', 'tag "bad tag" is not valid'],
    ['ghcr.io/:1', 'the repository must be lowercase'],
  ])('%s is refused', (ref, why) => {
    expect(() => parseImageRef(ref)).toThrow(`image reference ${JSON.stringify(ref)}: ${why}`);
  });
});

describe('credentialsFor', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vc-dockercfg-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, cfg: unknown): string => {
    const p = join(dir, name);
    writeFileSync(p, JSON.stringify(cfg));
    return p;
  };
  const b64 = (s: string): string => Buffer.from(s).toString('base64');

  it.each([
    {
      name: 'auth under the host',
      registry: 'r.io',
      cfg: { auths: { 'r.io': { auth: b64('u:p:w') } } },
      want: ['u', 'p:w'],
    },
    {
      name: 'auth under its https URL',
      registry: 'r.io',
      cfg: { auths: { 'https://r.io': { auth: b64('u:p') } } },
      want: ['u', 'p'],
    },
    {
      name: "docker.io under docker's index URL",
      registry: 'docker.io',
      cfg: { auths: { 'https://index.docker.io/v1/': { username: 'd', password: 'x' } } },
      want: ['d', 'x'],
    },
    {
      name: 'another registry only: anonymous',
      registry: 'r.io',
      cfg: { auths: { 'q.io': { auth: b64('u:p') } } },
      want: undefined,
    },
  ])('$name', ({ name, registry, cfg, want }) => {
    const c = credentialsFor(registry, file(`${name}.json`, cfg));
    expect(c && [c.username, c.password]).toEqual(want);
  });

  it('no file is anonymous; a helper without auths, bad JSON or a bad auth are errors naming the file', () => {
    expect(credentialsFor('r.io', join(dir, 'absent.json'))).toBeUndefined();
    const helper = file('helper.json', { credsStore: 'desktop' });
    expect(() => credentialsFor('r.io', helper)).toThrow(
      `${helper}: credentials for r.io are kept by the credential helper docker-credential-desktop`,
    );
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{');
    expect(() => credentialsFor('r.io', bad)).toThrow(`${bad}: not valid JSON`);
    const noColon = file('nocolon.json', { auths: { 'r.io': { auth: b64('justuser') } } });
    expect(() => credentialsFor('r.io', noColon)).toThrow(
      `${noColon} auths["r.io"].auth: not base64 of "user:password"`,
    );
  });
});

describe('parseChallenge', () => {
  it.each([
    [
      'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull,push"',
      {
        scheme: 'bearer',
        params: {
          realm: 'https://auth.docker.io/token',
          service: 'registry.docker.io',
          scope: 'repository:library/nginx:pull,push',
        },
      },
    ],
    ['Basic realm="vc-registry"', { scheme: 'basic', params: { realm: 'vc-registry' } }],
    ['basic realm=plain', { scheme: 'basic', params: { realm: 'plain' } }],
  ])('%s', (header, want) => {
    expect(parseChallenge(header)).toEqual(want);
  });
});
