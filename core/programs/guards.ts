import { Counter } from 'prom-client';
import { childLogger } from '../log.ts';
import { registry } from '../metrics/registry.ts';

const log = childLogger({ controller: 'process' });

const unhandledRejections = new Counter({
  name: 'vc_unhandled_rejections_total',
  help: 'Promise rejections nothing handled: logged, and the process kept running.',
  registers: [registry],
});

/** ProcessLike is the part of `process` the guards use (tests pass their own). */
export interface ProcessLike {
  on(event: 'unhandledRejection', fn: (reason: unknown) => void): unknown;
  on(event: 'uncaughtException', fn: (err: Error) => void): unknown;
  exit(code: number): never;
}

/**
 * installProcessGuards sets the manager's policy for failures nothing caught, instead of Node's default (print and
 * exit on either):
 * - an unhandled rejection is logged at error level, counted in vc_unhandled_rejections_total, and the process keeps
 *   going. Plugin, patrol, registry and informer failures are caught where they happen, so one that still gets here
 *   is a bug with nobody waiting on its result; exiting would stop every tenant's syncing for it, and the next leader
 *   would meet the same rejection.
 * - an uncaught exception is logged at fatal level and the process exits with code 1, deliberately: a synchronous
 *   throw that reached the event loop may have left any state half-changed. The Deployment restarts the manager and
 *   leader election hands over.
 */
export function installProcessGuards(proc: ProcessLike = process): void {
  proc.on('unhandledRejection', (reason) => {
    unhandledRejections.inc();
    log.error({ err: reason }, 'unhandled promise rejection; the manager keeps running');
  });
  proc.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception; the manager exits so that it restarts from a clean state');
    proc.exit(1);
  });
}
