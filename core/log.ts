import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * prettyOnTerminal is a human-readable stream when stdout is a terminal (a foreground `vc up` or `vc manager`), and
 * undefined otherwise: files, pipes, containers and tests keep one JSON object per line. LOG_FORMAT=json forces
 * JSON on a terminal too.
 */
async function prettyOnTerminal(): Promise<DestinationStream | undefined> {
  if (!process.stdout.isTTY || process.env.LOG_FORMAT === 'json' || process.env.VITEST) return undefined;
  const { default: pretty } = await import('pino-pretty');
  return pretty({
    sync: true,
    colorize: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    singleLine: true,
  });
}

/**
 * log is the process-wide pino logger. Components take a child carrying `{controller, tenant, key}` as needed.
 * LOG_LEVEL sets the level (default `info`; tests default to `warn` to keep their output readable).
 */
export const log: Logger = pino(
  {
    level: process.env.LOG_LEVEL ?? (process.env.VITEST ? 'warn' : 'info'),
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  },
  await prettyOnTerminal(),
);

/**
 * setDefaultLogLevel lowers (or raises) the level of this process's logger and of every child logger, including those
 * modules created when they were imported, unless LOG_LEVEL chose one. Processes started later inherit it through
 * LOG_LEVEL. `vc up` uses it so that the components it runs in its own process keep their info lines in the log files.
 */
export function setDefaultLogLevel(level: 'warn' | 'info' | 'debug'): void {
  if (process.env.LOG_LEVEL) return;
  process.env.LOG_LEVEL = level;
  log.level = level;
}

/** childLogger returns a child of the process logger bound to the given fields. */
export function childLogger(bindings: Record<string, unknown>): Logger {
  return log.child(bindings);
}

export type { Logger };
