import { describe, expect, it, vi } from 'vitest';
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

  it('on an uncaught exception runs the cleanup, then exits with code 1, deliberately', async () => {
    const { proc, handlers, exits } = fakeProcess();
    const guards = installProcessGuards(proc);
    const order: string[] = [];
    guards.onFatal(async () => {
      order.push('cleanup');
      await new Promise((r) => setTimeout(r, 10));
      order.push(`exits so far: ${exits.length}`);
    });
    handlers.get('uncaughtException')!(new Error('state may be half-changed') as never);
    handlers.get('uncaughtException')!(new Error('a second one while stopping') as never);
    await vi.waitFor(() => expect(exits).toEqual([1]));
    expect(order).toEqual(['cleanup', 'exits so far: 0']);
  });

  it('exits even when the cleanup fails', async () => {
    const { proc, handlers, exits } = fakeProcess();
    installProcessGuards(proc).onFatal(() => Promise.reject(new Error('stop failed')));
    handlers.get('uncaughtException')!(new Error('boom') as never);
    await vi.waitFor(() => expect(exits).toEqual([1]));
  });
});
