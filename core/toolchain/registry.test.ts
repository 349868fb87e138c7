import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeToolchainDir } from './node.ts';
import { netpolToolchainDir } from './netpol.ts';
import { distributionVersion, registryConfig, registryToolchainDir } from './registry.ts';
import { toolchainDir } from './toolchain.ts';

describe('registryConfig', () => {
  const base = { addr: '127.0.0.1:5000', root: '/s', certFile: '/c.crt', keyFile: '/c.key' };
  it.each([
    { name: 'anonymous: no auth section', extra: {}, auth: undefined },
    {
      name: 'htpasswd users: basic auth with the file',
      extra: { htpasswdFile: '/h' },
      auth: { htpasswd: { realm: 'vc-registry', path: '/h' } },
    },
  ])('$name', ({ extra, auth }) => {
    const c = JSON.parse(registryConfig({ ...base, ...extra })) as Record<string, unknown>;
    expect(c.storage).toEqual({ filesystem: { rootdirectory: '/s' }, delete: { enabled: true } });
    expect(c.http).toEqual({ addr: '127.0.0.1:5000', tls: { certificate: '/c.crt', key: '/c.key' } });
    expect(c.auth).toEqual(auth);
  });
});

describe('registry cache key', () => {
  const saved = process.env.VC_TOOLCHAIN_CACHE;
  afterEach(() => {
    if (saved === undefined) delete process.env.VC_TOOLCHAIN_CACHE;
    else process.env.VC_TOOLCHAIN_CACHE = saved;
  });
  it('is its own directory keyed by its version only, apart from the other toolchains', () => {
    process.env.VC_TOOLCHAIN_CACHE = '/cache';
    expect(registryToolchainDir('v3.1.2')).toBe(join('/cache', 'registry-distribution-v3.1.2'));
    expect(distributionVersion()).toMatch(/^v3\.\d+\.\d+$/);
    // The other keys name only their own versions, so pinning the registry leaves them as they were.
    for (const other of [toolchainDir(), nodeToolchainDir(), netpolToolchainDir()])
      expect(other).not.toContain('distribution');
  });
});
