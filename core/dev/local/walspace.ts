import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { childLogger } from '../../log.ts';

const exec = promisify(execFile);
const log = childLogger({ component: 'etcd-wal-space' });

/** PAGE is the alignment of the hole punched: the file system's block size on every Linux file system we run on. */
const PAGE = 4096;
/** CHUNK is how much of a segment is read at a time, from its end backwards. */
const CHUNK = 1 << 20;

/**
 * zeroTailFrom is the offset, rounded up to PAGE, past the last byte of buf that is not zero: from there to the end
 * buf holds zeros only. base is buf's offset in the file.
 */
export function zeroTailFrom(buf: Uint8Array, base = 0): number | undefined {
  for (let i = buf.length - 1; i >= 0; i--) if (buf[i] !== 0) return Math.ceil((base + i + 1) / PAGE) * PAGE;
  return undefined;
}

/** dataEnd finds the offset (rounded up to PAGE) after which the file holds zeros only, reading from its end. */
async function dataEnd(path: string, size: number): Promise<number> {
  const f = await open(path, 'r');
  try {
    const buf = Buffer.alloc(CHUNK);
    for (let end = size; end > 0; end -= CHUNK) {
      const start = Math.max(0, end - CHUNK);
      const { bytesRead } = await f.read(buf, 0, end - start, start);
      const at = zeroTailFrom(buf.subarray(0, bytesRead), start);
      if (at !== undefined) return Math.min(at, size);
    }
    return 0;
  } finally {
    await f.close();
  }
}

/**
 * releaseWalSpace gives the file system back the blocks a stopped etcd preallocated in its write-ahead log: etcd
 * allocates each WAL segment whole (64 MB) when it opens it, and the zeros past the last record take that disk while
 * a tenant sleeps. The zeros are punched out as a hole (`fallocate --punch-hole`, size kept), which reads back as the
 * same zeros, so the log etcd reads at its next start is unchanged (it allocates the segment again then). Only for a
 * data directory no etcd runs on. It answers the bytes given back; where fallocate is missing or the file system
 * cannot punch holes it gives back nothing and says so in the log, and the tenant sleeps as before.
 */
export async function releaseWalSpace(dataDir: string): Promise<number> {
  const wal = join(dataDir, 'member', 'wal');
  if (!existsSync(wal)) return 0;
  let released = 0;
  for (const name of readdirSync(wal).filter((n) => n.endsWith('.wal'))) {
    const path = join(wal, name);
    try {
      const before = await stat(path);
      const from = await dataEnd(path, before.size);
      if (from >= before.size) continue;
      await exec('fallocate', ['--punch-hole', '--offset', String(from), '--length', String(before.size - from), path]);
      released += Math.max(0, (before.blocks - (await stat(path)).blocks) * 512);
    } catch (e) {
      log.warn({ file: path, err: e instanceof Error ? e.message : String(e) }, 'WAL preallocation not given back');
      return released;
    }
  }
  return released;
}
