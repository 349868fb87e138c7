/**
 * The git source: resolves a ref with a cheap ref listing, fetches (depth 1) only commits the cache does not hold,
 * reads the YAML and JSON files under a path straight from the object database (no checkout) and turns them into an
 * immutable Artifact.
 */
import * as fs from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import git, { type FetchResult, type GitAuth, type HttpClient, type ServerRef } from 'isomorphic-git';
import nodeHttp from 'isomorphic-git/http/node';
import * as lockfile from 'proper-lockfile';
import semver from 'semver';
import type { Artifact } from '../artifact.ts';
import { childLogger, type Logger } from '../../core/log.ts';
import { systemResolver, type AddressPolicy, type Resolver } from './address.ts';
import { hasCommit, initCache, peelToCommit } from './cache.ts';
import { urlRefusal } from './credentials.ts';
import { SourceError, errorMessage, type SourceErrorReason } from './errors.ts';
import { ALLOW_REVISION_ANNOTATION, commitsSince } from './history.ts';
import { readTree, type TreeContent } from './manifests.ts';
import {
  SOURCE_LIMIT_DEFAULTS,
  cacheKey,
  formatRef,
  normalizePath,
  pickSemverTag,
  redactUrl,
  type Credentials,
  type ResolvedRef,
  type SourceLimits,
  type SourceRequest,
} from './ref.ts';
import { network, type Budget } from './transport.ts';
import { verifyCommit, type VerificationResult, type VerifyKeys } from './verify.ts';

export {
  SOURCE_LIMIT_DEFAULTS,
  cacheKey,
  formatRef,
  normalizePath,
  pickSemverTag,
  redactUrl,
  type Credentials,
  type GitRef,
  type ResolvedRef,
  type SourceLimits,
  type SourceRequest,
} from './ref.ts';
export { contentDigest, documentBound, parseManifests, type TreeContent } from './manifests.ts';

/** GitSourceFetcherOptions configures a GitSourceFetcher. */
export interface GitSourceFetcherOptions {
  /** directory holding one bare cache repository per URL */
  cacheRoot: string;
  /** default timeout of each network call, in milliseconds (default 60s) */
  timeoutMs?: number;
  /** files larger than this become parse errors (default 4 MiB; limits.maxFileBytes wins) */
  maxFileBytes?: number;
  /** caps on the work of one revision */
  limits?: SourceLimits;
  /** which private addresses git servers may have; default none (loopback, link-local, metadata are refused) */
  addresses?: AddressPolicy;
  /** DNS resolution (default the system resolver) */
  resolver?: Resolver;
  /** the HTTP client (default isomorphic-git's node client) */
  http?: HttpClient;
  logger?: Logger;
}

/** FetcherStats counts the network calls a fetcher made. */
export interface FetcherStats {
  /** ref listings (polls) */
  resolves: number;
  /** object fetches */
  fetches: number;
}

/** INFINITE_DEPTH is git's depth for "all history". */
const INFINITE_DEPTH = 0x7fffffff;
/** COMMIT_DEEPEN_STEPS are the depths tried on the default branch when a server refuses to send a commit by id. */
const COMMIT_DEEPEN_STEPS = [50, 1000, INFINITE_DEPTH] as const;
/** FINAL_FETCH_ERRORS end a fetch by commit id at once instead of falling back to deepening the default branch. */
const FINAL_FETCH_ERRORS: ReadonlySet<SourceErrorReason> = new Set([
  'AuthenticationFailed',
  'Timeout',
  'AddressRefused',
  'LimitExceeded',
]);

function definedOf<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * refuseUnsafeUrl throws InvalidSpec for a url that carries credentials itself or whose host parsers read differently
 * (urlRefusal).
 */
function refuseUnsafeUrl(url: string): void {
  const refusal = urlRefusal(url);
  if (refusal) throw new SourceError('InvalidSpec', refusal);
}

/**
 * GitSourceFetcher reads git sources over HTTP(S) into Artifacts, keeping one bare cache repository per URL under
 * `cacheRoot`. A cache is used by one operation at a time: an in-process mutex per URL plus a lock file shared with
 * other processes.
 */
export class GitSourceFetcher {
  /** stats counts ref listings and object fetches. */
  readonly stats: FetcherStats = { resolves: 0, fetches: 0 };
  private readonly cacheRoot: string;
  private readonly timeoutMs: number;
  private readonly limits: Required<SourceLimits>;
  private readonly addresses: AddressPolicy;
  private readonly resolver: Resolver;
  private readonly http: HttpClient;
  private readonly log: Logger;
  private readonly locks = new Map<string, Promise<void>>();

  constructor(opts: GitSourceFetcherOptions) {
    this.cacheRoot = opts.cacheRoot;
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.limits = {
      ...SOURCE_LIMIT_DEFAULTS,
      ...(opts.maxFileBytes !== undefined ? { maxFileBytes: opts.maxFileBytes } : {}),
      ...definedOf(opts.limits ?? {}),
    };
    this.addresses = opts.addresses ?? {};
    this.resolver = opts.resolver ?? systemResolver;
    this.http = opts.http ?? nodeHttp;
    this.log = opts.logger ?? childLogger({ component: 'git-source' });
  }

  /** cacheDir is the bare cache repository of a URL and credentials. */
  cacheDir(url: string, credentials?: Credentials): string {
    return join(this.cacheRoot, cacheKey(url, credentials));
  }

  /** resolve finds the commit a ref points at on the server with one ref listing (no fetch); commit refs need none. */
  async resolve(req: Pick<SourceRequest, 'url' | 'ref' | 'credentials' | 'timeoutMs'>): Promise<ResolvedRef> {
    refuseUnsafeUrl(req.url);
    const ref = req.ref;
    if ('commit' in ref) {
      const commit = ref.commit.toLowerCase();
      if (!/^[0-9a-f]{40}$/.test(commit))
        throw new SourceError('InvalidSpec', `commit ${JSON.stringify(ref.commit)} is not a full commit id`);
      return { name: commit, commit };
    }
    if ('semver' in ref && !semver.validRange(ref.semver)) {
      throw new SourceError('InvalidSpec', `invalid semver range ${JSON.stringify(ref.semver)}`);
    }
    const prefix = 'branch' in ref ? `refs/heads/${ref.branch}` : 'tag' in ref ? `refs/tags/${ref.tag}` : 'refs/tags/';
    this.stats.resolves++;
    const refs = await this.network(req, `list refs of ${redactUrl(req.url)}`, this.budget(), (http, onAuth) =>
      git.listServerRefs({ http, url: req.url, onAuth, prefix, peelTags: true }),
    );
    const target = (r: ServerRef): string => r.peeled ?? r.oid;
    if ('branch' in ref || 'tag' in ref) {
      const found = refs.find((r) => r.ref === prefix);
      if (!found) {
        throw new SourceError(
          'RefNotFound',
          `${'branch' in ref ? 'branch' : 'tag'} ${JSON.stringify('branch' in ref ? ref.branch : ref.tag)} not found in ${redactUrl(req.url)}`,
        );
      }
      return { name: prefix, commit: target(found) };
    }
    const tags = new Map(
      refs
        .filter((r) => r.ref.startsWith('refs/tags/') && !r.ref.endsWith('^{}'))
        .map((r) => [r.ref.slice('refs/tags/'.length), r]),
    );
    const tag = pickSemverTag([...tags.keys()], ref.semver);
    const found = tag === undefined ? undefined : tags.get(tag);
    if (!found)
      throw new SourceError(
        'RefNotFound',
        `no tag of ${redactUrl(req.url)} matches semver ${JSON.stringify(ref.semver)}`,
      );
    return { name: found.ref, commit: target(found) };
  }

  /**
   * ensure makes sure the resolved commit is in the cache, fetching it (depth 1, only that ref) when it is not, and
   * returns the commit to read: the resolved one, or the ref's new commit if the ref moved since it was resolved.
   */
  async ensure(req: SourceRequest, resolved: ResolvedRef): Promise<string> {
    return this.withCache(req.url, req.credentials, (gitdir) =>
      this.ensureLocked(gitdir, req, resolved, this.budget()),
    );
  }

  /** read parses the manifests under `path` in a cached commit. */
  async read(url: string, commit: string, path: string | undefined, credentials?: Credentials): Promise<TreeContent> {
    return this.withCache(url, credentials, (gitdir) => readTree(gitdir, commit, normalizePath(path), this.limits));
  }

  /** verify checks the signature of a cached commit. */
  async verify(url: string, commit: string, keys: VerifyKeys, credentials?: Credentials): Promise<VerificationResult> {
    return this.withCache(url, credentials, (gitdir) => verifyCommit({ fs, gitdir, oid: commit, keys }));
  }

  /**
   * artifact resolves the ref (unless given the result), fetches what is missing, checks that the commit descends
   * from `since` (NotDescendant otherwise, unless `allowRevision` names it), verifies the signatures when asked — of
   * the commit and of every commit since `since` (VerificationFailed) — and reads the path into an immutable Artifact.
   * The bytes fetched for it are capped (LimitExceeded).
   */
  async artifact(req: SourceRequest, resolved?: ResolvedRef): Promise<Artifact> {
    const path = normalizePath(req.path);
    const target = resolved ?? (await this.resolve(req));
    return this.withCache(req.url, req.credentials, async (gitdir) => {
      const budget = this.budget();
      const commit = await this.ensureLocked(gitdir, req, target, budget);
      const range = await this.descent(gitdir, req, target, commit, budget);
      let verification: VerificationResult | undefined;
      if (req.verify) {
        for (const oid of range) {
          const v = await verifyCommit({ fs, gitdir, oid, keys: req.verify });
          if (oid === commit) verification = v;
          if (!v.verified) {
            const which =
              oid === commit
                ? `commit ${commit}`
                : `commit ${oid} (between the last applied ${req.since} and ${commit})`;
            throw new SourceError(
              'VerificationFailed',
              `${which} of ${redactUrl(req.url)}: ${v.reason ?? 'not verified'}`,
            );
          }
        }
      }
      const content = await readTree(gitdir, commit, path, this.limits);
      const artifact: Artifact = {
        url: redactUrl(req.url),
        ref: formatRef(req.ref),
        revision: commit,
        digest: content.digest,
        path,
        documents: content.documents,
        parseErrors: content.parseErrors,
        ...(verification ? { verification } : {}),
        fetchedAt: new Date().toISOString(),
      };
      return deepFreeze(artifact);
    });
  }

  /**
   * descent returns the commits whose signatures must be checked — the new one and every one since the last applied
   * revision — after making sure the new commit descends from it, deepening the shallow cache step by step up to
   * limits.maxHistoryCommits. A revision that does not descend is refused unless `allowRevision` names it, and so is
   * every revision when the base is lost (`baseLost`).
   */
  private async descent(
    gitdir: string,
    req: SourceRequest,
    resolved: ResolvedRef,
    commit: string,
    budget: Budget,
  ): Promise<string[]> {
    if (req.baseLost !== undefined) {
      if (req.allowRevision === commit) return [commit];
      throw new SourceError(
        'NotDescendant',
        `revision ${commit} cannot be checked to descend from the last applied one: ${req.baseLost}; nothing of it is applied. ` +
          `To apply it anyway, annotate the GitSource with ${ALLOW_REVISION_ANNOTATION}=${commit}`,
      );
    }
    const since = req.since;
    if (!since || since === commit) return since === commit ? [] : [commit];
    if (req.allowRevision === commit) return [commit];
    const cap = this.limits.maxHistoryCommits;
    const parentsOf = async (oid: string): Promise<readonly string[] | undefined> => {
      if (!(await hasCommit(gitdir, oid))) return undefined;
      return (await git.readCommit({ fs, gitdir, oid, cache: {} })).commit.parent;
    };
    const refuse = (why: string) =>
      new SourceError(
        'NotDescendant',
        `revision ${commit} does not descend from last applied ${since}${why}; nothing of it is applied. ` +
          `To apply it anyway, annotate the GitSource with ${ALLOW_REVISION_ANNOTATION}=${commit}`,
      );
    const ref = 'commit' in req.ref ? commit : resolved.name;
    let depth = 1;
    for (let step = 32; ; step *= 4) {
      const range = await commitsSince(commit, since, parentsOf, cap);
      if (range.kind === 'found') return range.commits;
      if (range.kind === 'notDescendant') throw refuse('');
      if (range.kind === 'capExceeded' || depth > cap)
        throw refuse(` within ${cap} commits (gitops.limits.maxHistoryCommits)`);
      const more = Math.min(step, cap + 1 - depth);
      await this.fetch(gitdir, req, ref, more, budget, true);
      depth += more;
    }
  }

  private budget(): Budget {
    const { maxFetchBytes: max, maxObjectBytes, maxUnpackedBytes } = this.limits;
    return { fetched: 0, max, unpack: { maxObjectBytes, maxUnpackedBytes, unpacked: 0 } };
  }

  private async ensureLocked(
    gitdir: string,
    req: SourceRequest,
    resolved: ResolvedRef,
    budget: Budget,
  ): Promise<string> {
    if (await hasCommit(gitdir, resolved.commit)) return resolved.commit;
    if ('commit' in req.ref) return this.fetchCommit(gitdir, req, resolved.commit, budget);
    const result = await this.fetch(gitdir, req, resolved.name, 1, budget);
    if (await hasCommit(gitdir, resolved.commit)) return resolved.commit;
    const fetched = result.fetchHead ? await peelToCommit(gitdir, result.fetchHead) : undefined;
    if (fetched && (await hasCommit(gitdir, fetched))) {
      this.log.info(
        { url: redactUrl(req.url), ref: resolved.name, resolved: resolved.commit, fetched },
        'ref moved while fetching',
      );
      return fetched;
    }
    throw new SourceError(
      'FetchFailed',
      `fetching ${resolved.name} from ${redactUrl(req.url)} did not bring commit ${resolved.commit}`,
    );
  }

  /** fetchCommit fetches a commit by id, or, when the server refuses that, deepens the default branch until found. */
  private async fetchCommit(gitdir: string, req: SourceRequest, commit: string, budget: Budget): Promise<string> {
    try {
      await this.fetch(gitdir, req, commit, 1, budget);
    } catch (err) {
      if (err instanceof SourceError && FINAL_FETCH_ERRORS.has(err.reason)) throw err;
      this.log.debug(
        { url: redactUrl(req.url), commit, err: errorMessage(err) },
        'fetch by commit id failed; deepening the default branch',
      );
    }
    if (await hasCommit(gitdir, commit)) return commit;
    for (const depth of COMMIT_DEEPEN_STEPS) {
      await this.fetch(gitdir, req, 'HEAD', depth, budget);
      if (await hasCommit(gitdir, commit)) return commit;
    }
    throw new SourceError(
      'RefNotFound',
      `commit ${commit} not found in ${redactUrl(req.url)}: the server does not send it by id and it is not in the history of the default branch`,
    );
  }

  private async fetch(
    gitdir: string,
    req: SourceRequest,
    ref: string,
    depth: number,
    budget: Budget,
    relative = false,
  ): Promise<FetchResult> {
    this.stats.fetches++;
    this.log.debug({ url: redactUrl(req.url), ref, depth, relative }, 'fetching');
    return this.network(req, `fetch ${ref} from ${redactUrl(req.url)}`, budget, (http, onAuth) =>
      git.fetch({
        fs,
        http,
        gitdir,
        url: req.url,
        ref,
        singleBranch: true,
        depth,
        relative,
        tags: ref.startsWith('refs/tags/'),
        onAuth,
        cache: {},
      }),
    );
  }

  /** network runs one network call with this fetcher's transport (see transport.ts). */
  private async network<T>(
    req: Pick<SourceRequest, 'url' | 'credentials' | 'timeoutMs'>,
    what: string,
    budget: Budget,
    call: (http: HttpClient, onAuth: (() => GitAuth) | undefined) => Promise<T>,
  ): Promise<T> {
    const transport = {
      timeoutMs: this.timeoutMs,
      addresses: this.addresses,
      resolver: this.resolver,
      http: this.http,
    };
    return network(transport, req, what, budget, call);
  }

  /** withCache runs `fn` on the initialized cache repository of `url` and credentials, holding its in-process and file locks. */
  private async withCache<T>(
    url: string,
    credentials: Credentials | undefined,
    fn: (gitdir: string) => Promise<T>,
  ): Promise<T> {
    refuseUnsafeUrl(url);
    const dir = this.cacheDir(url, credentials);
    const previous = this.locks.get(dir) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((ok) => (release = ok));
    const tail = previous.then(() => mine);
    this.locks.set(dir, tail);
    await previous;
    try {
      await mkdir(dir, { recursive: true });
      let unlock: () => Promise<void>;
      try {
        unlock = await lockfile.lock(dir, {
          lockfilePath: `${dir}.lock`,
          stale: 30_000,
          retries: { retries: Math.ceil(this.timeoutMs / 100), minTimeout: 100, maxTimeout: 100, factor: 1 },
          onCompromised: (err) => this.log.warn({ dir, err: err.message }, 'cache lock compromised'),
        });
      } catch (err) {
        throw new SourceError('Timeout', `cache ${dir} stayed locked by another process: ${errorMessage(err)}`, {
          cause: err,
        });
      }
      try {
        await initCache(dir, url);
        return await fn(dir);
      } finally {
        await unlock().catch(() => undefined);
      }
    } finally {
      release();
      if (this.locks.get(dir) === tail) this.locks.delete(dir);
    }
  }
}
