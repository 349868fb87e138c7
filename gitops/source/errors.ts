/** SourceErrorReasons are the reasons a source can fail, as they appear in status conditions. */
export const SourceErrorReasons = [
  'AuthenticationFailed',
  'RefNotFound',
  'PathNotFound',
  'InvalidSpec',
  'FetchFailed',
  'Timeout',
  'VerificationFailed',
  /** a cap on bytes fetched or unpacked, files or bytes read, or history walked was exceeded */
  'LimitExceeded',
  /** the URL's host resolves to an address the platform does not allow (loopback, link-local, metadata…) */
  'AddressRefused',
  /** the new revision does not descend from the last applied one and no annotation allows it */
  'NotDescendant',
] as const;

/** SourceErrorReason is one of SourceErrorReasons. */
export type SourceErrorReason = (typeof SourceErrorReasons)[number];

/** SourceError is a failure of the source with a machine-readable reason; its message never holds credentials. */
export class SourceError extends Error {
  override readonly name = 'SourceError';

  constructor(
    readonly reason: SourceErrorReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** isSourceError tells whether `err` is a SourceError, optionally with the given reason. */
export function isSourceError(err: unknown, reason?: SourceErrorReason): err is SourceError {
  return err instanceof SourceError && (reason === undefined || err.reason === reason);
}

/** errorMessage is the message of a thrown value. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
