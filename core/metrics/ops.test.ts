import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Counter } from 'prom-client';
import {
  addHealthCheck,
  addReadyCheck,
  CHECK_TIMEOUT_MS,
  renderChecks,
  startOpsServer,
  type OpsServer,
} from './ops.ts';
import { registry } from './registry.ts';

let server: OpsServer;
let base: string;
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  server = await startOpsServer({ port: 0 });
  base = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server.close());
afterEach(() => {
  for (const undo of cleanups.splice(0)) undo();
});

async function get(path: string, init?: RequestInit): Promise<{ status: number; body: string; type: string | null }> {
  const res = await fetch(base + path, init);
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
}

describe('startOpsServer', () => {
  it('binds a free port on 127.0.0.1 when asked for port 0', () => {
    expect(server.port).toBeGreaterThan(0);
  });

  it('serves the registry in Prometheus text format, default metrics prefixed vc_', async () => {
    const c = new Counter({ name: 'vc_ops_test_total', help: 'test counter', registers: [registry] });
    cleanups.push(() => registry.removeSingleMetric('vc_ops_test_total'));
    c.inc(3);
    const r = await get('/metrics');
    expect(r.status).toBe(200);
    expect(r.type).toBe(registry.contentType);
    expect(r.body).toContain('vc_ops_test_total 3');
    expect(r.body).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(r.body).toContain('# TYPE nodejs_heap_size_used_bytes gauge');
  });

  it('answers 404 for unknown paths and 405 for other methods', async () => {
    expect((await get('/')).status).toBe(404);
    expect((await get('/metrics/extra')).status).toBe(404);
    expect((await get('/livez')).status).toBe(404);
    const post = await fetch(base + '/readyz', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('answers HEAD without a body', async () => {
    const res = await fetch(base + '/healthz', { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
  });

  it('is healthy and ready without checks', async () => {
    expect(await get('/healthz')).toMatchObject({ status: 200, body: 'ok\n' });
    expect(await get('/readyz')).toMatchObject({ status: 200, body: 'ok\n' });
    expect(await get('/readyz?verbose')).toMatchObject({ status: 200, body: 'readyz check passed\n' });
  });

  it('is ready only when every readiness check passes and lists only the failing ones', async () => {
    let synced: true | string = 'informers not synced';
    cleanups.push(
      addReadyCheck('informers', () => synced),
      addReadyCheck('apiserver', async (): Promise<true> => true),
      addReadyCheck('leader', () => Promise.reject(new Error('no lease yet'))),
      addReadyCheck('boom', () => {
        throw new Error('sync\nthrow');
      }),
    );
    const r = await get('/readyz');
    expect(r.status).toBe(500);
    expect(r.type).toBe('text/plain; charset=utf-8');
    expect(r.body).toBe(
      '[-]boom failed: sync throw\n[-]informers failed: informers not synced\n[-]leader failed: no lease yet\nreadyz check failed\n',
    );
    const v = await get('/readyz?verbose');
    expect(v.status).toBe(500);
    expect(v.body).toBe(
      '[+]apiserver ok\n[-]boom failed: sync throw\n[-]informers failed: informers not synced\n[-]leader failed: no lease yet\nreadyz check failed\n',
    );
    // readiness failures do not touch liveness
    expect(await get('/healthz')).toMatchObject({ status: 200, body: 'ok\n' });

    cleanups.splice(1, 3).forEach((undo) => undo());
    synced = true;
    expect(await get('/readyz')).toMatchObject({ status: 200, body: 'ok\n' });
    expect(await get('/readyz?verbose')).toMatchObject({ status: 200, body: '[+]informers ok\nreadyz check passed\n' });
  });

  it('fails liveness when a health check fails', async () => {
    cleanups.push(
      addHealthCheck('event-loop', () => 'stalled for 30s'),
      addHealthCheck('ping', () => true),
    );
    expect(await get('/healthz')).toMatchObject({
      status: 500,
      body: '[-]event-loop failed: stalled for 30s\nhealthz check failed\n',
    });
    expect((await get('/healthz?verbose')).body).toBe(
      '[-]event-loop failed: stalled for 30s\n[+]ping ok\nhealthz check failed\n',
    );
    expect((await get('/readyz')).status).toBe(200);
  });

  it(
    'fails a check that does not answer within the timeout',
    async () => {
      cleanups.push(addReadyCheck('slow', () => new Promise<true>(() => {})));
      const started = Date.now();
      const r = await get('/readyz');
      expect(Date.now() - started).toBeGreaterThanOrEqual(CHECK_TIMEOUT_MS - 50);
      expect(r).toMatchObject({
        status: 500,
        body: `[-]slow failed: timed out after ${CHECK_TIMEOUT_MS} ms\nreadyz check failed\n`,
      });
    },
    CHECK_TIMEOUT_MS + 3000,
  );
});

describe('check registration', () => {
  it('refuses duplicate and malformed names; the returned function unregisters', async () => {
    const undo = addReadyCheck('dup', () => 'down');
    expect(() => addReadyCheck('dup', () => true)).toThrow(/already registered/);
    expect(() => addReadyCheck('', () => true)).toThrow(/non-empty/);
    expect(() => addReadyCheck('two words', () => true)).toThrow(/whitespace/);
    // the same name is free among health checks
    cleanups.push(addHealthCheck('dup', () => true));
    expect((await get('/readyz')).status).toBe(500);
    undo();
    expect((await get('/readyz')).status).toBe(200);
    cleanups.push(addReadyCheck('dup', () => true));
    undo(); // a stale remover leaves the new registration alone
    expect((await get('/readyz?verbose')).body).toBe('[+]dup ok\nreadyz check passed\n');
  });
});

describe('renderChecks', () => {
  it('prints ok when everything passes', () => {
    expect(renderChecks('readyz', [{ name: 'a', ok: true }], false)).toBe('ok\n');
  });
});

describe('close', () => {
  it('stops listening, drops kept-alive connections and can be called twice', async () => {
    const s = await startOpsServer({ port: 0, host: '127.0.0.1' });
    expect((await fetch(`http://127.0.0.1:${s.port}/healthz`)).status).toBe(200);
    await Promise.all([s.close(), s.close()]);
    await expect(fetch(`http://127.0.0.1:${s.port}/healthz`)).rejects.toThrow();
  });

  it('rejects when the port is taken', async () => {
    await expect(startOpsServer({ port: server.port })).rejects.toThrow(/EADDRINUSE/);
  });
});
