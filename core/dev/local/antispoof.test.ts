import { describe, expect, it } from 'vitest';
import {
  antispoofTableScript,
  antispoofWrapper,
  mapElements,
  podChain,
  podChainScript,
  podInterfaceOf,
  podRemoveScript,
} from './antispoof.ts';

const NETNS = '/run/netns/cni-1';
/** the shape of the bridge plugin's result: the bridge, the host veth, the Pod's interface, its address */
const bridgeResult = {
  interfaces: [
    { name: 'vcbr1', mac: '02:00:00:00:00:aa' },
    { name: 'veth1234', mac: '02:00:00:00:00:bb' },
    { name: 'eth0', mac: '0A:58:0A:D5:07:05', sandbox: NETNS },
  ],
  ips: [{ address: '10.213.7.5/24', gateway: '10.213.7.1', interface: 2 }],
};

describe('podInterfaceOf', () => {
  it("reads the host veth, the Pod's MAC and its IPv4 addresses from the bridge plugin's result", () => {
    expect(podInterfaceOf(bridgeResult, 'vcbr1', 'eth0', NETNS)).toEqual({
      veth: 'veth1234',
      mac: '0A:58:0A:D5:07:05',
      ips: ['10.213.7.5'],
    });
  });

  it.each([
    {
      name: 'no Pod interface in that sandbox',
      prev: bridgeResult,
      netns: '/run/netns/other',
      err: /no interface eth0/,
    },
    {
      name: 'two host-side interfaces besides the bridge',
      prev: { ...bridgeResult, interfaces: [...bridgeResult.interfaces, { name: 'veth9' }] },
      netns: NETNS,
      err: /one host veth/,
    },
    { name: 'no result at all', prev: {}, netns: NETNS, err: /no interface/ },
  ])('refuses $name', ({ prev, netns, err }) => {
    expect(() => podInterfaceOf(prev, 'vcbr1', 'eth0', netns)).toThrow(err);
  });

  it('leaves out addresses of other interfaces and IPv6 ones', () => {
    const prev = {
      ...bridgeResult,
      ips: [...bridgeResult.ips, { address: 'fd00::5/64', interface: 2 }, { address: '10.9.9.9/24', interface: 1 }],
    };
    expect(podInterfaceOf(prev, 'vcbr1', 'eth0', NETNS).ips).toEqual(['10.213.7.5']);
  });
});

describe('podChainScript', () => {
  const pod = { veth: 'veth1234', mac: '0A:58:0A:D5:07:05', ips: ['10.213.7.5'] };

  it("lets through only the Pod's MAC, ARP from its MAC and address, IPv4 from its address; drops the rest", () => {
    const s = podChainScript('vc-1-antispoof', 'pod-x', pod, false).split('\n');
    expect(s).toEqual([
      'add chain bridge vc-1-antispoof pod-x',
      'flush chain bridge vc-1-antispoof pod-x',
      'add rule bridge vc-1-antispoof pod-x ether saddr != 0a:58:0a:d5:07:05 drop',
      'add rule bridge vc-1-antispoof pod-x ether type arp arp saddr ether 0a:58:0a:d5:07:05 arp saddr ip { 10.213.7.5 } accept',
      'add rule bridge vc-1-antispoof pod-x ether type ip ip saddr { 10.213.7.5 } accept',
      'add rule bridge vc-1-antispoof pod-x drop',
      'add element bridge vc-1-antispoof pods { "veth1234" : jump pod-x }',
      '',
    ]);
  });

  it('repoints a veth that already had a chain', () => {
    expect(podChainScript('t', 'pod-x', pod, true)).toContain(
      'delete element bridge t pods { "veth1234" }\nadd element',
    );
  });

  it.each([
    { name: 'an interface name that would end the string', p: { ...pod, veth: 'veth" }; flush ruleset; #' } },
    { name: 'a MAC that is not one', p: { ...pod, mac: '0a:58 drop' } },
    { name: 'an address that is not IPv4', p: { ...pod, ips: ['10.0.0.1 } accept; drop {'] } },
    { name: 'no address', p: { ...pod, ips: [] } },
  ])('refuses $name (nothing from the input is written into nft unchecked)', ({ p }) => {
    expect(() => podChainScript('t', 'pod-x', p, false)).toThrow(/vc-antispoof/);
  });
});

describe('removal', () => {
  const listing = JSON.stringify({
    nftables: [
      { metainfo: { version: '1.0.6' } },
      {
        map: {
          family: 'bridge',
          name: 'pods',
          elem: [
            ['veth1', { jump: { target: 'pod-a' } }],
            ['veth2', { jump: { target: 'pod-b' } }],
          ],
        },
      },
    ],
  });

  it('reads the map and removes only the elements jumping to the Pod chain, then the chain', () => {
    expect(mapElements(listing)).toEqual([
      { veth: 'veth1', chain: 'pod-a' },
      { veth: 'veth2', chain: 'pod-b' },
    ]);
    expect(podRemoveScript('t', 'pod-b', mapElements(listing))).toBe(
      'delete element bridge t pods { "veth2" }\ndelete chain bridge t pod-b\n',
    );
  });

  it('reads an empty map as no elements', () => {
    expect(mapElements(JSON.stringify({ nftables: [{ map: { name: 'pods' } }] }))).toEqual([]);
  });
});

describe('names and files', () => {
  it('one chain per sandbox, stable, within nft name limits', () => {
    expect(podChain('abc')).toBe(podChain('abc'));
    expect(podChain('abc')).not.toBe(podChain('abd'));
    expect(podChain('x'.repeat(64))).toMatch(/^pod-[0-9a-f]{16}$/);
  });

  it('the table script replaces an earlier table and hooks the map before the bridge plugin (dstnat, -300)', () => {
    const s = antispoofTableScript('vc-1-antispoof');
    expect(s.startsWith('table bridge vc-1-antispoof\ndelete table bridge vc-1-antispoof\n')).toBe(true);
    expect(s).toContain('priority -350;');
    expect(s).toContain('iifname vmap @pods');
  });

  it('the wrapper execs node on the entry, with the loader when given, paths quoted', () => {
    expect(antispoofWrapper('/n/node', '/d/antispoofcni.js')).toBe(
      `#!/bin/sh\nexec '/n/node' '/d/antispoofcni.js' "$@"\n`,
    );
    expect(antispoofWrapper('/n/node', "/it's/a.ts", 'file:///t/loader.mjs')).toBe(
      `#!/bin/sh\nexec '/n/node' '--import' 'file:///t/loader.mjs' '/it'\\''s/a.ts' "$@"\n`,
    );
  });
});
