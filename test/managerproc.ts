import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** Where `vc` starts: main.ts through tsx (the source) or vc.mjs on the compiled dist/ (as an installed `vc` runs). */
const CLI_SOURCE = join(import.meta.dirname, '../core/programs/cli/main.ts');
const CLI_COMPILED = join(import.meta.dirname, '../core/programs/cli/vc.mjs');

/** ManagerProc is one `vc manager` child process, followed through its log lines. */
export interface ManagerProc {
  child: ChildProcess;
  /** id numbers the managers of one spawner in the order they were spawned */
  id: number;
  startedAt: number;
  /** when it printed that it serves /metrics and probes, and on which port (0 until then) */
  readyAt?: number;
  port: number;
  /** ready resolves with the port once it serves, and rejects when it exits before */
  ready: Promise<number>;
  /** when it logged `became leader`, for its latest term: cleared when it logs `stopped leading` */
  leaderAt?: number;
  /** the last log lines that matched the spawner's `keep` */
  log: string[];
}

/** SpawnManagerOptions say how to run a manager and what of its log to keep. */
export interface SpawnManagerOptions {
  /** the ManagerConfiguration file */
  config: string;
  /** run `vc syncer --super-cluster <name>` (one super cluster's syncer) instead of `vc manager` */
  superCluster?: string;
  /** run the compiled program (dist/, `npm run build` first) instead of the source through tsx */
  compiled?: boolean;
  /** write every log line here */
  logFile?: string;
  /** which lines to keep in ManagerProc.log (default: errors and fatals) */
  keep?: RegExp;
  /** how many kept lines to hold (default 40; the oldest go) */
  keepLines?: number;
  /** how many characters of a kept line to hold (default 600) */
  keepChars?: number;
  env?: NodeJS.ProcessEnv;
  /** the Node.js binary (default this process's): the `install` bench runs the image's Node 22 on both sides */
  node?: string;
}

/**
 * ManagerSpawner starts `vc manager` processes for tests and benchmarks and ends them all in stopAll. Each child gets
 * SIGKILL when this process dies (setpriv --pdeathsig, as ManagedProcess does for the components), so an aborted
 * run leaves no manager behind.
 */
export class ManagerSpawner {
  /** managers are all spawned so far, in order. */
  readonly managers: ManagerProc[] = [];

  /** spawn starts one manager; await its `ready` for the /metrics port. */
  spawn(o: SpawnManagerOptions): ManagerProc {
    const args =
      o.superCluster === undefined
        ? ['manager', '-c', o.config]
        : ['syncer', '-c', o.config, '--super-cluster', o.superCluster];
    const node = o.node ?? process.execPath;
    const cmd = o.compiled ? [node, CLI_COMPILED, ...args] : [node, '--import', 'tsx', CLI_SOURCE, ...args];
    const setpriv = existsSync('/usr/bin/setpriv');
    const child = spawn(
      setpriv ? '/usr/bin/setpriv' : cmd[0]!,
      setpriv ? ['--pdeathsig', 'KILL', '--', ...cmd] : cmd.slice(1),
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, LOG_LEVEL: 'info', ...(o.compiled ? { VC_FROM_SOURCE: '' } : {}), ...o.env },
      },
    );
    const keep = o.keep ?? /"level":"(error|fatal)"/;
    const keepLines = o.keepLines ?? 40;
    const file = o.logFile ? createWriteStream(o.logFile) : undefined;
    let onReady: (port: number) => void = () => undefined;
    let onEarlyExit: (e: Error) => void = () => undefined;
    const m: ManagerProc = {
      child,
      id: this.managers.length,
      startedAt: performance.now(),
      port: 0,
      ready: new Promise<number>((res, rej) => {
        onReady = res;
        onEarlyExit = rej;
      }),
      log: [],
    };
    // Nobody may await ready (a standby in a fault run): its rejection must not end the process.
    m.ready.catch(() => undefined);
    child.once('exit', (code, signal) => {
      file?.end(`exit ${code ?? signal}\n`);
      onEarlyExit(new Error(`manager ${m.id} exited with ${code ?? signal} before serving`));
    });
    const onLine = (l: string) => {
      file?.write(`${l}\n`);
      const port = /metrics and probes on 127\.0\.0\.1:(\d+)/.exec(l);
      if (port && !m.port) {
        m.port = Number(port[1]);
        m.readyAt = performance.now();
        onReady(m.port);
      }
      if (l.includes('became leader')) m.leaderAt ??= performance.now();
      if (l.includes('"msg":"stopped leading"')) m.leaderAt = undefined;
      if (keep.test(l)) {
        m.log.push(l.slice(0, o.keepChars ?? 600));
        if (m.log.length > keepLines) m.log.shift();
      }
    };
    createInterface({ input: child.stdout! }).on('line', onLine);
    createInterface({ input: child.stderr! }).on('line', onLine);
    this.managers.push(m);
    return m;
  }

  /** leader is a live manager in a term, if any. */
  leader(): ManagerProc | undefined {
    return this.managers.find((m) => managerAlive(m) && m.leaderAt !== undefined);
  }

  /** stopAll kills every manager still running and waits for them to exit. */
  async stopAll(): Promise<void> {
    await Promise.all(this.managers.map(killManager));
  }
}

/** managerAlive says whether the process has not exited yet. */
export const managerAlive = (m: ManagerProc): boolean => m.child.exitCode === null && m.child.signalCode === null;

/** killManager sends SIGKILL and waits for the exit (nothing when it has exited already). */
export async function killManager(m: ManagerProc): Promise<void> {
  if (!managerAlive(m)) return;
  const exited = new Promise((res) => m.child.once('exit', res));
  m.child.kill('SIGKILL');
  await exited;
}

/** managerMetric sums one metric's samples on a manager's /metrics whose line contains `match`. */
export async function managerMetric(m: ManagerProc, name: string, match = ''): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${m.port}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (match && !line.includes(match)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Sample is one metric line: its labels and value. */
export interface Sample {
  labels: Record<string, string>;
  value: number;
}

/** scrape reads one metric's samples from a manager's /metrics. */
export async function scrape(m: ManagerProc, name: string): Promise<Sample[]> {
  const text = await (await fetch(`http://127.0.0.1:${m.port}/metrics`)).text();
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const x = new RegExp(`^${name}(?:\\{(.*)\\})? (\\S+)$`).exec(line);
    if (!x) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (x[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)) labels[k!] = v!;
    out.push({ labels, value: Number(x[2]) });
  }
  return out;
}

export const sum = (xs: Sample[]) => xs.reduce((a, x) => a + x.value, 0);

/** nonZero lists a metric's samples whose value is not 0, e.g. the writes a manager made. */
export const nonZero = async (m: ManagerProc, name: string) => (await scrape(m, name)).filter((x) => x.value > 0);
