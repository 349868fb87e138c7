import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** ImageRef is a parsed image reference: the registry host, the repository in it, and a tag or a digest. */
export interface ImageRef {
  /** the registry as written in references (`docker.io`, `127.0.0.1:5000`) */
  registry: string;
  /** the host the API is served on (docker.io's is registry-1.docker.io) */
  apiHost: string;
  repository: string;
  tag?: string;
  digest?: string;
}

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

/**
 * parseImageRef parses `[registry/]repository[:tag][@digest]` as Docker and containerd do: a first component with a
 * `.` or `:`, or `localhost`, is the registry; otherwise the registry is docker.io, where a one-part name gets
 * `library/`. Without tag or digest the tag is `latest`. A malformed reference is an error naming it and the part.
 */
export function parseImageRef(ref: string): ImageRef {
  const bad = (why: string): Error => new Error(`image reference ${JSON.stringify(ref)}: ${why}`);
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw bad(`digest ${JSON.stringify(digest)} is not sha256:<64 hex>`);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw bad(`tag ${JSON.stringify(tag)} is not valid`);
  }
  const parts = rest.split('/');
  let registry = 'docker.io';
  if (parts.length > 1 && (parts[0]!.includes('.') || parts[0]!.includes(':') || parts[0] === 'localhost')) {
    registry = parts.shift()!;
  }
  if (parts.length === 0 || parts.some((p) => !COMPONENT.test(p)))
    throw bad('the repository must be lowercase path components ([a-z0-9] separated by ".", "_", "__" or "-")');
  if (registry === 'docker.io' && parts.length === 1) parts.unshift('library');
  return {
    registry,
    apiHost: registry === 'docker.io' ? 'registry-1.docker.io' : registry,
    repository: parts.join('/'),
    tag: tag ?? (digest ? undefined : 'latest'),
    digest,
  };
}

/** Credentials are a user name and password (or a registry token as the password) for one registry. */
export interface Credentials {
  username: string;
  password: string;
  /** where they were found, for error messages */
  source: string;
}

/** dockerConfigPath is $DOCKER_CONFIG/config.json, else ~/.docker/config.json. */
export function dockerConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.DOCKER_CONFIG ?? join(homedir(), '.docker'), 'config.json');
}

/**
 * credentialsFor finds a registry's credentials in a docker config file's `auths`: under the registry host, its
 * `https://` URL, or (for docker.io) `https://index.docker.io/v1/`; `auth` (base64 `user:password`) or
 * `username` + `password`. No file or no entry gives undefined (anonymous). A registry that the file sends to a
 * credential helper (credsStore, credHelpers) without an `auths` entry is an error: helpers are not run.
 */
export function credentialsFor(registry: string, file = dockerConfigPath()): Credentials | undefined {
  if (!existsSync(file)) return undefined;
  let cfg: {
    auths?: Record<string, { auth?: string; username?: string; password?: string }>;
    credsStore?: string;
    credHelpers?: Record<string, string>;
  };
  try {
    cfg = JSON.parse(readFileSync(file, 'utf8')) as typeof cfg;
  } catch (e) {
    throw new Error(`${file}: not valid JSON: ${(e as Error).message}`);
  }
  const keys =
    registry === 'docker.io'
      ? ['docker.io', 'https://index.docker.io/v1/', 'index.docker.io', 'registry-1.docker.io']
      : [registry, `https://${registry}`, `https://${registry}/`, `http://${registry}`];
  for (const k of keys) {
    const a = cfg.auths?.[k];
    if (!a) continue;
    const where = `${file} auths[${JSON.stringify(k)}]`;
    if (a.auth) {
      const text = Buffer.from(a.auth, 'base64').toString('utf8');
      const i = text.indexOf(':');
      if (i <= 0) throw new Error(`${where}.auth: not base64 of "user:password"`);
      return { username: text.slice(0, i), password: text.slice(i + 1), source: where };
    }
    if (a.username && a.password) return { username: a.username, password: a.password, source: where };
  }
  const helper = cfg.credHelpers?.[registry] ?? cfg.credsStore;
  if (helper)
    throw new Error(
      `${file}: credentials for ${registry} are kept by the credential helper docker-credential-${helper}, which vc ` +
        `does not run; add an "auths" entry for ${registry} (docker login --password-stdin writes one without a helper)`,
    );
  return undefined;
}

/** Challenge is one parsed WWW-Authenticate challenge: its scheme and parameters (realm, service, scope). */
export interface Challenge {
  scheme: string;
  params: Record<string, string>;
}

/**
 * parseChallenge parses a WWW-Authenticate header (`Bearer realm="...",service="...",scope="..."` or
 * `Basic realm="..."`) into its scheme, lowercased, and parameters.
 */
export function parseChallenge(header: string): Challenge {
  const m = /^\s*([A-Za-z]+)\s*(.*)$/s.exec(header);
  if (!m) throw new Error(`WWW-Authenticate ${JSON.stringify(header)}: no scheme`);
  const params: Record<string, string> = {};
  const re = /([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))\s*,?\s*/g;
  for (let p = re.exec(m[2]!); p; p = re.exec(m[2]!)) {
    params[p[1]!.toLowerCase()] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : p[3]!;
  }
  return { scheme: m[1]!.toLowerCase(), params };
}
