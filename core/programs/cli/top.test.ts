import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { readWrites, writesByTenant } from './top.ts';

const METRICS = `# HELP vc_syncer_writes_total API writes the syncer made
# TYPE vc_syncer_writes_total counter
vc_syncer_writes_total{tenant="a-1a2b3c-dev",plugin="pods",op="create",side="super",verb="create",resource="pods"} 3
vc_syncer_writes_total{tenant="a-1a2b3c-dev",plugin="pods",op="bind",side="tenant",verb="create",resource="pods"} 2
vc_syncer_writes_total{tenant="b-4d5e6f-prod",plugin="secrets",op="create",side="super",verb="create",resource="secrets"} 7
vc_syncer_writes_total{plugin="pods",op="create",side="super",verb="create",resource="pods"} 100
vc_syncer_writes_total_created{tenant="a-1a2b3c-dev"} 1700000000
vc_syncer_super_bytes_total{tenant="a-1a2b3c-dev",plugin="pods"} 4096
vc_syncer_writes_total{tenant="a-1a2b3c-dev",plugin="pods" 9
`;

describe('vc top --metrics', () => {
  it('sums the writes per tenant over every other label, and nothing of other families or malformed lines', () => {
    expect(Object.fromEntries(writesByTenant(METRICS))).toEqual({ 'a-1a2b3c-dev': 5, 'b-4d5e6f-prod': 7 });
    expect(writesByTenant('')).toEqual(new Map());
  });

  const servers: Server[] = [];
  afterAll(() => Promise.all(servers.map((s) => new Promise((ok) => s.close(ok)))));
  /** serve answers every request with `status` and `body` on loopback, and returns its URL. */
  const serve = async (status: number, body: string): Promise<string> => {
    const s = createServer((_req, res) => res.writeHead(status).end(body));
    servers.push(s);
    await new Promise<void>((ok) => s.listen(0, '127.0.0.1', ok));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}/metrics`;
  };

  it("reads a manager's /metrics over HTTP", async () => {
    expect(Object.fromEntries(await readWrites(await serve(200, METRICS)))).toEqual({
      'a-1a2b3c-dev': 5,
      'b-4d5e6f-prod': 7,
    });
  });

  it('refuses, naming the URL, an address nothing answers, an error answer and a page that is not a manager', async () => {
    const down = await serve(200, '');
    await new Promise((ok) => servers.pop()!.close(ok));
    await expect(readWrites(down)).rejects.toThrow(new RegExp(`^--metrics ${down}: fetch failed`));
    const failing = await serve(503, 'not ready');
    await expect(readWrites(failing)).rejects.toThrow(`--metrics ${failing}: answered 503: not ready`);
    const other = await serve(200, '# TYPE up gauge\nup 1\n');
    await expect(readWrites(other)).rejects.toThrow(
      `--metrics ${other}: no vc_syncer_writes_total there: not a manager's /metrics`,
    );
  });
});
