import { describe, expect, it } from 'vitest';
import { registry } from '../metrics/registry.ts';
import { installProcessGuards, type ProcessLike } from './guards.ts';

/** fakeProcess records the handlers installProcessGuards sets and the exit codes it asks for. */
function fakeProcess() {
  const handlers = new Map<string, (x: never) => void>();
  const exits: number[] = [];
  const proc = {
    on: (event: string, fn: (x: never) => void) => handlers.set(event, fn),
    exit: (code: number) => {
      exits.push(code);
      return undefined as never;
    },
  } as unknown as ProcessLike;
  return { proc, handlers, exits };
}

const rejections = async (): Promise<number> =>
  (await registry.getSingleMetric('vc_unhandled_rejections_total')?.get())?.values[0]?.value ?? 0;

describe('installProcessGuards', () => {
  it('logs and counts an unhandled rejection, and keeps the process running', async () => {
    const { proc, handlers, exits } = fakeProcess();
    installProcessGuards(proc);
    const before = await rejections();
    handlers.get('unhandledRejection')!(new Error('nobody awaited me') as never);
    expect(await rejections()).toBe(before + 1);
    expect(exits).toEqual([]);
  });

  it('exits with code 1 on an uncaught exception, deliberately', () => {
    const { proc, handlers, exits } = fakeProcess();
    installProcessGuards(proc);
    handlers.get('uncaughtException')!(new Error('state may be half-changed') as never);
    expect(exits).toEqual([1]);
  });
});
