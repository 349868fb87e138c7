import { describe, expect, it } from 'vitest';
import { onlySpoofCheckChains } from './bridgenft.ts';

const table = (body: string) => `table bridge nat {\n${body}\n}\n`;
const base = (rules = '') =>
  `\tchain PREROUTING {\n\t\ttype filter hook prerouting priority dstnat; policy accept;\n${rules}\t}`;

describe('onlySpoofCheckChains', () => {
  it.each([
    { name: 'the empty base chain the plugin leaves', listing: table(base()), want: true },
    {
      name: 'a killed node: jumps into per-interface chains',
      listing: table(
        base('\t\tiifname "veth1" jump cni-br-iface-abc\n') +
          '\n\tchain cni-br-iface-abc {\n\t\tjump cni-br-iface-abc-mac\n\t}' +
          '\n\tchain cni-br-iface-abc-mac {\n\t\tether saddr 02:00:00:00:00:01 return\n\t\tdrop\n\t}',
      ),
      want: true,
    },
    {
      name: "a chain of someone else's",
      listing: table(base() + '\n\tchain docker {\n\t}'),
      want: false,
    },
    {
      name: 'a rule of someone else in the base chain',
      listing: table(base('\t\tether type arp drop\n')),
      want: false,
    },
  ])('$name', ({ listing, want }) => {
    expect(onlySpoofCheckChains(listing)).toBe(want);
  });
});
