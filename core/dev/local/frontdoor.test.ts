import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { FrontDoor } from './frontdoor.ts';

/** echo is a TCP server on loopback that sends back what it gets. */
async function echo(): Promise<net.Server> {
  const s = net.createServer((c) => c.pipe(c));
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return s;
}

describe('FrontDoor', () => {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
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
    client.write('hello');
    await new Promise((r) => setTimeout(r, 50));
    expect(got).toHaveLength(0);
    expect(door.activity().open).toBe(1);
    expect(door.activity().lastActiveMs).toBeGreaterThan(0);
    release();
    await new Promise<void>((r) => client.once('data', () => r()));
    expect(Buffer.concat(got).toString()).toBe('hello');
    expect(wakes).toBe(1);
    client.end();
    await new Promise<void>((r) => client.once('close', () => r()));
    await new Promise((r) => setTimeout(r, 20));
    expect(door.activity().open).toBe(0);
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
    await new Promise<void>((r) => client.once('close', () => r()));
    expect(client.destroyed).toBe(true);
  });
});
