import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionCap, FrontDoor } from './frontdoor.ts';

/** HELLO is what a TLS client sends first: a handshake record (content type 22, version 3.1) and then some bytes. */
const HELLO = Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 0x68, 0x65, 0x6c, 0x6c, 0x6f]);

/** closed resolves once the client's connection is closed, with the bytes it got before. */
const closed = (client: net.Socket) =>
  new Promise<string>((resolve) => {
    const got: Buffer[] = [];
    client.on('data', (b: Buffer) => got.push(b));
    client.on('error', () => undefined);
    client.once('close', () => resolve(Buffer.concat(got).toString()));
  });

/** echo is a TCP server on loopback that sends back what it gets. */
async function echo(): Promise<net.Server> {
  const s = net.createServer((c) => c.pipe(c));
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return s;
}

describe('FrontDoor', () => {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('holds a connection and its bytes until upstream answers, then relays both ways', async () => {
    const server = await echo();
    closers.push(() => new Promise((r) => server.close(r)));
    let wakes = 0;
    let release!: () => void;
    const woken = new Promise<void>((r) => (release = r));
    const door = await FrontDoor.start({
      host: '127.0.0.1',
      port: 0,
      activeSinceMs: 0,
      upstream: async () => {
        wakes++;
        await woken;
        return { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port };
      },
    });
    closers.push(() => door.stop());
    expect(door.activity()).toEqual({ open: 0, lastActiveMs: 0 });
    const client = net.connect(door.port, '127.0.0.1');
    closers.push(async () => client.destroy());
    const got: Buffer[] = [];
    client.on('data', (b) => got.push(b));
    await new Promise<void>((r) => client.once('connect', () => r()));
    client.write(HELLO);
    await new Promise((r) => setTimeout(r, 50));
    expect(got).toHaveLength(0);
    expect(door.activity().open).toBe(1);
    expect(door.activity().lastActiveMs).toBeGreaterThan(0);
    release();
    await new Promise<void>((r) => client.once('data', () => r()));
    await new Promise((r) => setTimeout(r, 20));
    expect(Buffer.concat(got)).toEqual(HELLO);
    expect(wakes).toBe(1);
    client.end();
    await new Promise<void>((r) => client.once('close', () => r()));
    await new Promise((r) => setTimeout(r, 20));
    expect(door.activity().open).toBe(0);
  });

  /** door starts a FrontDoor in front of an echo server, counting the wakes (upstream calls). */
  const door = async (o: { maxConnections?: number; shared?: ConnectionCap; helloTimeoutMs?: number } = {}) => {
    const server = await echo();
    closers.push(() => new Promise((r) => server.close(r)));
    const wakes = { n: 0 };
    const d = await FrontDoor.start({
      host: '127.0.0.1',
      port: 0,
      activeSinceMs: 0,
      upstream: async () => {
        wakes.n++;
        return { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port };
      },
      ...o,
    });
    closers.push(() => d.stop());
    return { d, wakes };
  };
  const connect = async (port: number) => {
    const c = net.connect(port, '127.0.0.1');
    closers.push(async () => c.destroy());
    c.on('error', () => undefined);
    await new Promise<void>((r) => c.once('connect', () => r()));
    return c;
  };

  it('closes a connection whose first bytes are not TLS, without waking the tenant or counting it as use', async () => {
    const { d, wakes } = await door();
    const c = await connect(d.port);
    const end = closed(c);
    c.write('GET /api HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await end).toBe('');
    expect(wakes.n).toBe(0);
    expect(d.activity()).toEqual({ open: 0, lastActiveMs: 0 });
  });

  it('closes a connection that sends nothing within the hello timeout, without waking the tenant', async () => {
    const { d, wakes } = await door({ helloTimeoutMs: 200 });
    const c = await connect(d.port);
    await new Promise((r) => setTimeout(r, 50));
    expect(d.activity()).toEqual({ open: 0, lastActiveMs: 0 });
    expect(await closed(c)).toBe('');
    expect(wakes.n).toBe(0);
  });

  it('closes connections past its own limit and past a limit shared with other doors, and relays again below', async () => {
    const shared = new ConnectionCap(3);
    const a = await door({ maxConnections: 2, shared });
    const b = await door({ shared });
    const a1 = await connect(a.d.port);
    const a2 = await connect(a.d.port);
    const a3 = await connect(a.d.port);
    expect(await closed(a3)).toBe('');
    const b1 = await connect(b.d.port);
    const b2 = await connect(b.d.port);
    expect(await closed(b2)).toBe('');
    // the held ones relay
    const echoed = new Promise<Buffer>((r) => b1.once('data', r));
    b1.write(HELLO);
    expect(await echoed).toEqual(HELLO);
    expect(a.d.activity().open + b.d.activity().open).toBe(1);
    // a connection closed gives its place back
    a1.destroy();
    await new Promise((r) => setTimeout(r, 50));
    const b3 = await connect(b.d.port);
    const again = new Promise<Buffer>((r) => b3.once('data', r));
    b3.write(HELLO);
    expect(await again).toEqual(HELLO);
    expect(b.wakes.n).toBe(2);
    a2.destroy();
  });

  it('closes the client when the tenant cannot be woken', async () => {
    const door = await FrontDoor.start({
      host: '127.0.0.1',
      port: 0,
      upstream: () => Promise.reject(new Error('no such tenant')),
    });
    closers.push(() => door.stop());
    const client = net.connect(door.port, '127.0.0.1');
    client.on('error', () => undefined);
    client.write(HELLO);
    await new Promise<void>((r) => client.once('close', () => r()));
    expect(client.destroyed).toBe(true);
  });
});
