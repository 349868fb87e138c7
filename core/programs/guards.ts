import { Counter } from 'prom-client';
import { childLogger } from '../log.ts';
import { registry } from '../metrics/registry.ts';

const log = childLogger({ controller: 'process' });

/** CLEANUP_TIMEOUT_MS bounds the cleanup an uncaught exception runs before the process exits. */
export const CLEANUP_TIMEOUT_MS = 10_000;

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

/** ProcessGuards lets a program register what to stop before an uncaught exception ends the process. */
export interface ProcessGuards {
  /** onFatal sets the cleanup (stop the manager: release the leader lease, stop child processes). */
  onFatal(cleanup: () => Promise<void>): void;
}

/**
 * installProcessGuards sets a program's policy for failures nothing caught, instead of Node's default (print and
 * exit on either):
 * - an unhandled rejection is logged at error level, counted in vc_unhandled_rejections_total, and the process keeps
 *   going. Plugin, patrol, registry and informer failures are caught where they happen, so one that still gets here
 *   is a bug with nobody waiting on its result; exiting would stop every tenant's syncing for it, and the next leader
 *   would meet the same rejection.
 * - an uncaught exception is logged at fatal level, the registered cleanup runs (at most CLEANUP_TIMEOUT_MS), and the
 *   process exits with code 1, deliberately: a synchronous throw that reached the event loop may have left any state
 *   half-changed. The Deployment restarts the manager and leader election hands over.
 */
export function installProcessGuards(proc: ProcessLike = process): ProcessGuards {
  let cleanup: (() => Promise<void>) | undefined;
  let exiting = false;
  proc.on('unhandledRejection', (reason) => {
    unhandledRejections.inc();
    log.error({ err: reason }, 'unhandled promise rejection; the process keeps running');
  });
  proc.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception; stopping and exiting so that the process restarts from a clean state');
    if (exiting) return;
    exiting = true;
    const timeout = new Promise<void>((res) => setTimeout(res, CLEANUP_TIMEOUT_MS).unref());
    const stopped = (cleanup?.() ?? Promise.resolve()).catch((e: unknown) =>
      log.error({ err: e }, 'cleanup after an uncaught exception failed'),
    );
    void Promise.race([stopped, timeout]).finally(() => proc.exit(1));
  });
  return {
    onFatal: (fn) => {
      cleanup = fn;
    },
  };
}
