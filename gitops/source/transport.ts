/**
 * One network call of the git source: credentials, a timeout, a byte budget for the revision, and connections only to
 * checked addresses (every redirect hop included); failures become SourceErrors without credentials in them.
 */
import type { GitAuth, HttpClient } from 'isomorphic-git';
import {
  hostOf,
  pinnedAgent,
  resolveChecked,
  type AddressPolicy,
  type ResolvedAddress,
  type Resolver,
} from './address.ts';
import { defaultHosts, withCredentialsFor } from './credentials.ts';
import { SourceError } from './errors.ts';
import { PackGuard, type UnpackBudget } from './packguard.ts';
import { redactUrl, type SourceRequest } from './ref.ts';

const TOKEN_USERNAME = 'x-access-token';
const MAX_REDIRECTS = 5;

/** Budget is what one revision may still fetch, and unpack. */
export interface Budget {
  fetched: number;
  max: number;
  unpack?: UnpackBudget;
}

/** Transport is what a network call needs from its fetcher. */
export interface Transport {
  /** default timeout of a call, in milliseconds */
  timeoutMs: number;
  addresses: AddressPolicy;
  resolver: Resolver;
  http: HttpClient;
}

/** network runs one network call with the request's credentials and a timeout, mapping failures to SourceErrors. */
export async function network<T>(
  transport: Transport,
  req: Pick<SourceRequest, 'url' | 'credentials' | 'timeoutMs'>,
  what: string,
  budget: Budget,
  call: (http: HttpClient, onAuth: (() => GitAuth) | undefined) => Promise<T>,
): Promise<T> {
  const timeoutMs = req.timeoutMs ?? transport.timeoutMs;
  const controller = new AbortController();
  // Each host is resolved once per call and checked; connections go only to the checked addresses. Redirects are
  // followed here (GET only), so that every hop is checked too.
  const resolved = new Map<string, Promise<ResolvedAddress[]>>();
  const checked = (url: string): Promise<ResolvedAddress[]> => {
    const host = hostOf(url);
    let p = resolved.get(host);
    if (!p) resolved.set(host, (p = resolveChecked(url, transport.addresses, transport.resolver)));
    return p;
  };
  let overBudget: SourceError | undefined;
  const refuse = (e: SourceError): never => {
    overBudget = e;
    controller.abort(e);
    throw e;
  };
  // A pack (the answer to a POST of git-upload-pack) is checked for its unpacked sizes before isomorphic-git sees it.
  const counted = (
    body: AsyncIterableIterator<Uint8Array> | undefined,
    guard: PackGuard | undefined,
  ): AsyncIterableIterator<Uint8Array> | undefined => {
    if (!body) return body;
    return (async function* () {
      for await (const chunk of body) {
        budget.fetched += chunk.byteLength;
        if (budget.fetched > budget.max)
          refuse(
            new SourceError(
              'LimitExceeded',
              `${what}: the server sent more than ${budget.max} bytes for this revision (gitops.limits.maxFetchBytes)`,
            ),
          );
        try {
          guard?.push(chunk);
        } catch (e) {
          refuse(e instanceof SourceError ? e : new SourceError('FetchFailed', `${what}: ${String(e)}`));
        }
        yield chunk;
      }
    })();
  };
  const packGuard = (r: { method?: string }, url: string): PackGuard | undefined =>
    budget.unpack && (r.method ?? 'GET').toUpperCase() === 'POST' && new URL(url).pathname.endsWith('/git-upload-pack')
      ? new PackGuard(budget.unpack, what)
      : undefined;
  const credentialHosts = req.credentials?.hosts ?? defaultHosts(req.url);
  const http: HttpClient = {
    request: async (r) => {
      let url = r.url;
      for (let hop = 0; ; hop++) {
        if (controller.signal.aborted) throw controller.signal.reason;
        const addresses = await checked(url);
        const res = await transport.http.request({
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
        return { ...res, url, body: counted(res.body, packGuard(r, url)) };
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
