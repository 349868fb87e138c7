import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NODE_PORT_RANGE, pickPorts, RESERVATION_TTL_MS, reserve, serverPortRange } from './ports.ts';

describe('serverPortRange', () => {
  it.each([
    { ephemeral: [32768, 60999] as [number, number], want: [20000, 29999] },
    { ephemeral: [40000, 65535] as [number, number], want: [20000, 29999] },
    { ephemeral: [1024, 20000] as [number, number], want: [32768, 65535] },
    { ephemeral: [1024, 31000] as [number, number], want: [32768, 65535] },
    { ephemeral: [25000, 65535] as [number, number], want: [20000, 24999] },
    { ephemeral: [1024, 65535] as [number, number], want: [20000, 29999] },
    { ephemeral: [20500, 65535] as [number, number], want: [20000, 29999] },
    { ephemeral: undefined, want: [20000, 29999] },
  ])('ephemeral $ephemeral -> $want', ({ ephemeral, want }) => {
    expect(serverPortRange(ephemeral)).toEqual(want);
  });

  it('never hands out a port of the NodePort range, whose local listeners kube-router opens to every Pod', () => {
    for (const e of [[32768, 60999], [1024, 20000], [40000, 65535], undefined] as Array<[number, number] | undefined>) {
      const [low, high] = serverPortRange(e);
      expect(high < NODE_PORT_RANGE[0] || low > NODE_PORT_RANGE[1], `${low}-${high}`).toBe(true);
    }
  });
});

describe('port reservations', () => {
  const dirs: string[] = [];
  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), 'vc-ports-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('refuses a port a live process reserved, and takes over a dead or expired reservation', () => {
    const d = dir();
    expect(reserve(25000, d)).toBe(true);
    expect(reserve(25000, d)).toBe(false);
    // pid 1 is alive and not us: its fresh reservation holds; once older than the TTL it does not.
    writeFileSync(join(d, '25001'), '1');
    expect(reserve(25001, d)).toBe(false);
    const old = (Date.now() - RESERVATION_TTL_MS - 1000) / 1000;
    utimesSync(join(d, '25001'), old, old);
    expect(reserve(25001, d)).toBe(true);
    // A pid that does not exist holds nothing.
    writeFileSync(join(d, '25002'), '2147483646');
    expect(reserve(25002, d)).toBe(true);
  });

  it('hands out distinct bindable ports from the range and skips a port something listens on', async () => {
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const taken = (busy.address() as net.AddressInfo).port;
    try {
      // Room beyond the three: on a busy host other processes' connections hold some of the ports next to it.
      const ports = await pickPorts(3, { dir: dir(), range: [taken, taken + 64] });
      expect(new Set(ports).size).toBe(3);
      expect(ports).not.toContain(taken);
      for (const p of ports) expect(p).toBeGreaterThan(taken);
    } finally {
      busy.close();
    }
  });
});
