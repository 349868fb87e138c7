import { ApiError } from '../../kube/errors.ts';

/**
 * This module turns whatever a `vc` command throws into what the user reads: one line per problem that names the
 * object or file, the field and what to do, and with `-v` the stack and every cause below it.
 */

/** CliError is a failure reported as one line (one per problem) and a non-zero exit; its message is the whole text. */
export class CliError extends Error {}

/** CONNECT_HINT says where to look when the cluster does not answer. */
const CONNECT_HINT =
  'if it is the cluster, check --kubeconfig and --context (`vc --help` says which kubeconfig is used)';

const HTTP_HINTS: Record<number, string> = {
  401: 'the kubeconfig credentials were refused: renew them or pick another --context',
  403: 'the kubeconfig user lacks RBAC for this: ask for a Role, or use another --context',
  404: 'not found: is vc installed on this cluster (`vc install`), and is the name and -n/--namespace right?',
};

/** causes is the error and the chain of its `cause`s, outermost first. */
function causes(e: unknown): unknown[] {
  const out: unknown[] = [];
  for (let x = e; x !== undefined && out.length < 10; x = (x as { cause?: unknown }).cause) out.push(x);
  return out;
}

/** MORE is the hint on an error whose short text may not say enough. */
const MORE = ' (run with -v for details)';

const firstLine = (s: string): string => s.split('\n')[0]!.trim();

/** BUILT_IN are the classes of errors whose message is written for programmers, not for the user of a command. */
const BUILT_IN: ReadonlySet<unknown> = new Set([Error, TypeError, RangeError, SyntaxError, ReferenceError]);

/** describeError is the short text of an error: the lines a user reads without -v. */
export function describeError(e: unknown): string {
  if (e instanceof CliError) return e.message;
  if (e instanceof ApiError) {
    const hint = HTTP_HINTS[e.code];
    return `${firstLine(e.message)}${hint ? `; ${hint}` : ''}`;
  }
  const chain = causes(e);
  const sys = chain.find((x): x is NodeJS.ErrnoException => !!(x as NodeJS.ErrnoException)?.code) as
    (NodeJS.ErrnoException & { address?: string; port?: number; hostname?: string }) | undefined;
  if (sys?.code === 'ENOENT' && sys.path) return `${sys.path}: no such file or directory`;
  if (sys?.code === 'EACCES' && sys.path) return `${sys.path}: permission denied`;
  if (sys && ['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ETIMEDOUT', 'ECONNRESET'].includes(sys.code!)) {
    const where = sys.address ? `${sys.address}${sys.port ? `:${sys.port}` : ''}` : (sys.hostname ?? 'the cluster');
    return `cannot reach ${where} (${sys.code}): ${CONNECT_HINT}`;
  }
  if (sys?.code && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(sys.code))
    return (
      `TLS: ${firstLine(sys.message)} (${sys.code}): the server's certificate is not signed by a CA this command ` +
      `trusts; ${CONNECT_HINT}`
    );
  // The project's typed errors (ConfigError, InstallError, ...) already name the file, object and field.
  if (e instanceof Error && !BUILT_IN.has(e.constructor) && !sys) return e.message;
  const text = e instanceof Error ? e.message : String(e);
  return `${firstLine(text) || (e instanceof Error ? e.name : 'error')}${MORE}`;
}

/** errorReport is the text written to stderr for an error: `vc: ` and its description, with -v the stack and causes. */
export function errorReport(e: unknown, verbose: boolean): string {
  const short = describeError(e);
  const lines = (verbose && short.endsWith(MORE) ? short.slice(0, -MORE.length) : short)
    .split('\n')
    .map((l) => `vc: ${l}`);
  if (verbose)
    for (const [i, x] of causes(e).entries()) {
      const text = x instanceof Error ? (x.stack ?? `${x.name}: ${x.message}`) : String(x);
      lines.push(`${i ? 'caused by: ' : ''}${text}`);
      if (x instanceof ApiError && x.body !== undefined) lines.push(`response: ${JSON.stringify(x.body)}`);
    }
  return lines.join('\n') + '\n';
}
