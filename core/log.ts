import { pino, type Logger } from 'pino';

/**
 * log is the process-wide pino logger. Components take a child carrying `{controller, tenant, key}` as needed.
 * LOG_LEVEL sets the level (default `info`; tests default to `warn` to keep their output readable).
 */
export const log: Logger = pino({
  level: process.env.LOG_LEVEL ?? (process.env.VITEST ? 'warn' : 'info'),
  base: { pid: process.pid },
  timestamp: pino.stdTimeFunctions.isoTime,
});

/** childLogger returns a child of the process logger bound to the given fields. */
export function childLogger(bindings: Record<string, unknown>): Logger {
  return log.child(bindings);
}

export type { Logger };
