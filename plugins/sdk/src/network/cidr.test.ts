import { describe, expect, it } from 'vitest';
import { SUPER_INTERNAL_CIDRS } from '../wellknown.ts';
import { cidrComplement, cidrContains, formatCidr, parseCidr } from './cidr.ts';

describe('parseCidr', () => {
  it.each([
    { text: '10.0.0.0/8', want: { family: 4, addr: 0x0a000000n, prefix: 8 } },
    { text: '10.1.2.3/8', want: { family: 4, addr: 0x0a000000n, prefix: 8 } },
    { text: '127.0.0.1', want: { family: 4, addr: 0x7f000001n, prefix: 32 } },
    { text: '0.0.0.0/0', want: { family: 4, addr: 0n, prefix: 0 } },
    { text: '::/0', want: { family: 6, addr: 0n, prefix: 0 } },
    { text: 'fc00::/7', want: { family: 6, addr: 0xfc00n << 112n, prefix: 7 } },
    { text: '2001:db8::1/128', want: { family: 6, addr: (0x20010db8n << 96n) | 1n, prefix: 128 } },
    { text: '::ffff:10.0.0.1/128', want: { family: 6, addr: (0xffffn << 32n) | 0x0a000001n, prefix: 128 } },
  ])('$text', ({ text, want }) => {
    expect(parseCidr(text)).toEqual(want);
  });

  it.each(['10.0.0.0/33', '10.0.0/8', 'apiserver.x.svc', '10.0.0.0/8/1', '::/129', '10.0.0.0/-1', ''])(
    'refuses %j',
    (text) => {
      expect(() => parseCidr(text)).toThrow(/not a CIDR/);
    },
  );
});

describe('cidrContains', () => {
  it.each([
    { outer: '0.0.0.0/0', inner: '10.0.0.0/8', want: true },
    { outer: '10.0.0.0/8', inner: '10.20.0.0/16', want: true },
    { outer: '10.0.0.0/8', inner: '10.0.0.0/8', want: true },
    { outer: '10.20.0.0/16', inner: '10.0.0.0/8', want: false },
    { outer: '10.0.0.0/8', inner: '11.0.0.0/8', want: false },
    { outer: '172.16.0.0/12', inner: '172.31.255.255/32', want: true },
    { outer: '172.16.0.0/12', inner: '172.32.0.0/16', want: false },
    { outer: '::/0', inner: '10.0.0.0/8', want: false },
    { outer: '0.0.0.0/0', inner: 'fc00::/7', want: false },
    { outer: 'fc00::/7', inner: 'fd12:3456::/32', want: true },
    { outer: 'fc00::/7', inner: '2001:db8::/32', want: false },
  ])('$outer ⊇ $inner: $want', ({ outer, inner, want }) => {
    expect(cidrContains(parseCidr(outer), parseCidr(inner))).toBe(want);
  });
});

describe('formatCidr', () => {
  it.each([
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['203.0.113.7', '203.0.113.7/32'],
    ['255.255.255.255/32', '255.255.255.255/32'],
    ['::/0', '::/0'],
    ['::1', '::1/128'],
    ['2001:DB8:0:0::/32', '2001:db8::/32'],
    ['2001:0:0:1::/64', '2001:0:0:1::/64'],
    ['1:0:0:2:0:0:3:4', '1::2:0:0:3:4/128'],
    ['1:0:2:3:4:5:6:7', '1:0:2:3:4:5:6:7/128'],
    ['fe80::/10', 'fe80::/10'],
    ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128'],
  ])('%s -> %s', (text, want) => {
    expect(formatCidr(parseCidr(text))).toBe(want);
    expect(parseCidr(formatCidr(parseCidr(text)))).toEqual(parseCidr(text));
  });
});

describe('cidrComplement', () => {
  const inAny = (blocks: string[], addr: string): boolean =>
    blocks.some((b) => cidrContains(parseCidr(b), parseCidr(addr)));
  const size = (c: string): bigint => {
    const p = parseCidr(c);
    return 1n << BigInt((p.family === 4 ? 32 : 128) - p.prefix);
  };

  it.each([
    { family: 4 as const, exclude: [], want: ['0.0.0.0/0'] },
    { family: 4 as const, exclude: ['0.0.0.0/0'], want: [] },
    { family: 4 as const, exclude: ['128.0.0.0/1'], want: ['0.0.0.0/1'] },
    { family: 4 as const, exclude: ['0.0.0.0/2', '10.0.0.0/8'], want: ['64.0.0.0/2', '128.0.0.0/1'] },
    { family: 4 as const, exclude: ['fc00::/7'], want: ['0.0.0.0/0'] },
    { family: 6 as const, exclude: ['10.0.0.0/8'], want: ['::/0'] },
    { family: 6 as const, exclude: ['8000::/1'], want: ['::/1'] },
  ])('$family without $exclude: $want', ({ family, exclude, want }) => {
    expect(cidrComplement(family, exclude)).toEqual(want);
  });

  // each internal range's first and last address are out; the addresses just beside them are in
  const v4 = cidrComplement(4, [...SUPER_INTERNAL_CIDRS, '203.0.113.7', '198.51.100.0/30']);
  it.each([
    ['0.0.0.0', true],
    ['9.255.255.255', true],
    ['10.0.0.0', false],
    ['10.96.0.1', false],
    ['10.255.255.255', false],
    ['11.0.0.0', true],
    ['100.63.255.255', true],
    ['100.64.0.0', false],
    ['100.127.255.255', false],
    ['100.128.0.0', true],
    ['126.255.255.255', true],
    ['127.0.0.1', false],
    ['128.0.0.0', true],
    ['169.253.255.255', true],
    ['169.254.169.254', false],
    ['169.255.0.0', true],
    ['172.15.255.255', true],
    ['172.16.0.0', false],
    ['172.31.255.255', false],
    ['172.32.0.0', true],
    ['192.167.255.255', true],
    ['192.168.0.0', false],
    ['192.168.255.255', false],
    ['192.169.0.0', true],
    ['198.51.99.255', true],
    ['198.51.100.0', false],
    ['198.51.100.3', false],
    ['198.51.100.4', true],
    ['203.0.113.6', true],
    ['203.0.113.7', false],
    ['203.0.113.8', true],
    ['255.255.255.255', true],
  ])('IPv4 %s allowed: %s', (addr, want) => {
    expect(inAny(v4, addr)).toBe(want);
  });

  const v6 = cidrComplement(6, [...SUPER_INTERNAL_CIDRS, '2001:db8::1']);
  it.each([
    ['::', true],
    ['2001:db8::', true],
    ['2001:db8::1', false],
    ['2001:db8::2', true],
    ['fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true],
    ['fc00::', false],
    ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['fe00::', true],
    ['fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true],
    ['fe80::', false],
    ['febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['fec0::', true],
    ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true],
  ])('IPv6 %s allowed: %s', (addr, want) => {
    expect(inAny(v6, addr)).toBe(want);
  });

  it('leaves no address out twice or unaccounted for: the blocks and the excluded ranges add up to the family', () => {
    const internal4 = SUPER_INTERNAL_CIDRS.filter((c) => !c.includes(':'));
    const blocks = cidrComplement(4, internal4);
    expect(blocks.reduce((n, b) => n + size(b), 0n) + internal4.reduce((n, b) => n + size(b), 0n)).toBe(1n << 32n);
    // disjoint: in address order, each block starts after the one before it ends
    for (let i = 1; i < blocks.length; i++)
      expect(parseCidr(blocks[i]!).addr).toBeGreaterThanOrEqual(parseCidr(blocks[i - 1]!).addr + size(blocks[i - 1]!));
  });

  it('refuses an exclusion that is not a CIDR', () => {
    expect(() => cidrComplement(4, ['apiserver.example'])).toThrow(/not a CIDR: apiserver.example/);
  });
});
