import { rmSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';

/** Supervised is a started server process of the toolchain: the tail of its output, whether it exited, and stop. */
export interface Supervised {
  /** the last output chunks, joined */
  logs(): string;
  exited(): boolean;
  /** SIGTERM, SIGKILL after `killAfterMs` if it is still there, then `dir` (if any) removed */
  stop(): Promise<void>;
}

/**
 * supervise keeps the last `keep` output chunks of a server the toolchain started (registry, SeaweedFS, the Cluster
 * API manager) for its error messages, notes its exit, and stops it: the one way these servers end.
 */
export function supervise(child: ChildProcess, o: { keep: number; killAfterMs: number; dir?: string }): Supervised {
  const tail: string[] = [];
  const keep = (b: Buffer): void => {
    tail.push(b.toString());
    if (tail.length > o.keep) tail.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited = false;
  const exit = new Promise<void>((res) =>
    child.once('exit', () => {
      exited = true;
      res();
    }),
  );
  return {
    logs: () => tail.join(''),
    exited: () => exited,
    stop: async () => {
      if (!exited) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), o.killAfterMs);
        await exit;
        clearTimeout(t);
      }
      if (o.dir) rmSync(o.dir, { recursive: true, force: true });
    },
  };
}
