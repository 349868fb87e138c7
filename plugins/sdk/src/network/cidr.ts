import { isIPv4, isIPv6 } from 'node:net';

/** Cidr is a parsed CIDR block: its address family, the network address as a number and the prefix length. */
export interface Cidr {
  family: 4 | 6;
  addr: bigint;
  prefix: number;
}

const bitsOf = (family: 4 | 6): number => (family === 4 ? 32 : 128);

function v4(s: string): bigint {
  return s.split('.').reduce((n, part) => (n << 8n) | BigInt(Number(part)), 0n);
}

function v6(s: string): bigint {
  let text = s;
  // An embedded IPv4 tail (::ffff:10.0.0.1) becomes two hex groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4(dotted[1]!);
    text = `${text.slice(0, dotted.index)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((n, g) => (n << 16n) | BigInt(parseInt(g, 16)), 0n);
}

/**
 * parseCidr parses `a.b.c.d/n` or `x:y::z/n`. A bare address is a host block (/32 or /128). Host bits set below the
 * prefix are cleared, as the NetworkPolicy API does when it compares blocks. Throws on anything else.
 */
export function parseCidr(text: string): Cidr {
  const [ip = '', len, ...rest] = text.split('/');
  const family = isIPv4(ip) ? 4 : isIPv6(ip) ? 6 : undefined;
  if (!family || rest.length || (len !== undefined && !/^\d{1,3}$/.test(len))) throw new Error(`not a CIDR: ${text}`);
  const bits = bitsOf(family);
  const prefix = len === undefined ? bits : Number(len);
  if (prefix > bits) throw new Error(`not a CIDR: ${text}`);
  const host = bits - prefix;
  const addr = ((family === 4 ? v4(ip) : v6(ip)) >> BigInt(host)) << BigInt(host);
  return { family, addr, prefix };
}

/** cidrContains tells whether block `outer` contains every address of block `inner` (same family only). */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  if (outer.family !== inner.family || outer.prefix > inner.prefix) return false;
  const host = BigInt(bitsOf(outer.family) - outer.prefix);
  return outer.addr >> host === inner.addr >> host;
}

/** formatCidr writes a block as `a.b.c.d/n` or in the shortest IPv6 form (RFC 5952: lower case, `::` once). */
export function formatCidr(c: Cidr): string {
  if (c.family === 4) {
    const octets = [24n, 16n, 8n, 0n].map((s) => String(Number((c.addr >> s) & 0xffn)));
    return `${octets.join('.')}/${c.prefix}`;
  }
  const groups = Array.from({ length: 8 }, (_, i) => Number((c.addr >> BigInt(112 - 16 * i)) & 0xffffn));
  // the first longest run of two or more zero groups becomes `::`
  let [at, len] = [-1, 1];
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > len) [at, len] = [i, j - i];
    i = Math.max(i, j - 1);
  }
  const hex = (gs: number[]): string => gs.map((g) => g.toString(16)).join(':');
  const text = at < 0 ? hex(groups) : `${hex(groups.slice(0, at))}::${hex(groups.slice(at + len))}`;
  return `${text}/${c.prefix}`;
}

/**
 * cidrComplement is every address of one family outside `exclude` (blocks of the other family are ignored), as the
 * fewest CIDR blocks, in address order: a NetworkPolicy peer list made of them allows exactly those addresses with no
 * `except`, so nothing a NetworkPolicy implementation does with excepted entries (ipset `nomatch`, rule order) can
 * let an excluded address in. Throws on a block that is not a CIDR.
 */
export function cidrComplement(family: 4 | 6, exclude: readonly string[]): string[] {
  const bits = bitsOf(family);
  const ex = exclude.map(parseCidr).filter((c) => c.family === family);
  const out: string[] = [];
  const walk = (c: Cidr): void => {
    if (ex.some((e) => cidrContains(e, c))) return;
    if (!ex.some((e) => cidrContains(c, e))) {
      out.push(formatCidr(c));
      return;
    }
    const half = 1n << BigInt(bits - c.prefix - 1);
    walk({ family, addr: c.addr, prefix: c.prefix + 1 });
    walk({ family, addr: c.addr | half, prefix: c.prefix + 1 });
  };
  walk({ family, addr: 0n, prefix: 0 });
  return out;
}
