import { existsSync } from 'node:fs';
import { request } from 'node:https';
import { describe, expect, it } from 'vitest';
import { startRegistry } from '../../core/toolchain/registry.ts';

/** get sends GET url with the CA and an optional Authorization header and returns the status. */
function get(url: string, ca: string, authorization?: string): Promise<number> {
  return new Promise((res, rej) => {
    const req = request(url, { ca, headers: authorization ? { authorization } : {} }, (r) => {
      r.resume();
      res(r.statusCode ?? 0);
    });
    req.on('error', rej);
    req.end();
  });
}

const basic = (u: string, p: string): string => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

describe('local registry', () => {
  it('serves TLS from its CA with htpasswd users, and stop removes the process and its directory', async () => {
    const reg = await startRegistry({ users: [{ username: 'alice', password: 's3cret' }] });
    try {
      expect(reg.host).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(await get(`${reg.url}/v2/`, reg.caPem)).toBe(401);
      expect(await get(`${reg.url}/v2/`, reg.caPem, basic('alice', 'wrong'))).toBe(401);
      expect(await get(`${reg.url}/v2/`, reg.caPem, basic('alice', 's3cret'))).toBe(200);
      // Without the local CA the certificate is not trusted.
      await expect(get(`${reg.url}/v2/`, '')).rejects.toThrow();
    } finally {
      await reg.stop();
    }
    expect(existsSync(reg.dir)).toBe(false);
    await expect(get(`${reg.url}/v2/`, reg.caPem)).rejects.toThrow(/ECONNREFUSED/);
  }, 300_000);

  it('serves everyone when no user is configured', async () => {
    const reg = await startRegistry();
    try {
      expect(await get(`${reg.url}/v2/`, reg.caPem)).toBe(200);
    } finally {
      await reg.stop();
    }
  }, 300_000);
});
