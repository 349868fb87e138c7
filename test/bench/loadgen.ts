import { Worker } from 'node:worker_threads';
import type { RunFigures } from './podwatch.ts';

/** LoadGenTenant is one tenant the load generator creates Pods in: its admin kubeconfig and its super namespace. */
export interface LoadGenTenant {
  kubeconfig: string;
  /** the super namespace its `default` namespace is synced to */
  superNamespace: string;
}

/** LoadGenInit is the worker's workerData. */
export interface LoadGenInit {
  tenants: LoadGenTenant[];
  superKubeconfig: string;
  /** the `bench` label values of the Pods it creates (its watches select only those) */
  labels: string[];
}

/** LoadGenRequest asks the worker to create Pods in one tenant's `default` namespace and time each until Running. */
export interface LoadGenRequest {
  id: number;
  op: 'create' | 'stop';
  tenant?: number;
  names?: string[];
  label?: string;
  /**
   * all at once (each create call in flight together), one after another (each waiting for its Running), or paced
   * (one create every `everyMs`, not waiting)
   */
  mode?: 'together' | 'sequential' | 'paced';
  everyMs?: number;
  deadlineMs?: number;
}

/** LoadGenResult is what a create request measured; times are epoch milliseconds (the threads' clocks differ). */
export interface LoadGenResult extends RunFigures {
  latenciesMs: number[];
  /** per Pod, in the order of names: create call start and end, and Running in the tenant, epoch ms */
  startedAt: number[];
  createdAt: number[];
  runningAt: number[];
  stagesMs: Record<string, { p50: number; p99: number }>;
}

export type LoadGenReply =
  | { id: number; ok: true; result?: LoadGenResult }
  | { id: number; ok: false; error: string }
  | { id: -1; ok: true; ready: true; thread: string };

/**
 * LoadGenerator creates and times tenants' Pods from a worker thread. The syncer runs on this process's main thread:
 * a tenant's own client creating hundreds of Pods, and the watches that time them, would otherwise share its event
 * loop, and every stall of that loop (200 create calls issued at once take ~90 ms of it) would be counted as the
 * syncer's latency. In production the tenant's client is another machine's.
 */
export class LoadGenerator {
  private readonly worker: Worker;
  private readonly waiters = new Map<number, { res: (r: LoadGenReply) => void; rej: (e: Error) => void }>();
  private nextId = 1;
  private readonly ready: Promise<void>;
  /** the worker thread's `<pid>/task/<tid>` under /proc, once started: its own CPU time is read there */
  thread?: string;
  private failed?: Error;

  constructor(init: LoadGenInit) {
    this.worker = new Worker(new URL('./loadgen-worker.ts', import.meta.url), {
      workerData: init,
      // the worker loads TypeScript as this process does
      execArgv: ['--import', import.meta.resolve('tsx')],
    });
    let onReady!: () => void;
    this.ready = new Promise((res) => (onReady = res));
    this.worker.on('message', (m: LoadGenReply) => {
      if ('ready' in m) {
        this.thread = m.thread;
        return onReady();
      }
      const w = this.waiters.get(m.id);
      this.waiters.delete(m.id);
      w?.res(m);
    });
    const fail = (e: Error) => {
      this.failed ??= e;
      for (const w of this.waiters.values()) w.rej(e);
      this.waiters.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`load generator exited (${code})`)));
  }

  /** started resolves once the worker's watches are open. */
  async started(timeoutMs = 60_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.ready,
      new Promise<never>((_, rej) => {
        timer = setTimeout(() => rej(this.failed ?? new Error('load generator did not start')), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
  }

  /** create creates the named Pods in a tenant and resolves with their timings once all run. */
  async create(r: Omit<LoadGenRequest, 'id' | 'op'>): Promise<LoadGenResult> {
    const m = await this.call({ ...r, op: 'create' });
    if (!m.ok) throw new Error(`load generator: ${m.error}`);
    return (m as { result: LoadGenResult }).result;
  }

  /** stop closes the worker's watches and ends it. */
  async stop(): Promise<void> {
    if (!this.failed) await this.call({ op: 'stop' }).catch(() => undefined);
    await this.worker.terminate();
  }

  private call(r: Omit<LoadGenRequest, 'id'>): Promise<LoadGenReply> {
    if (this.failed) return Promise.reject(this.failed);
    const id = this.nextId++;
    return new Promise((res, rej) => {
      this.waiters.set(id, { res, rej });
      this.worker.postMessage({ ...r, id });
    });
  }
}

/** toLocal turns an epoch time from another thread into this thread's performance.now(). */
export const toLocal = (epochMs: number): number => epochMs - performance.timeOrigin;
