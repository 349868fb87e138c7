import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SourceError } from './errors.ts';
import { PackGuard, type UnpackBudget } from './packguard.ts';

const MiB = 1024 * 1024;

/** header is a pack object's type-and-size header. */
function header(type: number, size: number): Buffer {
  const bytes = [(type << 4) | (size & 0x0f)];
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes[bytes.length - 1]! |= 0x80;
    bytes.push(rest & 0x7f);
    rest = Math.floor(rest / 128);
  }
  return Buffer.from(bytes);
}

/** varint is git's base-128 number, as a delta's sizes are written. */
function varint(n: number): Buffer {
  const bytes: number[] = [];
  do {
    bytes.push((n & 0x7f) | (n >= 128 ? 0x80 : 0));
    n = Math.floor(n / 128);
  } while (n > 0);
  return Buffer.from(bytes);
}

/** pack builds a pack of the given objects (already headed and compressed), without the trailing checksum. */
function pack(objects: Buffer[]): Buffer {
  const head = Buffer.alloc(12);
  head.write('PACK', 0, 'latin1');
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(objects.length, 8);
  return Buffer.concat([head, ...objects, Buffer.alloc(20)]);
}

const blob = (content: Buffer, declared = content.length) => Buffer.concat([header(3, declared), deflateSync(content)]);
const refDelta = (baseSize: number, resultSize: number) => {
  const data = Buffer.concat([varint(baseSize), varint(resultSize)]);
  return Buffer.concat([header(7, data.length), Buffer.alloc(20, 7), deflateSync(data)]);
};

/** sideBand frames pack bytes as upload-pack answers with side-band-64k: NAK, then band 1 with progress in band 2. */
function sideBand(bytes: Buffer): Buffer {
  const line = (payload: Buffer) =>
    Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, '0'), 'latin1'), payload]);
  const parts = [line(Buffer.from('NAK\n'))];
  for (let i = 0; i < bytes.length; i += 65515) {
    parts.push(line(Buffer.concat([Buffer.from([2]), Buffer.from(`Counting objects: ${i}\r`)])));
    parts.push(line(Buffer.concat([Buffer.from([1]), bytes.subarray(i, i + 65515)])));
  }
  parts.push(Buffer.from('0000'));
  return Buffer.concat(parts);
}

const budget = (maxObjectBytes = MiB, maxUnpackedBytes = 4 * MiB): UnpackBudget => ({
  maxObjectBytes,
  maxUnpackedBytes,
  unpacked: 0,
});

/** feed pushes bytes in chunks of `size`; the refusal's message, or undefined. */
function feed(guard: PackGuard, bytes: Buffer, size = bytes.length): string | undefined {
  try {
    for (let i = 0; i < bytes.length; i += size) guard.push(bytes.subarray(i, i + size));
    return undefined;
  } catch (e) {
    expect(e).toBeInstanceOf(SourceError);
    expect((e as SourceError).reason).toBe('LimitExceeded');
    return (e as SourceError).message;
  }
}

describe('PackGuard', () => {
  describe('a pack made by git: every object counted at its own size, deltas at the size they make', () => {
    let dir: string;
    let packBytes: Buffer;
    let objectBytes: number;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'packguard-'));
      const run = (args: string[], input?: string) => {
        const r = spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: dir, input });
        if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.toString()}`);
        return r.stdout;
      };
      run(['init', '-q']);
      const lines = Array.from({ length: 2000 }, (_, i) => `line ${i} of a file that changes a little each time`);
      for (let c = 0; c < 6; c++) {
        lines[c * 100] = `changed in commit ${c}`;
        writeFileSync(join(dir, 'tenants.yaml'), lines.join('\n'));
        writeFileSync(join(dir, `small-${c}.yaml`), `kind: ConfigMap\n# ${c}\n`);
        run(['add', '-A']);
        run(['commit', '-q', '-m', `commit ${c}`]);
      }
      packBytes = run(['pack-objects', '--stdout', '--revs', '-q'], 'HEAD\n');
      objectBytes = run(['cat-file', '--batch-all-objects', '--batch-check=%(objectsize)'])
        .toString()
        .trim()
        .split('\n')
        .reduce((sum, n) => sum + Number(n), 0);
      // the pack holds deltas, or this would test whole objects only
      writeFileSync(join(dir, 'p.pack'), packBytes);
      run(['index-pack', 'p.pack']);
      expect(run(['verify-pack', '-v', 'p.pack']).toString()).toMatch(/chain length = 1:/);
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it.each([
      ['bare, in one piece', false, 0],
      ['in side band 1 with progress, byte by byte', true, 1],
      ['in side band 1 with progress, 7 bytes at a time', true, 7],
      ['in side band 1 with progress, 4 KiB at a time', true, 4096],
    ])('%s', (_, framed, size) => {
      const b = budget();
      const bytes = framed ? sideBand(packBytes) : Buffer.concat([Buffer.from('0008NAK\n'), packBytes]);
      expect(feed(new PackGuard(b, 'fetch'), bytes, size || bytes.length)).toBeUndefined();
      expect(b.unpacked).toBe(objectBytes);
    });

    it('refuses the same pack once the revision may unpack less than it holds', () => {
      const b = budget(MiB, objectBytes - 1);
      expect(feed(new PackGuard(b, 'fetch main'), sideBand(packBytes), 4096)).toBe(
        `fetch main: the objects of this revision unpack to more than ${objectBytes - 1} bytes (gitops.limits.maxUnpackedBytes)`,
      );
    });
  });

  it.each([
    [
      'a blob declaring more than the cap, refused from its header before any of its data',
      pack([header(3, 2 * MiB)]).subarray(0, 12 + header(3, 2 * MiB).length),
      'the server sent a blob of 2097152 bytes unpacked, more than 1048576 (gitops.limits.maxObjectBytes)',
    ],
    [
      'a blob declaring ten bytes whose data inflates to a MiB of zeros',
      pack([blob(Buffer.alloc(MiB), 10)]),
      'a blob in the pack unpacks to more than the 10 bytes it declares',
    ],
    [
      'a blob declaring more than it holds',
      pack([blob(Buffer.alloc(100), 200)]),
      'a blob in the pack unpacks to 100 bytes, not the 200 it declares',
    ],
    [
      'a delta of a few bytes that makes an object of 2 MiB',
      pack([blob(Buffer.from('base')), refDelta(4, 2 * MiB)]),
      'the server sent a ref-delta result of 2097152 bytes unpacked, more than 1048576 (gitops.limits.maxObjectBytes)',
    ],
    [
      'five blobs of 900 KiB each, each under the cap, together over the revision’s 4 MiB',
      pack(Array.from({ length: 5 }, () => blob(Buffer.alloc(900 * 1024)))),
      'the objects of this revision unpack to more than 4194304 bytes (gitops.limits.maxUnpackedBytes)',
    ],
    [
      'a size header that never ends its number',
      Buffer.concat([
        pack([]).subarray(0, 8),
        Buffer.from([0, 0, 0, 1, 0xbf]),
        Buffer.alloc(20, 0xff),
        Buffer.from([1]),
      ]),
      'the server sent a blob of more than 2^53 bytes unpacked, more than 1048576 (gitops.limits.maxObjectBytes)',
    ],
  ])('refuses %s', (_, bytes, message) => {
    expect(feed(new PackGuard(budget(), 'fetch'), sideBand(bytes), 1000)).toBe(`fetch: ${message}`);
  });

  it('counts the revision over all its fetches: the second pack of a deepening refuses what both make', () => {
    const b = budget(MiB, 1.5 * MiB);
    const one = pack([blob(Buffer.alloc(MiB))]);
    expect(feed(new PackGuard(b, 'fetch'), sideBand(one))).toBeUndefined();
    expect(feed(new PackGuard(b, 'deepen'), sideBand(one))).toMatch(/^deepen: .*gitops\.limits\.maxUnpackedBytes/);
  });

  it.each([
    ['an error line instead of a pack', Buffer.from('0018ERR not our ref x\n')],
    ['no pack at all', Buffer.from('0008NAK\n0000')],
    ['something that is not a pkt-line stream', Buffer.from('<html>proxy error</html>')],
    [
      'a pack whose data is not zlib',
      sideBand(Buffer.concat([pack([]).subarray(0, 8), Buffer.from([0, 0, 0, 1, 0x3a]), Buffer.alloc(64, 9)])),
    ],
  ])('leaves %s to isomorphic-git, which refuses it itself', (_, bytes) => {
    const b = budget();
    expect(feed(new PackGuard(b, 'fetch'), bytes, 5)).toBeUndefined();
  });
});
