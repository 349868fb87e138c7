import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { git, startGitServer, type GitServer } from '../../test/git/server.ts';
import { SourceError } from './errors.ts';
import {
  GitSourceFetcher,
  cacheKey,
  contentDigest,
  documentBound,
  formatRef,
  normalizePath,
  parseManifests,
  pickSemverTag,
  redactUrl,
  type SourceRequest,
} from './source.ts';

// Every test here runs git processes against a real git server: under a loaded machine one clone or key generation
// can take seconds, so the tests and hooks get bounds far above what they need, and nothing waits a fixed time.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

const cm = (name: string, extra = ''): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${extra}`;

async function sourceError(p: Promise<unknown>): Promise<SourceError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(SourceError);
    return err as SourceError;
  }
  throw new Error('expected a SourceError');
}

/** LOOPBACK allows the local test git server, as the platform would in the manager configuration. */
const LOOPBACK = { allowPrivateAddresses: ['127.0.0.0/8'] };

describe('pure helpers', () => {
  it('formats refs', () => {
    expect(formatRef({ branch: 'main' })).toBe('branch:main');
    expect(formatRef({ tag: 'v1' })).toBe('tag:v1');
    expect(formatRef({ semver: '>=1 <2' })).toBe('semver:>=1 <2');
    expect(formatRef({ commit: 'a'.repeat(40) })).toBe(`commit:${'a'.repeat(40)}`);
  });

  it('redacts credentials and keys the cache by the URL without them', () => {
    expect(redactUrl('https://user:secret@example.com/r.git')).toBe('https://example.com/r.git');
    expect(cacheKey('https://example.com/r.git/')).toBe(cacheKey('https://example.com/r.git'));
    // a URL carrying credentials never shares the cache of the same URL without them
    expect(cacheKey('https://user:secret@example.com/r.git')).not.toBe(cacheKey('https://example.com/r.git'));
    expect(cacheKey('https://example.com/a.git')).not.toBe(cacheKey('https://example.com/b.git'));
    expect(cacheKey('https://example.com/a.git')).toMatch(/^[0-9a-f]{32}$/);
  });

  it('normalizes paths and refuses ".."', () => {
    expect(normalizePath('./clusters//a/')).toBe('clusters/a');
    expect(normalizePath('.')).toBe('');
    expect(normalizePath(undefined)).toBe('');
    expect(() => normalizePath('a/../../etc')).toThrow(SourceError);
  });

  it('picks the highest tag in a semver range, without prereleases', () => {
    const tags = ['v1.0.0', 'v1.10.0', 'v1.9.3', '2.0.0', 'v1.11.0-rc.1', 'latest', 'v1.2'];
    expect(pickSemverTag(tags, '>=1.0.0 <2')).toBe('v1.10.0');
    expect(pickSemverTag(tags, '^2')).toBe('2.0.0');
    expect(pickSemverTag(tags, '>=3')).toBeUndefined();
    expect(() => pickSemverTag(tags, 'not a range')).toThrow(SourceError);
  });

  it('digests path and content, independent of order', () => {
    const a = { path: 'a.yaml', content: Buffer.from('x: 1\n') };
    const b = { path: 'b.yaml', content: Buffer.from('y: 2\n') };
    expect(contentDigest([a, b])).toBe(contentDigest([b, a]));
    expect(contentDigest([a, b])).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(contentDigest([a])).not.toBe(contentDigest([{ path: 'c.yaml', content: a.content }]));
    expect(contentDigest([{ path: 'a', content: Buffer.from('bc') }])).not.toBe(
      contentDigest([{ path: 'ab', content: Buffer.from('c') }]),
    );
  });

  it('parses multi-document YAML, skipping empty documents and keeping positions', () => {
    const { documents, error } = parseManifests('m.yaml', `${cm('one')}---\n# only a comment\n---\n${cm('two')}---\n`);
    expect(error).toBeUndefined();
    expect(documents.map((d) => [d.index, (d.object.metadata as { name: string }).name])).toEqual([
      [0, 'one'],
      [2, 'two'],
    ]);
  });

  it('reports the first error of a file with its line and column, and no documents from it', () => {
    const { documents, error } = parseManifests('bad.yaml', `${cm('ok')}---\nkind: ConfigMap\nmetadata: name: x\n`);
    expect(documents).toEqual([]);
    expect(error).toEqual({
      file: 'bad.yaml',
      line: 7,
      column: 11,
      message: 'Nested mappings are not allowed in compact mappings',
    });
  });

  it('refuses documents that are not mappings and duplicate keys', () => {
    expect(parseManifests('list.yaml', '- a\n- b\n').error?.message).toMatch(/not a mapping/);
    expect(parseManifests('dup.yaml', 'a: 1\na: 2\n').error?.line).toBe(2);
    expect(parseManifests('j.json', '{"kind": "ConfigMap", "metadata": {"name": "j"}}').documents[0]?.object.kind).toBe(
      'ConfigMap',
    );
  });
});

describe('GitSourceFetcher against a real git server', () => {
  let server: GitServer;
  let authServer: GitServer;
  let tokenServer: GitServer;
  let cacheRoot: string;
  let fetcher: GitSourceFetcher;
  const temps: string[] = [];

  const newFetcher = async (opts: { timeoutMs?: number; freshCache?: boolean } = {}): Promise<GitSourceFetcher> => {
    let root = cacheRoot;
    if (opts.freshCache) {
      root = await mkdtemp(join(tmpdir(), 'source-cache-'));
      temps.push(root);
    }
    return new GitSourceFetcher({
      cacheRoot: root,
      addresses: LOOPBACK,
      ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
    });
  };

  beforeAll(async () => {
    server = await startGitServer();
    authServer = await startGitServer({ auth: { username: 'flux', password: 's3cret-pw' } });
    tokenServer = await startGitServer({ auth: { token: 'tok-123456' } });
    cacheRoot = await mkdtemp(join(tmpdir(), 'source-cache-'));
    temps.push(cacheRoot);
    fetcher = await newFetcher();
  });

  afterAll(async () => {
    await Promise.all([server?.close(), authServer?.close(), tokenServer?.close()]);
    await Promise.all(temps.map((t) => rm(t, { recursive: true, force: true })));
  });

  it('fetches only when the ref moved', async () => {
    await server.initRepo('poll');
    const c1 = await server.commitFiles('poll', { 'deploy/a.yaml': cm('a') }, 'one');
    const req: SourceRequest = { url: server.url('poll'), ref: { branch: 'main' }, path: 'deploy' };
    const f = await newFetcher();

    const first = await f.artifact(req);
    expect(first.revision).toBe(c1);
    expect(first.documents.map((d) => d.file)).toEqual(['deploy/a.yaml']);
    expect(f.stats).toEqual({ resolves: 1, fetches: 1 });
    const serverFetches = server.stats.fetches;

    const again = await f.artifact(req);
    expect(again.revision).toBe(c1);
    expect(again.digest).toBe(first.digest);
    expect(f.stats).toEqual({ resolves: 2, fetches: 1 });
    expect(server.stats.fetches).toBe(serverFetches);

    const c2 = await server.commitFiles('poll', { 'deploy/b.yaml': cm('b') }, 'two');
    expect((await f.resolve(req)).commit).toBe(c2);
    expect(f.stats.fetches).toBe(1);
    const second = await f.artifact(req);
    expect(second.revision).toBe(c2);
    expect(second.documents.map((d) => d.file)).toEqual(['deploy/a.yaml', 'deploy/b.yaml']);
    expect(second.digest).not.toBe(first.digest);
    expect(f.stats.fetches).toBe(2);
    expect(server.stats.fetches).toBe(serverFetches + 1);
  });

  it('produces a frozen artifact with the asked ref and path', async () => {
    await server.initRepo('shape');
    const c1 = await server.commitFiles('shape', { 'a.yaml': cm('a') }, 'one');
    const url = server.url('shape');
    const a = await fetcher.artifact({ url, ref: { branch: 'main' }, path: './' });
    expect(a).toMatchObject({ url: server.url('shape'), ref: 'branch:main', revision: c1, path: '', parseErrors: [] });
    expect(a.verification).toBeUndefined();
    expect(Number.isNaN(Date.parse(a.fetchedAt))).toBe(false);
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.isFrozen(a.documents[0]?.object)).toBe(true);
  });

  it('reads only the path subtree and only YAML and JSON files', async () => {
    await server.initRepo('subtree');
    await server.commitFiles(
      'subtree',
      {
        'README.md': '# docs\n',
        'clusters/a/x.yaml': cm('x'),
        'clusters/a/notes.txt': 'not a manifest\n',
        'clusters/a/sub/z.yml': cm('z'),
        'clusters/a/data.json': JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'j' } }),
        'clusters/b/y.yaml': cm('y'),
        'clusters/ab.yaml': cm('ab'),
      },
      'tree',
    );
    const url = server.url('subtree');
    const a = await fetcher.artifact({ url, ref: { branch: 'main' }, path: 'clusters/a' });
    expect(a.path).toBe('clusters/a');
    expect(a.documents.map((d) => d.file)).toEqual([
      'clusters/a/data.json',
      'clusters/a/sub/z.yml',
      'clusters/a/x.yaml',
    ]);
    expect(a.documents.map((d) => (d.object.metadata as { name: string }).name)).toEqual(['j', 'z', 'x']);

    const root = await fetcher.artifact({ url, ref: { branch: 'main' } });
    expect(root.documents).toHaveLength(5);

    const single = await fetcher.artifact({ url, ref: { branch: 'main' }, path: 'clusters/ab.yaml' });
    expect(single.documents.map((d) => d.file)).toEqual(['clusters/ab.yaml']);

    const missing = await sourceError(fetcher.artifact({ url, ref: { branch: 'main' }, path: 'clusters/c' }));
    expect(missing.reason).toBe('PathNotFound');
  });

  it('gives equal digests for equal manifests and different ones otherwise', async () => {
    await server.initRepo('digest');
    const url = server.url('digest');
    const req: SourceRequest = { url, ref: { branch: 'main' }, path: 'deploy' };
    await server.commitFiles('digest', { 'deploy/a.yaml': cm('a'), 'README.md': 'one\n' }, 'one');
    const a = await fetcher.artifact(req);
    await server.commitFiles('digest', { 'README.md': 'two\n' }, 'readme only');
    const b = await fetcher.artifact(req);
    expect(b.revision).not.toBe(a.revision);
    expect(b.digest).toBe(a.digest);
    await server.commitFiles('digest', { 'deploy/a.yaml': cm('a', 'data:\n  k: v\n') }, 'change');
    const c = await fetcher.artifact(req);
    expect(c.digest).not.toBe(a.digest);
  });

  it('reads multi-document files and reports syntax errors by file and line while other files come through', async () => {
    await server.initRepo('parse');
    await server.commitFiles(
      'parse',
      {
        'm/multi.yaml': `${cm('one')}---\n---\n${cm('two')}---\n${cm('three')}`,
        'm/broken.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: name: x\n',
        'm/empty.yaml': '',
        'm/good.yaml': cm('good'),
      },
      'parse',
    );
    const a = await fetcher.artifact({ url: server.url('parse'), ref: { branch: 'main' }, path: 'm' });
    expect(a.documents.map((d) => `${d.file}#${d.index}`)).toEqual([
      'm/good.yaml#0',
      'm/multi.yaml#0',
      'm/multi.yaml#2',
      'm/multi.yaml#3',
    ]);
    expect(a.parseErrors).toHaveLength(1);
    expect(a.parseErrors[0]).toEqual({
      file: 'm/broken.yaml',
      line: 3,
      column: 11,
      message: 'Nested mappings are not allowed in compact mappings',
    });
  });

  describe('refs', () => {
    let url: string;
    let main1: string;
    let main2: string;
    let dev: string;
    let v100: string;
    let v110: string;

    beforeAll(async () => {
      await server.initRepo('refs');
      url = server.url('refs');
      main1 = await server.commitFiles('refs', { 'app.yaml': cm('main-1') }, 'main 1', { tag: 'v1.0.0' });
      v110 = await server.commitFiles('refs', { 'app.yaml': cm('v1.1.0') }, 'release 1.1', {
        tag: 'v1.1.0',
        annotated: true,
      });
      await server.commitFiles('refs', { 'app.yaml': cm('rc') }, 'rc', { tag: 'v1.2.0-rc.1' });
      await server.commitFiles('refs', { 'app.yaml': cm('two') }, 'two', { tag: 'v2.0.0' });
      await server.commitFiles('refs', { 'app.yaml': cm('junk') }, 'junk', { tag: 'latest' });
      main2 = await server.commitFiles('refs', { 'app.yaml': cm('main-2') }, 'main 2');
      dev = await server.commitFiles('refs', { 'app.yaml': cm('dev') }, 'dev', { branch: 'dev' });
      v100 = main1;
    });

    const nameOf = (a: { documents: readonly { object: Record<string, unknown> }[] }): string =>
      (a.documents[0]?.object.metadata as { name: string }).name;

    it('follows branches', async () => {
      const m = await fetcher.artifact({ url, ref: { branch: 'main' } });
      expect([m.revision, nameOf(m)]).toEqual([main2, 'main-2']);
      const d = await fetcher.artifact({ url, ref: { branch: 'dev' } });
      expect([d.revision, nameOf(d), d.ref]).toEqual([dev, 'dev', 'branch:dev']);
      expect((await sourceError(fetcher.artifact({ url, ref: { branch: 'nope' } }))).reason).toBe('RefNotFound');
    });

    it('follows lightweight and annotated tags to their commits', async () => {
      const light = await fetcher.artifact({ url, ref: { tag: 'v1.0.0' } });
      expect([light.revision, nameOf(light)]).toEqual([v100, 'main-1']);
      const annotated = await fetcher.artifact({ url, ref: { tag: 'v1.1.0' } });
      expect([annotated.revision, nameOf(annotated)]).toEqual([v110, 'v1.1.0']);
      expect((await sourceError(fetcher.artifact({ url, ref: { tag: 'v9' } }))).reason).toBe('RefNotFound');
    });

    it('follows the highest tag matching a semver range', async () => {
      const a = await fetcher.artifact({ url, ref: { semver: '>=1.0.0 <2' } });
      expect([a.revision, nameOf(a), a.ref]).toEqual([v110, 'v1.1.0', 'semver:>=1.0.0 <2']);
      const b = await fetcher.artifact({ url, ref: { semver: '>=1.2.0-rc.0 <2' } });
      expect(nameOf(b)).toBe('rc');
      expect(nameOf(await fetcher.artifact({ url, ref: { semver: '*' } }))).toBe('two');
      expect((await sourceError(fetcher.artifact({ url, ref: { semver: '>=3' } }))).reason).toBe('RefNotFound');
      expect((await sourceError(fetcher.artifact({ url, ref: { semver: 'bogus' } }))).reason).toBe('InvalidSpec');
    });

    it('moves with a tag that is re-pointed', async () => {
      await server.tag('refs', 'moving', main1);
      expect((await fetcher.artifact({ url, ref: { tag: 'moving' } })).revision).toBe(main1);
      await server.tag('refs', 'moving', main2);
      expect((await fetcher.artifact({ url, ref: { tag: 'moving' } })).revision).toBe(main2);
    });

    it('reads a commit that is not a ref tip, by id when the server allows it', async () => {
      const f = await newFetcher({ freshCache: true });
      const a = await f.artifact({ url, ref: { commit: v110 } });
      expect([a.revision, nameOf(a), a.ref]).toEqual([v110, 'v1.1.0', `commit:${v110}`]);
      expect(f.stats).toEqual({ resolves: 0, fetches: 1 });
      await f.artifact({ url, ref: { commit: v110 } });
      expect(f.stats.fetches).toBe(1);
      expect((await sourceError(f.artifact({ url, ref: { commit: 'abc' } }))).reason).toBe('InvalidSpec');
    });
  });

  it('deepens the default branch for a commit the server does not send by id, and reports an unknown one', async () => {
    await server.initRepo('strict', { advertisedWantsOnly: true });
    const url = server.url('strict');
    const old = await server.commitFiles('strict', { 'a.yaml': cm('old') }, 'old');
    for (let i = 0; i < 3; i++) await server.commitFiles('strict', { 'a.yaml': cm(`n${i}`) }, `n${i}`);
    const f = await newFetcher();
    const a = await f.artifact({ url, ref: { commit: old } });
    expect(a.revision).toBe(old);
    expect((a.documents[0]?.object.metadata as { name: string }).name).toBe('old');
    expect(f.stats.fetches).toBe(2);

    const unknown = await sourceError(f.artifact({ url, ref: { commit: 'f'.repeat(40) } }));
    expect(unknown.reason).toBe('RefNotFound');
    expect(unknown.message).toMatch(/not in the history of the default branch/);
  });

  it('follows a force-pushed, unrelated history', async () => {
    await server.initRepo('force');
    const url = server.url('force');
    const req: SourceRequest = { url, ref: { branch: 'main' } };
    await server.commitFiles('force', { 'a.yaml': cm('a') }, 'a');
    const b = await server.commitFiles('force', { 'b.yaml': cm('b') }, 'b');
    expect((await fetcher.artifact(req)).revision).toBe(b);
    const rewritten = await server.forcePush('force', { 'c.yaml': cm('c') }, 'rewritten');
    const after = await fetcher.artifact(req);
    expect(after.revision).toBe(rewritten);
    expect(after.documents.map((d) => d.file)).toEqual(['c.yaml']);
    const next = await server.commitFiles('force', { 'd.yaml': cm('d') }, 'd');
    expect((await fetcher.artifact(req)).documents.map((d) => d.file)).toEqual(['c.yaml', 'd.yaml']);
    expect((await fetcher.resolve(req)).commit).toBe(next);
  });

  describe('no silent rollback', () => {
    it('refuses a force-push to an older commit unless that revision is allowed', async () => {
      await server.initRepo('rollback');
      const url = server.url('rollback');
      const req: SourceRequest = { url, ref: { branch: 'main' } };
      const old = await server.commitFiles('rollback', { 'a.yaml': cm('old') }, 'old');
      const applied = await server.commitFiles('rollback', { 'a.yaml': cm('new') }, 'new');
      expect((await fetcher.artifact({ ...req, since: old })).revision).toBe(applied);
      await git(join(server.root, 'rollback.git'), ['update-ref', 'refs/heads/main', old]);
      const refused = await sourceError(fetcher.artifact({ ...req, since: applied }));
      expect(refused.reason).toBe('NotDescendant');
      expect(refused.message).toContain(`revision ${old} does not descend from last applied ${applied}`);
      expect(refused.message).toContain(`tenancy.x-k8s.io/allow-revision=${old}`);
      expect((await fetcher.artifact({ ...req, since: applied, allowRevision: old })).revision).toBe(old);
    });

    it('refuses every revision but the allowed one when the last applied revision is lost', async () => {
      await server.initRepo('lost');
      const req: SourceRequest = {
        url: server.url('lost'),
        ref: { branch: 'main' },
        baseLost: 'the record is missing',
      };
      const tip = await server.commitFiles('lost', { 'a.yaml': cm('a') }, 'a');
      const refused = await sourceError(fetcher.artifact(req));
      expect(refused.reason).toBe('NotDescendant');
      expect(refused.message).toContain(
        `revision ${tip} cannot be checked to descend from the last applied one: the record is missing`,
      );
      expect(refused.message).toContain(`tenancy.x-k8s.io/allow-revision=${tip}`);
      expect((await fetcher.artifact({ ...req, allowRevision: tip })).revision).toBe(tip);
    });

    it('deepens a depth-1 cache until it finds the last applied commit, up to the cap', async () => {
      await server.initRepo('deepen');
      const url = server.url('deepen');
      const base = await server.commitFiles('deepen', { 'a.yaml': cm('0') }, '0');
      for (let i = 1; i <= 5; i++) await server.commitFiles('deepen', { 'a.yaml': cm(`n${i}`) }, String(i));
      const f = await newFetcher({ freshCache: true });
      const a = await f.artifact({ url, ref: { branch: 'main' }, since: base });
      expect((a.documents[0]?.object.metadata as { name: string }).name).toBe('n5');
      expect(f.stats.fetches).toBeGreaterThan(1);

      const cappedRoot = await mkdtemp(join(tmpdir(), 'source-cache-'));
      temps.push(cappedRoot);
      const capped = new GitSourceFetcher({
        cacheRoot: cappedRoot,
        addresses: LOOPBACK,
        limits: { maxHistoryCommits: 2 },
      });
      const refused = await sourceError(capped.artifact({ url, ref: { branch: 'main' }, since: base }));
      expect(refused.reason).toBe('NotDescendant');
      expect(refused.message).toMatch(/within 2 commits \(gitops\.limits\.maxHistoryCommits\)/);
    });
  });

  describe('bounded work', () => {
    it('refuses a revision whose fetch exceeds maxFetchBytes, and one with too many files', async () => {
      await server.initRepo('big');
      const url = server.url('big');
      await server.commitFiles(
        'big',
        {
          'a.yaml': `# ${randomBytes(48 * 1024).toString('base64')}\n${cm('a')}`,
          'b.yaml': cm('b'),
          'c.yaml': cm('c'),
        },
        'big',
      );
      const root = await mkdtemp(join(tmpdir(), 'source-cache-'));
      temps.push(root);
      const small = new GitSourceFetcher({ cacheRoot: root, addresses: LOOPBACK, limits: { maxFetchBytes: 4096 } });
      const tooBig = await sourceError(small.artifact({ url, ref: { branch: 'main' } }));
      expect(tooBig.reason).toBe('LimitExceeded');
      expect(tooBig.message).toMatch(/more than 4096 bytes for this revision \(gitops\.limits\.maxFetchBytes\)/);
      const few = new GitSourceFetcher({ cacheRoot: root, addresses: LOOPBACK, limits: { maxFiles: 2 } });
      const tooMany = await sourceError(few.artifact({ url, ref: { branch: 'main' } }));
      expect(tooMany.reason).toBe('LimitExceeded');
      expect(tooMany.message).toMatch(/more than 2 manifest files and directories \(gitops\.limits\.maxFiles\)/);
      const tight = new GitSourceFetcher({ cacheRoot: root, addresses: LOOPBACK, limits: { maxTotalBytes: 1000 } });
      expect((await sourceError(tight.artifact({ url, ref: { branch: 'main' } }))).message).toMatch(
        /gitops\.limits\.maxTotalBytes/,
      );
    });

    it('refuses a revision holding a git object over maxObjectBytes unpacked, before isomorphic-git unpacks it', async () => {
      await server.initRepo('zeros');
      const url = server.url('zeros');
      // 8 MiB of zeros: a few KiB on the wire, under any fetch budget, and 8 MiB in memory once unpacked
      await server.commitFiles('zeros', { 'a.yaml': cm('a'), 'blob.bin': '\0'.repeat(8 * 1024 * 1024) }, 'zeros');
      const root = await mkdtemp(join(tmpdir(), 'source-cache-'));
      temps.push(root);
      const capped = new GitSourceFetcher({
        cacheRoot: root,
        addresses: LOOPBACK,
        limits: { maxFetchBytes: 1024 * 1024, maxObjectBytes: 1024 * 1024 },
      });
      const refused = await sourceError(capped.artifact({ url, ref: { branch: 'main' } }));
      expect(refused.reason).toBe('LimitExceeded');
      expect(refused.message).toMatch(
        /^fetch .*: the server sent a blob of 8388608 bytes unpacked, more than 1048576 \(gitops\.limits\.maxObjectBytes\)$/,
      );
      // The same cache, with the default caps, fetches the revision whole.
      const roomy = new GitSourceFetcher({ cacheRoot: root, addresses: LOOPBACK });
      expect((await roomy.artifact({ url, ref: { branch: 'main' } })).documents).toHaveLength(1);
    });

    it('refuses a revision with more YAML documents than maxDocuments, before parsing them', async () => {
      await server.initRepo('docs');
      const url = server.url('docs');
      // Six documents over two files: the count is over the revision, not per file.
      await server.commitFiles(
        'docs',
        { 'a.yaml': `${cm('a1')}---\n${cm('a2')}---\n${cm('a3')}`, 'b.yaml': `${cm('b1')}...\n---\n${cm('b2')}` },
        'docs',
      );
      const root = await mkdtemp(join(tmpdir(), 'source-cache-'));
      temps.push(root);
      const five = new GitSourceFetcher({ cacheRoot: root, addresses: LOOPBACK, limits: { maxDocuments: 5 } });
      const over = await sourceError(five.artifact({ url, ref: { branch: 'main' } }));
      expect(over.reason).toBe('LimitExceeded');
      expect(over.message).toMatch(/more than 5 YAML documents at b\.yaml \(gitops\.limits\.maxDocuments\)/);
      const six = new GitSourceFetcher({ cacheRoot: root, addresses: LOOPBACK, limits: { maxDocuments: 6 } });
      expect((await six.artifact({ url, ref: { branch: 'main' } })).documents).toHaveLength(5);
    });

    it('bounds the documents of a text from its markers at the start of a line', () => {
      expect(documentBound('a: 1\n')).toBe(1);
      expect(documentBound('---\na: 1\n--- \nb: 2\n...\n')).toBe(4);
      expect(documentBound('a: "--- not a marker"\nb: ----\n')).toBe(1);
      expect(documentBound('---\n'.repeat(100_000))).toBe(100_001);
    });

    it('refuses loopback and metadata addresses unless allowed, before any request', async () => {
      await server.initRepo('guarded');
      const before = server.stats.infoRefs;
      const strict = new GitSourceFetcher({ cacheRoot });
      const loop = await sourceError(strict.artifact({ url: server.url('guarded'), ref: { branch: 'main' } }));
      expect(loop.reason).toBe('AddressRefused');
      expect(loop.message).toMatch(/address 127\.0\.0\.1 is a loopback address/);
      const meta = await sourceError(
        strict.resolve({ url: 'http://169.254.169.254/latest/meta-data.git', ref: { branch: 'main' } }),
      );
      expect(meta.reason).toBe('AddressRefused');
      expect(meta.message).toMatch(/metadata address/);
      expect(server.stats.infoRefs).toBe(before);
    });

    it('checks every redirect hop: a redirect to the metadata address is refused', async () => {
      const redirector = createServer((_req, res) => {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/tenants.git/info/refs?service=git-upload-pack' });
        res.end();
      });
      await new Promise<void>((ok) => redirector.listen(0, '127.0.0.1', ok));
      try {
        const port = (redirector.address() as AddressInfo).port;
        const err = await sourceError(
          fetcher.resolve({ url: `http://127.0.0.1:${port}/tenants.git`, ref: { branch: 'main' } }),
        );
        expect(err.reason).toBe('AddressRefused');
        expect(err.message).toMatch(/address 169\.254\.169\.254 is a metadata address/);
      } finally {
        await new Promise((ok) => redirector.close(ok));
      }
    });

    it('keeps one cache per credential for the same URL', () => {
      const url = 'https://git.example.com/t.git';
      expect(cacheKey(url, { token: 'a' })).not.toBe(cacheKey(url, { token: 'b' }));
      expect(cacheKey(url, { username: 'u', password: 'p' })).not.toBe(cacheKey(url, { username: 'v', password: 'p' }));
      expect(cacheKey(url, { token: 'a' })).not.toBe(cacheKey(url));
      expect(cacheKey(url, { token: 'a' })).toBe(cacheKey(url, { token: 'a' }));
    });
  });

  it('serializes work on one cache inside a process and across fetchers sharing the cache root', async () => {
    await server.initRepo('locks');
    const url = server.url('locks');
    await server.commitFiles('locks', { 'a.yaml': cm('a') }, 'a');
    const f1 = await newFetcher();
    const f2 = await newFetcher();
    const req: SourceRequest = { url, ref: { branch: 'main' } };
    const results = await Promise.all([f1.artifact(req), f1.artifact(req), f2.artifact(req), f2.artifact(req)]);
    expect(new Set(results.map((r) => r.digest)).size).toBe(1);
    expect(f1.stats.fetches + f2.stats.fetches).toBe(1);
  });

  describe('credentials', () => {
    it('accepts basic credentials and refuses a wrong password without leaking it', async () => {
      await authServer.initRepo('private');
      const c = await authServer.commitFiles('private', { 'a.yaml': cm('a') }, 'a');
      const url = authServer.url('private');
      const ok = await fetcher.artifact({
        url,
        ref: { branch: 'main' },
        credentials: { username: 'flux', password: 's3cret-pw' },
      });
      expect(ok.revision).toBe(c);

      const wrong = await sourceError(
        fetcher.artifact({ url, ref: { branch: 'main' }, credentials: { username: 'flux', password: 'wrong-pw' } }),
      );
      expect(wrong.reason).toBe('AuthenticationFailed');
      expect(wrong.message).not.toContain('wrong-pw');
      const none = await sourceError(fetcher.artifact({ url, ref: { branch: 'main' } }));
      expect(none.reason).toBe('AuthenticationFailed');
    });

    it('never reads a commit that was fetched with credentials for a source without them', async () => {
      // A source with credentials fetches a private commit; a second source of the same URL names that commit by id
      // (a commit ref needs no ref listing) and has no credentials: it must ask the server, and be refused.
      await authServer.initRepo('shared-cache');
      const c = await authServer.commitFiles('shared-cache', { 'a.yaml': cm('private') }, 'a');
      const url = authServer.url('shared-cache');
      const withCreds = await fetcher.artifact({
        url,
        ref: { commit: c },
        credentials: { username: 'flux', password: 's3cret-pw' },
      });
      expect(withCreds.revision).toBe(c);
      const none = await sourceError(fetcher.artifact({ url, ref: { commit: c } }));
      expect(none.reason).toBe('AuthenticationFailed');
      // the same credentials written into the URL instead of a granted Secret
      const inUrl = url.replace('://', '://flux:s3cret-pw@');
      const embedded = await sourceError(fetcher.artifact({ url: inUrl, ref: { commit: c } }));
      expect(embedded.reason).toBe('InvalidSpec');
      expect(embedded.message).not.toContain('s3cret-pw');
      const after = await sourceError(fetcher.artifact({ url, ref: { commit: c } }));
      expect(after.reason).toBe('AuthenticationFailed');
    });

    it('sends a token as the password', async () => {
      await tokenServer.initRepo('private');
      const c = await tokenServer.commitFiles('private', { 'a.yaml': cm('a') }, 'a');
      const url = tokenServer.url('private');
      expect(
        (await fetcher.artifact({ url, ref: { branch: 'main' }, credentials: { token: 'tok-123456' } })).revision,
      ).toBe(c);
      const bad = await sourceError(
        fetcher.artifact({ url, ref: { branch: 'main' }, credentials: { token: 'tok-999' } }),
      );
      expect(bad.reason).toBe('AuthenticationFailed');
    });
  });

  describe('server failures', () => {
    let down: GitServer;
    beforeAll(async () => {
      down = await startGitServer();
    });
    afterAll(async () => {
      await down?.close();
    });

    it('reports FetchFailed while the server is down and works again once it is back', async () => {
      await down.initRepo('r');
      const c1 = await down.commitFiles('r', { 'a.yaml': cm('a') }, 'a');
      const req: SourceRequest = { url: down.url('r'), ref: { branch: 'main' }, timeoutMs: 30_000 };
      const f = await newFetcher();
      expect((await f.artifact(req)).revision).toBe(c1);
      const port = down.port;
      await down.stop();
      const err = await sourceError(f.artifact(req));
      expect(err.reason).toBe('FetchFailed');
      const c2 = await down.commitFiles('r', { 'b.yaml': cm('b') }, 'b');
      await down.start();
      expect(down.port).toBe(port);
      expect((await f.artifact(req)).revision).toBe(c2);
    });

    it('times out a server that does not answer', async () => {
      await down.initRepo('slow');
      await down.commitFiles('slow', { 'a.yaml': cm('a') }, 'a');
      down.stall(true);
      try {
        const err = await sourceError(
          (await newFetcher({ timeoutMs: 300 })).artifact({ url: down.url('slow'), ref: { branch: 'main' } }),
        );
        expect(err.reason).toBe('Timeout');
        // The fetcher's own 300 ms bound ended it (not the test's timeout, nor a default one).
        expect(err.message).toMatch(/timed out after 300ms/);
      } finally {
        down.stall(false);
      }
    });
  });
});
