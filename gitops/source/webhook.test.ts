import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { hmacSha256Hex, safeEqual, startWebhookReceiver, type WebhookReceiver } from './webhook.ts';

const SECRET = 'webhook-secret';

describe('safeEqual', () => {
  it('compares by content and length', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
    expect(safeEqual('', '')).toBe(true);
  });
});

describe('webhook receiver', () => {
  let receiver: WebhookReceiver;
  const calls = { github: 0, gitlab: 0, generic: 0, throwing: 0 };

  beforeAll(async () => {
    receiver = await startWebhookReceiver({
      routes: [
        { path: '/hooks/github', kind: 'github', secret: SECRET, onTrigger: () => void calls.github++ },
        { path: '/hooks/gitlab', kind: 'gitlab', secret: SECRET, onTrigger: () => void calls.gitlab++ },
        { path: '/hooks/generic', kind: 'generic', secret: SECRET, onTrigger: () => void calls.generic++ },
        {
          path: '/hooks/throwing',
          kind: 'generic',
          secret: SECRET,
          onTrigger: () => {
            calls.throwing++;
            throw new Error('consumer broke');
          },
        },
      ],
    });
  });

  afterAll(async () => {
    await receiver?.close();
  });

  beforeEach(() => {
    calls.github = calls.gitlab = calls.generic = calls.throwing = 0;
  });

  const post = async (path: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<number> => {
    const res = await fetch(receiver.url(path), {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
    });
    await res.arrayBuffer();
    return res.status;
  };
  const sig = (body: string | Buffer, secret = SECRET): string => `sha256=${hmacSha256Hex(secret, body)}`;
  const push = JSON.stringify({ ref: 'refs/heads/main', after: 'abc' });

  it('listens on loopback by default', () => {
    expect(receiver.url('/x')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/x$/);
  });

  describe('github', () => {
    const gh = (body: string, event: string, signature = sig(body)) =>
      post('/hooks/github', body, { 'x-github-event': event, 'x-hub-signature-256': signature });

    it('triggers on a signed push, answers ping without triggering, and ignores other events with 202', async () => {
      expect(await gh(push, 'push')).toBe(200);
      expect(calls.github).toBe(1);
      expect(await gh('{"zen":"hi"}', 'ping')).toBe(200);
      expect(await gh('{"action":"opened"}', 'issues')).toBe(202);
      expect(calls.github).toBe(1);
    });

    it('accepts form-encoded payloads', async () => {
      const body = `payload=${encodeURIComponent(push)}`;
      const status = await post('/hooks/github', body, {
        'content-type': 'application/x-www-form-urlencoded',
        'x-github-event': 'push',
        'x-hub-signature-256': sig(body),
      });
      expect(status).toBe(200);
      expect(calls.github).toBe(1);
    });

    it('refuses bad, foreign and missing signatures with 401', async () => {
      expect(await gh(push, 'push', sig(push, 'other-secret'))).toBe(401);
      expect(await gh(push, 'push', sig(`${push} `))).toBe(401);
      expect(await gh(push, 'push', `sha1=${hmacSha256Hex(SECRET, push).slice(0, 40)}`)).toBe(401);
      expect(await post('/hooks/github', push, { 'x-github-event': 'push' })).toBe(401);
      expect(calls.github).toBe(0);
    });

    it('refuses malformed calls with 400', async () => {
      expect(await post('/hooks/github', push, { 'x-hub-signature-256': sig(push) })).toBe(400);
      expect(await gh('{not json', 'push')).toBe(400);
      expect(calls.github).toBe(0);
    });
  });

  describe('gitlab', () => {
    const gl = (body: string, event: string | null, token: string | null = SECRET) =>
      post('/hooks/gitlab', body, {
        ...(event !== null ? { 'x-gitlab-event': event } : {}),
        ...(token !== null ? { 'x-gitlab-token': token } : {}),
      });

    it('triggers on push and tag push hooks with the right token, ignores other events', async () => {
      expect(await gl(push, 'Push Hook')).toBe(200);
      expect(await gl(push, 'Tag Push Hook')).toBe(200);
      expect(await gl('{}', 'Merge Request Hook')).toBe(202);
      expect(calls.gitlab).toBe(2);
    });

    it('refuses a wrong or missing token with 401 and malformed calls with 400', async () => {
      expect(await gl(push, 'Push Hook', 'wrong')).toBe(401);
      expect(await gl(push, 'Push Hook', `${SECRET}x`)).toBe(401);
      expect(await gl(push, 'Push Hook', null)).toBe(401);
      expect(await gl(push, null)).toBe(400);
      expect(await gl('nope', 'Push Hook')).toBe(400);
      expect(calls.gitlab).toBe(0);
    });
  });

  describe('generic', () => {
    it('triggers on a valid X-Signature, with or without a body', async () => {
      expect(await post('/hooks/generic', push, { 'x-signature': sig(push) })).toBe(200);
      expect(await post('/hooks/generic', '', { 'x-signature': sig('') })).toBe(200);
      expect(calls.generic).toBe(2);
    });

    it('refuses bad signatures with 401 and bad JSON with 400', async () => {
      expect(await post('/hooks/generic', push, { 'x-signature': sig(push, 'nope') })).toBe(401);
      expect(await post('/hooks/generic', push, { 'x-signature': hmacSha256Hex(SECRET, push) })).toBe(401);
      expect(await post('/hooks/generic', push)).toBe(401);
      expect(await post('/hooks/generic', '{', { 'x-signature': sig('{') })).toBe(400);
      expect(calls.generic).toBe(0);
    });

    it('answers 200 even when the trigger callback throws', async () => {
      expect(await post('/hooks/throwing', push, { 'x-signature': sig(push) })).toBe(200);
      expect(calls.throwing).toBe(1);
      expect(await post('/hooks/generic', push, { 'x-signature': sig(push) })).toBe(200);
    });
  });

  it('refuses bodies over 1 MiB with 400, even when correctly signed', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(1024 * 1024) });
    expect(await post('/hooks/generic', big, { 'x-signature': sig(big) })).toBe(400);
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 20; i++) controller.enqueue(new Uint8Array(64 * 1024).fill(0x20));
        controller.close();
      },
    });
    const res = await fetch(receiver.url('/hooks/generic'), {
      method: 'POST',
      body: chunked,
      duplex: 'half',
      headers: { 'x-signature': 'sha256=00' },
    } as RequestInit);
    expect(res.status).toBe(400);
    expect(calls.generic).toBe(0);
  });

  it('answers 404 for unknown paths and 405 for other methods', async () => {
    expect(await post('/hooks/unknown', push, { 'x-signature': sig(push) })).toBe(404);
    const res = await fetch(receiver.url('/hooks/generic'));
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(calls.generic).toBe(0);
  });

  it('refuses bad route tables', async () => {
    const route = { path: '/a', kind: 'generic' as const, secret: 's', onTrigger: () => {} };
    await expect(startWebhookReceiver({ routes: [route, route] })).rejects.toThrow(/twice/);
    await expect(startWebhookReceiver({ routes: [{ ...route, secret: '' }] })).rejects.toThrow(/empty secret/);
    await expect(startWebhookReceiver({ routes: [{ ...route, path: 'a' }] })).rejects.toThrow(/must start/);
  });
});
