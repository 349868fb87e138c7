import { createHash } from 'node:crypto';
import { createWriteStream, rmSync } from 'node:fs';
import { once } from 'node:events';

/** SnapshotFile is what saveEtcdSnapshot wrote: the file, its size in bytes and its sha256 (hex). */
export interface SnapshotFile {
  path: string;
  sizeBytes: number;
  sha256: string;
  /** etcd's revision when the snapshot was taken, when etcd reported it */
  etcdRevision?: number;
}

/**
 * saveEtcdSnapshot streams a consistent snapshot of a whole etcd into path through etcd's Maintenance.Snapshot API,
 * as the v3 JSON gateway serves it (one JSON message a chunk, the blob in base64; the last chunk ends with etcd's own
 * sha256 of the database, which `etcdutl snapshot restore` checks). The gateway needs no client binary and no gRPC
 * library, and the endpoint is a tenant's own etcd, so the snapshot holds exactly one tenant. A partial file is
 * removed when anything fails.
 */
export async function saveEtcdSnapshot(
  endpoint: string,
  path: string,
  o: { signal?: AbortSignal } = {},
): Promise<SnapshotFile> {
  const res = await fetch(`${endpoint}/v3/maintenance/snapshot`, {
    method: 'POST',
    body: '{}',
    ...(o.signal && { signal: o.signal }),
  });
  if (!res.ok || !res.body) throw new Error(`etcd snapshot from ${endpoint}: HTTP ${res.status} ${await res.text()}`);
  const out = createWriteStream(path, { flags: 'wx' });
  let writeError: Error | undefined;
  out.on('error', (e) => (writeError ??= e));
  const hash = createHash('sha256');
  const messages = new MessageSplitter();
  let size = 0;
  let revision: number | undefined;
  let last = '';
  try {
    const decoder = new TextDecoder();
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      for (const text of messages.push(decoder.decode(chunk, { stream: true }))) {
        const m = JSON.parse(text) as SnapshotMessage;
        if (m.error) throw new Error(`etcd snapshot from ${endpoint}: ${m.error.message ?? JSON.stringify(m.error)}`);
        const r = m.result ?? {};
        if (r.header?.revision !== undefined) revision = Number(r.header.revision);
        if (!r.blob) continue;
        // proto3 JSON leaves out zero values: a chunk without remaining_bytes is the last one
        last = r.remaining_bytes ?? '0';
        const bytes = Buffer.from(r.blob, 'base64');
        size += bytes.length;
        hash.update(bytes);
        if (writeError) throw writeError;
        if (!out.write(bytes)) await once(out, 'drain');
      }
    }
    if (messages.rest().trim()) throw new Error(`etcd snapshot from ${endpoint}: the stream ended inside a message`);
    if (last !== '' && last !== '0') throw new Error(`etcd snapshot from ${endpoint}: ended with ${last} bytes to go`);
    if (size === 0) throw new Error(`etcd snapshot from ${endpoint}: empty`);
    await new Promise<void>((res, rej) => out.end((e?: Error | null) => (e ? rej(e) : res())));
  } catch (e) {
    out.destroy();
    if (!out.closed) await once(out, 'close').catch(() => undefined);
    rmSync(path, { force: true });
    throw e;
  }
  return {
    path,
    sizeBytes: size,
    sha256: hash.digest('hex'),
    ...(revision !== undefined && { etcdRevision: revision }),
  };
}

interface SnapshotMessage {
  result?: { header?: { revision?: string }; remaining_bytes?: string; blob?: string };
  error?: { message?: string };
}

/**
 * MessageSplitter cuts a stream of concatenated JSON objects (the gateway separates them by newlines, but a header
 * message may come without one) into whole objects, tracking depth and strings.
 */
export class MessageSplitter {
  private buf = '';
  private depth = 0;
  private inString = false;
  private escaped = false;
  private start = -1;
  private scanned = 0;

  /** push adds text and returns every object it completed, in order. */
  push(text: string): string[] {
    this.buf += text;
    const done: string[] = [];
    let cut = 0;
    for (let i = this.scanned; i < this.buf.length; i++) {
      const c = this.buf[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === '\\') this.escaped = true;
        else if (c === '"') this.inString = false;
      } else if (c === '"') this.inString = true;
      else if (c === '{') {
        if (this.depth++ === 0) this.start = i;
      } else if (c === '}' && this.depth > 0 && --this.depth === 0) {
        done.push(this.buf.slice(this.start, i + 1));
        cut = i + 1;
      }
    }
    if (this.depth === 0) {
      this.buf = this.buf.slice(this.buf.length);
      this.scanned = 0;
    } else {
      this.buf = this.buf.slice(Math.max(cut, this.start));
      this.start = 0;
      this.scanned = this.buf.length;
    }
    return done;
  }

  /** rest is the text of an object not yet complete. */
  rest(): string {
    return this.buf;
  }
}
