// Over 500 lines, on purpose: PluginSandbox is one worker process's lifecycle (start, call under a CPU, memory and
// wall-time budget, answer the plugin's reads of the caches, stop, disable after repeated stops), and every call reads
// and updates the same per-process state; the child's own source is child.ts.

import { spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { Counter, Gauge } from 'prom-client';
import { childLogger } from '../../log.ts';
import { registry } from '../../metrics/registry.ts';
import type { CacheReader, Naming, Plugin, PluginContext } from '../../../plugins/sdk/src/contract.ts';
import type { KubeObject, Resource } from '../../../plugins/sdk/src/kube.ts';
import { BROKER_SOURCE, CHILD_SOURCE } from './child.ts';

const log = childLogger({ controller: 'plugin-sandbox' });

/** SandboxBudget is what one call of a sandboxed plugin may use, and how many stops disable it. */
export interface SandboxBudget {
  /** CPU time of the sandbox process during one call, in milliseconds */
  cpuMillis: number;
  /** memory: the V8 heap limit of the sandbox process, and how far its resident size may grow over its size after loading */
  memoryMiB: number;
  /** wall time of one call, for a call that waits without using CPU (a plugin cannot do I/O, so this is generous) */
  wallMillis: number;
  /** stops (budget exceeded, crash, undeclared access) after which the plugin is disabled for every tenant */
  maxFailures: number;
}

/** DEFAULT_SANDBOX_BUDGET is the budget when the configuration sets none. */
export const DEFAULT_SANDBOX_BUDGET: SandboxBudget = {
  cpuMillis: 250,
  memoryMiB: 64,
  wallMillis: 2000,
  maxFailures: 3,
};

/**
 * SANDBOX_HOOKS are the plugin functions a sandboxed plugin may implement: the transforms and the super name (in the
 * manager), and the node-call hooks (in the vn-agent). Each takes plain data and the tenant's view, and asks for the
 * caches and naming rules through the host during the call.
 */
export const SANDBOX_HOOKS = [
  'toSuper',
  'toTenant',
  'mutate',
  'superName',
  'translateKubeletPath',
  'filterNodeCall',
  'filterNodeOutput',
] as const;

/**
 * UNSUPPORTED are the parts of the contract a sandbox does not carry, each with the reason a refusal gives. They run
 * outside a call for one tenant: on the super informers' event path, over every tenant's objects, where a blocking
 * round trip to a process would stall every tenant's events, and where the host could not confine the plugin to one
 * tenant's view.
 */
export const UNSUPPORTED: Readonly<Record<string, string>> = {
  route:
    'route runs on the super informer event path for every super object of its resource, of all tenants, to decide ' +
    "which tenant owns it: it would see other tenants' objects, and a blocked call would stall every tenant's events " +
    '(a sandboxed up plugin routes by the ownership annotations, the default)',
  watches:
    "watches hold map functions the informers call on every event of another resource, of all tenants, before any call: the same reasons as route's",
  indexes:
    "indexes hold functions the super informer runs on every object of all tenants to keep its indexes: the same reasons as route's",
  beforeBind:
    'beforeBind creates objects in the tenant ahead of a bind (the vNode), a write of another kind than the ' +
    "plugin's own resource, which only built-in plugins may make",
};

/** SANDBOX_STOP_REASONS label vc_plugin_sandbox_stops_total. */
export const SANDBOX_STOP_REASONS = ['cpu', 'memory', 'wall', 'crash', 'undeclared', 'network'] as const;
/** SandboxStopReason is one of SANDBOX_STOP_REASONS. */
export type SandboxStopReason = (typeof SANDBOX_STOP_REASONS)[number];

/** sandboxStopsTotal is vc_plugin_sandbox_stops_total. */
export const sandboxStopsTotal = new Counter({
  name: 'vc_plugin_sandbox_stops_total',
  help:
    'Calls of sandboxed plugins stopped by the host, per plugin and reason: cpu, memory or wall (budget exceeded, ' +
    'the sandbox process is killed), crash (it died), undeclared (it read or wrote what its manifest does not declare), ' +
    'network (it tried to open a connection or send a datagram, which the sandbox refuses).',
  labelNames: ['plugin', 'reason'],
  registers: [registry],
});

/** sandboxDisabled is vc_plugin_sandbox_disabled. */
export const sandboxDisabled = new Gauge({
  name: 'vc_plugin_sandbox_disabled',
  help: 'Sandboxed plugins disabled for every tenant after maxFailures stops (1), per plugin.',
  labelNames: ['plugin'],
  registers: [registry],
});

/** SandboxStop is a call the host stopped: it names the plugin, the reason and what was exceeded or refused. */
export class SandboxStop extends Error {
  override readonly name = 'SandboxStop';
  constructor(
    readonly plugin: string,
    readonly reason: SandboxStopReason,
    message: string,
  ) {
    super(message);
  }
}

/** LoadedInfo is what the sandbox process reports of each plugin its module exports. */
interface LoadedInfo {
  manifest: Plugin['manifest'] | null;
  reads: Array<{ resource: Resource; side: 'tenant' | 'super' }>;
  hooks: string[];
  data: string[];
}

type Message = {
  g: number;
  pid?: number;
  line?: string;
  log?: string;
  exit?: { code?: number; signal?: string; error?: string; stderr: string };
};

/** SandboxOptions say what to run and what it may use. */
export interface SandboxOptions {
  /** the plugin's entry file */
  entry: string;
  /** what the host calls it in logs until the manifest is known: its path or package name */
  source: string;
  /** folders the sandbox process may read (the plugin package and the SDK); nothing else, and it may write nothing */
  readPaths: string[];
  budget?: Partial<SandboxBudget>;
  /** how the process reaches the network (default isolated) */
  network?: SandboxNetwork;
}

/**
 * SandboxNetwork is how a sandbox process is kept off the network. `isolated` (the default) starts it in a network
 * namespace of its own with no interface up, so the kernel refuses every TCP, UDP and abstract-socket connection,
 * to the super apiserver, the manager's ports and anywhere else; a host that cannot make one refuses to load
 * sandboxed plugins. `host` leaves it on the host's network, for a platform without namespaces: the sandbox's own
 * refusal of connects and sends (see CHILD_SOURCE) is then all that stands in the way.
 */
export type SandboxNetwork = 'isolated' | 'host';

let isolation: { prefix: string[] } | { error: string } | undefined;

/**
 * networkIsolation returns the command prefix that starts a process in a new network namespace (`unshare --net`,
 * with a user namespace of its own when the manager is not root), or why neither works here. It is probed once.
 */
export function networkIsolation(): { prefix: string[] } | { error: string } {
  if (isolation) return isolation;
  const unshare = (process.env.PATH ?? '/usr/bin:/bin')
    .split(':')
    .map((d) => join(d, 'unshare'))
    .find((f) => {
      try {
        accessSync(f, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  if (!unshare) return (isolation = { error: 'unshare (util-linux) is not on the PATH' });
  const errors: string[] = [];
  for (const prefix of [
    [unshare, '--net', '--'],
    [unshare, '--user', '--map-root-user', '--net', '--'],
  ]) {
    const r = spawnSync(prefix[0]!, [...prefix.slice(1), process.execPath, '--version'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
      timeout: 30_000,
    });
    if (r.status === 0) return (isolation = { prefix });
    errors.push(
      `${prefix.slice(0, -1).join(' ')}: ${r.error?.message ?? (r.stderr.trim() || `exit code ${r.status}`)}`,
    );
  }
  return (isolation = { error: errors.join('; ') });
}

/**
 * PluginSandbox runs one third-party plugin module in a process of its own and gives the host a plugin object per
 * plugin the module exports, whose functions are synchronous like an in-process plugin's: a call sends plain JSON
 * (the objects and the tenant view; the caches and names are answered on request) and waits for the reply while
 * the host watches the process's CPU time and resident memory.
 *
 * Why a process: a worker thread shares the manager's process, so its fs, its environment after start and its
 * network are the manager's (it could read the kubeconfig or the ServiceAccount token from disk); WebAssembly would
 * need plugins built for it. The process is started with an empty environment and Node's permission model reading
 * only the plugin's own folders, writing nothing, and starting no process or thread.
 */
export class PluginSandbox {
  readonly budget: SandboxBudget;
  /** the plugins of the module, by index, as the host sees them */
  plugins: Plugin[] = [];
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private generation = 0;
  private pid = 0;
  private alive = false;
  private baselineRss = 0;
  private readonly failures = new Map<string, number>();
  private readonly disabled = new Set<string>();
  private infos: LoadedInfo[] = [];

  constructor(private readonly o: SandboxOptions) {
    this.budget = { ...DEFAULT_SANDBOX_BUDGET, ...o.budget };
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(BROKER_SOURCE, {
      eval: true,
      workerData: { flag: this.flag.buffer, port: port2 },
      transferList: [port2],
    });
    this.worker.unref();
  }

  /** PluginSandbox.load starts the process, imports the module in it and builds the plugin objects; it throws what failed. */
  load(): Plugin[] {
    this.infos = this.start();
    this.plugins = this.infos.map((info, i) => this.proxy(info, i));
    return this.plugins;
  }

  /** isDisabled says whether the plugin named `name` was disabled after too many stops. */
  isDisabled(name: string): boolean {
    return this.disabled.has(name);
  }

  /** close kills the sandbox process and ends the broker thread. */
  async close(): Promise<void> {
    this.port.postMessage({ t: 'kill' });
    await new Promise((r) => setTimeout(r, 20));
    await this.worker.terminate();
    this.port.close();
  }

  /** command is how the sandbox process starts: node with its flags, in a network namespace of its own unless `host`. */
  private command(): { command: string; args: string[] } {
    const node = [process.execPath, ...this.args()];
    if (this.o.network === 'host') return { command: node[0]!, args: node.slice(1) };
    const iso = networkIsolation();
    if ('error' in iso)
      throw new Error(
        `the sandbox cannot keep ${this.o.source} off the network on this host (${iso.error}): run the program with ` +
          'CAP_SYS_ADMIN or with unprivileged user namespaces allowed, or set plugins.sandbox.network to host',
      );
    return { command: iso.prefix[0]!, args: [...iso.prefix.slice(1), ...node] };
  }

  private args(): string[] {
    const reads = [...new Set(this.o.readPaths.flatMap((p) => [p, realpathOr(p)]))];
    const code = CHILD_SOURCE.replace(
      '__HOOKS__',
      JSON.stringify([...SANDBOX_HOOKS, ...Object.keys(UNSUPPORTED)]),
    ).replace('__ENTRY__', JSON.stringify(pathToFileURL(this.o.entry).href));
    return [
      // Node 22.13 made the permission model stable under this name; Node 20 has it as experimental.
      process.allowedNodeEnvironmentFlags.has('--permission') ? '--permission' : '--experimental-permission',
      ...reads.map((r) => `--allow-fs-read=${r}`),
      `--max-old-space-size=${this.budget.memoryMiB}`,
      '--no-warnings',
      '--input-type=module',
      '-e',
      code,
    ];
  }

  /** start (re)starts the sandbox process and waits for the module's report. */
  private start(): LoadedInfo[] {
    const { command, args } = this.command();
    this.generation++;
    this.port.postMessage({ t: 'spawn', command, args });
    const deadline = performance.now() + 30_000;
    const attempts: string[] = [];
    for (;;) {
      const m = this.next(deadline);
      if (!m) throw new Error(`the sandbox process did not load ${this.o.source} within 30 s`);
      if (m.pid !== undefined) {
        this.pid = m.pid;
        continue;
      }
      if (m.exit) throw new Error(`the sandbox process exited while loading: ${exitText(m.exit)}`);
      if (m.line === undefined) continue;
      const r = JSON.parse(m.line) as { t: string; plugins?: LoadedInfo[]; message?: string; to?: string };
      if (r.t === 'net') {
        attempts.push(String(r.to));
        continue;
      }
      if (r.t === 'loadfail') throw new Error(r.message);
      this.alive = true;
      this.baselineRss = rssMiB(this.pid);
      // Connections tried while the module loaded count against each plugin it exports.
      for (const info of r.plugins ?? []) {
        const name = typeof info.manifest?.name === 'string' ? info.manifest.name : this.o.source;
        for (const to of attempts)
          this.stop(name, 'network', `plugin ${name} tried to connect to ${to} while loading; ${NO_NETWORK}`, false);
      }
      return r.plugins ?? [];
    }
  }

  /**
   * next returns the next message of the current process, or undefined at `deadline`. Between messages it waits on
   * the shared counter the broker bumps; `check`, called when a wait times out, may stop the call.
   */
  private next(deadline: number, check?: () => void): Message | undefined {
    for (;;) {
      const seen = Atomics.load(this.flag, 0);
      const r = receiveMessageOnPort(this.port);
      if (r) {
        const m = r.message as Message;
        if (m.g !== this.generation) continue;
        if (m.log !== undefined) {
          log.info({ source: this.o.source, output: m.log.trimEnd() }, 'sandboxed plugin output');
          continue;
        }
        return m;
      }
      const left = deadline - performance.now();
      if (left <= 0) return undefined;
      if (Atomics.wait(this.flag, 0, seen, Math.min(left, 10)) === 'timed-out') check?.();
    }
  }

  private kill(): void {
    this.port.postMessage({ t: 'kill' });
    this.alive = false;
  }

  /** call runs one hook of plugin `i` in the sandbox and returns its value; see proxy for what crosses. */
  private call(i: number, name: string, hook: string, args: unknown[], ctx: CallContext): unknown {
    if (this.disabled.has(name)) throw new Error(`plugin ${name} is disabled after ${this.budget.maxFailures} stops`);
    if (!this.alive) this.start();
    const undef = args.flatMap((a, j) => (a === undefined ? [j] : []));
    this.port.postMessage({
      t: 'write',
      line: `${JSON.stringify({ t: 'call', i, hook, args: args.map((a) => a ?? null), undef, ctx: ctx.view })}\n`,
    });
    const start = performance.now();
    // The call's CPU is counted from the sandbox's own CPU time, read now: charging it the wall time instead (until a
    // first reading) stopped a plugin that used little CPU on a host so busy that its process, or this thread, waited
    // for a core, and a few such stops disable it for every tenant. One read of /proc per call.
    const cpuStart = cpuMillisOf(this.pid);
    let refusal: string | undefined;
    let connected: string | undefined;
    const check = () => {
      // Memory first: a plugin that allocates without end also uses CPU, and what it takes is the memory.
      const grown = rssMiB(this.pid) - this.baselineRss;
      if (grown > this.budget.memoryMiB)
        throw this.stop(
          name,
          'memory',
          `plugin ${name} grew by ${grown} MiB in ${hook}, over ${this.budget.memoryMiB} MiB`,
        );
      if (cpuMillisOf(this.pid) - cpuStart > this.budget.cpuMillis)
        throw this.stop(name, 'cpu', `plugin ${name} used more than ${this.budget.cpuMillis} ms of CPU in ${hook}`);
    };
    for (;;) {
      const m = this.next(start + this.budget.wallMillis, check);
      if (!m)
        throw this.stop(name, 'wall', `plugin ${name} did not return from ${hook} within ${this.budget.wallMillis} ms`);
      if (m.exit) {
        this.alive = false;
        const oom = /heap limit|out of memory/i.test(m.exit.stderr);
        throw this.stop(
          name,
          oom ? 'memory' : 'crash',
          oom
            ? `plugin ${name} ran out of its ${this.budget.memoryMiB} MiB heap in ${hook}`
            : `the sandbox process of plugin ${name} died in ${hook}: ${exitText(m.exit)}`,
        );
      }
      if (m.line === undefined) continue;
      const r = JSON.parse(m.line) as Record<string, unknown>;
      if (r.t === 'net') {
        connected ??= `plugin ${name} tried to connect to ${String(r.to)} in ${hook}; ${NO_NETWORK}`;
        continue;
      }
      if (r.t === 'ret' || r.t === 'throw') {
        if (connected) throw this.stop(name, 'network', connected, false);
        if (refusal) throw this.stop(name, 'undeclared', refusal, false);
        if (r.t === 'throw') throw new Error(String(r.message));
        const v = r.u ? undefined : r.v;
        const wrote = ctx.checkResult?.(v);
        if (wrote) throw this.stop(name, 'undeclared', wrote, false);
        return v;
      }
      let reply: Record<string, unknown>;
      try {
        const v = ctx.answer(r);
        reply = { t: 'value', v: v ?? null, u: v === undefined };
      } catch (e) {
        refusal ??= e instanceof Error ? e.message : String(e);
        reply = { t: 'refused', message: refusal };
      }
      this.port.postMessage({ t: 'write', line: `${JSON.stringify(reply)}\n` });
    }
  }

  /** stop records a stopped call, kills the process unless it may go on, and disables the plugin after maxFailures. */
  private stop(name: string, reason: SandboxStopReason, message: string, kill = true): SandboxStop {
    if (kill) this.kill();
    sandboxStopsTotal.inc({ plugin: name, reason });
    const n = (this.failures.get(name) ?? 0) + 1;
    this.failures.set(name, n);
    log.error({ plugin: name, reason, failures: n }, message);
    if (n >= this.budget.maxFailures && !this.disabled.has(name)) {
      this.disabled.add(name);
      sandboxDisabled.set({ plugin: name }, 1);
      log.error({ plugin: name, failures: n }, `plugin ${name} disabled for every tenant after ${n} stops`);
    }
    return new SandboxStop(name, reason, message);
  }

  /**
   * proxy is the host's view of plugin `i`: its manifest and declared reads as data, and a function per hook it
   * implements that runs the hook in the sandbox. The plugin gets the objects of the call and the tenant view as
   * JSON; its cache reads are answered only for the resources it declares (its own on both sides, and its reads).
   */
  private proxy(info: LoadedInfo, i: number): Plugin {
    const manifest = (info.manifest ?? undefined) as Plugin['manifest'];
    const name = typeof manifest?.name === 'string' ? manifest.name : this.o.source;
    const unsupported = Object.keys(UNSUPPORTED).filter((h) => info.hooks.includes(h) || info.data.includes(h));
    if (unsupported.length)
      throw new Error(
        `plugin ${name} implements ${unsupported.join(', ')}, which a sandboxed plugin cannot (only ` +
          `${SANDBOX_HOOKS.join(', ')}): ${unsupported.map((h) => UNSUPPORTED[h]).join('; ')}`,
      );
    const declared = new Set(info.reads.map((n) => `${n.side}:${resourceId(n.resource)}`));
    if (manifest?.resource)
      for (const side of ['tenant', 'super']) declared.add(`${side}:${resourceId(manifest.resource)}`);
    const p: Record<string, unknown> = { manifest, reads: info.reads };
    for (const hook of info.hooks.filter((h) => (SANDBOX_HOOKS as readonly string[]).includes(h))) {
      p[hook] = (...args: unknown[]) => {
        const ctx = args.pop() as PluginContext;
        const input = hook === 'mutate' ? (args[0] as KubeObject | undefined) : undefined;
        return this.call(i, name, hook, args, {
          view: contextView(ctx),
          answer: (r) => answer(name, declared, ctx, r),
          ...(TRANSFORMS.has(hook) && { checkResult: (v: unknown) => writeProblem(name, manifest, input, v) }),
        });
      };
    }
    return p as unknown as Plugin;
  }
}

/** NO_NETWORK ends the message of a stop for a connection a plugin tried. */
const NO_NETWORK = 'a sandboxed plugin has no network, and the connection was refused';

/** TRANSFORMS are the hooks whose result is a decision to write, checked against what the plugin may write. */
const TRANSFORMS = new Set(['toSuper', 'toTenant', 'mutate']);

interface CallContext {
  view: Record<string, unknown>;
  answer(r: Record<string, unknown>): unknown;
  checkResult?(v: unknown): string | undefined;
}

function resourceId(r: Pick<Resource, 'group' | 'resource'>): string {
  return r.group ? `${r.resource}.${r.group}` : r.resource;
}

/**
 * contextView is the part of a PluginContext that crosses as data: the tenant view, the time, the super cluster, the
 * plugin's note.
 */
function contextView(ctx: Partial<PluginContext>): Record<string, unknown> {
  return {
    tenant: ctx.tenant,
    now: (ctx.now ?? new Date()).toISOString(),
    ...(ctx.superCluster !== undefined && { superCluster: ctx.superCluster }),
    ...(ctx.sharedTenants && { sharedTenants: true }),
    ...(ctx.remembered !== undefined && { remembered: ctx.remembered }),
  };
}

/** answer serves one request of a plugin during a call: a cache read of a declared resource, or a naming rule. */
function answer(plugin: string, declared: Set<string>, ctx: PluginContext, r: Record<string, unknown>): unknown {
  if (r.t === 'name') {
    const fn = r.fn === 'superNamespace' || r.fn === 'tenantNamespace' ? ctx.names?.[r.fn as keyof Naming] : undefined;
    if (!fn) throw new Error(`plugin ${plugin} asked for an unknown naming rule ${String(r.fn)}`);
    return fn(String(r.arg));
  }
  const side = r.side === 'tenant' ? 'tenant' : 'super';
  const resource = r.resource as Resource;
  const id = resourceId(resource ?? { group: '', resource: '?' });
  if (!declared.has(`${side}:${id}`)) {
    throw new Error(
      `plugin ${plugin} may not read ${id} in the ${side} cache: its manifest declares ` +
        `${[...declared].sort().join(', ') || 'no resource'} (add { resource, side: '${side}' } to its reads)`,
    );
  }
  const cache: CacheReader | undefined = side === 'tenant' ? ctx.tenantCache : ctx.superCache;
  if (!cache) return r.t === 'list' ? [] : undefined;
  const ns = (r.namespace ?? undefined) as string | undefined;
  return r.t === 'list' ? cache.list(resource, ns) : cache.get(resource, ns, String(r.name));
}

/** WRITING_EFFECTS are effects that write what only built-in plugins may: tokens, policies, quotas, binds, deletions. */
const ALLOWED_EFFECTS = new Set(['event', 'tenantCondition']);

/**
 * writeProblem says why a sandboxed plugin's decision writes what it may not: an object of another kind than its
 * resource (or, for a mutator, than the object it was given), or an effect beyond events and conditions.
 */
function writeProblem(
  plugin: string,
  manifest: Plugin['manifest'],
  input: KubeObject | undefined,
  v: unknown,
): string | undefined {
  const d = v as { object?: KubeObject | null; effects?: Array<{ type?: string }> } | undefined;
  const kind = input?.kind ?? manifest?.resource?.kind;
  if (d?.object && kind && d.object.kind !== undefined && d.object.kind !== kind)
    return `plugin ${plugin} returned a ${String(d.object.kind)}, but may write only ${kind} objects`;
  for (const e of d?.effects ?? []) {
    if (!ALLOWED_EFFECTS.has(String(e?.type)))
      return `plugin ${plugin} asked for a ${String(e?.type)} effect; a sandboxed plugin may ask only for ${[...ALLOWED_EFFECTS].join(' and ')} effects`;
  }
  return undefined;
}

function realpathOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

function exitText(e: NonNullable<Message['exit']>): string {
  const how = e.error ?? (e.signal ? `signal ${e.signal}` : `exit code ${e.code}`);
  const last = e.stderr.trim().split('\n').slice(-3).join(' | ');
  return last ? `${how}: ${last}` : how;
}

/** cpuMillisOf is the CPU time (user + system) process `pid` has used, from /proc; 0 where there is no /proc. */
function cpuMillisOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/** rssMiB is the resident size of process `pid` in MiB, from /proc; 0 where there is no /proc. */
function rssMiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}
