import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { R } from './resources.ts';
import { isWriteFenced, KubeClient } from './client.ts';

// A plain HTTP server standing in for the network: the test checks which requests a fenced client sends at all.
const sent: string[] = [];
const server = createServer((req: IncomingMessage, res) => {
  sent.push(`${req.method} ${req.url}`);
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'ns' } }));
});
let client: KubeClient;

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  // Plain http (fromKubeConfig allows it with skipTLSVerify; fromString would refuse it): no TLS needed here.
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  client = await KubeClient.fromKubeConfig(kc);
});

afterAll(async () => {
  client.close();
  await new Promise((r) => server.close(r));
});

describe('KubeClient.fenced', () => {
  it('sends reads always and writes only while the fence allows them', async () => {
    let verdict: true | string = true;
    const f = client.fenced(() => verdict);
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'ns' } };
    await f.create(R.configmaps, cm);
    verdict = 'the term has ended';
    await expect(f.get(R.configmaps, 'ns', 'x')).resolves.toMatchObject({ metadata: { name: 'x' } });
    const refused = await f.patch(R.configmaps, 'ns', 'x', [{ op: 'add', path: '/data', value: {} }], 'json').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isWriteFenced(refused)).toBe(true);
    expect(String(refused)).toContain('PATCH /api/v1/namespaces/ns/configmaps/x: not sent: the term has ended');
    await expect(f.delete(R.configmaps, 'ns', 'x')).rejects.toThrow(/not sent/);
    // The client it was made from is not fenced.
    await client.delete(R.configmaps, 'ns', 'x');
    expect(sent).toEqual([
      'POST /api/v1/namespaces/ns/configmaps',
      'GET /api/v1/namespaces/ns/configmaps/x',
      'DELETE /api/v1/namespaces/ns/configmaps/x',
    ]);
  });
});

describe('countSend', () => {
  it('counts a write in vc_syncer_writes_total only when the fence lets it be sent', async () => {
    const { countSend, syncerMetrics } = await import('../syncer/metrics.ts');
    const w = {
      tenant: 'fence-count-test',
      plugin: 'p',
      op: 'event',
      side: 'tenant',
      verb: 'create',
      resource: 'events',
    } as const;
    const counted = async () =>
      (await syncerMetrics.writes.get()).values.find((v) => v.labels.tenant === w.tenant)?.value ?? 0;
    let verdict: true | string = true;
    const f = client.fenced(() => verdict);
    countSend(f, w);
    countSend(client, w);
    expect(await counted()).toBe(2);
    verdict = 'the Lease was lost';
    expect(() => countSend(f, w)).toThrow(/not sent: the Lease was lost/);
    // The unfenced client it was made from still counts.
    countSend(client, w);
    expect(await counted()).toBe(3);
  });
});
