import { readFile } from 'node:fs/promises';
import { childLogger } from '../log.ts';
import { runExecPlugin, type ExecConfig, type ExecResult } from './exec.ts';

/**
 * The credentials a KubeClient sends, got per request from a source that caches them, as client-go's transport does:
 * a token file is re-read when its check interval has passed (the kubelet rewrites a projected ServiceAccount token
 * about hourly), an exec plugin runs when first needed and again once its credential has expired, client certificate
 * files are re-read on the same interval as token files; after a 401 every source drops what it gave, so the one
 * retry of that request carries fresh credentials. A request whose credentials are fresh reads no file and runs
 * nothing: the cached value is returned at once.
 */

const log = childLogger({ controller: 'kube-credentials' });

/** FILE_CHECK_MS is how long a token or certificate file read is trusted before it is read again (client-go: 1 min). */
export const FILE_CHECK_MS = 60_000;

/** Auth is what one request carries: an Authorization header value and/or a client certificate and key (PEM). */
export interface Auth {
  authorization?: string;
  cert?: string;
  key?: string;
}

/** CredentialSource gives the credentials of the next request and hears of the ones the server refused. */
export interface CredentialSource {
  /** get returns the credentials for the next request: the cached ones at once while they are fresh. */
  get(): Auth | Promise<Auth>;
  /**
   * rejected says the server answered 401 to a request carrying `used`. It returns true when the source will give
   * other credentials than `used` on the next get (it re-reads or re-runs), so one retry is worth sending.
   */
  rejected(used: Auth): boolean;
}

/** Cached is a value and the epoch millisecond until which it may be used without asking its origin again. */
export interface Cached<T> {
  value: T;
  validUntil: number;
}

/** isFresh reports whether a cached value may still be used at `now` (no value: not fresh). */
export function isFresh<T>(c: Cached<T> | undefined, now: number): c is Cached<T> {
  return c !== undefined && now < c.validUntil;
}

/**
 * execValidUntil is until when an exec plugin's credential is used: its expirationTimestamp, or for ever (until a 401)
 * when it has none, as client-go.
 */
export function execValidUntil(r: ExecResult): number {
  return r.expiresAt ?? Number.POSITIVE_INFINITY;
}

/** staticSource gives the same credentials to every request: inline tokens and certificates never change. */
export function staticSource(auth: Auth): CredentialSource {
  const frozen = Object.freeze({ ...auth });
  return { get: () => frozen, rejected: () => false };
}

/**
 * CachingSource keeps the last credentials its `load` gave until their validUntil, runs one load at a time for all
 * the requests that wait, and forgets them after a 401 that carried them. A failed load with credentials on hand
 * keeps those (logged) and tries again on the next check; without any, the request fails with the load's error.
 */
export class CachingSource implements CredentialSource {
  private cached?: Cached<Auth>;
  private loading?: Promise<Auth>;

  constructor(
    /** what is loaded, for the log, e.g. `token file /var/run/...` */
    private readonly what: string,
    private readonly load: () => Promise<Cached<Auth>>,
    private readonly now: () => number = Date.now,
    /** retryMs is how long credentials kept after a failed load are used before the next try */
    private readonly retryMs = 10_000,
  ) {}

  get(): Auth | Promise<Auth> {
    if (isFresh(this.cached, this.now())) return this.cached.value;
    this.loading ??= this.load().then(
      (c) => {
        this.cached = c;
        this.loading = undefined;
        return c.value;
      },
      (e: unknown) => {
        this.loading = undefined;
        const kept = this.cached;
        if (!kept) throw e;
        log.warn({ err: e }, `${this.what}: could not be read again; using the credentials read before`);
        this.cached = { value: kept.value, validUntil: this.now() + this.retryMs };
        return kept.value;
      },
    );
    return this.loading;
  }

  rejected(used: Auth): boolean {
    const c = this.cached;
    if (!c) return true;
    if (!sameAuth(c.value, used)) return true;
    this.cached = { value: c.value, validUntil: Number.NEGATIVE_INFINITY };
    return true;
  }
}

/**
 * fileTokenSource reads a bearer token from a file (a kubeconfig user's tokenFile, the in-cluster ServiceAccount
 * token) and reads it again every `checkMs`, or at once after a 401. An empty file is an error naming it.
 */
export function fileTokenSource(path: string, checkMs = FILE_CHECK_MS, now: () => number = Date.now): CachingSource {
  return new CachingSource(
    `token file ${path}`,
    async () => {
      const token = (await readFile(path, 'utf8')).trim();
      if (!token) throw new Error(`token file ${path} is empty`);
      return { value: { authorization: `Bearer ${token}` }, validUntil: now() + checkMs };
    },
    now,
  );
}

/** certFileSource reads a client certificate and key from files and reads them again every `checkMs` or after a 401. */
export function certFileSource(
  certPath: string,
  keyPath: string,
  checkMs = FILE_CHECK_MS,
  now: () => number = Date.now,
): CachingSource {
  return new CachingSource(
    `client certificate ${certPath} (key ${keyPath})`,
    async () => {
      const [cert, key] = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
      return { value: { cert, key }, validUntil: now() + checkMs };
    },
    now,
  );
}

/**
 * execSource runs an exec credential plugin when credentials are first needed, and again once they have expired or
 * were refused with a 401.
 */
export function execSource(
  cfg: ExecConfig,
  user: string,
  now: () => number = Date.now,
  run: (cfg: ExecConfig, user: string) => Promise<ExecResult> = runExecPlugin,
): CachingSource {
  return new CachingSource(
    `exec plugin ${cfg.command} of user "${user}"`,
    async () => {
      const r = await run(cfg, user);
      const value: Auth = {};
      if (r.token) value.authorization = `Bearer ${r.token}`;
      if (r.certPem && r.keyPem) Object.assign(value, { cert: r.certPem, key: r.keyPem });
      return { value, validUntil: execValidUntil(r) };
    },
    now,
  );
}

/** joinSources merges the credentials of several sources (a token from one, a certificate from another). */
export function joinSources(sources: CredentialSource[]): CredentialSource {
  if (sources.length === 1) return sources[0]!;
  return {
    get() {
      const parts = sources.map((s) => s.get());
      if (parts.every((p) => !(p instanceof Promise))) return Object.assign({}, ...(parts as Auth[])) as Auth;
      return Promise.all(parts).then((all) => Object.assign({}, ...all) as Auth);
    },
    rejected(used) {
      let any = false;
      for (const s of sources) any = s.rejected(used) || any;
      return any;
    },
  };
}

/** sameAuth reports whether two credentials are the same, field by field. */
function sameAuth(a: Auth, b: Auth): boolean {
  // A joined source hands each part the merged credentials: compare only the fields this part gives.
  return (
    (a.authorization === undefined || a.authorization === b.authorization) &&
    (a.cert === undefined || a.cert === b.cert) &&
    (a.key === undefined || a.key === b.key)
  );
}
