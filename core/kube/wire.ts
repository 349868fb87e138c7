import type http from 'node:http';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { KubeObject, WatchEvent } from './client.ts';
import { ApiError } from './errors.ts';

/** Reading answers off the wire: a whole body, or a watch stream's events. */

/**
 * WATCH_SLICE_MS is how long one watch stream handles events before the event loop gets a turn. The lines of a chunk
 * that has arrived are handled in microtasks, which let no other I/O in: a burst on one stream (a tenant creating
 * hundreds of Pods at once, a watch resumed after a gap) held every other stream's events, and every timer, until its
 * last line. (The 40-90 ms stalls of the syncer's loop during the `syncer` bench's flood are the host's run queue,
 * measured by schedstat; this slice did not shorten them.)
 */
export const WATCH_SLICE_MS = 5;

/**
 * readWatchEvents calls onEvent for each event line of a watch stream, in order, until the stream ends; an ERROR
 * event with a Status rejects with ApiError. After `sliceMs` of handling since its last turn, it lets the event loop
 * take one (other streams' data, timers) before the next line.
 */
export async function readWatchEvents<T extends KubeObject>(
  input: Readable,
  onEvent: (e: WatchEvent<T>) => void,
  sliceMs = WATCH_SLICE_MS,
): Promise<void> {
  let turnAt = performance.now();
  for await (const line of createInterface({ input, crlfDelay: Infinity })) {
    if (!line) continue;
    const ev = JSON.parse(line) as WatchEvent<T>;
    if (ev.type === 'ERROR') {
      const st = ev.object as unknown as { code?: number; reason?: string; message?: string };
      throw new ApiError(st.code ?? 500, st.reason ?? 'Unknown', st.message ?? 'watch error', st);
    }
    onEvent(ev);
    if (performance.now() - turnAt >= sliceMs) {
      await nextTurn();
      turnAt = performance.now();
    }
  }
}

/** readAll reads a whole answer; an abort of the signal closes the connection and rejects. */
export function readAll(res: http.IncomingMessage, signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const abort = () => {
      res.destroy();
      reject(signal?.reason ?? new Error('aborted'));
    };
    if (signal?.aborted) return abort();
    signal?.addEventListener('abort', abort, { once: true });
    const settle = () => signal?.removeEventListener('abort', abort);
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      settle();
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    res.on('error', (e) => {
      settle();
      reject(e);
    });
    res.on('close', () => {
      settle();
      if (!res.complete) reject(new Error('connection closed before the answer was complete'));
    });
  });
}
