/** The errors of KubeClient requests, and the predicates callers test them with. */

/** ApiError is a non-2xx answer of the apiserver, carrying the HTTP code and the Status reason. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly body?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/**
 * RequestTimeoutError is a request that got no complete answer within its deadline: the client gave up and closed the
 * connection. Whether the apiserver carried the request out is unknown, so callers retry idempotently.
 */
export class RequestTimeoutError extends Error {
  override readonly name = 'RequestTimeoutError';

  constructor(
    readonly method: string,
    readonly path: string,
    readonly timeoutMs: number,
  ) {
    super(`${method} ${path}: no answer within ${timeoutMs} ms`);
  }
}

/**
 * WriteFencedError is a write a fenced client (KubeClient.fenced) refused before sending it: its fence said the writer
 * may not write now, e.g. its leadership term has ended.
 */
export class WriteFencedError extends Error {
  override readonly name = 'WriteFencedError';

  constructor(
    readonly method: string,
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${method} ${path}: not sent: ${reason}`);
  }
}

/** isWriteFenced reports a write refused by a fenced client (WriteFencedError). */
export const isWriteFenced = (e: unknown): e is WriteFencedError => e instanceof WriteFencedError;

/** isTimeout reports a request that the client gave up on (RequestTimeoutError). */
export const isTimeout = (e: unknown): e is RequestTimeoutError => e instanceof RequestTimeoutError;

/** isNotFound reports a 404 answer. */
export const isNotFound = (e: unknown): boolean => e instanceof ApiError && e.code === 404;
/** isConflict reports a 409 Conflict (stale resourceVersion or precondition failure). */
export const isConflict = (e: unknown): boolean =>
  e instanceof ApiError && e.code === 409 && e.reason !== 'AlreadyExists';
/** isAlreadyExists reports a 409 AlreadyExists. */
export const isAlreadyExists = (e: unknown): boolean => e instanceof ApiError && e.reason === 'AlreadyExists';
/** isGone reports a 410 Gone (resourceVersion too old). */
export const isGone = (e: unknown): boolean => e instanceof ApiError && (e.code === 410 || e.reason === 'Expired');

/** toApiError turns a non-2xx answer's body (a Status, or anything) into an ApiError naming the request. */
export function toApiError(status: number, text: string, method: string, path: string): ApiError {
  try {
    const st = JSON.parse(text) as { reason?: string; message?: string };
    return new ApiError(status, st.reason ?? 'Unknown', `${method} ${path}: ${status} ${st.message ?? text}`, st);
  } catch {
    return new ApiError(status, 'Unknown', `${method} ${path}: ${status} ${text.slice(0, 200)}`);
  }
}
