/**
 * The unpacked size of what a git server sends, checked while it streams in and before isomorphic-git unpacks it.
 *
 * The byte budget of a revision counts compressed bytes, and zlib packs a run of zeros about a thousand to one: a
 * 256 MiB blob arrives in a few hundred KiB, and isomorphic-git holds every object whole while it indexes the pack.
 * PackGuard reads the upload-pack response as it arrives (pkt-lines, side band 1, or a bare pack), parses each
 * object's header and inflates its data into nothing but a count, so that a declared or actual size beyond
 * gitops.limits.maxObjectBytes, or a revision's objects beyond gitops.limits.maxUnpackedBytes together, stops the
 * fetch before anything is held. A delta counts at the size of the object it makes (the second number of its data).
 * What it cannot parse it leaves to isomorphic-git, which refuses a malformed pack itself.
 */
import {
  Z_BUF_ERROR,
  Z_NO_FLUSH,
  Z_OK,
  Z_STREAM_END,
  ZStream,
  zlibInflate,
  zlibInflateEnd,
  zlibInflateInit,
} from 'pako';
import { SourceError } from './errors.ts';

/** UnpackBudget is what one revision may still unpack, and its caps. */
export interface UnpackBudget {
  /** bytes of one object once inflated */
  maxObjectBytes: number;
  /** bytes of all objects of the revision once inflated */
  maxUnpackedBytes: number;
  /** bytes counted so far for the revision (declared sizes of whole objects, result sizes of deltas) */
  unpacked: number;
}

const OBJ_OFS_DELTA = 6;
const OBJ_REF_DELTA = 7;
const SHA1_BYTES = 20;
const TYPES = ['', 'commit', 'tree', 'blob', 'tag', '', 'ofs-delta', 'ref-delta'];
/** OUT is where every object is inflated to, and overwritten: only its length is kept. */
const OUT = new Uint8Array(64 * 1024);

/** Varint reads git's little-endian base-128 numbers byte by byte; past 2^53 it reports Infinity. */
class Varint {
  value = 0;
  private scale = 1;
  done = false;

  /** push takes the next byte and says whether the number is complete. */
  push(byte: number, first = 0x7f, firstBits = 7): boolean {
    const bits = this.scale === 1 ? byte & first : byte & 0x7f;
    this.value += bits * this.scale;
    this.scale *= this.scale === 1 ? 2 ** firstBits : 128;
    if (this.scale > 2 ** 60) this.value = Infinity;
    this.done = (byte & 0x80) === 0;
    return this.done;
  }
}

type Phase =
  | { at: 'pack-header'; got: number[] }
  | { at: 'object-header'; type?: number; size: Varint }
  | { at: 'delta-base'; type: number; size: number; left: number }
  | { at: 'data'; type: number; size: number; strm: ZStream; out: number; delta?: [Varint, Varint] }
  | { at: 'end' };

/** PackGuard checks one upload-pack response; push each chunk before it is consumed. */
export class PackGuard {
  // the framing: pkt-line header bytes being read, the payload bytes left of the current line and whether they are
  // pack data, or a bare pack (no side band)
  private lineHeader = '';
  private payloadLeft = 0;
  private payloadBand: number | undefined;
  private bare = false;
  private phase: Phase = { at: 'pack-header', got: [] };
  private objectsLeft = 0;

  constructor(
    private readonly budget: UnpackBudget,
    private readonly what: string,
  ) {}

  /** push reads the next bytes of the response; a SourceError (LimitExceeded) when a cap is passed. */
  push(chunk: Uint8Array): void {
    if (this.done) return;
    if (this.bare) return this.pack(chunk);
    let i = 0;
    while (i < chunk.length && !this.done) {
      if (this.payloadLeft === 0) {
        this.lineHeader += String.fromCharCode(chunk[i++]!);
        if (this.lineHeader.length < 4) continue;
        const header = this.lineHeader;
        this.lineHeader = '';
        if (header === 'PACK') {
          // No side band: the pack follows the negotiation lines bare.
          this.bare = true;
          this.pack(Buffer.from(header, 'latin1'));
          return this.pack(chunk.subarray(i));
        }
        const length = /^[0-9a-f]{4}$/i.test(header) ? parseInt(header, 16) : NaN;
        if (Number.isNaN(length)) return this.stop();
        // 0000 flush, 0001 delimiter, 0002 response end: no payload
        if (length > 4) {
          this.payloadLeft = length - 4;
          this.payloadBand = undefined;
        }
        continue;
      }
      if (this.payloadBand === undefined) {
        this.payloadBand = chunk[i++]!;
        this.payloadLeft--;
        continue;
      }
      const take = Math.min(this.payloadLeft, chunk.length - i);
      // Band 1 is the pack; 2 progress and 3 an error (isomorphic-git reports it); other lines are negotiation (NAK,
      // ACK, shallow), whose first byte is a letter.
      if (this.payloadBand === 1) this.pack(chunk.subarray(i, i + take));
      i += take;
      this.payloadLeft -= take;
    }
  }

  /** done says whether the pack has been read to its end, or given up on. */
  private get done(): boolean {
    return this.phase.at === 'end';
  }

  /** stop gives up on a response it cannot frame: isomorphic-git refuses it. */
  private stop(): void {
    this.phase = { at: 'end' };
  }

  private refuse(message: string): never {
    this.phase = { at: 'end' };
    throw new SourceError('LimitExceeded', `${this.what}: ${message}`);
  }

  /** count adds an object's unpacked size to the revision's, refusing one over either cap. */
  private count(size: number, kind: string): void {
    const b = this.budget;
    if (size > b.maxObjectBytes)
      this.refuse(
        `the server sent a ${kind} of ${Number.isFinite(size) ? size : 'more than 2^53'} bytes unpacked, more than ` +
          `${b.maxObjectBytes} (gitops.limits.maxObjectBytes)`,
      );
    b.unpacked += size;
    if (b.unpacked > b.maxUnpackedBytes)
      this.refuse(
        `the objects of this revision unpack to more than ${b.maxUnpackedBytes} bytes (gitops.limits.maxUnpackedBytes)`,
      );
  }

  /** pack reads pack bytes: the header, then each object's header and data. */
  private pack(bytes: Uint8Array): void {
    let i = 0;
    while (i < bytes.length) {
      const p = this.phase;
      switch (p.at) {
        case 'end':
          return;
        case 'pack-header': {
          p.got.push(bytes[i++]!);
          if (p.got.length < 12) break;
          const head = Buffer.from(p.got);
          if (head.toString('latin1', 0, 4) !== 'PACK') return this.stop();
          this.objectsLeft = head.readUInt32BE(8);
          this.phase = this.nextObject();
          break;
        }
        case 'object-header': {
          const byte = bytes[i++]!;
          // the type is in the first byte's bits 6-4, beside the size's lowest four bits
          const type = (p.type ??= (byte >> 4) & 7);
          if (!p.size.push(byte, 0x0f, 4)) break;
          const size = p.size.value;
          if (type === OBJ_OFS_DELTA || type === OBJ_REF_DELTA) {
            // The delta's own data is bounded as an object; what it makes is counted once its header is inflated.
            if (size > this.budget.maxObjectBytes) this.count(size, TYPES[type]!);
            this.phase = { at: 'delta-base', type, size, left: type === OBJ_REF_DELTA ? SHA1_BYTES : -1 };
          } else {
            this.count(size, TYPES[type] || `object of type ${type}`);
            this.phase = this.data(type, size);
          }
          break;
        }
        case 'delta-base': {
          const byte = bytes[i++]!;
          // ofs-delta: a base-128 offset ending at a byte without the high bit; ref-delta: the base's object id
          const ended = p.left < 0 ? (byte & 0x80) === 0 : --p.left === 0;
          if (ended) this.phase = this.data(p.type, p.size);
          break;
        }
        case 'data': {
          const consumed = this.inflate(p, bytes.subarray(i));
          if (consumed === undefined) return;
          i += consumed;
          if (p.out !== p.size)
            this.refuse(`a ${TYPES[p.type]} in the pack unpacks to ${p.out} bytes, not the ${p.size} it declares`);
          this.objectsLeft--;
          this.phase = this.nextObject();
          break;
        }
      }
    }
  }

  /**
   * inflate feeds an object's compressed data on, counting what comes out (and reading a delta's sizes from its first
   * bytes): the bytes it took once the object's zlib stream has ended in them, else undefined (all taken).
   */
  private inflate(p: Extract<Phase, { at: 'data' }>, input: Uint8Array): number | undefined {
    const strm = p.strm;
    strm.input = input;
    strm.next_in = 0;
    strm.avail_in = input.length;
    for (;;) {
      strm.output = OUT;
      strm.next_out = 0;
      strm.avail_out = OUT.length;
      const status = zlibInflate(strm, Z_NO_FLUSH);
      if (status !== Z_OK && status !== Z_STREAM_END && status !== Z_BUF_ERROR) {
        zlibInflateEnd(strm);
        this.stop();
        return undefined;
      }
      this.produced(p, OUT.subarray(0, strm.next_out));
      if (status === Z_STREAM_END) {
        zlibInflateEnd(strm);
        return input.length - strm.avail_in;
      }
      // Z_BUF_ERROR: no progress was possible, so all input is taken and the output had room.
      if (status === Z_BUF_ERROR || (strm.avail_in === 0 && strm.avail_out > 0)) return undefined;
    }
  }

  /** produced counts inflated bytes of an object, refusing more than it declared; a delta's result size is counted. */
  private produced(p: Extract<Phase, { at: 'data' }>, out: Uint8Array): void {
    p.out += out.length;
    if (p.out > p.size)
      this.refuse(`a ${TYPES[p.type]} in the pack unpacks to more than the ${p.size} bytes it declares`);
    const delta = p.delta;
    if (!delta || delta[1].done) return;
    for (const byte of out) {
      const v = delta[0].done ? delta[1] : delta[0];
      if (v.push(byte) && v === delta[1]) return this.count(v.value, `${TYPES[p.type]} result`);
    }
  }

  /** nextObject is the phase after the pack header or an object: the next object's header, or the end. */
  private nextObject(): Phase {
    return this.objectsLeft > 0 ? { at: 'object-header', size: new Varint() } : { at: 'end' };
  }

  /** data starts inflating an object's data into a count (and, for a delta, the two sizes that begin it). */
  private data(type: number, size: number): Phase {
    const strm = new ZStream();
    zlibInflateInit(strm);
    const delta = type === OBJ_OFS_DELTA || type === OBJ_REF_DELTA;
    return { at: 'data', type, size, strm, out: 0, ...(delta && { delta: [new Varint(), new Varint()] }) };
  }
}
