import { describe, expect, it } from 'vitest';
import {
  CONFINE_PREFIX,
  confinementNames,
  confinementRules,
  confinementScript,
  ownPodAddresses,
} from './netconfine.ts';

const established = 'ct state established,related accept';
const host = 'fib daddr type local reject';

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
      rules: [
        established,
        'ip daddr 127.0.0.1 tcp dport { 2379, 6443 } accept',
        'ip daddr 10.213.7.1 tcp dport 10550 accept',
        host,
        'ip daddr { 10.213.7.5, 10.213.7.9 } accept',
        'ip6 daddr { fd00:7::9 } accept',
        'ip daddr 10.213.7.0/24 reject',
        'ip6 daddr fd00:7::/64 reject',
        'ip daddr 10.0.0.0/8 reject',
        'ip daddr 169.254.0.0/16 reject',
        'ip6 daddr fc00::/7 reject',
        'ip daddr 127.0.0.0/8 reject',
        'ip6 daddr ::1/128 reject',
      ],
    },
    {
      name: 'no Pod address yet: the whole Pod CIDR is refused, even one outside the internal ranges',
      spec: { loopbackPorts: [], podCidrs: ['203.0.113.0/24'], endpoints: [], internalCidrs: [] },
      rules: [
        established,
        host,
        'ip daddr 203.0.113.0/24 reject',
        'ip daddr 127.0.0.0/8 reject',
        'ip6 daddr ::1/128 reject',
      ],
    },
    {
      name: 'nothing allowed: established only; the host and loopback refused even when not listed as internal',
      spec: { loopbackPorts: [], podCidrs: [], endpoints: [], internalCidrs: [] },
      rules: [established, host, 'ip daddr 127.0.0.0/8 reject', 'ip6 daddr ::1/128 reject'],
    },
    {
      name: 'an IPv6 endpoint, on its port only; a Pod CIDR that is also an internal range refused once',
      spec: {
        loopbackPorts: [],
        podCidrs: ['10.0.0.0/8'],
        endpoints: [{ host: 'fd00::1', port: 10550 }],
        internalCidrs: ['10.0.0.0/8'],
      },
      rules: [
        established,
        'ip6 daddr fd00::1 tcp dport 10550 accept',
        host,
        'ip daddr 10.0.0.0/8 reject',
        'ip daddr 127.0.0.0/8 reject',
        'ip6 daddr ::1/128 reject',
      ],
    },
    {
      name: "an address outside the Pod CIDRs is no Pod of the tenant's (a node's, from a host-network Pod)",
      spec: {
        loopbackPorts: [],
        podCidrs: ['10.1.0.0/16'],
        podAddresses: ['192.0.2.2'],
        endpoints: [],
        internalCidrs: [],
      },
      rules: [
        established,
        host,
        'ip daddr 10.1.0.0/16 reject',
        'ip daddr 127.0.0.0/8 reject',
        'ip6 daddr ::1/128 reject',
      ],
    },
  ])('$name', ({ spec, rules }) => {
    expect(confinementRules(spec)).toEqual(rules);
  });

  it('refuses the default super-internal ranges, the metadata address among them', () => {
    const rules = confinementRules({ loopbackPorts: [], podCidrs: [], endpoints: [] });
    expect(rules).toContain('ip daddr 169.254.0.0/16 reject');
    expect(rules).toContain('ip daddr 10.0.0.0/8 reject');
    expect(rules).toContain('ip daddr 127.0.0.0/8 reject');
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

describe('confinementScript', () => {
  it('remakes the table in one transaction: the rules in chain confined, only the cgroup jumps there, before iptables', () => {
    const spec = { loopbackPorts: [6443], podCidrs: [], endpoints: [], internalCidrs: [] };
    expect(confinementScript('vc-cp-1', 'unified/vc-cp-1', spec).split('\n')).toEqual([
      'table inet vc-cp-1 {}',
      'delete table inet vc-cp-1',
      'table inet vc-cp-1 {',
      '  chain confined {',
      ...confinementRules(spec).map((r) => `    ${r}`),
      '  }',
      '  chain out {',
      '    type filter hook output priority -1; policy accept;',
      '    socket cgroupv2 level 1 "unified/vc-cp-1" jump confined',
      '  }',
      '}',
      '',
    ]);
  });
});

describe('confinementNames', () => {
  it('names the cgroup and the table alike, and differently per control plane', () => {
    const a = confinementNames('team-a-123456-a');
    const b = confinementNames('team-b-654321-b');
    expect(a.cgroup.startsWith(CONFINE_PREFIX)).toBe(true);
    expect(a.table).toBe(a.cgroup);
    expect(a.cgroup).not.toBe(b.cgroup);
  });
});
