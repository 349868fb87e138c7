/**
 * What a git source asks for: the ref to follow, credentials, the request and its limits, and the pure helpers that
 * name refs, URLs and cache directories.
 */
import { createHash } from 'node:crypto';
import semver from 'semver';
import { SourceError } from './errors.ts';
import { HISTORY_CAP_DEFAULT } from './history.ts';
import type { VerifyKeys } from './verify.ts';

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
  /** YAML documents of all manifest files together (default 5000) */
  maxDocuments?: number;
  /** bytes of one git object once inflated, checked before it is unpacked (default 16 MiB) */
  maxObjectBytes?: number;
  /** bytes of all git objects fetched for a revision once inflated (default 256 MiB) */
  maxUnpackedBytes?: number;
}

/** SOURCE_LIMIT_DEFAULTS are the defaults of SourceLimits, as in schemas/manager-config.schema.json. */
export const SOURCE_LIMIT_DEFAULTS: Required<SourceLimits> = {
  maxFetchBytes: 64 * 1024 * 1024,
  maxFiles: 1000,
  maxFileBytes: 4 * 1024 * 1024,
  maxTotalBytes: 16 * 1024 * 1024,
  maxHistoryCommits: HISTORY_CAP_DEFAULT,
  maxDocuments: 5000,
  maxObjectBytes: 16 * 1024 * 1024,
  maxUnpackedBytes: 256 * 1024 * 1024,
};

/** ResolvedRef is a ref resolved against the server. */
export interface ResolvedRef {
  /** the full ref name (`refs/heads/main`, `refs/tags/v1.2.0`), or the commit id for commit refs */
  name: string;
  commit: string;
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
 * cacheKey is the cache directory name of a URL and the credentials used for it: a hash of the URL without trailing
 * slashes (credentials written into it included: the fetcher refuses such a URL, and the key would keep it apart all
 * the same) and, when there are credentials, of their identity. Two GitSources with different credentials for one URL
 * never share fetched objects.
 */
export function cacheKey(url: string, credentials?: Credentials): string {
  const hash = createHash('sha256').update(url.replace(/\/+$/, ''));
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
