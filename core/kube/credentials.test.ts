import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  certFileSource,
  execSource,
  execValidUntil,
  fileTokenSource,
  isFresh,
  joinSources,
  staticSource,
  type Auth,
} from './credentials.ts';
import type { ExecConfig, ExecResult } from './exec.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'vc-creds-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** clock is a hand-moved clock for the sources' `now`. */
function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

describe('isFresh', () => {
  it.each<[string, { value: string; validUntil: number } | undefined, number, boolean]>([
    ['nothing cached', undefined, 0, false],
    ['before validUntil', { value: 'a', validUntil: 100 }, 99, true],
    ['at validUntil', { value: 'a', validUntil: 100 }, 100, false],
    ['after validUntil', { value: 'a', validUntil: 100 }, 101, false],
    ['no expiry', { value: 'a', validUntil: Number.POSITIVE_INFINITY }, Number.MAX_SAFE_INTEGER, true],
    ['dropped after a 401', { value: 'a', validUntil: Number.NEGATIVE_INFINITY }, 0, false],
  ])('%s', (_, cached, now, want) => {
    expect(isFresh(cached, now)).toBe(want);
  });
});

describe('execValidUntil', () => {
  it.each<[string, ExecResult, number]>([
    ['an expirationTimestamp', { token: 't', expiresAt: 5_000 }, 5_000],
    ['no expirationTimestamp: until a 401', { token: 't' }, Number.POSITIVE_INFINITY],
  ])('%s', (_, r, want) => expect(execValidUntil(r)).toBe(want));
});

describe('fileTokenSource', () => {
  it('reads the file once per check interval, then again, and at once after a 401', async () => {
    const file = join(dir, 'token');
    const c = clock();
    writeFileSync(file, 'token-a\n');
    const s = fileTokenSource(file, 60_000, c.now);
    expect(await s.get()).toEqual({ authorization: 'Bearer token-a' });
    writeFileSync(file, 'token-b\n');
    c.advance(59_999);
    // Within the interval: the cached value, synchronously (no file read on the hot path).
    expect(s.get()).toEqual({ authorization: 'Bearer token-a' });
    c.advance(1);
    expect(await s.get()).toEqual({ authorization: 'Bearer token-b' });
    writeFileSync(file, 'token-c');
    expect(s.rejected({ authorization: 'Bearer token-b' })).toBe(true);
    expect(await s.get()).toEqual({ authorization: 'Bearer token-c' });
  });

  it('keeps the token it has when the file cannot be read again, and fails naming the file when it has none', async () => {
    const file = join(dir, 'token');
    const c = clock();
    const s = fileTokenSource(file, 1_000, c.now);
    await expect(Promise.resolve(s.get())).rejects.toThrow(file);
    writeFileSync(file, 'kept');
    expect(await s.get()).toEqual({ authorization: 'Bearer kept' });
    rmSync(file);
    c.advance(1_000);
    expect(await s.get()).toEqual({ authorization: 'Bearer kept' });
  });

  it('refuses an empty token file, naming it', async () => {
    const file = join(dir, 'empty');
    writeFileSync(file, '\n');
    await expect(Promise.resolve(fileTokenSource(file).get())).rejects.toThrow(`token file ${file} is empty`);
  });

  it('reads the file once for many requests that wait at the same time', async () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'x');
    const s = fileTokenSource(file);
    const all = [s.get(), s.get(), s.get()];
    expect(all[0]).toBe(all[1]);
    expect(await Promise.all(all)).toEqual([1, 2, 3].map(() => ({ authorization: 'Bearer x' })));
  });
});

describe('execSource', () => {
  const cfg: ExecConfig = { apiVersion: 'client.authentication.k8s.io/v1', command: 'plugin', args: [], env: [] };

  it('runs the plugin when first needed, not again before expiry, again after expiry or a 401', async () => {
    const c = clock();
    let runs = 0;
    const s = execSource(cfg, 'admin', c.now, async () => {
      runs++;
      return { token: `t${runs}`, expiresAt: c.now() + 5_000 };
    });
    expect(runs).toBe(0);
    expect(await s.get()).toEqual({ authorization: 'Bearer t1' });
    c.advance(4_999);
    expect(await s.get()).toEqual({ authorization: 'Bearer t1' });
    expect(runs).toBe(1);
    c.advance(1);
    expect(await s.get()).toEqual({ authorization: 'Bearer t2' });
    expect(s.rejected({ authorization: 'Bearer t2' })).toBe(true);
    expect(await s.get()).toEqual({ authorization: 'Bearer t3' });
    expect(runs).toBe(3);
  });

  it('gives a client certificate when the plugin prints one', async () => {
    const s = execSource(cfg, 'admin', Date.now, async () => ({ certPem: 'C', keyPem: 'K' }));
    expect(await s.get()).toEqual({ cert: 'C', key: 'K' });
  });

  it('fails the request with the plugin error when it has never succeeded', async () => {
    const s = execSource(cfg, 'admin', Date.now, () => Promise.reject(new Error('plugin broke')));
    await expect(Promise.resolve(s.get())).rejects.toThrow('plugin broke');
  });
});

describe('certFileSource and joinSources', () => {
  it('merges a token and a certificate re-read from files; a 401 re-reads both', async () => {
    const c = clock();
    writeFileSync(join(dir, 'crt'), 'cert-1');
    writeFileSync(join(dir, 'key'), 'key-1');
    const s = joinSources([
      staticSource({ authorization: 'Bearer fixed' }),
      certFileSource(join(dir, 'crt'), join(dir, 'key'), 60_000, c.now),
    ]);
    const first = await s.get();
    expect(first).toEqual({ authorization: 'Bearer fixed', cert: 'cert-1', key: 'key-1' });
    writeFileSync(join(dir, 'crt'), 'cert-2');
    writeFileSync(join(dir, 'key'), 'key-2');
    expect(s.get()).toEqual(first);
    expect(s.rejected(first)).toBe(true);
    expect(await s.get()).toEqual({ authorization: 'Bearer fixed', cert: 'cert-2', key: 'key-2' });
  });

  it('a static source never asks for a retry', () => {
    const a: Auth = { authorization: 'Bearer t' };
    const s = staticSource(a);
    expect(s.get()).toEqual(a);
    expect(s.rejected(a)).toBe(false);
  });
});
