import { describe, expect, it } from 'vitest';
import {
  CONFINE_CHAIN_PREFIX,
  confinementNames,
  confinementRules,
  ownPodAddresses,
  podFenceScript,
} from './netconfine.ts';

const ret = (...m: string[]) => [...m, '-j', 'RETURN'];
const reject = (cidr: string) => ['-d', cidr, '-j', 'REJECT'];
const established = ret('-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED');
const host = ['-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'REJECT'];

describe('confinementRules', () => {
  it.each([
    {
      name: 'own loopback ports and the vn-agent, the host refused, own Pods, then the Pod CIDRs and internal ranges refused',
      spec: {
        loopbackPorts: [2379, 6443],
        podCidrs: ['10.213.7.0/24', 'fd00:7::/64'],
        podAddresses: ['10.213.7.9', 'fd00:7::9', '10.213.7.5'],
        endpoints: [{ host: '10.213.7.1', port: 10550 }],
        internalCidrs: ['10.0.0.0/8', '169.254.0.0/16', 'fc00::/7'],
      },
      v4: [
        established,
        ret('-d', '127.0.0.1/32', '-p', 'tcp', '--dport', '2379'),
        ret('-d', '127.0.0.1/32', '-p', 'tcp', '--dport', '6443'),
        ret('-d', '10.213.7.1/32', '-p', 'tcp', '--dport', '10550'),
        host,
        ret('-d', '10.213.7.5/32'),
        ret('-d', '10.213.7.9/32'),
        reject('10.213.7.0/24'),
        reject('10.0.0.0/8'),
        reject('169.254.0.0/16'),
        reject('127.0.0.0/8'),
      ],
      v6: [established, host, ret('-d', 'fd00:7::9/128'), reject('fd00:7::/64'), reject('fc00::/7'), reject('::1/128')],
    },
    {
      name: 'no Pod address yet: the whole Pod CIDR is refused, even one outside the internal ranges',
      spec: { loopbackPorts: [], podCidrs: ['203.0.113.0/24'], endpoints: [], internalCidrs: [] },
      v4: [established, host, reject('203.0.113.0/24'), reject('127.0.0.0/8')],
      v6: [established, host, reject('::1/128')],
    },
    {
      name: 'nothing allowed: established only; the host and loopback refused even when not listed as internal',
      spec: { loopbackPorts: [], podCidrs: [], endpoints: [], internalCidrs: [] },
      v4: [established, host, reject('127.0.0.0/8')],
      v6: [established, host, reject('::1/128')],
    },
    {
      name: 'an IPv6 endpoint goes to ip6tables',
      spec: { loopbackPorts: [], podCidrs: [], endpoints: [{ host: 'fd00::1', port: 10550 }], internalCidrs: [] },
      v4: [established, host, reject('127.0.0.0/8')],
      v6: [established, ret('-d', 'fd00::1/128', '-p', 'tcp', '--dport', '10550'), host, reject('::1/128')],
    },
  ])('$name', ({ spec, v4, v6 }) => {
    expect(confinementRules(spec)).toEqual({ v4, v6 });
  });

  it('refuses the default super-internal ranges, the metadata address among them', () => {
    const { v4 } = confinementRules({ loopbackPorts: [], podCidrs: [], endpoints: [] });
    expect(v4).toContainEqual(reject('169.254.0.0/16'));
    expect(v4).toContainEqual(reject('10.0.0.0/8'));
    expect(v4.at(-1)).toEqual(reject('127.0.0.0/8'));
  });
});

describe('ownPodAddresses', () => {
  it.each([
    {
      name: 'inside the Pod CIDRs, each once, sorted',
      addrs: ['10.1.0.9', '10.1.0.3', '10.1.0.9'],
      want: ['10.1.0.3', '10.1.0.9'],
    },
    {
      name: "a node's address (a host-network Pod) is left out",
      addrs: ['10.1.0.3', '192.168.1.4'],
      want: ['10.1.0.3'],
    },
    { name: 'what is no address is left out', addrs: ['10.1.0.0/16', 'web', ''], want: [] },
    { name: 'IPv6 inside its own CIDR', addrs: ['fd00:1::5', 'fd00:2::5'], want: ['fd00:1::5'] },
  ])('$name', ({ addrs, want }) => {
    expect(ownPodAddresses({ podCidrs: ['10.1.0.0/16', 'fd00:1::/64'], podAddresses: addrs })).toEqual(want);
  });
});

describe('podFenceScript', () => {
  const who = 'socket cgroupv2 level 1 "vc-cp-1"';
  it.each([
    {
      name: 'own Pods pass, the rest of each Pod CIDR is rejected, per family',
      spec: { podCidrs: ['10.1.0.0/16', 'fd00:1::/64'], podAddresses: ['10.1.0.9', '10.1.0.3', 'fd00:1::5'] },
      rules: [
        `${who} ct state established,related accept`,
        `${who} ip daddr { 10.1.0.3, 10.1.0.9 } accept`,
        `${who} ip daddr { 10.1.0.0/16 } reject`,
        `${who} ip6 daddr { fd00:1::5 } accept`,
        `${who} ip6 daddr { fd00:1::/64 } reject`,
      ],
    },
    {
      name: 'an endpoint on a bridge address inside a Pod CIDR passes on its port only',
      spec: { podCidrs: ['10.1.0.0/16'], podAddresses: [], endpoints: [{ host: '10.1.0.1', port: 31847 }] },
      rules: [
        `${who} ct state established,related accept`,
        `${who} ip daddr 10.1.0.1 tcp dport 31847 accept`,
        `${who} ip daddr { 10.1.0.0/16 } reject`,
      ],
    },
    {
      name: 'no Pod of its own yet: the whole Pod CIDR is rejected',
      spec: { podCidrs: ['10.1.0.0/16'], podAddresses: [] },
      rules: [`${who} ct state established,related accept`, `${who} ip daddr { 10.1.0.0/16 } reject`],
    },
  ])('$name', ({ spec, rules }) => {
    const script = podFenceScript('vc-cp-1', 'vc-cp-1', spec);
    expect(script.split('\n').slice(0, 6)).toEqual([
      'table inet vc-cp-1 {}',
      'delete table inet vc-cp-1',
      'table inet vc-cp-1 {',
      '  chain out {',
      '    type filter hook output priority -1; policy accept;',
      `    ${rules[0]}`,
    ]);
    expect(
      script
        .split('\n')
        .filter((l) => l.startsWith('    socket'))
        .map((l) => l.trim()),
    ).toEqual(rules);
  });
});

describe('confinementNames', () => {
  it('fits iptables chain names and differs per control plane', () => {
    const a = confinementNames('team-a-123456-a');
    const b = confinementNames('team-b-654321-b');
    expect(a.chain.startsWith(CONFINE_CHAIN_PREFIX)).toBe(true);
    expect(a.chain.length).toBeLessThanOrEqual(28);
    expect(a.cgroup).toBe(a.chain.toLowerCase());
    expect(a.chain).not.toBe(b.chain);
  });
});
