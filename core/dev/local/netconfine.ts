/**
 * Network confinement of local tenant control planes. A tenant admin makes its apiserver connect wherever it is told:
 * admission webhooks and APIServices by URL or Service, `services/proxy` and `pods/proxy` to Endpoints it writes,
 * `nodes/proxy` to the addresses of Nodes it creates. On the manager's host those connections would start at the
 * host, beside the super apiserver, the manager, other tenants' apiservers and etcds, and the cloud metadata
 * address. The apiserver and controller manager of a confined tenant run in a cgroup (v2) of their own, and an
 * nftables table of that control plane's own (`inet vc-cp-<hash>`) lets the sockets of that cgroup open connections
 * only to their own ports on loopback, the vn-agent, the addresses of their own tenant's Pods, and addresses outside
 * the super-internal ranges that are not this host's own. Its output chain runs at priority filter - 1, before the
 * iptables filter table, and nothing else writes that table: kube-router on a real node of this host restores the
 * whole iptables filter table from snapshots and accepts this host's packets to every Pod a NetworkPolicy selects
 * (so that kubelet probes pass), and neither can open or remove a door here.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { isIP } from 'node:net';
import { cidrContains, parseCidr } from '../../../plugins/sdk/src/network/cidr.ts';
import { SUPER_INTERNAL_CIDRS } from '../../../plugins/sdk/src/wellknown.ts';

const exec = promisify(execFile);

/** CONFINE_PREFIX starts the name of every confinement cgroup and nftables table this module makes. */
export const CONFINE_PREFIX = 'vc-cp-';

/** LEGACY_CHAIN matches the iptables chains earlier versions confined with; sweepConfinements removes them. */
const LEGACY_CHAIN = /^VC-CP-[0-9a-f]+$/;

/** Confinement is what one confined control plane may connect to; every other new connection is refused. */
export interface Confinement {
  /** TCP ports on 127.0.0.1: its etcd, its own apiserver (the controller manager and the loopback client use it) */
  loopbackPorts: readonly number[];
  /**
   * the super's Pod CIDRs: refused but at `podAddresses`, so that a tenant admin's webhooks, APIServices and proxy
   * paths reach its own Pods and no other tenant's or the platform's
   */
  podCidrs: readonly string[];
  /**
   * the addresses of the tenant's own Pods, reached on every port where they lie inside `podCidrs` (others are left
   * out: a Pod's address outside the Pod network is a node's); NetConfinement.setPodAddresses keeps them current
   */
  podAddresses?: readonly string[];
  /** single TCP endpoints: the vn-agent (every vNode's kubelet endpoint) */
  endpoints: ReadonlyArray<{ host: string; port: number }>;
  /** the super-internal ranges, refused but for the above (default SUPER_INTERNAL_CIDRS) */
  internalCidrs?: readonly string[];
}

const isV6 = (cidr: string): boolean => cidr.includes(':');
const family = (addr: string): 'ip' | 'ip6' => (isV6(addr) ? 'ip6' : 'ip');

/**
 * confinementRules renders a Confinement as the rules of the table's `confined` chain, which sees only the packets of
 * the control plane's sockets. Packets of connections already made (replies to its clients, and connections it was
 * allowed to open) pass first; then its loopback ports and endpoints; then every address of this host is rejected;
 * then the tenant's own Pod addresses pass; then the rest of the Pod CIDRs and every internal range (and loopback) are
 * rejected, so a refused connection fails at once with "connection refused" instead of hanging; what is left, the
 * outside, falls through to the policy (accept).
 */
export function confinementRules(c: Confinement): string[] {
  const rules = ['ct state established,related accept'];
  if (c.loopbackPorts.length)
    rules.push(`ip daddr 127.0.0.1 tcp dport { ${[...new Set(c.loopbackPorts)].join(', ')} } accept`);
  for (const e of c.endpoints) rules.push(`${family(e.host)} daddr ${e.host} tcp dport ${e.port} accept`);
  // every address of this host (its bridges' gateways lie inside the Pod CIDRs; a public address is not internal)
  rules.push('fib daddr type local reject');
  const own = ownPodAddresses(c);
  for (const f of ['ip', 'ip6'] as const) {
    const addrs = own.filter((a) => family(a) === f);
    if (addrs.length) rules.push(`${f} daddr { ${addrs.join(', ')} } accept`);
  }
  // one rule per range: an anonymous set refuses overlapping intervals (a Pod CIDR inside an internal range)
  const refused = [...c.podCidrs, ...(c.internalCidrs ?? SUPER_INTERNAL_CIDRS), '127.0.0.0/8', '::1/128'];
  for (const cidr of refused.filter((x, i, all) => all.indexOf(x) === i))
    rules.push(`${family(cidr)} daddr ${cidr} reject`);
  return rules;
}

/**
 * ownPodAddresses are the Confinement's Pod addresses that are IP addresses inside one of its Pod CIDRs, each once,
 * sorted (the same set renders the same chain).
 */
export function ownPodAddresses(c: Pick<Confinement, 'podCidrs' | 'podAddresses'>): string[] {
  const cidrs = c.podCidrs.map(parseCidr);
  const inside = (ip: string) => isIP(ip) !== 0 && cidrs.some((cidr) => cidrContains(cidr, parseCidr(ip)));
  return [...new Set((c.podAddresses ?? []).filter(inside))].sort();
}

/** CONFINED_JUMP is how the output chain of a confinement's table names its `confined` chain. */
const CONFINED_JUMP = 'jump confined';

/**
 * confinementScript is the `nft -f` script that (re)makes table `inet <table>`: chain `confined` holds
 * confinementRules, and chain `out`, on the output hook at priority filter - 1 (after connection tracking and the NAT
 * of Service addresses, before any iptables filter rule), sends to it the packets of the sockets of cgroup `cgroup`
 * (a child of the cgroup v2 root, named by its path under /sys/fs/cgroup, where nft looks it up: `unified/<name>` on
 * a hybrid host). The table is declared, deleted and made again in one transaction, so a change never leaves it half
 * made and the control plane is never unconfined in between.
 */
export function confinementScript(table: string, cgroup: string, c: Confinement): string {
  return [
    `table inet ${table} {}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    '  chain confined {',
    ...confinementRules(c).map((r) => `    ${r}`),
    '  }',
    '  chain out {',
    '    type filter hook output priority -1; policy accept;',
    `    socket cgroupv2 level 1 "${cgroup}" ${CONFINED_JUMP}`,
    '  }',
    '}',
    '',
  ].join('\n');
}

/** confinementNames are the cgroup directory name and the nftables table of the control plane `name` (the same). */
export function confinementNames(name: string): { cgroup: string; table: string } {
  const h = createHash('sha256').update(name).digest('hex').slice(0, 12);
  return { cgroup: `${CONFINE_PREFIX}${h}`, table: `${CONFINE_PREFIX}${h}` };
}

/**
 * cgroup2Root is where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup on a v2 host, /sys/fs/cgroup/unified on a
 * hybrid one; undefined without one (nftables' socket cgroupv2 match needs v2).
 */
export function cgroup2Root(): string | undefined {
  return ['/sys/fs/cgroup', '/sys/fs/cgroup/unified'].find((d) => existsSync(join(d, 'cgroup.controllers')));
}

/**
 * NetConfinement is the confinement of one control plane on this host: its cgroup and its nftables table. apply
 * makes them (again, idempotently); remove deletes them once the processes in the cgroup are gone.
 */
export class NetConfinement {
  /** table is the nftables table (family inet). */
  readonly table: string;
  /** cgroupDir is the cgroup's directory; processes written into its cgroup.procs are confined. */
  readonly cgroupDir: string;
  /** the cgroup's path under /sys/fs/cgroup, as nft names it */
  private readonly cgroupPath: string;
  private timer?: NodeJS.Timeout;
  /** the tenant's own Pod addresses the table allows now (ownPodAddresses of the spec and the last set) */
  private podAddresses: readonly string[];
  /** the apply in progress: applies run one after another, so the last one written is the last one asked */
  private applying: Promise<void> = Promise.resolve();
  /** set by remove: a later apply (a Pod address change arriving late) does not make the table again */
  private removed = false;

  constructor(
    name: string,
    private readonly spec: Confinement,
    root: string,
  ) {
    const n = confinementNames(name);
    this.table = n.table;
    this.cgroupDir = join(root, n.cgroup);
    this.cgroupPath = relative('/sys/fs/cgroup', this.cgroupDir);
    this.podAddresses = ownPodAddresses(spec);
  }

  /** allowedPodAddresses are the tenant Pod addresses the table lets the control plane reach. */
  get allowedPodAddresses(): readonly string[] {
    return this.podAddresses;
  }

  /**
   * setPodAddresses replaces the tenant's own Pod addresses the control plane may reach and rewrites the table when
   * the set changed (a Pod started, or one stopped and its address may go to another tenant's Pod).
   */
  async setPodAddresses(addresses: readonly string[]): Promise<void> {
    const next = ownPodAddresses({ podCidrs: this.spec.podCidrs, podAddresses: addresses });
    if (next.join(' ') === this.podAddresses.join(' ')) return;
    this.podAddresses = next;
    await this.apply();
  }

  /** apply creates the cgroup, then (re)makes the table in one `nft -f` transaction. */
  apply(): Promise<void> {
    const run = this.applying.catch(() => undefined).then(() => this.applyNow());
    this.applying = run;
    return run;
  }

  private async applyNow(): Promise<void> {
    if (this.removed) return;
    // the cgroup must exist for nft to resolve its path
    mkdirSync(this.cgroupDir, { recursive: true });
    await nft(confinementScript(this.table, this.cgroupPath, { ...this.spec, podAddresses: this.podAddresses }));
  }

  /**
   * keep checks every `intervalMs` that the table is still there and applies again when it is not (a program that
   * flushes the whole ruleset would otherwise leave the control plane unconfined). remove stops it.
   */
  keep(intervalMs = 5000): void {
    if (this.timer) return;
    let busy = false;
    this.timer = setInterval(() => {
      if (busy) return;
      busy = true;
      void this.intact()
        .then((ok) => (ok ? undefined : this.apply()))
        .catch(() => undefined)
        .finally(() => (busy = false));
    }, intervalMs);
    this.timer.unref();
  }

  /** intact tells whether the table exists and its output chain still sends the cgroup's packets to `confined`. */
  async intact(): Promise<boolean> {
    const listed = await exec('nft', ['list', 'chain', 'inet', this.table, 'out'], { timeout: 30_000 }).then(
      (r) => r.stdout,
      () => '',
    );
    return listed.includes(CONFINED_JUMP);
  }

  /** remove deletes the table and the cgroup; what is already gone is not an error. */
  async remove(): Promise<void> {
    this.removed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.applying.catch(() => undefined);
    await exec('nft', ['delete', 'table', 'inet', this.table], { timeout: 30_000 }).catch(() => undefined);
    // the kernel frees a cgroup's last process a moment after it exits
    for (let i = 0; i < 50 && existsSync(this.cgroupDir); i++) {
      try {
        rmdirSync(this.cgroupDir);
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}

/** nft feeds a script to `nft -f -`. */
function nft(script: string): Promise<void> {
  return new Promise((res, rej) => {
    const child = execFile('nft', ['-f', '-'], { timeout: 30_000 }, (err) => (err ? rej(err) : res()));
    child.stdin!.end(script);
  });
}

async function run(bin: string, args: string[]): Promise<void> {
  await exec(bin, ['-w', ...args], { timeout: 30_000 });
}

/**
 * confinementUnavailable says why control planes cannot be confined on this host (not root, no cgroup v2, or no
 * nftables that matches sockets by cgroup), or undefined when they can: a throw-away confinement is applied and
 * removed.
 */
export async function confinementUnavailable(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'not running as root';
  const root = cgroup2Root();
  if (!root) return 'no cgroup v2 hierarchy (/sys/fs/cgroup or /sys/fs/cgroup/unified)';
  const probe = new NetConfinement(`probe-${process.pid}`, { loopbackPorts: [], podCidrs: [], endpoints: [] }, root);
  try {
    await probe.apply();
    return undefined;
  } catch (e) {
    return `nftables cannot confine by cgroup: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`;
  } finally {
    await probe.remove().catch(() => undefined);
  }
}

/**
 * sweepConfinements removes what confinements of control planes that are gone left behind (a `vc up` killed outright
 * never removes its own): every confinement table whose cgroup holds no process, and that cgroup, and the iptables
 * chains (with their OUTPUT jumps) that earlier versions confined with. A confinement whose cgroup still holds
 * processes belongs to a running control plane and stays. Returns what it removed.
 */
export async function sweepConfinements(): Promise<string[]> {
  if (process.getuid?.() !== 0) return [];
  const root = cgroup2Root();
  const removed: string[] = [];
  const live = (cgroup: string): boolean => {
    if (!root) return false;
    try {
      return readFileSync(join(root, cgroup, 'cgroup.procs'), 'utf8').trim() !== '';
    } catch {
      return false;
    }
  };
  const chains = new Set<string>();
  for (const bin of ['iptables', 'ip6tables'] as const) {
    const saved = await exec(`${bin}-save`, ['-t', 'filter']).then(
      (r) => r.stdout,
      () => '',
    );
    for (const line of saved.split('\n')) {
      const chain = /^:(\S+) /.exec(line)?.[1];
      if (chain && LEGACY_CHAIN.test(chain)) chains.add(chain);
    }
    for (const line of saved.split('\n')) {
      const m = /^-A OUTPUT (.*-j (VC-CP-[0-9a-f]+))$/.exec(line);
      if (!m || live(m[2]!.toLowerCase())) continue;
      await run(bin, ['-D', 'OUTPUT', ...m[1]!.split(' ')]).catch(() => undefined);
    }
    for (const chain of chains) {
      if (live(chain.toLowerCase())) continue;
      await run(bin, ['-F', chain]).catch(() => undefined);
      await run(bin, ['-X', chain]).catch(() => undefined);
    }
  }
  for (const chain of chains) if (!live(chain.toLowerCase())) removed.push(`iptables chain ${chain}`);
  const tables = await exec('nft', ['list', 'tables', 'inet']).then(
    (r) => r.stdout,
    () => '',
  );
  for (const line of tables.split('\n')) {
    const table = /^table inet (vc-cp-[0-9a-f]+)$/.exec(line.trim())?.[1];
    if (!table || live(table)) continue;
    await exec('nft', ['delete', 'table', 'inet', table]).catch(() => undefined);
    removed.push(`nftables table inet ${table}`);
  }
  if (root)
    for (const e of readdirSync(root)) {
      if (!e.startsWith(CONFINE_PREFIX) || live(e)) continue;
      try {
        rmdirSync(join(root, e));
        removed.push(`cgroup ${e}`);
      } catch {
        // a cgroup the kernel has not yet freed: the next sweep takes it
      }
    }
  return removed;
}
