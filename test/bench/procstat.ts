import { readdirSync, readFileSync } from 'node:fs';
import https from 'node:https';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on every Linux we run on). */
const USER_HZ = 100;

/**
 * procCpuSeconds is the user + system CPU time a process has used, from /proc/<pid>/stat, or one thread, given as
 * `<pid>/task/<tid>`; 0 when it is gone.
 */
export function procCpuSeconds(pid: number | string | undefined): number {
  if (!pid) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
  } catch {
    return 0;
  }
}

/** ProcRow is one process of a /proc scan: its parent and its CPU ticks (those of its reaped children included). */
export interface ProcRow {
  ppid: number;
  ticks: number;
}

/** ThreadSched is a thread's time on a CPU and time runnable but waiting on a run queue, in seconds (schedstat). */
export type ThreadSched = readonly [runSeconds: number, waitSeconds: number];

/** ProcScan is a /proc scan: every process, and (when asked for) each live thread's run and run-queue wait. */
export interface ProcScan {
  procs: Map<number, ProcRow>;
  /** `<pid>/<tid>` -> the thread's run and wait so far */
  threads: Map<string, ThreadSched>;
}

/**
 * scanProcs reads every process's parent and CPU ticks (user and system time plus that of its children already
 * reaped, cutime and cstime) from /proc, and with `waits` each thread's run and run-queue wait from its schedstat.
 */
export function scanProcs(waits = false): ProcScan {
  const procs = new Map<number, ProcRow>();
  const threads = new Map<string, ThreadSched>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      procs.set(Number(name), {
        ppid: Number(f[1]),
        ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]),
      });
      if (!waits) continue;
      for (const tid of readdirSync(`/proc/${name}/task`)) {
        const [run, wait] = schedMs(`${name}/task/${tid}`);
        threads.set(`${name}/${tid}`, [run / 1000, wait / 1000]);
      }
    } catch {
      /* gone meanwhile */
    }
  }
  return { procs, threads };
}

/**
 * treeCpuSeconds is the CPU time of a process and every process below it, from /proc: each live one's user and system
 * time plus that of its children already reaped, so a child that exited still counts once, in its parent. What a run
 * started and that re-parented itself away (a double fork) is not counted.
 */
export function treeCpuSeconds(root: number = process.pid): number {
  return treeTicks(scanProcs().procs, root) / USER_HZ;
}

/** treePids is root and its descendants in a pid -> {ppid} table (empty when root is not in it). */
export function treePids(stats: ReadonlyMap<number, { ppid: number }>, root: number): Set<number> {
  const children = new Map<number, number[]>();
  for (const [pid, { ppid }] of stats) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  const seen = new Set<number>();
  const todo = stats.has(root) ? [root] : [];
  while (todo.length) {
    const pid = todo.pop()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    todo.push(...(children.get(pid) ?? []));
  }
  return seen;
}

/** treeTicks sums `ticks` over root and its descendants in a pid -> {ppid, ticks} table. */
export function treeTicks(stats: ReadonlyMap<number, { ppid: number; ticks: number }>, root: number): number {
  let sum = 0;
  for (const pid of treePids(stats, root)) sum += stats.get(pid)!.ticks;
  return sum;
}

/**
 * wantedWaitOutside is how long the threads outside a run waited for a CPU they wanted between two scans `seconds`
 * apart, in seconds. Over each thread of the later scan whose process is not in `run`, with its run r, wait w and time
 * asleep s in between (s = seconds - r - w): its wait weighed by w / (w + s), the share of its time off a CPU in which
 * it wanted one. A thread that was runnable all along (s = 0) counts all its wait: it would have used the CPU, whatever
 * the run did. A thread that mostly sleeps counts little of it: its work is done (in r, which the CPU used already
 * counts), and what it waited is mostly the run's doing (a busier run keeps it waiting longer). A thread born between
 * the scans counts from 0 and as if alive all along; one that ended is not counted, nor a negative difference (a
 * reused id).
 */
export function wantedWaitOutside(
  before: ReadonlyMap<string, ThreadSched>,
  after: ReadonlyMap<string, ThreadSched>,
  run: ReadonlySet<number>,
  seconds: number,
): number {
  let sum = 0;
  for (const [key, [r1, w1]] of after) {
    if (run.has(Number(key.slice(0, key.indexOf('/'))))) continue;
    const [r0, w0] = before.get(key) ?? [0, 0];
    const r = Math.max(0, r1 - r0);
    const w = Math.max(0, w1 - w0);
    const asleep = Math.max(0, seconds - r - w);
    if (w > 0) sum += (w * w) / (w + asleep);
  }
  return sum;
}

/**
 * schedMs is a thread's time on a CPU and time runnable but waiting on a run queue, in ms, from the kernel's
 * schedstat; the thread is given as `<pid>/task/<tid>` (or a pid: its main thread). [0, 0] when it cannot be read.
 */
export function schedMs(thread: number | string): [run: number, wait: number] {
  try {
    const [run, wait] = readFileSync(`/proc/${thread}/schedstat`, 'utf8').split(' ').map(Number);
    return [run! / 1e6, wait! / 1e6];
  } catch {
    return [0, 0];
  }
}

/** hostCpuSeconds is the CPU time all cores have spent busy (everything but idle and iowait), from /proc/stat. */
export function hostCpuSeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  return (v.reduce((a, b) => a + b, 0) - (v[3] ?? 0) - (v[4] ?? 0)) / USER_HZ;
}

/** memAvailableMiB is MemAvailable from /proc/meminfo. */
export function memAvailableMiB(): number {
  const m = /MemAvailable:\s+(\d+) kB/.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** CpuShare is what one process (or group) used over a phase: CPU seconds and the share of one core. */
export interface CpuShare {
  cpuSeconds: number;
  percentOfOneCore: number;
}

/**
 * CpuMeter measures the CPU time of named groups of processes over a phase, read from /proc at start and stop, plus
 * this process (process.cpuUsage) and the whole host (busy time of all cores, other users of the machine included).
 */
export class CpuMeter {
  private readonly t0 = performance.now();
  private readonly start: Record<string, number>;
  private readonly self0 = process.cpuUsage();
  private readonly host0 = hostCpuSeconds();

  constructor(private readonly groups: Record<string, () => Array<number | string | undefined>>) {
    this.start = this.read();
  }

  private read(): Record<string, number> {
    return Object.fromEntries(
      Object.entries(this.groups).map(([k, pids]) => [k, pids().reduce((s: number, p) => s + procCpuSeconds(p), 0)]),
    );
  }

  /**
   * stop returns each group's share, `benchProcess` (this process), `host` (all cores, in % of one core) and
   * `otherOnHost` (the host less all of those).
   */
  stop(): Record<string, CpuShare> {
    const wall = (performance.now() - this.t0) / 1000;
    const end = this.read();
    const share = (s: number): CpuShare => ({
      cpuSeconds: Number(s.toFixed(2)),
      percentOfOneCore: Math.round((s / wall) * 100),
    });
    const out: Record<string, CpuShare> = {};
    for (const k of Object.keys(end)) out[k] = share(end[k]! - this.start[k]!);
    const self = process.cpuUsage(this.self0);
    out.benchProcess = share((self.user + self.system) / 1e6);
    const host = hostCpuSeconds() - this.host0;
    out.host = share(host);
    // Everything else on the machine (other users' builds and tests included).
    const ours = Object.values(out).reduce((a, x) => a + x.cpuSeconds, 0) - out.host.cpuSeconds;
    out.otherOnHost = share(Math.max(0, host - ours));
    return out;
  }
}

/** parseInflight reads apiserver_current_inflight_requests per request_kind from a /metrics text. */
export function parseInflight(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^apiserver_current_inflight_requests\{request_kind="([^"]+)"\} (\S+)$/gm))
    out[m[1]!] = Number(m[2]);
  return out;
}

/** fetchText GETs a path of a loopback apiserver with a bearer token (bench only: the server is not verified). */
export function fetchText(server: string, token: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      new URL(path, server),
      { rejectUnauthorized: false, headers: { Authorization: `Bearer ${token}` }, timeout: 5000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Buffer.concat(chunks).toString('utf8'))
            : reject(new Error(`GET ${path}: HTTP ${res.statusCode}`)),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: timed out`)));
    req.on('error', reject);
  });
}

/** InflightStats are the peak and mean of apiserver_current_inflight_requests per request kind over a phase. */
export type InflightStats = Record<string, { peak: number; mean: number; samples: number }>;

/**
 * InflightSampler scrapes an apiserver's /metrics every interval and keeps apiserver_current_inflight_requests per
 * request kind (mutating, readOnly): a value near --max-requests-inflight / --max-mutating-requests-inflight means
 * the apiserver's admission limit, not CPU, holds requests back.
 */
export class InflightSampler {
  private readonly acc: Record<string, { peak: number; sum: number; samples: number }> = {};
  private readonly timer: NodeJS.Timeout;
  private busy = false;
  /** errors counts scrapes that failed. */
  errors = 0;

  constructor(server: string, token: string, everyMs = 1000) {
    this.timer = setInterval(() => {
      if (this.busy) return;
      this.busy = true;
      fetchText(server, token, '/metrics')
        .then((t) => {
          for (const [k, v] of Object.entries(parseInflight(t))) {
            const a = (this.acc[k] ??= { peak: 0, sum: 0, samples: 0 });
            a.peak = Math.max(a.peak, v);
            a.sum += v;
            a.samples++;
          }
        })
        .catch(() => this.errors++)
        .finally(() => (this.busy = false));
    }, everyMs);
  }

  /** stop ends the sampling and returns peak and mean per request kind. */
  stop(): InflightStats {
    clearInterval(this.timer);
    return Object.fromEntries(
      Object.entries(this.acc).map(([k, a]) => [
        k,
        { peak: a.peak, mean: Number((a.sum / Math.max(1, a.samples)).toFixed(2)), samples: a.samples },
      ]),
    );
  }
}
