/** SourceErrorReasons are the reasons a source can fail, as they appear in status conditions. */
export const SourceErrorReasons = [
  'AuthenticationFailed',
  'RefNotFound',
  'PathNotFound',
  'InvalidSpec',
  'FetchFailed',
  'Timeout',
  'VerificationFailed',
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
