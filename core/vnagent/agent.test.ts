import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { registry } from '../metrics/registry.ts';
import { stampOwnership, superNamespace } from '../names/names.ts';
import { PluginHost } from '../plugins/host.ts';
import { createCA, fingerprintSha256, issueCert, type CertKeyPair } from '../pki/pki.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { startVnAgent, type VnAgent } from './agent.ts';
import { StaticTenantDirectory } from './testing.ts';
import type { SuperNode, SuperPod, SuperView } from './superview.ts';

const A = 'team-a-111111-a';
const B = 'team-b-222222-b';

interface Seen {
  method: string;
  url: string;
  raw: string[];
  closed: boolean;
}

/** A fake kubelet: logs (optionally following), run (echoes the body), and upgrades that echo, or refuse on /refuse/. */
function fakeKubelet(serving: CertKeyPair, seen: Seen[], streams: Set<Duplex>): https.Server {
  const server = https.createServer({ cert: serving.certPem, key: serving.keyPem });
  server.on('request', (req: IncomingMessage, res) => {
    const s: Seen = { method: req.method!, url: req.url!, raw: req.rawHeaders, closed: false };
    seen.push(s);
    res.on('close', () => (s.closed = true));
    if (req.url!.startsWith('/run/')) {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      req.pipe(res);
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/plain', 'X-Kubelet': 'fake' });
    res.write('line 1\n');
    if (!req.url!.includes('follow=true')) return void res.end('line 2\n');
    let n = 1;
    const t = setInterval(() => res.write(`line ${++n}\n`), 20);
    res.on('close', () => clearInterval(t));
  });
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (offered) => [...offered][0] ?? false });
  server.on('upgrade', (req: IncomingMessage, sock: Duplex, head: Buffer) => {
    seen.push({ method: req.method!, url: req.url!, raw: req.rawHeaders, closed: false });
    if (req.headers.upgrade?.toLowerCase() === 'websocket') {
      wss.handleUpgrade(req, sock, head, (ws) => ws.on('message', (m, binary) => ws.send(m, { binary })));
      return;
    }
    if (req.url!.includes('/refuse/')) {
      const body = 'container "c" is not running\n';
      sock.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      return;
    }
    streams.add(sock);
    sock.on('close', () => streams.delete(sock));
    sock.on('error', () => sock.destroy());
    sock.write(
      'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n',
    );
    if (req.url!.includes('/ticker/')) {
      // Talks for 2 s without listening, then falls silent (but keeps the connection).
      const t = setInterval(() => sock.write('.'), 100);
      setTimeout(() => clearInterval(t), 2000);
      sock.on('close', () => clearInterval(t));
      sock.resume();
      return;
    }
    sock.pipe(sock);
  });
  return server;
}

async function listen(s: net.Server): Promise<number> {
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  return (s.address() as net.AddressInfo).port;
}

interface Reply {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

describe('vn-agent (in-process, fake kubelet)', () => {
  let caA: CertKeyPair;
  let caB: CertKeyPair;
  let kubeletA: CertKeyPair;
  let kubeletB: CertKeyPair;
  let adminA: CertKeyPair;
  let selfSigned: CertKeyPair;
  let agent: VnAgent;
  let directory: StaticTenantDirectory;
  const seen: Seen[] = [];
  const kubeletStreams = new Set<Duplex>();
  const servers: net.Server[] = [];
  const held: net.Socket[] = [];
  const pods = new Map<string, SuperPod>();
  const nodes = new Map<string, SuperNode>();

  const view: SuperView = {
    start: () => Promise.resolve(),
    stop: () => Promise.resolve(),
    ready: () => true,
    pod: (ns, name) => Promise.resolve(pods.get(`${ns}/${name}`)),
    node: (name) => Promise.resolve(nodes.get(name)),
    cachedPods: () => [...pods.values()],
  };

  const addNode = (name: string, port: number) =>
    nodes.set(name, {
      metadata: { name },
      status: {
        addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
        daemonEndpoints: { kubeletEndpoint: { Port: port } },
      },
    });
  const addPod = (
    tenant: string | null,
    name: string,
    node: string | undefined,
    ns = 'default',
    superNs = superNamespace(tenant ?? A, ns),
  ) => {
    const p: SuperPod = { metadata: { name, namespace: superNs }, spec: node ? { nodeName: node } : {} };
    if (tenant)
      stampOwnership(
        p,
        { key: tenant, vcName: tenant, vcNamespace: 'x' },
        { metadata: { namespace: ns, name, uid: `uid-${name}` } },
      );
    pods.set(`${superNs}/${name}`, p);
  };

  beforeAll(async () => {
    [caA, caB] = await Promise.all([createCA('a-ca', 1), createCA('b-ca', 1)]);
    const servingCA = await createCA('serving', 1);
    const serve = (cn: string) =>
      issueCert(servingCA, { commonName: cn, ipAddresses: ['127.0.0.1'], usages: ['server'], validityDays: 1 });
    let agentServing: CertKeyPair;
    let kubeletServing: CertKeyPair;
    [kubeletA, kubeletB, adminA, selfSigned, agentServing, kubeletServing] = await Promise.all([
      issueCert(caA, { commonName: 'kube-apiserver-kubelet-client', usages: ['client'], validityDays: 1 }),
      issueCert(caB, { commonName: 'kube-apiserver-kubelet-client', usages: ['client'], validityDays: 1 }),
      issueCert(caA, { commonName: 'admin', usages: ['client'], validityDays: 1 }),
      createCA('kube-apiserver-kubelet-client', 1),
      serve('vn-agent'),
      serve('kubelet'),
    ]);
    const kubelet = fakeKubelet(kubeletServing, seen, kubeletStreams);
    const dropper = net.createServer((s) => s.destroy());
    const silent = net.createServer((s) => void held.push(s));
    servers.push(kubelet, dropper, silent);
    const kubeletPort = await listen(kubelet);
    addNode('node-ok', kubeletPort);
    addNode('node-drop', await listen(dropper));
    addNode('node-silent', await listen(silent));
    // A kwok node in front of a kubelet that would answer: the agent must not reach it for exec and the like.
    addNode('node-kwok', kubeletPort);
    nodes.get('node-kwok')!.metadata!.annotations = { 'kwok.x-k8s.io/node': 'fake' };
    addPod(A, 'web', 'node-ok');
    addPod(A, 'ticker', 'node-ok');
    addPod(A, 'refuse', 'node-ok');
    addPod(A, 'dropped', 'node-drop');
    addPod(A, 'slow', 'node-silent');
    addPod(A, 'unscheduled', undefined);
    addPod(A, 'simulated', 'node-kwok');
    addPod(B, 'web-b', 'node-ok');
    addPod(null, 'orphan', 'node-ok');
    // A super Pod in A's namespace that the syncer wrote for B: the namespace alone must not decide.
    addPod(B, 'planted', 'node-ok', 'default', superNamespace(A, 'default'));
    directory = new StaticTenantDirectory([
      { key: A, caPem: caA.certPem, fingerprint: fingerprintSha256(kubeletA.certPem) },
      { key: B, caPem: caB.certPem, fingerprint: fingerprintSha256(kubeletB.certPem) },
    ]);
    const plugins = await PluginHost.load({ process: 'vn-agent', builtins: builtinPlugins });
    agent = await startVnAgent({
      host: '127.0.0.1',
      port: 0,
      serving: agentServing,
      directory,
      superView: view,
      plugins,
      kubelet: { insecureSkipVerify: true },
      ops: { port: 0 },
      handshakeTimeoutMs: 800,
      streamIdleTimeoutMs: 1000,
    });
  });

  afterAll(async () => {
    await agent?.stop();
    for (const s of held) s.destroy();
    for (const s of kubeletStreams) s.destroy();
    for (const s of servers) {
      (s as https.Server).closeAllConnections?.();
      s.close();
    }
  });

  function request(
    path: string,
    cert?: CertKeyPair,
    o: { method?: string; headers?: Record<string, string>; body?: string } = {},
  ): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: agent.port,
          path,
          method: o.method ?? 'GET',
          headers: o.headers,
          rejectUnauthorized: false,
          agent: false,
          ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(o.body);
    });
  }

  /** upgrade sends an upgrade request over a raw TLS connection and returns the head of the answer and the socket. */
  async function upgrade(
    path: string,
    cert: CertKeyPair | undefined,
    method = 'POST',
  ): Promise<{ socket: tls.TLSSocket; status: number; head: string; rest: string }> {
    const socket = tls.connect({
      host: '127.0.0.1',
      port: agent.port,
      rejectUnauthorized: false,
      ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
    });
    await once(socket, 'secureConnect');
    socket.write(
      [
        `${method} ${path} HTTP/1.1`,
        'Host: 127.0.0.1',
        'Connection: Upgrade',
        'Upgrade: SPDY/3.1',
        'X-Stream-Protocol-Version: v4.channel.k8s.io',
        'X-Stream-Protocol-Version: v3.channel.k8s.io',
        'Authorization: Bearer tenant-token',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n'),
    );
    let buf = '';
    for (;;) {
      const [chunk] = (await once(socket, 'data')) as [Buffer];
      buf += chunk.toString('utf8');
      const end = buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = buf.slice(0, end);
        return { socket, status: Number(head.split(' ')[1]), head, rest: buf.slice(end + 4) };
      }
    }
  }

  async function readToEnd(socket: tls.TLSSocket, rest: string): Promise<string> {
    let out = rest;
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (out += c));
    await once(socket, 'close');
    return out;
  }

  const eventually = async (fn: () => void, ms = 3000): Promise<void> => {
    const end = Date.now() + ms;
    for (;;) {
      try {
        return fn();
      } catch (e) {
        if (Date.now() > end) throw e;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };

  it('serves a replaced certificate from the next connection on, without a restart, and its expiry as a metric', async () => {
    /** get sends one logs request on a connection of its own and answers the status and the serial it was served */
    const get = () =>
      new Promise<{ status: number; serial: string }>((resolve, reject) => {
        const req = https.get(
          {
            host: '127.0.0.1',
            port: agent.port,
            path: '/containerLogs/default/web/c?tailLines=1',
            rejectUnauthorized: false,
            agent: false,
            cert: kubeletA.certPem,
            key: kubeletA.keyPem,
          },
          (res) => {
            const serial = (res.socket as tls.TLSSocket).getPeerCertificate().serialNumber;
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode!, serial }));
          },
        );
        req.on('error', reject);
      });
    const before = await get();
    expect(before.status).toBe(200);
    // A two-minute certificate of another CA, as a renewal at a fraction of a short life would issue.
    const next = await issueCert(await createCA('serving-next', 1), {
      commonName: 'vn-agent',
      ipAddresses: ['127.0.0.1'],
      usages: ['server'],
      validityDays: 2 / 1440,
    });
    agent.setServing(next);
    const fresh = await get();
    expect(fresh.status).toBe(200);
    expect(fresh.serial).not.toBe(before.serial);
    expect(fresh.serial).toBe(new X509Certificate(next.certPem).serialNumber);
    const expiry = Date.parse(new X509Certificate(next.certPem).validTo) / 1000;
    expect(await registry.getSingleMetricAsString('vc_vnagent_serving_certificate_expiry_timestamp_seconds')).toContain(
      `{port="${agent.port}"} ${expiry}`,
    );
  });

  it('renews its serving certificate at two thirds of its life and serves the renewed one', async () => {
    const ca = await createCA('serving-renewed', 1);
    const serve = (validityDays: number) =>
      issueCert(ca, { commonName: 'vn-agent', ipAddresses: ['127.0.0.1'], usages: ['server'], validityDays });
    // 36 s of life from a minute back (issueCert's allowance for clocks behind): two thirds of it is 4 s from now.
    const short = await serve(36 / 86_400);
    agent.setServing(short);
    const issued: string[] = [];
    agent.renewServing(short.certPem, async () => {
      const next = await serve(1);
      issued.push(new X509Certificate(next.certPem).serialNumber);
      return next;
    });
    const served = () =>
      new Promise<{ status: number; serial: string }>((resolve, reject) => {
        https
          .get(
            {
              host: '127.0.0.1',
              port: agent.port,
              path: '/containerLogs/default/web/c?tailLines=1',
              rejectUnauthorized: false,
              agent: false,
              cert: kubeletA.certPem,
              key: kubeletA.keyPem,
            },
            (res) => {
              const serial = (res.socket as tls.TLSSocket).getPeerCertificate().serialNumber;
              res.resume();
              res.on('end', () => resolve({ status: res.statusCode!, serial }));
            },
          )
          .on('error', reject);
      });
    expect((await served()).serial).toBe(new X509Certificate(short.certPem).serialNumber);
    const deadline = Date.now() + 20_000;
    while (!issued.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(issued).toHaveLength(1);
    expect(await served()).toEqual({ status: 200, serial: issued[0] });
    // the renewed certificate lives a day: nothing more is due
    await new Promise((r) => setTimeout(r, 500));
    expect(issued).toHaveLength(1);
  }, 30_000);

  it('renews its client certificate towards kubelets at two thirds of its life, and a kubelet that checks it still answers', async () => {
    // A kubelet that, like a real one (--client-ca-file), accepts only client certificates of its CA.
    const clientCA = await createCA('kubelet-client-ca', 1);
    const kubeletServing = await issueCert(await createCA('strict-serving', 1), {
      commonName: 'strict',
      ipAddresses: ['127.0.0.1'],
      usages: ['server'],
      validityDays: 1,
    });
    const shown: string[] = [];
    const strict = https.createServer({
      cert: kubeletServing.certPem,
      key: kubeletServing.keyPem,
      ca: clientCA.certPem,
      requestCert: true,
      rejectUnauthorized: true,
    });
    strict.on('request', (req: IncomingMessage, res) => {
      shown.push((req.socket as tls.TLSSocket).getPeerCertificate().serialNumber);
      res.end('strict line\n');
    });
    servers.push(strict);
    addNode('node-strict', await listen(strict));
    addPod(A, 'strict-web', 'node-strict');
    const client = (validityDays: number) =>
      issueCert(clientCA, { commonName: 'vc-vn-agent', usages: ['client'], validityDays });
    const serial = (c: CertKeyPair) => new X509Certificate(c.certPem).serialNumber;
    // 36 s of life from a minute back: two thirds of it is 4 s from now, and it runs out 36 s from now.
    const short = await client(36 / 86_400);
    agent.setKubeletClient(short);
    const issued: CertKeyPair[] = [];
    agent.renewKubeletClient(short.certPem, async () => {
      const next = await client(1);
      issued.push(next);
      return next;
    });
    const logs = () => request('/containerLogs/default/strict-web/c', kubeletA);
    expect(await logs()).toMatchObject({ status: 200, body: 'strict line\n' });
    expect(shown.at(-1)).toBe(serial(short));
    await eventually(() => expect(issued).toHaveLength(1), 20_000);
    expect(await logs()).toMatchObject({ status: 200, body: 'strict line\n' });
    expect(shown.at(-1)).toBe(serial(issued[0]!));
    const expiry = Date.parse(new X509Certificate(issued[0]!.certPem).validTo) / 1000;
    expect(
      await registry.getSingleMetricAsString('vc_vnagent_kubelet_client_certificate_expiry_timestamp_seconds'),
    ).toContain(`{port="${agent.port}"} ${expiry}`);
    // past the first certificate's end the kubelet still answers, with the renewed one
    await new Promise((r) =>
      setTimeout(r, Math.max(0, Date.parse(new X509Certificate(short.certPem).validTo) - Date.now() + 500)),
    );
    expect(await logs()).toMatchObject({ status: 200, body: 'strict line\n' });
    expect(shown.at(-1)).toBe(serial(issued[0]!));
    expect(issued).toHaveLength(1);
  }, 60_000);

  it('relays logs from the translated path, without tenant credentials', async () => {
    const r = await request('/containerLogs/default/web/c?tailLines=2', kubeletA, {
      headers: { Authorization: 'Bearer t', 'Impersonate-User': 'admin', 'X-Custom': '1' },
    });
    expect(r).toMatchObject({ status: 200, body: 'line 1\nline 2\n' });
    expect(r.headers['x-kubelet']).toBe('fake');
    const s = seen.at(-1)!;
    expect(s.url).toBe(`/containerLogs/${A}-default/web/c?tailLines=2`);
    const names = s.raw.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase());
    expect(names).toContain('x-custom');
    expect(names).not.toContain('authorization');
    expect(names).not.toContain('impersonate-user');
    expect(s.raw[names.indexOf('host') * 2 + 1]).toBe(
      `127.0.0.1:${nodes.get('node-ok')!.status!.daemonEndpoints!.kubeletEndpoint!.Port}`,
    );
  });

  it('delimits a relayed body by closing the connection: no Content-Length, no chunked encoding', async () => {
    const r = await request('/containerLogs/default/web/c?tailLines=2', kubeletA);
    expect(r.status).toBe(200);
    expect(r.headers['content-length']).toBeUndefined();
    expect(r.headers['transfer-encoding']).toBeUndefined();
    expect(r.headers.connection).toBe('close');
  });

  it('streams follow=true as it comes, and the client leaving closes the kubelet request', async () => {
    const lines: string[] = [];
    const req = https.request({
      host: '127.0.0.1',
      port: agent.port,
      path: '/containerLogs/default/web/c?follow=true',
      rejectUnauthorized: false,
      agent: false,
      cert: kubeletA.certPem,
      key: kubeletA.keyPem,
    });
    req.end();
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    expect(res.statusCode).toBe(200);
    res.setEncoding('utf8');
    for await (const c of res) {
      lines.push(...(c as string).split('\n').filter(Boolean));
      if (lines.length >= 4) break;
    }
    expect(lines.slice(0, 4)).toEqual(['line 1', 'line 2', 'line 3', 'line 4']);
    const s = seen.at(-1)!;
    expect(s.url).toContain('follow=true');
    await eventually(() => expect(s.closed).toBe(true));
  });

  it('relays a request body (run)', async () => {
    const r = await request('/run/default/web/c?cmd=ls', kubeletA, { method: 'POST', body: 'x'.repeat(200_000) });
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(200_000);
  });

  it('asks for a client certificate (401), refuses a self-signed one (401) and a non-kubelet tenant certificate (403)', async () => {
    expect(await request('/containerLogs/default/web/c')).toMatchObject({
      status: 401,
      body: expect.stringMatching(/client certificate is required/),
    });
    expect(await request('/containerLogs/default/web/c', selfSigned)).toMatchObject({
      status: 401,
      body: expect.stringMatching(/self-signed/),
    });
    expect(await request('/containerLogs/default/web/c', adminA)).toMatchObject({
      status: 403,
      body: expect.stringMatching(/not its apiserver kubelet client certificate/),
    });
  });

  it("refuses a tenant another tenant's pod, even through a crafted super-looking namespace (403)", async () => {
    const r = await request('/containerLogs/default/web-b/c', kubeletA);
    expect(r).toEqual(expect.objectContaining({ status: 403, body: 'pod default/web-b not found for this tenant\n' }));
    expect(await request(`/containerLogs/${B}-default/web-b/c`, kubeletA)).toMatchObject({ status: 403 });
    expect(await request(`/exec/${superNamespace(B, 'default')}/web-b/c?command=ls`, kubeletA)).toMatchObject({
      status: 403,
    });
    expect(await request('/containerLogs/default/web-b/c', kubeletB)).toMatchObject({ status: 200 });
  });

  it('checks provenance, not only the namespace: unowned pods and pods stamped for another tenant are refused', async () => {
    expect(await request('/containerLogs/default/orphan/c', kubeletA)).toMatchObject({
      status: 403,
      body: expect.stringMatching(/not found for this tenant/),
    });
    expect(await request('/containerLogs/default/planted/c', kubeletA)).toMatchObject({ status: 403 });
  });

  it('serves only the kubelet streaming and usage endpoints, with their methods', async () => {
    for (const p of [
      '/pods',
      '/metrics',
      '/metrics/cadvisor',
      '/metrics/probes',
      '/metrics/resource/',
      '/stats/',
      '/stats/summary/x',
      '/healthz',
      '/configz',
      '/logs/',
      '/runningpods/',
      '/debug/pprof/',
      '/debug/flags/v',
      '/checkpoint/default/web/c',
      '/spec/',
      '/',
    ]) {
      expect(await request(p, kubeletA)).toMatchObject({
        status: 403,
        body: expect.stringMatching(/not served by the vn-agent/),
      });
    }
    expect(await request('/exec/default/web/c', kubeletA, { method: 'DELETE' })).toMatchObject({ status: 405 });
    expect(await request('/containerLogs/default/web/c/extra', kubeletA)).toMatchObject({
      status: 403,
      body: expect.stringMatching(/refused/),
    });
    expect(await request('/containerLogs/default/unscheduled/c', kubeletA)).toMatchObject({
      status: 502,
      body: expect.stringMatching(/not running on a node/),
    });
  });

  it('relays an upgrade: 101 with the negotiated headers, then bytes both ways; closing tears both sides down', async () => {
    const before = kubeletStreams.size;
    const u = await upgrade('/exec/default/web/c?command=sh&stdin=1', kubeletA);
    expect(u.status).toBe(101);
    expect(u.head).toMatch(/X-Stream-Protocol-Version: v4.channel.k8s.io/);
    const s = seen.at(-1)!;
    expect(s.url).toBe(`/exec/${A}-default/web/c?command=sh&stdin=1`);
    const versions = s.raw.flatMap((h, i) =>
      i % 2 === 0 && h.toLowerCase() === 'x-stream-protocol-version' ? [s.raw[i + 1]] : [],
    );
    expect(versions).toEqual(['v4.channel.k8s.io', 'v3.channel.k8s.io']);
    expect(s.raw.map((h) => h.toLowerCase())).not.toContain('authorization');
    expect(kubeletStreams.size).toBe(before + 1);
    u.socket.write('ping-1');
    const [echo] = (await once(u.socket, 'data')) as [Buffer];
    expect(echo.toString()).toBe('ping-1');
    const big = Buffer.alloc(1 << 20, 7);
    let got = 0;
    u.socket.on('data', (c: Buffer) => (got += c.length));
    u.socket.write(big);
    await eventually(() => expect(got).toBe(big.length));
    expect(await registry.getSingleMetricAsString('vc_vnagent_active_streams')).toMatch(
      new RegExp(`tenant="${A}",kind="exec"} 1`),
    );
    u.socket.destroy();
    await eventually(() => expect(kubeletStreams.size).toBe(before));
    await eventually(async () =>
      expect(await registry.getSingleMetricAsString('vc_vnagent_active_streams')).toMatch(
        new RegExp(`tenant="${A}",kind="exec"} 0`),
      ),
    );
  });

  it('relays a WebSocket upgrade with its subprotocol (v5.channel.k8s.io)', async () => {
    const ws = new WebSocket(
      `wss://127.0.0.1:${agent.port}/exec/default/web/c?command=sh&stdin=1&stdout=1`,
      ['v5.channel.k8s.io', 'v4.channel.k8s.io'],
      {
        cert: kubeletA.certPem,
        key: kubeletA.keyPem,
        rejectUnauthorized: false,
      },
    );
    await once(ws, 'open');
    expect(ws.protocol).toBe('v5.channel.k8s.io');
    expect(seen.at(-1)!.url).toBe(`/exec/${A}-default/web/c?command=sh&stdin=1&stdout=1`);
    ws.send(Buffer.from([0, 104, 105]));
    const [msg] = (await once(ws, 'message')) as [Buffer];
    expect([...msg]).toEqual([0, 104, 105]);
    ws.close();
    await once(ws, 'close');
    const refused = new WebSocket(
      `wss://127.0.0.1:${agent.port}/exec/default/web-b/c?command=sh`,
      ['v5.channel.k8s.io'],
      { cert: kubeletA.certPem, key: kubeletA.keyPem, rejectUnauthorized: false },
    );
    refused.on('error', () => undefined);
    const [, res] = (await once(refused, 'unexpected-response')) as [unknown, IncomingMessage];
    expect(res.statusCode).toBe(403);
    refused.terminate();
  });

  it('keeps a stream while either side talks, and tears it down once both are idle for the idle timeout', async () => {
    const u = await upgrade('/attach/default/ticker/c', kubeletA);
    expect(u.status).toBe(101);
    const t0 = Date.now();
    let ticks = u.rest.length;
    u.socket.on('data', (c: Buffer) => (ticks += c.length));
    await once(u.socket, 'close');
    const lived = Date.now() - t0;
    // 2 s of kubelet output with a silent client (longer than the 1 s idle timeout), then 1 s of silence.
    expect(ticks).toBeGreaterThanOrEqual(15);
    expect(lived).toBeGreaterThanOrEqual(2500);
    expect(lived).toBeLessThan(4500);
  });

  it('ends the client side when the kubelet ends the stream, after delivering what it sent', async () => {
    const u = await upgrade('/attach/default/web/c', kubeletA);
    expect(u.status).toBe(101);
    const k = [...kubeletStreams].at(-1)!;
    k.unpipe();
    k.end('bye');
    expect(await readToEnd(u.socket, u.rest)).toBe('bye');
  });

  it("relays a kubelet's refusal of an upgrade with its status and body", async () => {
    const u = await upgrade('/exec/default/refuse/c?command=ls', kubeletA);
    expect(u.status).toBe(400);
    expect(await readToEnd(u.socket, u.rest)).toBe('container "c" is not running\n');
  });

  it('refuses an upgrade it does not admit, with a one-line reason', async () => {
    const u = await upgrade('/portForward/default/web-b', kubeletA);
    expect(u.status).toBe(403);
    expect(await readToEnd(u.socket, u.rest)).toBe('pod default/web-b not found for this tenant\n');
    const anon = await upgrade('/portForward/default/web', undefined);
    expect(anon.status).toBe(401);
  });

  it("refuses an upgrade of container logs, which would pass the plugins' output filter, before reaching the kubelet", async () => {
    const before = seen.length;
    const u = await upgrade('/containerLogs/default/web/c', kubeletA, 'GET');
    expect(u.status).toBe(400);
    expect(await readToEnd(u.socket, u.rest)).toBe(
      'containerLogs is not a stream: only exec, attach and portForward are upgraded\n',
    );
    expect(seen.length).toBe(before);
  });

  it('refuses exec, attach, port-forward and run on a simulated node, before reaching it, and still relays its logs', async () => {
    const before = seen.length;
    const why = (verb: string) =>
      `${verb} is not available: pod default/simulated runs on simulated node node-kwok (no container runtime)\n`;
    for (const [path, verb] of [
      ['/exec/default/simulated/c?command=id', 'exec'],
      ['/attach/default/simulated/c', 'attach'],
      ['/portForward/default/simulated', 'port-forward'],
    ] as const) {
      const u = await upgrade(path, kubeletA);
      expect(u.status).toBe(403);
      expect(await readToEnd(u.socket, u.rest)).toBe(why(verb));
    }
    expect(await request('/run/default/simulated/c?cmd=id', kubeletA, { method: 'POST', body: 'x' })).toMatchObject({
      status: 403,
      body: why('run'),
    });
    expect(seen.length).toBe(before);
    const logs = await request('/containerLogs/default/simulated/c', kubeletA);
    expect(logs.status).toBe(200);
    expect(seen.length).toBe(before + 1);
  });

  it('gives a clean 502 when the kubelet drops the connection, for requests and upgrades', async () => {
    const t0 = Date.now();
    expect(await request('/containerLogs/default/dropped/c', kubeletA)).toMatchObject({
      status: 502,
      body: expect.stringMatching(/of node node-drop closed the connection/),
    });
    const u = await upgrade('/exec/default/dropped/c?command=ls', kubeletA);
    expect(u.status).toBe(502);
    expect(await readToEnd(u.socket, u.rest)).toMatch(/closed the connection/);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('gives 504 when the kubelet does not answer within the handshake timeout', async () => {
    let t0 = Date.now();
    expect(await request('/containerLogs/default/slow/c', kubeletA)).toMatchObject({
      status: 504,
      body: expect.stringMatching(/did not answer within 800 ms/),
    });
    expect(Date.now() - t0).toBeLessThan(1500);
    t0 = Date.now();
    const u = await upgrade('/exec/default/slow/c?command=ls', kubeletA);
    expect(u.status).toBe(504);
    await readToEnd(u.socket, u.rest);
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('refuses a tenant as soon as it leaves the directory', async () => {
    expect((await request('/containerLogs/default/web-b/c', kubeletB)).status).toBe(200);
    directory.remove(B);
    expect(await request('/containerLogs/default/web-b/c', kubeletB)).toMatchObject({
      status: 401,
      body: expect.stringMatching(/not signed by the CA of any known tenant/),
    });
  });

  it('counts requests by tenant, kind and result, and bytes relayed; serves probes and metrics on the ops port', async () => {
    const m = await registry.getSingleMetricAsString('vc_vnagent_requests_total');
    expect(m).toContain(`tenant="${A}",kind="containerLogs",result="ok"`);
    expect(m).toContain(`tenant="",kind="containerLogs",result="unauthenticated"`);
    expect(m).toContain(`tenant="${A}",kind="containerLogs",result="forbidden"`);
    expect(m).toContain(`tenant="${A}",kind="containerLogs",result="bad_gateway"`);
    expect(m).toContain(`tenant="${A}",kind="exec",result="kubelet_error"`);
    expect(m).toContain(`tenant="${A}",kind="containerLogs",result="timeout"`);
    // the client certificate tenant A's apiserver authenticated with, by its expiry
    const presented = Date.parse(new X509Certificate(kubeletA.certPem).validTo) / 1000;
    expect(
      await registry.getSingleMetricAsString('vc_vnagent_tenant_client_certificate_expiry_timestamp_seconds'),
    ).toContain(`{tenant="${A}"} ${presented}`);
    expect(await registry.getSingleMetricAsString('vc_vnagent_relayed_bytes_total')).toMatch(
      new RegExp(`tenant="${A}",kind="exec",direction="to_kubelet"} \\d{7}`),
    );
    const base = `http://127.0.0.1:${agent.opsPort}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect(await (await fetch(`${base}/metrics`)).text()).toContain('vc_vnagent_requests_total');
  });
});
