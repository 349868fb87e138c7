import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { git, startGitServer, type GitServer } from '../../test/git/server.ts';

// Every test here runs git processes against a real git server: under a loaded machine one clone or key generation
// can take seconds, so the tests and hooks get bounds far above what they need, and nothing waits a fixed time.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

/** pkt encodes one pkt-line. */
const pkt = (line: string): string => (line.length + 4).toString(16).padStart(4, '0') + line;

describe('test git server (git http-backend behind node http)', () => {
  let server: GitServer;
  let dir: string;
  let head: string;
  const basic = `Basic ${Buffer.from('alice:pw').toString('base64')}`;

  beforeAll(async () => {
    server = await startGitServer({ auth: { username: 'alice', password: 'pw' } });
    dir = await mkdtemp(join(tmpdir(), 'gitserver-'));
    await server.initRepo('r');
    await server.commitFiles('r', { 'a.txt': 'one\n' }, 'one');
    head = await server.commitFiles('r', { 'a.txt': 'two\n', 'b/c.txt': 'c\n' }, 'two', { tag: 'v1' });
  });

  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves git clone and fetch of the CLI over smart HTTP with basic auth', async () => {
    const url = server.url('r').replace('http://', 'http://alice:pw@');
    await git(dir, ['clone', '-q', url, 'clone']);
    const clone = join(dir, 'clone');
    expect(await git(clone, ['rev-parse', 'HEAD'])).toBe(head);
    expect(await readFile(join(clone, 'b/c.txt'), 'utf8')).toBe('c\n');
    const next = await server.commitFiles('r', { 'd.txt': 'd\n' }, 'three');
    await git(clone, ['fetch', '-q', 'origin']);
    expect(await git(clone, ['rev-parse', 'origin/main'])).toBe(next);
    head = next;
  });

  it('refuses requests without or with wrong credentials with 401', async () => {
    const before = server.stats.unauthorized;
    const none = await fetch(`${server.url('r')}/info/refs?service=git-upload-pack`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic/);
    const wrong = await fetch(`${server.url('r')}/info/refs?service=git-upload-pack`, {
      headers: { authorization: `Basic ${Buffer.from('alice:nope').toString('base64')}` },
    });
    expect(wrong.status).toBe(401);
    expect(server.stats.unauthorized).toBe(before + 2);
  });

  it('passes the CGI status and headers through and answers gzip-encoded protocol v2 requests', async () => {
    const adv = await fetch(`${server.url('r')}/info/refs?service=git-upload-pack`, {
      headers: { authorization: basic, 'git-protocol': 'version=2' },
    });
    expect(adv.status).toBe(200);
    expect(adv.headers.get('content-type')).toBe('application/x-git-upload-pack-advertisement');
    expect(await adv.text()).toContain('version 2');

    const body = gzipSync(Buffer.from(`${pkt('command=ls-refs\n')}0001${pkt('ref-prefix refs/heads/\n')}0000`));
    const res = await fetch(`${server.url('r')}/git-upload-pack`, {
      method: 'POST',
      body,
      headers: {
        authorization: basic,
        'git-protocol': 'version=2',
        'content-type': 'application/x-git-upload-pack-request',
        'content-encoding': 'gzip',
      },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain(`${head} refs/heads/main`);

    const missing = await fetch(`${server.url('nope')}/info/refs?service=git-upload-pack`, {
      headers: { authorization: basic },
    });
    expect(missing.status).toBe(404);
  });

  it('comes back on the same port after stop', async () => {
    const port = server.port;
    await server.stop();
    await expect(fetch(`${server.url('r')}/info/refs?service=git-upload-pack`)).rejects.toThrow();
    await server.start();
    expect(server.port).toBe(port);
    const res = await fetch(`${server.url('r')}/info/refs?service=git-upload-pack`, {
      headers: { authorization: basic },
    });
    expect(res.status).toBe(200);
  });
});
