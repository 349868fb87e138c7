import { readFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import WebSocket from 'ws';
import type { LocalControlPlane } from '../core/dev/local/controlplane.ts';

/** LogsReply is what an apiserver answered to a Pod log request. */
export interface LogsReply {
  status: number;
  /** the log bytes (over WebSocket: every data frame, concatenated) */
  body: Buffer;
  /** WebSocket only: how many messages arrived */
  frames?: number;
}

const admin = (cp: LocalControlPlane) => ({
  ca: cp.caPem,
  cert: readFileSync(join(cp.dir, 'pki/admin.crt'), 'utf8'),
  key: readFileSync(join(cp.dir, 'pki/admin.key'), 'utf8'),
});

const logPath = (namespace: string, pod: string, query: string) =>
  `/api/v1/namespaces/${namespace}/pods/${pod}/log${query ? `?${query}` : ''}`;

/** logsOverGet asks a control plane for a Pod's log with a plain GET, as the tenant's admin. */
export function logsOverGet(cp: LocalControlPlane, namespace: string, pod: string, query = ''): Promise<LogsReply> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      { host: '127.0.0.1', port: cp.ports.apiserver, path: logPath(namespace, pod, query), agent: false, ...admin(cp) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error('logs over GET timed out')));
    req.on('error', reject);
  });
}

/**
 * logsOverWebSocket asks a control plane for a Pod's log over a WebSocket (protocol binary.k8s.io, as the upstream
 * e2e "logs over websockets" spec and kubectl do), as the tenant's admin, and collects the frames until the server
 * closes.
 */
export function logsOverWebSocket(
  cp: LocalControlPlane,
  namespace: string,
  pod: string,
  query = '',
): Promise<LogsReply> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(
      `wss://127.0.0.1:${cp.ports.apiserver}${logPath(namespace, pod, query)}`,
      ['binary.k8s.io'],
      {
        ...admin(cp),
        handshakeTimeout: 30_000,
      },
    );
    const chunks: Buffer[] = [];
    let frames = 0;
    const timer = setTimeout(() => ws.terminate(), 30_000);
    ws.on('message', (data: Buffer) => {
      frames++;
      chunks.push(Buffer.from(data));
    });
    ws.on('unexpected-response', (_req, res) => {
      clearTimeout(timer);
      const body: Buffer[] = [];
      res.on('data', (c: Buffer) => body.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(body) }));
    });
    ws.on('close', () => {
      clearTimeout(timer);
      resolve({ status: 101, body: Buffer.concat(chunks), frames });
    });
    ws.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}
