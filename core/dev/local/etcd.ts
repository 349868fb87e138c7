import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { binaryPath } from '../../toolchain/toolchain.ts';
import type { ExtraArgs } from '../../api/controlplane.ts';
import { flagList } from '../../provisioners/native/flags.ts';
import { freePorts, ManagedProcess, stopGraceMs, waitFor, type StopOptions } from './process.ts';

/** EtcdOptions configure one local etcd member. */
export interface EtcdOptions {
  /** directory for data and log */
  dir: string;
  /** client port; a free one when absent */
  clientPort?: number;
  peerPort?: number;
  restart?: boolean;
  /** --quota-backend-bytes: past it etcd refuses every write but deletes (default 8 GiB) */
  quotaBackendBytes?: number;
  /** process name in logs (default etcd) */
  name?: string;
  /** flags by name that replace or add to the defaults (a ClusterVersion's spec.etcd.extraArgs) */
  extraArgs?: ExtraArgs;
  /** environment of etcd in addition to this process's (Go runtime settings such as GOMEMLIMIT) */
  env?: Record<string, string>;
  /** the `cgroup.procs` file of a cgroup etcd runs in (a tenant control plane's CPU limit, cpulimit.ts) */
  cgroupProcs?: string;
}

/** DEFAULT_QUOTA_BACKEND_BYTES is the storage quota of a LocalEtcd that states none: 8 GiB, etcd's suggested maximum. */
export const DEFAULT_QUOTA_BACKEND_BYTES = 8 * 1024 ** 3;

/**
 * LocalEtcd is a single-member etcd on 127.0.0.1, shared by several apiservers through --etcd-prefix. It runs with
 * --unsafe-no-fsync: this machine's etcd holds disposable local and test state, and fsync would dominate start-up.
 */
export class LocalEtcd {
  readonly process: ManagedProcess;

  private constructor(
    readonly dir: string,
    readonly clientPort: number,
    readonly peerPort: number,
    restart: boolean,
    readonly quotaBackendBytes: number,
    name: string,
    extraArgs: ExtraArgs = {},
    env?: Record<string, string>,
    cgroupProcs?: string,
  ) {
    mkdirSync(dir, { recursive: true });
    this.process = new ManagedProcess({
      name,
      command: binaryPath('etcd'),
      logFile: join(dir, 'etcd.log'),
      restart,
      ...(env && { env }),
      ...(cgroupProcs && { cgroupProcs }),
      args: localEtcdFlags({ dir, endpoint: this.endpoint, peerPort, quotaBackendBytes, extraArgs }),
    });
  }

  /** LocalEtcd.start starts etcd and waits until /health answers. */
  static async start(o: EtcdOptions): Promise<LocalEtcd> {
    const e = await LocalEtcd.prepare(o);
    await e.resume();
    return e;
  }

  /** LocalEtcd.prepare makes the member without starting it (resume starts it): a roll holds it before it is healthy. */
  static async prepare(o: EtcdOptions): Promise<LocalEtcd> {
    const [c, p] = o.clientPort && o.peerPort ? [o.clientPort, o.peerPort] : await freePorts(2);
    return new LocalEtcd(
      o.dir,
      c!,
      p!,
      o.restart ?? false,
      o.quotaBackendBytes ?? DEFAULT_QUOTA_BACKEND_BYTES,
      o.name ?? 'etcd',
      o.extraArgs,
      o.env,
      o.cgroupProcs,
    );
  }

  /** endpoint is the client URL. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.clientPort}`;
  }

  /** resume (re)starts the process on the same ports and data and waits for health. */
  async resume(): Promise<void> {
    this.process.start();
    await waitFor('etcd to become healthy', () => this.healthy(), { timeoutMs: 60_000, process: this.process });
  }

  /** healthy asks etcd's /health. */
  async healthy(): Promise<boolean> {
    const res = await fetch(`${this.endpoint}/health`, { signal: AbortSignal.timeout(2000) });
    return res.ok && ((await res.json()) as { health?: string }).health === 'true';
  }

  /** revision returns etcd's current revision (through the v3 JSON gateway). */
  async revision(): Promise<number> {
    const body = await this.gateway('/v3/kv/range', { key: Buffer.from('/').toString('base64'), limit: 1 });
    return Number((body as { header: { revision: string } }).header.revision);
  }

  /** compact compacts etcd's history up to the given revision (the current one by default). */
  async compact(revision?: number): Promise<number> {
    const rev = revision ?? (await this.revision());
    await this.gateway('/v3/kv/compaction', { revision: String(rev), physical: true });
    return rev;
  }

  private gateway(path: string, body: unknown): Promise<unknown> {
    return etcdGateway(this.endpoint, path, body);
  }

  /** deletePrefix removes every key under a prefix: a tenant control plane's whole state. */
  async deletePrefix(prefix: string): Promise<number> {
    return deleteEtcdPrefix(this.endpoint, prefix);
  }

  /** stop stops etcd (at once with `discard`: its data is removed next). */
  stop(o: StopOptions = {}): Promise<void> {
    return this.process.stop(stopGraceMs(o));
  }
}

/**
 * localEtcdFlags is the command line of a single-member local etcd: its data under dir, its client endpoint and peer
 * port on 127.0.0.1, its storage quota, no fsync and no metrics listener; extraArgs replace or add to them by name.
 */
export function localEtcdFlags(o: {
  dir: string;
  endpoint: string;
  peerPort: number;
  quotaBackendBytes: number;
  extraArgs?: ExtraArgs;
}): string[] {
  const peer = `http://127.0.0.1:${o.peerPort}`;
  return flagList(
    [
      ['name', 'local'],
      ['data-dir', join(o.dir, 'data')],
      ['unsafe-no-fsync', 'true'],
      ['listen-client-urls', o.endpoint],
      ['advertise-client-urls', o.endpoint],
      ['listen-peer-urls', peer],
      ['initial-advertise-peer-urls', peer],
      ['initial-cluster', `local=${peer}`],
      ['listen-metrics-urls', ''],
      ['quota-backend-bytes', String(o.quotaBackendBytes)],
      ['log-level', 'warn'],
    ],
    o.extraArgs,
  );
}

/** EtcdEndpoint is what a control plane needs of an etcd: where its clients connect. */
export interface EtcdEndpoint {
  readonly endpoint: string;
}

async function etcdGateway(endpoint: string, path: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${endpoint}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`etcd ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** deleteEtcdPrefix deletes every key under prefix through etcd's v3 JSON gateway and returns how many went. */
export async function deleteEtcdPrefix(endpoint: string, prefix: string): Promise<number> {
  if (!prefix.startsWith('/') || prefix.length < 2)
    throw new Error(`refusing to delete etcd prefix ${JSON.stringify(prefix)}`);
  const p = prefix.endsWith('/') ? prefix : `${prefix}/`;
  const end = p.slice(0, -1) + String.fromCharCode(p.charCodeAt(p.length - 1) + 1);
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const r = (await etcdGateway(endpoint, '/v3/kv/deleterange', { key: b64(p), range_end: b64(end) })) as {
    deleted?: string;
  };
  return Number(r.deleted ?? 0);
}
