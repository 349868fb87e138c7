import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { childLogger } from '../../log.ts';
import { pickPorts } from './ports.ts';
import { cpuSeconds, processStatsOn, recordProcessStat } from './procstats.ts';
import { RotatingLog } from './rotatinglog.ts';

const logger = childLogger({ controller: 'process' });

/** ProcessSpec describes one long-running component. */
export interface ProcessSpec {
  /** short name used in logs: `etcd`, `kube-apiserver` */
  name: string;
  command: string;
  args: string[];
  /** file receiving stdout and stderr, rotated at maxLogBytes (one older file, `<logFile>.1`, is kept) */
  logFile: string;
  /** default DEFAULT_MAX_LOG_BYTES */
  maxLogBytes?: number;
  env?: Record<string, string>;
  cwd?: string;
  /** restart the process when it exits unexpectedly (with backoff) */
  restart?: boolean;
  /**
   * the `cgroup.procs` file of each cgroup the child enters before the command starts (so it never runs outside them):
   * one per hierarchy (a v2 cgroup of the network confinement, a v1 cpu cgroup of the CPU limit)
   */
  cgroupProcs?: string | readonly string[];
}

/** RestartBackoff bounds how fast a crashing component is restarted. */
const RESTART_MIN_MS = 500;
const RESTART_MAX_MS = 30_000;

const live = new Set<ManagedProcess>();
let hooksInstalled = false;

/**
 * killAllSync sends SIGKILL to every process this module started and has not stopped. It runs on process exit;
 * the parent-death signal covers the case where this process is killed outright.
 */
export function killAllSync(): void {
  for (const p of live) p.killSync();
}

function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', killAllSync);
}

/**
 * ManagedProcess runs one component. The child gets SIGKILL from the kernel when this process dies (setpriv's
 * parent-death signal), runs in its own process group (so a terminal's Ctrl-C reaches only us, and we stop
 * children in order), and writes its output to a log file.
 */
export class ManagedProcess {
  private child?: ChildProcess;
  private out?: RotatingLog;
  private stopping = false;
  private restarts = 0;
  private restartTimer?: NodeJS.Timeout;
  private exitWaiters: Array<() => void> = [];
  private readonly crashListeners = new Set<(p: ManagedProcess) => void>();
  /** when the current child was spawned, until its first successful readiness check (see markReady) */
  private startedAt?: number;
  /** the child whose stop recordStop recorded (a child is recorded once, however often it is signalled) */
  private stopRecorded?: ChildProcess;
  /** lastExit is the exit code or signal of the previous run, if any. */
  lastExit?: string;

  constructor(readonly spec: ProcessSpec) {}

  /** pid of the running child, if any. */
  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  /** restartCount is how often the process was restarted after a crash. */
  get restartCount(): number {
    return this.restarts;
  }

  /** start spawns the process. */
  start(): void {
    installExitHooks();
    this.stopping = false;
    if (!this.out) {
      this.out = new RotatingLog(this.spec.logFile, this.spec.maxLogBytes);
      this.out.on('error', (err) => logger.error({ component: this.spec.name, err }, 'log file write failed'));
    }
    const useSetpriv = existsSync('/usr/bin/setpriv');
    let cmd = useSetpriv ? '/usr/bin/setpriv' : this.spec.command;
    let args = useSetpriv ? ['--pdeathsig', 'KILL', '--', this.spec.command, ...this.spec.args] : this.spec.args;
    const cgroups = [this.spec.cgroupProcs ?? []].flat();
    if (cgroups.length) {
      // the shell moves itself (its pid is the command's after exec) into each cgroup, then becomes the command
      const enter = 'n=$0; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 1; shift; n=$((n-1)); done; exec "$@"';
      args = ['-c', enter, String(cgroups.length), ...cgroups, cmd, ...args];
      cmd = '/bin/sh';
    }
    const child = spawn(cmd, args, {
      cwd: this.spec.cwd,
      env: { ...process.env, ...this.spec.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.child = child;
    this.startedAt = Date.now();
    recordProcessStat(this.spec.command, 'start');
    live.add(this);
    child.stdout!.pipe(this.out, { end: false });
    child.stderr!.pipe(this.out, { end: false });
    child.on('error', (err) => logger.error({ component: this.spec.name, err }, 'failed to start'));
    child.on('exit', (code, signal) => {
      this.lastExit = signal ?? String(code);
      live.delete(this);
      const waiters = this.exitWaiters;
      this.exitWaiters = [];
      waiters.forEach((w) => w());
      if (this.stopping) return;
      logger.warn({ component: this.spec.name, code, signal, log: this.spec.logFile }, 'component exited');
      for (const l of this.crashListeners) l(this);
      if (this.spec.restart) {
        const delay = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** Math.min(this.restarts, 10));
        this.restarts++;
        this.restartTimer = setTimeout(() => {
          if (!this.stopping) this.start();
        }, delay);
        this.restartTimer.unref();
      }
    });
  }

  /** onCrash calls listener each time the process exits without being stopped (before any restart); returns an unsubscribe. */
  onCrash(listener: (p: ManagedProcess) => void): () => void {
    this.crashListeners.add(listener);
    return () => this.crashListeners.delete(listener);
  }

  /** stopped reports whether the process was stopped on purpose and has exited (no restart follows). */
  get stopped(): boolean {
    return this.stopping && this.pid === undefined;
  }

  /** running reports whether a child is alive now (false between a crash and its restart). */
  get running(): boolean {
    return this.pid !== undefined;
  }

  /** markReady records, once per start, how long the child took to pass its first readiness check. */
  markReady(): void {
    if (this.startedAt === undefined) return;
    recordProcessStat(this.spec.command, 'ready', { ms: Date.now() - this.startedAt });
    this.startedAt = undefined;
  }

  /** exited resolves when the current child exits. */
  exited(): Promise<void> {
    if (!this.pid) return Promise.resolve();
    return new Promise((res) => this.exitWaiters.push(res));
  }

  /** stop sends SIGTERM, then SIGKILL after the grace period (at once when it is 0), and waits for the exit. */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const pid = this.pid;
    if (pid) {
      const done = this.exited();
      this.recordStop(pid);
      signalGroup(pid, graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
      const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
      await done;
      clearTimeout(timer);
    }
    // A process this one started (containerd's shims, say) can hold its output pipe open after it exited: stop
    // reading before the log file closes, or that output arrives at a closed stream.
    for (const s of [this.child?.stdout, this.child?.stderr]) {
      s?.unpipe();
      s?.destroy();
    }
    await new Promise<void>((res) => (this.out ? this.out.end(res) : res()));
    this.out = undefined;
  }

  /** kill sends SIGKILL without waiting: a crash, as tests simulate it. The restart policy still applies. */
  kill(): void {
    const pid = this.pid;
    if (!pid) return;
    this.recordStop(pid);
    signalGroup(pid, 'SIGKILL');
  }

  /** killSync kills the process group and forgets the child (used at exit). */
  killSync(): void {
    this.stopping = true;
    const pid = this.pid;
    if (!pid) return;
    this.recordStop(pid);
    signalGroup(pid, 'SIGKILL');
  }

  /**
   * recordStop records, when process statistics are on, the CPU time the child used until now, just before a signal
   * ends it: what a graceful shutdown spends after SIGTERM is not counted, nor is a child that exits by itself.
   */
  private recordStop(pid: number): void {
    if (!processStatsOn() || this.stopRecorded === this.child) return;
    this.stopRecorded = this.child;
    const cpu = cpuSeconds(pid);
    if (cpu !== undefined) recordProcessStat(this.spec.command, 'stop', { cpu });
  }

  /**
   * anonBytes reads the process's anonymous resident memory (RssAnon: heap, stacks; not the pages of its binary,
   * which every process of the same binary shares) from /proc (0 when not running): what one more process costs.
   */
  anonBytes(): number {
    return this.statusBytes('RssAnon');
  }

  /** rssBytes reads the resident memory of the process from /proc (0 when not running). */
  rssBytes(): number {
    return this.statusBytes('VmRSS');
  }

  /** statusBytes reads one `<field>: N kB` line of /proc/<pid>/status, in bytes (0 when not running). */
  private statusBytes(field: 'RssAnon' | 'VmRSS'): number {
    const pid = this.pid;
    if (!pid) return 0;
    try {
      const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      return m ? Number(m[1]) * 1024 : 0;
    } catch {
      return 0;
    }
  }

  /** logTail returns the last lines of the component's log, for error messages. */
  logTail(lines = 20): string {
    try {
      return readFileSync(this.spec.logFile, 'utf8')
        .split('\n')
        .slice(-lines - 1)
        .join('\n');
    } catch {
      return '';
    }
  }
}

function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      /* already gone */
    }
  }
}

/** StopOptions say how a local component is stopped. */
export interface StopOptions {
  /**
   * the caller throws the state away right after (a test's super cluster): kill the processes without the graceful
   * shutdown that keeps state and clients in order (SIGKILL; etcd's data, written without fsync, is removed anyway)
   */
  discard?: boolean;
}

/** stopGraceMs is the grace period between SIGTERM and SIGKILL for a stop: none when discarding, the default else. */
export function stopGraceMs(o: StopOptions): number | undefined {
  return o.discard ? 0 : undefined;
}

/** freePorts returns n distinct free TCP ports on 127.0.0.1, reserved for this process until bound (see ports.ts). */
export function freePorts(n: number): Promise<number[]> {
  return pickPorts(n);
}

/** WaitOptions bound waitFor. */
export interface WaitOptions {
  timeoutMs: number;
  /** the whole budget this wait is the rest of, named in the timeout error instead of timeoutMs */
  budgetMs?: number;
  intervalMs?: number;
  /** a process whose death aborts the wait with its log tail */
  process?: ManagedProcess;
}

/** waitFor polls check until it returns true, the timeout passes (throws, naming what) or the watched process dies. */
export async function waitFor(what: string, check: () => Promise<boolean>, o: WaitOptions): Promise<void> {
  const deadline = Date.now() + o.timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      if (await check()) {
        o.process?.markReady();
        return;
      }
    } catch (e) {
      lastErr = e;
    }
    // A process stopped on purpose is not coming back, whatever its restart policy: waiting for it would only time out.
    if (o.process && !o.process.pid && (!o.process.spec.restart || o.process.stopped)) {
      const how = o.process.stopped ? 'was stopped' : 'exited';
      throw new Error(
        `${what}: ${o.process.spec.name} ${how} (${o.process.lastExit}); log ${o.process.spec.logFile}:\n${o.process.logTail()}`,
      );
    }
    if (Date.now() > deadline) {
      const tail = o.process ? `\nlog ${o.process.spec.logFile}:\n${o.process.logTail()}` : '';
      throw new Error(
        `timed out after ${o.budgetMs ?? o.timeoutMs} ms waiting for ${what}${lastErr ? ` (last error: ${String(lastErr)})` : ''}${tail}`,
      );
    }
    await new Promise((r) => setTimeout(r, o.intervalMs ?? 200));
  }
}
