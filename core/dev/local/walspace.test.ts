import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { releaseWalSpace, zeroTailFrom } from './walspace.ts';

describe('zeroTailFrom', () => {
  it.each([
    ['all zeros', [0, 0, 0], 0, undefined],
    ['data at the start', [1, 0, 0], 0, 4096],
    ['data in the last byte', [0, 0, 7], 4093, 4096],
    ['data past a page: the next page', [0, 9], 4095, 8192],
    ['an empty buffer', [], 0, undefined],
  ] as const)('%s', (_name, bytes, base, want) => expect(zeroTailFrom(Uint8Array.from(bytes), base)).toBe(want));
});

describe('releaseWalSpace', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vc-walspace-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("punches out the preallocated zeros past a segment's records: same size, same bytes, its blocks given back", async () => {
    const wal = join(dir, 'data', 'member', 'wal');
    mkdirSync(wal, { recursive: true });
    const seg = join(wal, '0000000000000000-0000000000000000.wal');
    // A segment as etcd leaves it: records at the start, the rest allocated (8 MiB here, 64 MB in etcd) and zero.
    writeFileSync(seg, Buffer.alloc(10_000, 0xab));
    execFileSync('fallocate', ['--length', String(8 << 20), seg]);
    const before = readFileSync(seg);
    expect(statSync(seg).blocks * 512).toBeGreaterThanOrEqual(8 << 20);

    const released = await releaseWalSpace(join(dir, 'data'));
    expect(released).toBeGreaterThan(7 << 20);
    expect(statSync(seg).size).toBe(8 << 20);
    expect(statSync(seg).blocks * 512).toBeLessThanOrEqual(16_384);
    expect(readFileSync(seg).equals(before)).toBe(true);
    // Again: nothing more to give back.
    expect(await releaseWalSpace(join(dir, 'data'))).toBe(0);
  });

  it('gives back nothing where there is no write-ahead log', async () => {
    expect(await releaseWalSpace(join(dir, 'none'))).toBe(0);
  });
});
