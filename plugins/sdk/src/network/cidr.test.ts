import { describe, expect, it } from 'vitest';
import { cidrContains, parseCidr } from './cidr.ts';

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
