import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * prettyOnTerminal is a human-readable stream when stdout is a terminal (a foreground `vc up` or `vc manager`), and
 * undefined otherwise: files, pipes, containers and tests keep one JSON object per line. LOG_FORMAT=json forces
 * JSON on a terminal too.
 */
async function prettyOnTerminal(): Promise<DestinationStream | undefined> {
  if (!process.stdout.isTTY || process.env.LOG_FORMAT === 'json') return undefined;
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
 * defaultLogLevel is the level when LOG_LEVEL does not choose one: VC_DEFAULT_LOG_LEVEL, else `info`. The test
 * configuration (vitest.config.ts) sets VC_DEFAULT_LOG_LEVEL=warn so test output stays readable while
 * setDefaultLogLevel still applies, as it does for a user; production code never asks whether it runs under a test.
 */
export function defaultLogLevel(env: NodeJS.ProcessEnv = process.env): string {
  return env.LOG_LEVEL ?? env.VC_DEFAULT_LOG_LEVEL ?? 'info';
}

/**
 * log is the process-wide pino logger. Components take a child carrying `{controller, tenant, key}` as needed.
 * LOG_LEVEL sets the level (see defaultLogLevel). JSON lines carry the level's name (`"level":"info"`), as log
 * collectors (Loki, Elasticsearch, Cloud Logging) expect, not pino's number.
 */
export const log: Logger = pino(
  {
    level: defaultLogLevel(),
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
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
