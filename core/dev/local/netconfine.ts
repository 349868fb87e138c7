/**
 * Network confinement of local tenant control planes. A tenant admin makes its apiserver connect wherever it is told:
 * admission webhooks and APIServices by URL or Service, `services/proxy` and `pods/proxy` to Endpoints it writes,
 * `nodes/proxy` to the addresses of Nodes it creates. On the manager's host those connections would start at the
 * host, beside the super apiserver, the manager, other tenants' apiservers and etcds, and the cloud metadata
 * address. The apiserver and controller manager of a confined tenant run in a cgroup (v2) of their own, and an
 * iptables chain that the OUTPUT chain sends that cgroup's packets to lets them reach only their own ports on
 * loopback, the vn-agent, the addresses of their own tenant's Pods, and addresses outside the super-internal ranges
 * that are not this host's own. Other tenants' Pods and the platform's, in the same Pod network, are refused, and
 * that refusal is also made in an nftables table of the control plane's own whose output hook runs before the
 * iptables filter table (podFence): on a real node, kube-router's OUTPUT rules accept this host's packets to every
 * Pod a NetworkPolicy selects (so that kubelet probes pass) before the iptables chain would see them.
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

/** CONFINE_CHAIN_PREFIX starts the name of every confinement chain (and, lowercased, every cgroup) this module makes. */
export const CONFINE_CHAIN_PREFIX = 'VC-CP-';

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

/** ConfinementRules are the rules of one chain, for iptables and for ip6tables, in order. */
export interface ConfinementRules {
  v4: string[][];
  v6: string[][];
}

const isV6 = (cidr: string): boolean => cidr.includes(':');
const withPrefix = (host: string): string => (host.includes('/') ? host : `${host}/${isV6(host) ? 128 : 32}`);

/**
 * confinementRules renders a Confinement as chain rules. Replies on connections the control plane accepted (its
 * clients') and packets of connections it was allowed to open are returned to OUTPUT first; then its loopback ports
 * and endpoints; then every address of this host is rejected; then the tenant's own Pod addresses are allowed; then
 * the rest of the Pod CIDRs and every internal range (and loopback) are rejected, so a refused connection fails at
 * once with "connection refused" instead of hanging; what is left, the outside, returns to OUTPUT.
 */
export function confinementRules(c: Confinement): ConfinementRules {
  const established = ['-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'RETURN'];
  const v4: string[][] = [established];
  const v6: string[][] = [established];
  for (const port of c.loopbackPorts)
    v4.push(['-d', '127.0.0.1/32', '-p', 'tcp', '--dport', String(port), '-j', 'RETURN']);
  for (const e of c.endpoints)
    (isV6(e.host) ? v6 : v4).push(['-d', withPrefix(e.host), '-p', 'tcp', '--dport', String(e.port), '-j', 'RETURN']);
  // every address of this host (its bridges' gateways lie inside the Pod CIDRs; a public address is not internal)
  const local = ['-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'REJECT'];
  v4.push(local);
  v6.push(local);
  for (const ip of ownPodAddresses(c)) (isV6(ip) ? v6 : v4).push(['-d', withPrefix(ip), '-j', 'RETURN']);
  const internal = [...(c.internalCidrs ?? SUPER_INTERNAL_CIDRS)];
  for (const cidr of [...c.podCidrs, ...internal, '127.0.0.0/8', '::1/128'].filter((x, i, all) => all.indexOf(x) === i))
    (isV6(cidr) ? v6 : v4).push(['-d', cidr, '-j', 'REJECT']);
  return { v4, v6 };
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

/**
 * podFenceScript is the `nft -f` script that (re)makes table `inet <table>`: one chain on the output hook at priority
 * filter - 1, before any iptables filter rule, where the sockets of cgroup `cgroup` (a child of the cgroup v2 root,
 * named by its path under /sys/fs/cgroup, where nft looks it up: `unified/<name>` on a hybrid host)
 * pass on connections already made, to its endpoints and to the tenant's own Pod addresses, and are rejected
 * ("connection refused") towards the rest of the Pod CIDRs. Everything else goes on to the iptables chain. The table is declared, deleted
 * and made again in one transaction, so a change never leaves it half made.
 */
export function podFenceScript(
  table: string,
  cgroup: string,
  c: Pick<Confinement, 'podCidrs' | 'podAddresses'> & Partial<Pick<Confinement, 'endpoints'>>,
): string {
  const who = `socket cgroupv2 level 1 "${cgroup}"`;
  const own = ownPodAddresses(c);
  const rules = [`${who} ct state established,related accept`];
  for (const [family, v6] of [
    ['ip', false],
    ['ip6', true],
  ] as const) {
    const addrs = own.filter((a) => isV6(a) === v6);
    const cidrs = c.podCidrs.filter((x) => isV6(x) === v6);
    // the endpoints (the vn-agent behind every vNode) may sit on a bridge address inside a Pod CIDR
    for (const e of (c.endpoints ?? []).filter((x) => isV6(x.host) === v6))
      rules.push(`${who} ${family} daddr ${e.host} tcp dport ${e.port} accept`);
    if (addrs.length) rules.push(`${who} ${family} daddr { ${addrs.join(', ')} } accept`);
    if (cidrs.length) rules.push(`${who} ${family} daddr { ${cidrs.join(', ')} } reject`);
  }
  return [
    `table inet ${table} {}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    '  chain out {',
    '    type filter hook output priority -1; policy accept;',
    ...rules.map((r) => `    ${r}`),
    '  }',
    '}',
    '',
  ].join('\n');
}

/** confinementNames are the chain and the cgroup directory name of the control plane `name`. */
export function confinementNames(name: string): { chain: string; cgroup: string } {
  const h = createHash('sha256').update(name).digest('hex').slice(0, 12);
  return { chain: `${CONFINE_CHAIN_PREFIX}${h}`, cgroup: `${CONFINE_CHAIN_PREFIX.toLowerCase()}${h}` };
}

/**
 * cgroup2Root is where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup on a v2 host, /sys/fs/cgroup/unified on a
 * hybrid one; undefined without one (iptables' cgroup match by path needs v2).
 */
export function cgroup2Root(): string | undefined {
  return ['/sys/fs/cgroup', '/sys/fs/cgroup/unified'].find((d) => existsSync(join(d, 'cgroup.controllers')));
}

/**
 * NetConfinement is the confinement of one control plane on this host: its cgroup, its chains and the OUTPUT jumps to
 * them. apply makes them (again, idempotently); remove deletes them once the processes in the cgroup are gone.
 */
export class NetConfinement {
  /** chain is the iptables (and ip6tables) chain. */
  readonly chain: string;
  /** cgroupDir is the cgroup's directory; processes written into its cgroup.procs are confined. */
  readonly cgroupDir: string;
  private readonly cgroupPath: string;
  /** the cgroup's path under /sys/fs/cgroup, as nft names it */
  private readonly fencePath: string;
  private timer?: NodeJS.Timeout;
  /** the tenant's own Pod addresses the chain allows now (ownPodAddresses of the spec and the last set) */
  private podAddresses: readonly string[];
  /** the apply in progress: applies run one after another, so the last one written is the last one asked */
  private applying: Promise<void> = Promise.resolve();
  /** set by remove: a later apply (a Pod address change arriving late) does not make the chain again */
  private removed = false;

  constructor(
    name: string,
    private readonly spec: Confinement,
    root: string,
  ) {
    const n = confinementNames(name);
    this.chain = n.chain;
    this.cgroupPath = n.cgroup;
    this.cgroupDir = join(root, n.cgroup);
    this.fencePath = relative('/sys/fs/cgroup', this.cgroupDir);
    this.podAddresses = ownPodAddresses(spec);
  }

  /** allowedPodAddresses are the tenant Pod addresses the chain lets the control plane reach. */
  get allowedPodAddresses(): readonly string[] {
    return this.podAddresses;
  }

  /**
   * setPodAddresses replaces the tenant's own Pod addresses the control plane may reach and rewrites the chain when
   * the set changed (a Pod started, or one stopped and its address may go to another tenant's Pod).
   */
  async setPodAddresses(addresses: readonly string[]): Promise<void> {
    const next = ownPodAddresses({ podCidrs: this.spec.podCidrs, podAddresses: addresses });
    if (next.join(' ') === this.podAddresses.join(' ')) return;
    this.podAddresses = next;
    await this.apply();
  }

  /**
   * apply creates the cgroup, then in one iptables-restore transaction per family declares (and so empties) the chain,
   * fills it with confinementRules and, when missing, sends the cgroup's packets to it from OUTPUT: another program
   * rewriting the filter table meanwhile (kube-router does, from a snapshot) never sees a half-made chain.
   */
  apply(): Promise<void> {
    const run = this.applying.catch(() => undefined).then(() => this.applyNow());
    this.applying = run;
    return run;
  }

  private async applyNow(): Promise<void> {
    if (this.removed) return;
    mkdirSync(this.cgroupDir, { recursive: true });
    // the nftables fence first: the cgroup must exist for nft to resolve its path
    await nft(podFenceScript(this.cgroupPath, this.fencePath, { ...this.spec, podAddresses: this.podAddresses }));
    const rules = confinementRules({ ...this.spec, podAddresses: this.podAddresses });
    for (const [bin, list] of [
      ['iptables', rules.v4],
      ['ip6tables', rules.v6],
    ] as const) {
      const jump = ['OUTPUT', '-m', 'cgroup', '--path', this.cgroupPath, '-j', this.chain];
      const present = await run(bin, ['-C', ...jump]).then(
        () => true,
        () => false,
      );
      const script = [
        '*filter',
        `:${this.chain} - [0:0]`,
        ...list.map((r) => ['-A', this.chain, ...r].join(' ')),
        ...(present ? [] : [['-I', ...jump].join(' ')]),
        'COMMIT',
        '',
      ].join('\n');
      await restore(bin, script);
    }
  }

  /**
   * keep checks every `intervalMs` that both OUTPUT jumps are still there and applies again when one is gone: a
   * program that restores the filter table from a snapshot taken before apply (kube-router on a real node of this
   * host) would otherwise leave the control plane unconfined. remove stops it.
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

  /** intact tells whether both OUTPUT jumps (and so their chains) and the nftables fence exist. */
  async intact(): Promise<boolean> {
    const fence = await exec('nft', ['list', 'table', 'inet', this.cgroupPath], { timeout: 30_000 }).then(
      () => true,
      () => false,
    );
    if (!fence) return false;
    for (const bin of ['iptables', 'ip6tables'] as const) {
      const jump = ['OUTPUT', '-m', 'cgroup', '--path', this.cgroupPath, '-j', this.chain];
      if (
        !(await run(bin, ['-C', ...jump]).then(
          () => true,
          () => false,
        ))
      )
        return false;
    }
    return true;
  }

  /** remove deletes the jumps, the chains and the cgroup; what is already gone is not an error. */
  async remove(): Promise<void> {
    this.removed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.applying.catch(() => undefined);
    for (const bin of ['iptables', 'ip6tables'] as const) {
      const jump = ['OUTPUT', '-m', 'cgroup', '--path', this.cgroupPath, '-j', this.chain];
      while (
        await run(bin, ['-D', ...jump]).then(
          () => true,
          () => false,
        )
      );
      await run(bin, ['-F', this.chain]).catch(() => undefined);
      await run(bin, ['-X', this.chain]).catch(() => undefined);
    }
    await exec('nft', ['delete', 'table', 'inet', this.cgroupPath], { timeout: 30_000 }).catch(() => undefined);
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

/** restore feeds an iptables-restore script (without flushing the tables) to `bin`-restore. */
function restore(bin: string, script: string): Promise<void> {
  return new Promise((res, rej) => {
    const child = execFile(`${bin}-restore`, ['-w', '--noflush'], { timeout: 30_000 }, (err) =>
      err ? rej(err) : res(),
    );
    child.stdin!.end(script);
  });
}

async function run(bin: string, args: string[]): Promise<void> {
  await exec(bin, ['-w', ...args], { timeout: 30_000 });
}

/**
 * confinementUnavailable says why control planes cannot be confined on this host (not root, no cgroup v2, or an
 * iptables without the cgroup match), or undefined when they can: a throw-away confinement is applied and removed.
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
    return `iptables or nftables cannot match by cgroup: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`;
  } finally {
    await probe.remove().catch(() => undefined);
  }
}

/**
 * sweepConfinements removes what confinements of control planes that are gone left behind (a `vc up` killed outright
 * never removes its own): every confinement chain whose cgroup holds no process, its OUTPUT jumps and that cgroup.
 * A confinement whose cgroup still holds processes belongs to a running control plane and stays. Returns what it
 * removed.
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
      const chain = /^:(VC-CP-[0-9a-f]+) /.exec(line)?.[1];
      if (chain) chains.add(chain);
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
      if (!e.startsWith(CONFINE_CHAIN_PREFIX.toLowerCase()) || live(e)) continue;
      try {
        rmdirSync(join(root, e));
        removed.push(`cgroup ${e}`);
      } catch {
        // a cgroup the kernel has not yet freed: the next sweep takes it
      }
    }
  return removed;
}
