import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../core/queue/clock.ts';
import { BucketRateLimiter } from '../../core/queue/ratelimiter.ts';
import { hmacSha256Hex, startWebhookReceiver } from './webhook.ts';
import { makeSshKey, sshKeygenAvailable, startGitServer, type GitServer } from '../../test/git/server.ts';
import type { Artifact } from '../artifact.ts';
import { SourceError } from './errors.ts';
import { SourcePoller, type SourcePollerOptions, type SourceSpec } from './poller.ts';
import { GitSourceFetcher, type ResolvedRef, type SourceRequest } from './source.ts';

// Every test here runs git processes against a real git server: under a loaded machine one clone or key generation
// can take seconds, so the tests and hooks get bounds far above what they need, and nothing waits a fixed time.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

const hasSshKeygen = await sshKeygenAvailable();

const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise<void>((ok) => setImmediate(ok));
};

/** FakeFetcher serves revisions set by the test and counts calls; `gate` holds artifact() until released. */
class FakeFetcher {
  commit = 'c1';
  digest = 'd1';
  failure: unknown = null;
  resolves = 0;
  artifacts = 0;
  gate: Promise<void> | null = null;
  requests: SourceRequest[] = [];

  async resolve(_req: SourceRequest): Promise<ResolvedRef> {
    this.resolves++;
    if (this.failure) throw this.failure;
    return { name: 'refs/heads/main', commit: this.commit };
  }

  async artifact(req: SourceRequest, resolved?: ResolvedRef): Promise<Artifact> {
    this.artifacts++;
    this.requests.push(req);
    if (this.gate) await this.gate;
    return {
      url: req.url,
      ref: 'branch:main',
      revision: resolved?.commit ?? this.commit,
      digest: this.digest,
      path: '',
      documents: [],
      parseErrors: [],
      fetchedAt: new Date().toISOString(),
    };
  }
}

describe('SourcePoller (fake fetcher, fake clock)', () => {
  const setup = (spec: Partial<SourceSpec> = {}, opts: Partial<SourcePollerOptions> = {}) => {
    const fetcher = new FakeFetcher();
    const clock = new FakeClock();
    const artifacts: Artifact[] = [];
    const errors: SourceError[] = [];
    const poller = new SourcePoller({
      fetcher,
      clock,
      random: () => 0.5,
      spec: { url: 'http://example.invalid/r.git', ref: { branch: 'main' }, intervalMs: 1000, ...spec },
      onArtifact: (a) => void artifacts.push(a),
      onError: (e) => void errors.push(e),
      ...opts,
    });
    return { fetcher, clock, artifacts, errors, poller };
  };

  it('polls at start and then every interval, emitting a revision once', async () => {
    const { fetcher, clock, artifacts, poller } = setup();
    poller.start();
    await settle();
    expect(fetcher.resolves).toBe(1);
    expect(artifacts.map((a) => a.revision)).toEqual(['c1']);
    clock.step(999);
    await settle();
    expect(fetcher.resolves).toBe(1);
    clock.step(1);
    await settle();
    expect(fetcher.resolves).toBe(2);
    expect(fetcher.artifacts).toBe(1);
    fetcher.commit = 'c2';
    fetcher.digest = 'd2';
    clock.step(1000);
    await settle();
    expect(artifacts.map((a) => a.revision)).toEqual(['c1', 'c2']);
    poller.stop();
    expect(clock.pending()).toBe(0);
  });

  it('asks, at each poll, for the last applied revision and the allowed one, and passes them to the fetch', async () => {
    let history: { since?: string; allowRevision?: string } = { since: 'c0' };
    const { fetcher, poller } = setup({ history: () => history });
    await poller.trigger();
    expect(fetcher.requests.at(-1)).toMatchObject({ since: 'c0' });
    expect(fetcher.requests.at(-1)?.allowRevision).toBeUndefined();
    history = { since: 'c1', allowRevision: 'c2' };
    fetcher.commit = 'c2';
    await poller.trigger();
    expect(fetcher.requests.at(-1)).toMatchObject({ since: 'c1', allowRevision: 'c2' });
  });

  it('spreads the interval by the jitter', async () => {
    const { fetcher, clock, poller } = setup({}, { random: () => 0, jitter: 0.2 });
    poller.start();
    await settle();
    clock.step(799);
    await settle();
    expect(fetcher.resolves).toBe(1);
    clock.step(1);
    await settle();
    expect(fetcher.resolves).toBe(2);
    poller.stop();
  });

  it('does not emit the same revision and digest twice in a row, but does emit a new digest', async () => {
    const { fetcher, artifacts, poller } = setup();
    await poller.trigger();
    fetcher.commit = 'c2';
    await poller.trigger();
    fetcher.commit = 'c1';
    await poller.trigger();
    fetcher.failure = new SourceError('FetchFailed', 'down');
    await poller.trigger();
    fetcher.failure = null;
    expect(await poller.trigger()).toBe('unchanged');
    expect(artifacts.map((a) => `${a.revision}/${a.digest}`)).toEqual(['c1/d1', 'c2/d1', 'c1/d1']);
  });

  it('coalesces triggers that arrive during a poll into one more poll', async () => {
    const { fetcher, artifacts, poller } = setup();
    let release!: () => void;
    fetcher.gate = new Promise<void>((ok) => (release = ok));
    const first = poller.trigger();
    await settle();
    fetcher.commit = 'c2';
    const queued = [poller.trigger(), poller.trigger(), poller.trigger()];
    expect(queued[0]).toBe(queued[1]);
    fetcher.gate = null;
    release();
    expect(await first).toBe('emitted');
    expect(await Promise.all(queued)).toEqual(['emitted', 'emitted', 'emitted']);
    expect(fetcher.resolves).toBe(2);
    expect(artifacts.map((a) => a.revision)).toEqual(['c1', 'c2']);
  });

  it('starts polls no faster than its limiter allows, however many are asked for, and none after stop', async () => {
    const clock = new FakeClock();
    // two back to back, then one a second
    const limiter = new BucketRateLimiter(1, 2, clock);
    const { fetcher, poller } = setup({ intervalMs: 3_600_000 }, { clock, limiter });
    poller.start();
    await settle();
    expect(fetcher.resolves).toBe(1);
    expect(await poller.trigger()).toBe('unchanged');
    expect(fetcher.resolves).toBe(2);
    // the third waits for a token; triggers meanwhile share it
    const third = poller.trigger();
    expect(poller.trigger()).toBe(third);
    await settle();
    expect(fetcher.resolves).toBe(2);
    clock.step(999);
    await settle();
    expect(fetcher.resolves).toBe(2);
    clock.step(1);
    expect(await third).toBe('unchanged');
    expect(fetcher.resolves).toBe(3);
    // one waiting when the poller stops does not poll
    const late = poller.trigger();
    poller.stop();
    clock.step(1000);
    expect(await late).toBe('suspended');
    expect(fetcher.resolves).toBe(3);
  });

  it('reports errors with their reason and wraps foreign ones as FetchFailed', async () => {
    const { fetcher, artifacts, errors, poller } = setup();
    fetcher.failure = new SourceError('AuthenticationFailed', 'no');
    expect(await poller.trigger()).toBe('failed');
    fetcher.failure = new Error('boom');
    await poller.trigger();
    expect(errors.map((e) => e.reason)).toEqual(['AuthenticationFailed', 'FetchFailed']);
    expect(errors[1]?.message).toBe('boom');
    fetcher.failure = null;
    await poller.trigger();
    expect(artifacts).toHaveLength(1);
  });

  it('does not poll while suspended, on the interval or on trigger', async () => {
    const { fetcher, clock, artifacts, poller } = setup({ suspend: true });
    poller.start();
    await settle();
    expect(await poller.trigger()).toBe('suspended');
    clock.step(10_000);
    await settle();
    expect(fetcher.resolves).toBe(0);
    expect(clock.pending()).toBe(0);
    poller.resume();
    await settle();
    expect(artifacts).toHaveLength(1);
    expect(clock.pending()).toBe(1);
    poller.suspend();
    expect(clock.pending()).toBe(0);
    clock.step(10_000);
    await settle();
    expect(fetcher.resolves).toBe(1);
    poller.stop();
  });
});

describe('SourcePoller against a real git server', () => {
  let server: GitServer;
  let dir: string;
  let fetcher: GitSourceFetcher;

  beforeAll(async () => {
    server = await startGitServer();
    dir = await mkdtemp(join(tmpdir(), 'poller-'));
    fetcher = new GitSourceFetcher({
      cacheRoot: join(dir, 'cache'),
      timeoutMs: 30_000,
      addresses: { allowPrivateAddresses: ['127.0.0.0/8'] },
    });
  });

  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const collect = (spec: SourceSpec) => {
    const artifacts: Artifact[] = [];
    const errors: SourceError[] = [];
    const poller = new SourcePoller({
      fetcher,
      spec,
      onArtifact: (a) => void artifacts.push(a),
      onError: (e) => void errors.push(e),
    });
    return { poller, artifacts, errors };
  };

  it('fetches only after the ref moved and emits each new revision once', async () => {
    await server.initRepo('polled');
    const c1 = await server.commitFiles('polled', { 'deploy/a.yaml': 'kind: A\n' }, 'one');
    const { poller, artifacts, errors } = collect({
      url: server.url('polled'),
      ref: { branch: 'main' },
      path: 'deploy',
      intervalMs: 60_000,
    });
    expect(await poller.trigger()).toBe('emitted');
    const fetches = fetcher.stats.fetches;
    expect(await poller.trigger()).toBe('unchanged');
    expect(fetcher.stats.fetches).toBe(fetches);
    const c2 = await server.commitFiles('polled', { 'deploy/b.yaml': 'kind: B\n' }, 'two');
    expect(await poller.trigger()).toBe('emitted');
    expect(fetcher.stats.fetches).toBe(fetches + 1);
    expect(artifacts.map((a) => a.revision)).toEqual([c1, c2]);
    expect(artifacts[1]?.documents.map((d) => d.file)).toEqual(['deploy/a.yaml', 'deploy/b.yaml']);
    expect(errors).toEqual([]);
  });

  it('polls on its interval', async () => {
    await server.initRepo('interval');
    await server.commitFiles('interval', { 'a.yaml': 'kind: A\n' }, 'one');
    const { poller, artifacts } = collect({ url: server.url('interval'), ref: { branch: 'main' }, intervalMs: 100 });
    poller.start();
    try {
      await vi.waitFor(() => expect(artifacts).toHaveLength(1), { timeout: 30_000 });
      const c2 = await server.commitFiles('interval', { 'b.yaml': 'kind: B\n' }, 'two');
      await vi.waitFor(() => expect(artifacts.map((a) => a.revision)).toContain(c2), { timeout: 30_000 });
      expect(poller.polls).toBeGreaterThanOrEqual(2);
    } finally {
      poller.stop();
    }
  });

  it('polls when a webhook arrives, and only then', async () => {
    await server.initRepo('hooked');
    await server.commitFiles('hooked', { 'a.yaml': 'kind: A\n' }, 'one');
    const { poller, artifacts } = collect({
      url: server.url('hooked'),
      ref: { branch: 'main' },
      intervalMs: 3_600_000,
    });
    let polled: Promise<unknown> = Promise.resolve();
    const receiver = await startWebhookReceiver({
      routes: [{ path: '/hook', kind: 'generic', secret: 's', onTrigger: () => void (polled = poller.trigger()) }],
    });
    try {
      poller.start();
      await vi.waitFor(() => expect(artifacts).toHaveLength(1), { timeout: 30_000 });
      expect(poller.polls).toBe(1);
      const c2 = await server.commitFiles('hooked', { 'b.yaml': 'kind: B\n' }, 'two');
      const body = '{}';
      const res = await fetch(receiver.url('/hook'), {
        method: 'POST',
        body,
        headers: { 'x-signature': `sha256=${hmacSha256Hex('s', body)}` },
      });
      expect(res.status).toBe(200);
      await polled;
      expect(artifacts.map((a) => a.revision).at(-1)).toBe(c2);
      expect(poller.polls).toBe(2);
    } finally {
      poller.stop();
      await receiver.close();
    }
  });

  it('reports FetchFailed while the server is down and recovers when it is back', async () => {
    const own = await startGitServer();
    try {
      await own.initRepo('r');
      await own.commitFiles('r', { 'a.yaml': 'kind: A\n' }, 'one');
      const { poller, artifacts, errors } = collect({ url: own.url('r'), ref: { branch: 'main' }, intervalMs: 60_000 });
      await poller.trigger();
      await own.stop();
      expect(await poller.trigger()).toBe('failed');
      expect(errors.map((e) => e.reason)).toEqual(['FetchFailed']);
      const c2 = await own.commitFiles('r', { 'b.yaml': 'kind: B\n' }, 'two');
      await own.start();
      expect(await poller.trigger()).toBe('emitted');
      expect(artifacts.map((a) => a.revision).at(-1)).toBe(c2);
    } finally {
      await own.close();
    }
  });

  it.skipIf(!hasSshKeygen)(
    'emits VerificationFailed and no artifact for unsigned or foreign-signed commits',
    async () => {
      const key = await makeSshKey(dir, 'poll-signer');
      const stranger = await makeSshKey(dir, 'poll-stranger');
      await server.initRepo('verified');
      await server.commitFiles('verified', { 'a.yaml': 'kind: A\n' }, 'unsigned');
      const { poller, artifacts, errors } = collect({
        url: server.url('verified'),
        ref: { branch: 'main' },
        intervalMs: 60_000,
        verify: { ssh: [key.publicKey] },
      });
      expect(await poller.trigger()).toBe('failed');
      await server.commitFiles('verified', { 'b.yaml': 'kind: B\n' }, 'foreign', {
        sign: { format: 'ssh', keyFile: stranger.keyFile },
      });
      expect(await poller.trigger()).toBe('failed');
      expect(artifacts).toEqual([]);
      expect(errors.map((e) => e.reason)).toEqual(['VerificationFailed', 'VerificationFailed']);
      expect(errors[0]?.message).toMatch(/not signed/);
      expect(errors[1]?.message).toMatch(/unknown SSH key/);

      const signed = await server.commitFiles('verified', { 'c.yaml': 'kind: C\n' }, 'signed', {
        sign: { format: 'ssh', keyFile: key.keyFile },
      });
      expect(await poller.trigger()).toBe('emitted');
      expect(artifacts.map((a) => [a.revision, a.verification?.verified])).toEqual([[signed, true]]);
    },
  );
});
