import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { EventRecorder } from '../../core/controller/events.ts';
import type { GitSource } from '../applier/gitsource.ts';
import { Notifier } from './notifier.ts';

const REVISION = 'a'.repeat(40);

const gitSource = (url: string, retries: number): GitSource =>
  ({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'GitSource',
    metadata: { name: 'tenants', namespace: 'default' },
    spec: { url: 'https://git.example.com/org/tenants.git', notifications: [{ type: 'webhook', url, retries }] },
  }) as GitSource;

/** events collects what the notifier records, and resolves `next` on each record. */
function events() {
  const seen: Array<{ type: string; reason: string; message: string }> = [];
  let wake = (): void => {};
  const recorder = {
    record: (_o: unknown, type: string, reason: string, message: string) => {
      seen.push({ type, reason, message });
      wake();
      return Promise.resolve();
    },
  } as unknown as EventRecorder;
  const next = () => new Promise<void>((r) => (wake = r));
  return { seen, recorder, next };
}

/** receiver is a real webhook endpoint on loopback answering each call with the next status of `statuses`. */
async function receiver(
  statuses: number[],
): Promise<{ server: Server; url: string; calls: string[]; done: Promise<void> }> {
  const calls: string[] = [];
  let finish = (): void => {};
  const done = new Promise<void>((r) => (finish = r));
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      calls.push(body);
      const status = statuses[calls.length - 1] ?? 204;
      res.writeHead(status).end();
      if (status < 300) finish();
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, calls, done };
}

describe('GitSource notifications to a webhook that fails', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise((ok) => s.close(ok));
  });

  const notifier = (recorder: EventRecorder) =>
    new Notifier({
      events: recorder,
      secret: () => Promise.reject(new Error('no Secret named')),
      addresses: { allowPrivateAddresses: true },
      backoffMs: 5,
    });

  it('retries a webhook answering 503 until it takes the outcome, the same body each time, and records nothing', async () => {
    const r = await receiver([503, 503, 204]);
    servers.push(r.server);
    const e = events();
    const n = notifier(e.recorder);
    n.written(gitSource(r.url, 3), { lastAppliedRevision: REVISION });
    // written hands the delivery to the background: the reconcile that wrote the status is not held up
    expect(r.calls).toEqual([]);
    await r.done;
    await n.stop();
    expect(r.calls).toHaveLength(3);
    expect(new Set(r.calls).size).toBe(1);
    expect(JSON.parse(r.calls[0]!)).toMatchObject({ event: 'Applied', revision: REVISION });
    expect(e.seen).toEqual([]);
  });

  it('gives up on a webhook that stays down after its retries with a Warning naming it, and delivers the next outcome', async () => {
    const down = await receiver([]);
    await new Promise((ok) => down.server.close(ok));
    const e = events();
    const n = notifier(e.recorder);
    const failed = e.next();
    const gs = gitSource(down.url, 2);
    n.written(gs, { lastAppliedRevision: REVISION });
    await failed;
    expect(e.seen).toEqual([
      {
        type: 'Warning',
        reason: 'NotificationFailed',
        message: expect.stringMatching(
          new RegExp(`^Applied not delivered to webhook ${down.url.replace(/[.]/g, '\\.')}: connect ECONNREFUSED `),
        ) as unknown as string,
      },
    ]);
    // the webhook back on another port: the next revision goes through, the failure held nothing up
    const up = await receiver([204]);
    servers.push(up.server);
    n.written(
      { ...gitSource(up.url, 2), status: { lastAppliedRevision: REVISION } },
      {
        lastAppliedRevision: 'b'.repeat(40),
      },
    );
    await up.done;
    await n.stop();
    expect(JSON.parse(up.calls[0]!)).toMatchObject({ event: 'Applied', revision: 'b'.repeat(40) });
    expect(e.seen).toHaveLength(1);
  });
});
