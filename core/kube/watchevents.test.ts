import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ApiError, readWatchEvents, type WatchEvent } from './client.ts';

/** pod is one watch event line for a Pod named `p<i>`. */
const line = (i: number, type = 'ADDED') =>
  JSON.stringify({ type, object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: `p${i}` } } }) + '\n';

/** busy holds the thread for ms milliseconds, as handling a large event does. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    /* spin */
  }
}

/**
 * handledBeforeTurn streams `n` events in one chunk, each taking 1 ms to handle, and returns how many were handled
 * when an I/O-phase callback queued at the start (another stream's data) got to run.
 */
async function handledBeforeTurn(n: number, sliceMs: number): Promise<number> {
  const names: string[] = [];
  let at = -1;
  setImmediate(() => (at = names.length));
  const chunk = Array.from({ length: n }, (_, i) => line(i)).join('');
  await readWatchEvents(
    Readable.from([chunk]),
    (e: WatchEvent) => {
      names.push(e.object.metadata!.name!);
      busy(1);
    },
    sliceMs,
  );
  expect(names).toEqual(Array.from({ length: n }, (_, i) => `p${i}`));
  await new Promise((r) => setImmediate(r));
  return at;
}

describe('readWatchEvents', () => {
  it('lets the event loop take a turn within a burst of events, keeping their order', async () => {
    const at = await handledBeforeTurn(100, 5);
    expect(at).toBeGreaterThan(0);
    expect(at).toBeLessThan(20);
  });

  it('without a slice, the burst holds the loop to its end (what the slice prevents)', async () => {
    expect(await handledBeforeTurn(100, Number.POSITIVE_INFINITY)).toBe(100);
  });

  it('rejects with the Status of an ERROR event, after the events before it', async () => {
    const seen: string[] = [];
    const gone = JSON.stringify({
      type: 'ERROR',
      object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' },
    });
    const run = readWatchEvents(Readable.from([line(0) + '\n' + gone + '\n' + line(1)]), (e: WatchEvent) =>
      seen.push(e.object.metadata!.name!),
    );
    await expect(run).rejects.toSatisfy(
      (e: unknown) => e instanceof ApiError && e.code === 410 && e.reason === 'Expired',
    );
    expect(seen).toEqual(['p0']);
  });

  it('handles lines split across chunks', async () => {
    const text = line(0) + line(1, 'MODIFIED') + line(2, 'DELETED');
    const seen: string[] = [];
    await readWatchEvents(Readable.from([text.slice(0, 30), text.slice(30, 100), text.slice(100)]), (e: WatchEvent) =>
      seen.push(`${e.type} ${e.object.metadata!.name!}`),
    );
    expect(seen).toEqual(['ADDED p0', 'MODIFIED p1', 'DELETED p2']);
  });
});
