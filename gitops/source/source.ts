/**
 * The git source: resolves a ref with a cheap ref listing, fetches (depth 1) only commits the cache does not hold,
 * reads the YAML and JSON files under a path straight from the object database (no checkout) and turns them into an
 * immutable Artifact.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import git, { type FetchResult, type GitAuth, type HttpClient, type ServerRef } from 'isomorphic-git';
import nodeHttp from 'isomorphic-git/http/node';
import * as lockfile from 'proper-lockfile';
import semver from 'semver';
import { LineCounter, parseAllDocuments } from 'yaml';
import type { Artifact, ParseError, SourceDocument } from '../artifact.ts';
import { childLogger, type Logger } from '../../core/log.ts';
import {
  hostOf,
  pinnedAgent,
  resolveChecked,
  systemResolver,
  type AddressPolicy,
  type ResolvedAddress,
  type Resolver,
} from './address.ts';
import { defaultHosts, withCredentialsFor } from './credentials.ts';
import { SourceError, type SourceErrorReason } from './errors.ts';
import { ALLOW_REVISION_ANNOTATION, HISTORY_CAP_DEFAULT, commitsSince } from './history.ts';
import { verifyCommit, type VerificationResult, type VerifyKeys } from './verify.ts';

/** GitRef is what to follow in the repository. */
export type GitRef = { branch: string } | { tag: string } | { semver: string } | { commit: string };

/** Credentials authenticate to the git server: basic, or a token sent as the password (user `x-access-token`). */
export type Credentials = ({ username: string; password: string } | { token: string; username?: string }) & {
  /**
   * the hosts (host or host:port) they may be sent to (gitops/source/credentials.ts); absent, only the host and port
   * of the request's url. A request elsewhere (a redirect, say) goes without them.
   */
  hosts?: readonly string[];
};

/** SourceRequest is one source to read. */
export interface SourceRequest {
  url: string;
  ref: GitRef;
  /** directory (or single file) to read, relative to the repository root; empty or `.` for the root */
  path?: string;
  credentials?: Credentials;
  /** timeout of each network call, in milliseconds (default: the fetcher's) */
  timeoutMs?: number;
  /**
   * when set, the commit must carry a valid signature by one of these keys, and so must every commit between `since`
   * and it
   */
  verify?: VerifyKeys;
  /** the last applied revision: the new one must descend from it (no silent rollback) */
  since?: string;
  /** a revision allowed even though it does not descend from `since` (ALLOW_REVISION_ANNOTATION) */
  allowRevision?: string;
  /**
   * why the last applied revision is not known although something was applied before: every revision is then refused
   * (NotDescendant) except the one `allowRevision` names
   */
  baseLost?: string;
}

/** SourceLimits bound the work of one revision; the defaults are those of the manager configuration schema. */
export interface SourceLimits {
  /** bytes received from the server per revision (ref listing excluded; default 64 MiB) */
  maxFetchBytes?: number;
  /** manifest files and directories read under the path (default 1000) */
  maxFiles?: number;
  /** bytes of one manifest file; a larger file is a parse error (default 4 MiB) */
  maxFileBytes?: number;
  /** bytes of all manifest files together (default 16 MiB) */
  maxTotalBytes?: number;
  /** commits walked from a new revision to find the last applied one (default 1000) */
  maxHistoryCommits?: number;
}

/** SOURCE_LIMIT_DEFAULTS are the defaults of SourceLimits, as in schemas/manager-config.schema.json. */
export const SOURCE_LIMIT_DEFAULTS: Required<SourceLimits> = {
  maxFetchBytes: 64 * 1024 * 1024,
  maxFiles: 1000,
  maxFileBytes: 4 * 1024 * 1024,
  maxTotalBytes: 16 * 1024 * 1024,
  maxHistoryCommits: HISTORY_CAP_DEFAULT,
};

/** ResolvedRef is a ref resolved against the server. */
export interface ResolvedRef {
  /** the full ref name (`refs/heads/main`, `refs/tags/v1.2.0`), or the commit id for commit refs */
  name: string;
  commit: string;
}

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

/** TreeContent is what was read from one commit. */
export interface TreeContent {
  documents: SourceDocument[];
  parseErrors: ParseError[];
  digest: string;
}

/** INFINITE_DEPTH is git's depth for "all history". */
const INFINITE_DEPTH = 0x7fffffff;
/** COMMIT_DEEPEN_STEPS are the depths tried on the default branch when a server refuses to send a commit by id. */
const COMMIT_DEEPEN_STEPS = [50, 1000, INFINITE_DEPTH] as const;
const MANIFEST_EXTENSIONS = ['.yaml', '.yml', '.json'] as const;
const TOKEN_USERNAME = 'x-access-token';
const MAX_REDIRECTS = 5;
/** FINAL_FETCH_ERRORS end a fetch by commit id at once instead of falling back to deepening the default branch. */
const FINAL_FETCH_ERRORS: ReadonlySet<SourceErrorReason> = new Set([
  'AuthenticationFailed',
  'Timeout',
  'AddressRefused',
  'LimitExceeded',
]);

/** Budget is what one revision may still fetch. */
interface Budget {
  fetched: number;
  max: number;
}

function definedOf<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** formatRef renders a GitRef as the Artifact's `ref` (`branch:main`, `tag:v1`, `semver:>=1 <2`, `commit:<sha>`). */
export function formatRef(ref: GitRef): string {
  if ('branch' in ref) return `branch:${ref.branch}`;
  if ('tag' in ref) return `tag:${ref.tag}`;
  if ('semver' in ref) return `semver:${ref.semver}`;
  return `commit:${ref.commit}`;
}

/** redactUrl removes credentials embedded in a URL. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
}

/**
 * cacheKey is the cache directory name of a URL and the credentials used for it: a hash of the URL without
 * credentials or trailing slashes and, when there are credentials, of their identity. Two GitSources with different
 * credentials for one URL never share fetched objects.
 */
export function cacheKey(url: string, credentials?: Credentials): string {
  const hash = createHash('sha256').update(redactUrl(url).replace(/\/+$/, ''));
  if (credentials) {
    const secret = 'token' in credentials ? credentials.token : credentials.password;
    const kind = 'token' in credentials ? 'token' : 'basic';
    hash.update(`\0${kind}\0${credentials.username ?? ''}\0${createHash('sha256').update(secret).digest('hex')}`);
  }
  return hash.digest('hex').slice(0, 32);
}

/** normalizePath turns a source path into a repository-relative path without leading `./` or slashes ('' for the root). */
export function normalizePath(path: string | undefined): string {
  const parts = (path ?? '').split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw new SourceError('InvalidSpec', `path ${JSON.stringify(path)} must not contain ".."`);
  return parts.join('/');
}

/** pickSemverTag returns the tag with the highest version satisfying `range`, or undefined. */
export function pickSemverTag(tags: readonly string[], range: string): string | undefined {
  if (!semver.validRange(range)) throw new SourceError('InvalidSpec', `invalid semver range ${JSON.stringify(range)}`);
  let best: { tag: string; version: semver.SemVer } | undefined;
  for (const tag of [...tags].sort()) {
    const version = semver.parse(tag);
    if (!version || !semver.satisfies(version, range)) continue;
    if (!best || semver.gt(version, best.version)) best = { tag, version };
  }
  return best?.tag;
}

/** contentDigest is `sha256:<hex>` over the files sorted by path, each as path, length and content. */
export function contentDigest(files: ReadonlyArray<{ path: string; content: Uint8Array }>): string {
  const hash = createHash('sha256');
  for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    hash.update(`${file.path}\0${file.content.length}\0`);
    hash.update(file.content);
  }
  return `sha256:${hash.digest('hex')}`;
}

/**
 * parseManifests parses one file as a stream of YAML documents (JSON is YAML). A file with any error yields one
 * ParseError and no documents; empty documents are skipped; `index` is the document's position in the file.
 */
export function parseManifests(file: string, text: string): { documents: SourceDocument[]; error?: ParseError } {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  const documents: SourceDocument[] = [];
  for (const [index, doc] of docs.entries()) {
    const yamlError = doc.errors[0];
    if (yamlError) {
      const pos = yamlError.linePos?.[0];
      return {
        documents: [],
        error: {
          file,
          ...(pos ? { line: pos.line, column: pos.col } : {}),
          message: (yamlError.message.split('\n')[0] ?? yamlError.code).replace(/ at line \d+, column \d+:?$/, ''),
        },
      };
    }
    const at = doc.contents?.range?.[0];
    const pos = at === undefined ? undefined : lineCounter.linePos(at);
    const where = pos ? { line: pos.line, column: pos.col } : {};
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      return { documents: [], error: { file, ...where, message: `document ${index}: ${errorMessage(err)}` } };
    }
    if (value === null || value === undefined) continue;
    if (typeof value !== 'object' || Array.isArray(value)) {
      return { documents: [], error: { file, ...where, message: `document ${index} is not a mapping` } };
    }
    documents.push({ file, index, object: value as Record<string, unknown> });
  }
  return { documents };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
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
    return this.withCache(url, credentials, (gitdir) => this.readLocked(gitdir, commit, normalizePath(path)));
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
      const content = await this.readLocked(gitdir, commit, path);
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
    return { fetched: 0, max: this.limits.maxFetchBytes };
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

  private async readLocked(gitdir: string, commit: string, path: string): Promise<TreeContent> {
    const cache = {};
    const { commit: parsed } = await git.readCommit({ fs, gitdir, oid: commit, cache });
    const root = await this.lookup(gitdir, parsed.tree, path, commit, cache);
    const files: Array<{ path: string; content: Uint8Array }> = [];
    const { maxFiles, maxTotalBytes } = this.limits;
    let entries = 0;
    let bytes = 0;
    const where = `${JSON.stringify(path)} of commit ${commit}`;
    const count = (what: string, size: number): void => {
      entries++;
      bytes += size;
      if (entries > maxFiles) {
        throw new SourceError(
          'LimitExceeded',
          `path ${where} holds more than ${maxFiles} manifest files and directories (gitops.limits.maxFiles); nothing of it is applied`,
        );
      }
      if (bytes > maxTotalBytes) {
        throw new SourceError(
          'LimitExceeded',
          `manifests under ${where} exceed ${maxTotalBytes} bytes at ${what} (gitops.limits.maxTotalBytes); nothing of it is applied`,
        );
      }
    };
    const visit = async (treeOid: string, prefix: string): Promise<void> => {
      const { tree } = await git.readTree({ fs, gitdir, oid: treeOid, cache });
      for (const entry of tree) {
        const entryPath = prefix ? `${prefix}/${entry.path}` : entry.path;
        if (entry.type === 'tree') {
          count(entryPath, 0);
          await visit(entry.oid, entryPath);
        } else if (entry.type === 'blob' && entry.mode !== '120000' && isManifest(entryPath)) {
          const { blob } = await git.readBlob({ fs, gitdir, oid: entry.oid, cache });
          count(entryPath, Math.min(blob.length, this.limits.maxFileBytes + 1));
          files.push({ path: entryPath, content: blob });
        }
      }
    };
    if (root.type === 'tree') await visit(root.oid, path);
    else if (isManifest(path)) {
      const { blob } = await git.readBlob({ fs, gitdir, oid: root.oid, cache });
      files.push({ path, content: blob });
    }
    files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

    const documents: SourceDocument[] = [];
    const parseErrors: ParseError[] = [];
    const decoder = new TextDecoder('utf-8', { fatal: true });
    for (const file of files) {
      if (file.content.length > this.limits.maxFileBytes) {
        parseErrors.push({
          file: file.path,
          message: `file is larger than ${this.limits.maxFileBytes} bytes (gitops.limits.maxFileBytes)`,
        });
        continue;
      }
      let text: string;
      try {
        text = decoder.decode(file.content);
      } catch {
        parseErrors.push({ file: file.path, message: 'file is not valid UTF-8' });
        continue;
      }
      const parsed = parseManifests(file.path, text);
      documents.push(...parsed.documents);
      if (parsed.error) parseErrors.push(parsed.error);
    }
    return { documents, parseErrors, digest: contentDigest(files) };
  }

  /** lookup finds the tree (or blob) at `path` under the root tree of a commit. */
  private async lookup(
    gitdir: string,
    rootTree: string,
    path: string,
    commit: string,
    cache: object,
  ): Promise<{ type: 'tree' | 'blob'; oid: string }> {
    let current: { type: 'tree' | 'blob'; oid: string } = { type: 'tree', oid: rootTree };
    for (const part of path ? path.split('/') : []) {
      const entry =
        current.type === 'tree'
          ? (await git.readTree({ fs, gitdir, oid: current.oid, cache })).tree.find((e) => e.path === part)
          : undefined;
      if (!entry || (entry.type !== 'tree' && entry.type !== 'blob') || entry.mode === '120000') {
        throw new SourceError('PathNotFound', `path ${JSON.stringify(path)} not found in commit ${commit}`);
      }
      current = { type: entry.type, oid: entry.oid };
    }
    return current;
  }

  /** network runs one network call with the request's credentials and a timeout, mapping failures to SourceErrors. */
  private async network<T>(
    req: Pick<SourceRequest, 'url' | 'credentials' | 'timeoutMs'>,
    what: string,
    budget: Budget,
    call: (http: HttpClient, onAuth: (() => GitAuth) | undefined) => Promise<T>,
  ): Promise<T> {
    const timeoutMs = req.timeoutMs ?? this.timeoutMs;
    const controller = new AbortController();
    // Each host is resolved once per call and checked; connections go only to the checked addresses. Redirects are
    // followed here (GET only), so that every hop is checked too.
    const resolved = new Map<string, Promise<ResolvedAddress[]>>();
    const checked = (url: string): Promise<ResolvedAddress[]> => {
      const host = hostOf(url);
      let p = resolved.get(host);
      if (!p) resolved.set(host, (p = resolveChecked(url, this.addresses, this.resolver)));
      return p;
    };
    let overBudget: SourceError | undefined;
    const counted = (
      body: AsyncIterableIterator<Uint8Array> | undefined,
    ): AsyncIterableIterator<Uint8Array> | undefined => {
      if (!body) return body;
      return (async function* () {
        for await (const chunk of body) {
          budget.fetched += chunk.byteLength;
          if (budget.fetched > budget.max) {
            overBudget = new SourceError(
              'LimitExceeded',
              `${what}: the server sent more than ${budget.max} bytes for this revision (gitops.limits.maxFetchBytes)`,
            );
            controller.abort(overBudget);
            throw overBudget;
          }
          yield chunk;
        }
      })();
    };
    const credentialHosts = req.credentials?.hosts ?? defaultHosts(req.url);
    const http: HttpClient = {
      request: async (r) => {
        let url = r.url;
        for (let hop = 0; ; hop++) {
          if (controller.signal.aborted) throw controller.signal.reason;
          const addresses = await checked(url);
          const res = await this.http.request({
            ...r,
            headers: withCredentialsFor(r.headers, url, credentialHosts, req.url),
            url,
            agent: pinnedAgent(url, hostOf(url), addresses),
            fetchOptions: { ...(r.fetchOptions ?? {}), followRedirects: false },
            signal: controller.signal,
          });
          const location = res.headers?.location;
          const redirect =
            res.statusCode >= 300 && res.statusCode < 400 && location && (r.method ?? 'GET').toUpperCase() === 'GET';
          if (redirect && hop < MAX_REDIRECTS) {
            url = new URL(location, url).toString();
            continue;
          }
          return { ...res, url, body: counted(res.body) };
        }
      },
    };
    const creds = req.credentials;
    const onAuth = creds
      ? (): GitAuth =>
          'token' in creds
            ? { username: creds.username ?? TOKEN_USERNAME, password: creds.token }
            : { username: creds.username, password: creds.password }
      : undefined;
    const secrets = creds ? ['token' in creds ? creds.token : creds.password].filter((s) => s.length > 0) : [];
    const op = call(http, onAuth);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort(new SourceError('Timeout', `${what}: timed out after ${timeoutMs}ms`));
        // Give the aborted call a moment to unwind before the cache lock is released.
        const settled = op.then(
          () => undefined,
          () => undefined,
        );
        const grace = new Promise<void>((ok) => setTimeout(ok, 1000).unref());
        void Promise.race([settled, grace]).then(() => reject(controller.signal.reason));
      }, timeoutMs);
    });
    try {
      return await Promise.race([op, timedOut]);
    } catch (err) {
      if (overBudget) throw overBudget;
      if (controller.signal.aborted) throw controller.signal.reason;
      throw toSourceError(err, what, secrets);
    } finally {
      clearTimeout(timer);
    }
  }

  /** withCache runs `fn` on the initialized cache repository of `url` and credentials, holding its in-process and file locks. */
  private async withCache<T>(
    url: string,
    credentials: Credentials | undefined,
    fn: (gitdir: string) => Promise<T>,
  ): Promise<T> {
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

function isManifest(path: string): boolean {
  const lower = path.toLowerCase();
  return MANIFEST_EXTENSIONS.some((ext) => lower.endsWith(ext));
}

async function initCache(gitdir: string, url: string): Promise<void> {
  if (fs.existsSync(join(gitdir, 'config'))) return;
  await git.init({ fs, gitdir, bare: true });
  await git.setConfig({ fs, gitdir, path: 'remote.origin.url', value: redactUrl(url) });
  await git.setConfig({ fs, gitdir, path: 'remote.origin.fetch', value: '+refs/heads/*:refs/remotes/origin/*' });
}

async function hasCommit(gitdir: string, oid: string): Promise<boolean> {
  try {
    const { type } = await git.readObject({ fs, gitdir, oid, format: 'content' });
    return type === 'commit';
  } catch {
    return false;
  }
}

async function peelToCommit(gitdir: string, oid: string): Promise<string | undefined> {
  let current = oid;
  for (let i = 0; i < 10; i++) {
    try {
      const { type, object } = await git.readObject({ fs, gitdir, oid: current, format: 'parsed' });
      if (type === 'commit') return current;
      if (type !== 'tag') return undefined;
      current = (object as { object: string }).object;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** toSourceError classifies an isomorphic-git or network failure; credentials never reach the message. */
function toSourceError(err: unknown, what: string, secrets: readonly string[]): SourceError {
  if (err instanceof SourceError) return err;
  const e = err as { code?: string; name?: string; message?: string; data?: { statusCode?: number } };
  let message = `${what}: ${e.message ?? String(err)}`;
  message = redactUrl(message).replace(/(https?:\/\/)[^/@\s]*@/gi, '$1');
  for (const secret of secrets) message = message.split(secret).join('***');
  if (e.code === 'HttpError' && (e.data?.statusCode === 401 || e.data?.statusCode === 403)) {
    return new SourceError(
      'AuthenticationFailed',
      `${what}: the server refused the credentials (HTTP ${e.data.statusCode})`,
    );
  }
  if (e.code === 'UserCanceledError')
    return new SourceError('AuthenticationFailed', `${what}: authentication was cancelled`);
  if (e.name === 'AbortError' || e.code === 'ABORT_ERR') return new SourceError('Timeout', message);
  if (e.code === 'NotFoundError') return new SourceError('RefNotFound', message);
  return new SourceError('FetchFailed', message);
}
