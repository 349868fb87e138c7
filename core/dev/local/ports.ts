import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * PORT_RESERVATIONS is where processes of this project on one host note the ports they handed to a component that has
 * not bound yet, one file per port holding the pid. Asking the kernel for port 0 and closing it races: the kernel
 * hands the same ephemeral range to outgoing connections and to the next caller, so a kube-apiserver started seconds
 * later found its port taken (seen with two test files running at once).
 */
export const PORT_RESERVATIONS = join(tmpdir(), 'virtualcluster-ts-ports');

/** RESERVATION_TTL_MS is how long a reservation of a live process holds; its component binds well within it. */
export const RESERVATION_TTL_MS = 10 * 60_000;

/**
 * NODE_PORT_RANGE is the super clusters' NodePort range (kube-apiserver's default `--service-node-port-range`, which
 * the real nodes' kube-router is given too). No component of this project listens on a host port inside it: kube-router
 * returns every packet to a local address and a port in this range from its INPUT chain before any Pod's egress policy
 * is looked at ("allow LOCAL TCP traffic to node ports"), so a listener on a real node's bridge address at such a port
 * (a super or tenant apiserver's relay) would be open to every Pod on that node whatever its NetworkPolicies say.
 */
export const NODE_PORT_RANGE: readonly [number, number] = [30000, 32767];

/** FALLBACK_RANGE is where ports come from when the ephemeral range is unknown (not Linux). */
const FALLBACK_RANGE: [number, number] = [20000, NODE_PORT_RANGE[0] - 1];

/**
 * serverPortRange is the range ports are chosen from: the largest run of ports from 20000 up (above the well-known
 * service ports) that is outside both the kernel's ephemeral range (ip_local_port_range), so an outgoing connection
 * never takes a port between its choice and its bind, and NODE_PORT_RANGE.
 */
export function serverPortRange(ephemeral = readEphemeralRange()): [number, number] {
  if (!ephemeral) return FALLBACK_RANGE;
  let runs: Array<[number, number]> = [[20000, 65535]];
  for (const [lo, hi] of [ephemeral, NODE_PORT_RANGE])
    runs = runs.flatMap(([a, b]): Array<[number, number]> => {
      if (hi < a || lo > b) return [[a, b]];
      return [
        ...(lo > a ? [[a, lo - 1] as [number, number]] : []),
        ...(hi < b ? [[hi + 1, b] as [number, number]] : []),
      ];
    });
  // a run too small to hold a test's ports is no better than none
  const best = runs.reduce<[number, number] | undefined>(
    (m, r) => (!m || r[1] - r[0] > m[1] - m[0] ? r : m),
    undefined,
  );
  return best && best[1] - best[0] >= 1000 ? best : FALLBACK_RANGE;
}

function readEphemeralRange(): [number, number] | undefined {
  try {
    const [a, b] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    return Number.isInteger(a) && Number.isInteger(b) ? [a!, b!] : undefined;
  } catch {
    return undefined;
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** reserve notes port as this process's; false when a live process reserved it within the TTL. */
export function reserve(port: number, dir = PORT_RESERVATIONS, now = Date.now()): boolean {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let pid = 0;
      let age = Infinity;
      try {
        pid = Number(readFileSync(file, 'utf8'));
        age = now - statSync(file).mtimeMs;
      } catch {
        // removed in between: try again
      }
      if (pid && pid !== process.pid && alive(pid) && age < RESERVATION_TTL_MS) return false;
      if (pid === process.pid && age < RESERVATION_TTL_MS) return false;
      try {
        unlinkSync(file);
      } catch {
        // another process took it over first
      }
    }
  }
  return false;
}

const bindable = (port: number): Promise<boolean> =>
  new Promise((res) => {
    const s = net.createServer();
    s.once('error', () => res(false));
    s.listen(port, '127.0.0.1', () => s.close(() => res(true)));
  });

/**
 * pickPorts returns n distinct ports on 127.0.0.1 that were free, chosen at random from serverPortRange and reserved
 * for this process (see PORT_RESERVATIONS), so neither outgoing connections nor other processes of this project on
 * the host take them before the component binds.
 */
export async function pickPorts(n: number, o: { dir?: string; range?: [number, number] } = {}): Promise<number[]> {
  const [low, high] = o.range ?? serverPortRange();
  pruneReservations(o.dir);
  const out: number[] = [];
  for (let tries = 0; out.length < n; tries++) {
    if (tries > 2000) throw new Error(`no free port found in ${low}-${high} after ${tries} tries`);
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (out.includes(port)) continue;
    if (!reserve(port, o.dir)) continue;
    if (await bindable(port)) out.push(port);
    else release(port, o.dir);
  }
  return out;
}

function release(port: number, dir = PORT_RESERVATIONS): void {
  try {
    unlinkSync(join(dir, String(port)));
  } catch {
    // already gone
  }
}

let pruned = false;

/** pruneReservations removes reservations older than the TTL (once per process), so the directory stays small. */
export function pruneReservations(dir = PORT_RESERVATIONS, now = Date.now()): void {
  if (pruned) return;
  pruned = true;
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    try {
      if (now - statSync(join(dir, name)).mtimeMs >= RESERVATION_TTL_MS) unlinkSync(join(dir, name));
    } catch {
      // taken over or removed by another process
    }
  }
}
