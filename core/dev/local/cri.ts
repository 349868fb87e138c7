/**
 * A minimal CRI client over containerd's gRPC socket (HTTP/2, hand-encoded protobuf): enough to list a node's Pod
 * sandboxes for its cleanup and its tests.
 *
 * Why hand-written rather than @grpc/grpc-js with a generated or loaded client: the developer environment makes four
 * unary calls of CRI v1's RuntimeService (Version to wait for containerd, ListPodSandbox, StopPodSandbox and
 * RemovePodSandbox to empty a real node before it stops, and the tests' look at what is left), whose requests are at
 * most one string field and whose replies are read for five string fields. A gRPC client would need CRI's api.proto
 * in this repository, and Kubernetes source is not kept here; it would add two dependencies (and a protobuf runtime)
 * to production installs for a dev-only path. CRI v1 is a stable API: protobuf field numbers are never reused, and
 * protoFields skips the fields it does not know, so a newer containerd's additions do not break it. A call that fails
 * names its gRPC status and message. If the developer environment ever needs more of CRI (streaming, containers,
 * images), that is the point to take a real gRPC client instead of growing this one.
 */
import http2 from 'node:http2';
import net from 'node:net';

/** protoString encodes one protobuf string field (wire type 2). */
export function protoString(field: number, s: string): Buffer {
  const b = Buffer.from(s, 'utf8');
  return Buffer.concat([Buffer.from([(field << 3) | 2]), varint(b.length), b]);
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

/** protoFields decodes the top-level fields of a protobuf message: number and raw bytes of each length-delimited one. */
export function protoFields(buf: Buffer): Array<{ field: number; bytes: Buffer }> {
  const out: Array<{ field: number; bytes: Buffer }> = [];
  let i = 0;
  const readVarint = (): number => {
    let n = 0;
    let mul = 1;
    for (;;) {
      const b = buf[i++]!;
      n += (b & 0x7f) * mul;
      if (!(b & 0x80)) return n;
      mul *= 128;
    }
  };
  while (i < buf.length) {
    const tag = readVarint();
    const wire = tag & 7;
    const field = Math.floor(tag / 8);
    if (wire === 0) readVarint();
    else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else if (wire === 2) {
      const len = readVarint();
      out.push({ field, bytes: buf.subarray(i, i + len) });
      i += len;
    } else throw new Error(`protobuf: unsupported wire type ${wire}`);
  }
  return out;
}

/** criCall makes one unary CRI RuntimeService call over containerd's socket (gRPC over h2c) and returns the reply. */
export async function criCall(sock: string, method: string, body: Buffer): Promise<Buffer> {
  const session = http2.connect('http://localhost', { createConnection: () => net.connect(sock) });
  try {
    return await new Promise<Buffer>((res, rej) => {
      session.on('error', rej);
      const req = session.request({
        ':method': 'POST',
        ':path': `/runtime.v1.RuntimeService/${method}`,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      const chunks: Buffer[] = [];
      let status: string | undefined;
      let message = '';
      req.on('response', (h) => {
        if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
        message = String(h['grpc-message'] ?? '');
      });
      req.on('trailers', (t) => {
        status = String(t['grpc-status'] ?? status);
        message = String(t['grpc-message'] ?? message);
      });
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('error', rej);
      req.on('end', () => {
        if (status !== '0')
          return rej(new Error(`CRI ${method}: grpc-status ${status} ${decodeURIComponent(message)}`));
        const all = Buffer.concat(chunks);
        res(all.length >= 5 ? all.subarray(5, 5 + all.readUInt32BE(1)) : Buffer.alloc(0));
      });
      const frame = Buffer.alloc(5 + body.length);
      frame.writeUInt32BE(body.length, 1);
      body.copy(frame, 5);
      req.end(frame);
    });
  } finally {
    session.close();
  }
}

/** CriSandbox is one Pod sandbox of a containerd: its id and the super Pod it runs (uid, namespace, name). */
export interface CriSandbox {
  id: string;
  uid: string;
  namespace: string;
  name: string;
}

/** criSandboxes lists every Pod sandbox of a containerd (CRI ListPodSandbox) with the Pod it belongs to. */
export async function criSandboxes(sock: string): Promise<CriSandbox[]> {
  const reply = await criCall(sock, 'ListPodSandbox', Buffer.alloc(0));
  const text = (fields: ReturnType<typeof protoFields>, n: number) =>
    fields.find((f) => f.field === n)?.bytes.toString('utf8') ?? '';
  return protoFields(reply)
    .filter((f) => f.field === 1)
    .map((item) => {
      const sandbox = protoFields(item.bytes);
      const meta = protoFields(sandbox.find((f) => f.field === 2)?.bytes ?? Buffer.alloc(0));
      return { id: text(sandbox, 1), name: text(meta, 1), uid: text(meta, 2), namespace: text(meta, 3) };
    })
    .filter((x) => x.id);
}

/** criListSandboxes lists the ids of every Pod sandbox of a containerd (CRI ListPodSandbox). */
export async function criListSandboxes(sock: string): Promise<string[]> {
  return (await criSandboxes(sock)).map((x) => x.id);
}
