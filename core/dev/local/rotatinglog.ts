import { closeSync, fstatSync, openSync, renameSync, writeSync } from 'node:fs';
import { Writable } from 'node:stream';

/**
 * DEFAULT_MAX_LOG_BYTES is the size at which a component's log file is rotated: with the one older file kept, a
 * component's logs take at most twice this on disk, however much a tenant makes its control plane log.
 */
export const DEFAULT_MAX_LOG_BYTES = 64 * 1024 * 1024;

/**
 * RotatingLog is a log file that is rotated once it reaches maxBytes: the file becomes `<file>.1` (replacing the older
 * one) and a new file is started. Writes are synchronous appends, so a rotation never splits or reorders them.
 */
export class RotatingLog extends Writable {
  private fd: number;
  private size: number;

  constructor(
    readonly file: string,
    readonly maxBytes = DEFAULT_MAX_LOG_BYTES,
  ) {
    super();
    this.fd = openSync(file, 'a');
    this.size = fstatSync(this.fd).size;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error | null) => void): void {
    try {
      if (this.size > 0 && this.size + chunk.length > this.maxBytes) this.rotate();
      writeSync(this.fd, chunk);
      this.size += chunk.length;
      done();
    } catch (e) {
      done(e as Error);
    }
  }

  override _final(done: (e?: Error | null) => void): void {
    try {
      closeSync(this.fd);
      done();
    } catch (e) {
      done(e as Error);
    }
  }

  private rotate(): void {
    closeSync(this.fd);
    renameSync(this.file, `${this.file}.1`);
    this.fd = openSync(this.file, 'a');
    this.size = 0;
  }
}
