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
