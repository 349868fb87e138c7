/**
 * The code of a sandbox process and of its broker thread, as JavaScript source text. Neither may import project
 * modules (the process reads nothing but the plugin's folders), and each runs from its text (`node -e`, an `eval`
 * worker), so they are kept as text here: a TypeScript function turned into text with toString() would carry the
 * transforms of whatever loaded it (vitest rewrites `import()`).
 */

/**
 * CHILD_SOURCE is the sandbox process (an ES module run with `node -e`). It imports the plugin module named by
 * ENTRY, reports what the module exports, then serves calls one at a time over blocking pipes: requests on fd 0,
 * replies on fd 3. A plugin reads the caches and the naming rules through requests the host answers while the call
 * waits; plain JSON crosses in both directions. ENTRY and HOOKS are replaced by the host.
 */
export const CHILD_SOURCE = String.raw`
const fs = await import('node:fs');
const { StringDecoder } = await import('node:string_decoder');
const decoder = new StringDecoder('utf8');
const chunk = Buffer.alloc(1 << 16);
let pending = '';
const readMessage = () => {
  for (;;) {
    const at = pending.indexOf('\n');
    if (at >= 0) {
      const line = pending.slice(0, at);
      pending = pending.slice(at + 1);
      return JSON.parse(line);
    }
    const n = fs.readSync(0, chunk, 0, chunk.length, null);
    if (n === 0) process.exit(0);
    pending += decoder.write(chunk.subarray(0, n));
  }
};
const send = (m) => {
  const bytes = Buffer.from(JSON.stringify(m) + '\n');
  for (let off = 0; off < bytes.length; ) off += fs.writeSync(3, bytes, off);
};
const ask = (m) => {
  send(m);
  const r = readMessage();
  if (r.t === 'refused') throw new Error(r.message);
  return r.u ? undefined : r.v;
};
const cache = (side) => ({
  get: (resource, namespace, name) => ask({ t: 'get', side, resource, namespace: namespace ?? null, name }),
  list: (resource, namespace) => ask({ t: 'list', side, resource, namespace: namespace ?? null }),
});
const names = {
  superNamespace: (ns) => ask({ t: 'name', fn: 'superNamespace', arg: ns }),
  tenantNamespace: (ns) => ask({ t: 'name', fn: 'tenantNamespace', arg: ns }),
};
// No socket leaves the sandbox: the host starts it in a network namespace of its own with no interface up, which
// refuses TCP, UDP and abstract sockets in the kernel. Sockets on files (unix sockets such as a container runtime's)
// are outside a network namespace and Node's permission model does not check them, so every connect and send is
// refused here as well, and reported to the host with its destination; the plugin cannot undo this (the methods are
// frozen, and the permission model denies process.binding, the only other way to a socket).
const net = await import('node:net');
const dgram = await import('node:dgram');
const destination = (args) => {
  const a = Array.isArray(args[0]) ? args[0] : args;
  const o = a[0];
  if (o !== null && typeof o === 'object') return o.path ?? (o.host ?? 'localhost') + ':' + String(o.port);
  if (typeof o === 'string' && !/^[0-9]+$/.test(o)) return o;
  return (typeof a[1] === 'string' ? a[1] : 'localhost') + ':' + String(o);
};
const refuse = (what) => {
  send({ t: 'net', to: what });
  const e = new Error('the plugin sandbox has no network: connecting to ' + what + ' was refused');
  e.code = 'EACCES';
  throw e;
};
const seal = (proto, name, fn) =>
  Object.defineProperty(proto, name, { value: fn, writable: false, configurable: false, enumerable: false });
seal(net.Socket.prototype, 'connect', function (...args) {
  refuse(destination(args));
});
seal(dgram.Socket.prototype, 'connect', function (port, address) {
  refuse((typeof address === 'string' ? address : 'localhost') + ':' + String(port));
});
seal(dgram.Socket.prototype, 'send', function (msg, ...rest) {
  // send(msg[, offset, length][, port][, address][, callback]): the port is the last number
  const port = rest.filter((x) => typeof x === 'number').pop();
  const address = rest.find((x) => typeof x === 'string');
  refuse((address ?? 'localhost') + ':' + String(port ?? '?'));
});
const HOOKS = __HOOKS__;
let plugins;
try {
  const mod = await import(__ENTRY__);
  const exported = mod.plugins ?? mod.default;
  if (!exported) throw new Error('the module has no default export (a plugin or an array of plugins)');
  plugins = Array.isArray(exported) ? exported : [exported];
  send({
    t: 'loaded',
    plugins: plugins.map((p) => ({
      manifest: p?.manifest ?? null,
      reads: p?.reads ?? [],
      hooks: [...new Set([...HOOKS, ...Object.keys(p ?? {})])].filter((h) => typeof p?.[h] === 'function'),
      data: Object.keys(p ?? {}).filter((k) => k !== 'manifest' && k !== 'reads' && typeof p[k] !== 'function'),
    })),
  });
} catch (e) {
  send({ t: 'loadfail', message: e instanceof Error ? e.message : String(e) });
  process.exit(0);
}
for (;;) {
  const m = readMessage();
  if (m.t !== 'call') continue;
  const plugin = plugins[m.i];
  const args = m.args.map((a, i) => (m.undef.includes(i) ? undefined : a));
  const ctx = { ...m.ctx, now: new Date(m.ctx.now), names, tenantCache: cache('tenant'), superCache: cache('super') };
  try {
    const v = plugin[m.hook].call(plugin, ...args, ctx);
    send({ t: 'ret', v: v ?? null, u: v === undefined });
  } catch (e) {
    send({ t: 'throw', message: e instanceof Error ? e.message : String(e) });
  }
}
`;

/**
 * BROKER_SOURCE is the broker worker thread (CommonJS, run with `eval`): it owns the sandbox process and its pipes,
 * which only an event loop can serve, while the syncer's thread waits for the reply of a synchronous call on a shared
 * counter the broker bumps. Every message it posts carries the generation of the process it came from, so the host
 * ignores what a killed process still had in its pipes.
 */
export const BROKER_SOURCE = String.raw`
const { workerData } = require('node:worker_threads');
const { spawn } = require('node:child_process');
const { StringDecoder } = require('node:string_decoder');
const flag = new Int32Array(workerData.flag);
const port = workerData.port;
let child;
let generation = 0;
const post = (m) => {
  port.postMessage(m);
  Atomics.add(flag, 0, 1);
  Atomics.notify(flag, 0);
};
port.on('message', (m) => {
  if (m.t === 'spawn') {
    const g = ++generation;
    const c = spawn(m.command, m.args, { stdio: ['pipe', 'pipe', 'pipe', 'pipe'], env: {} });
    child = c;
    const decoder = new StringDecoder('utf8');
    let pending = '';
    let stderr = '';
    c.stdin.on('error', () => undefined);
    c.stdio[3].on('data', (d) => {
      pending += decoder.write(d);
      for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
        post({ g, line: pending.slice(0, at) });
        pending = pending.slice(at + 1);
      }
    });
    c.stdout.on('data', (d) => post({ g, log: String(d) }));
    c.stderr.on('data', (d) => {
      stderr = (stderr + String(d)).slice(-4000);
    });
    c.on('error', (e) => post({ g, exit: { error: e.message, stderr } }));
    c.on('close', (code, signal) => post({ g, exit: { code, signal, stderr } }));
    post({ g, pid: c.pid ?? 0 });
  } else if (m.t === 'write') child?.stdin.write(m.line);
  else if (m.t === 'kill') child?.kill('SIGKILL');
});
`;
