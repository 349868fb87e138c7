import { describe, expect, it } from 'vitest';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import {
  CLUSTER_IP_MARK,
  clusterIPsScript,
  planClusterIPs,
  tenantChain,
  type SuperPodAddresses,
  type SuperServiceAddresses,
  type TenantTranslation,
} from './clusterips.ts';

const synced = (tenant: string) => ({ [LABEL.managedBy]: MANAGER, [LABEL.cluster]: tenant });

function pod(tenant: string | undefined, ip: string, extra: Partial<SuperPodAddresses> = {}): SuperPodAddresses {
  return {
    metadata: { name: `p-${ip}`, namespace: 'x', labels: tenant ? synced(tenant) : {} },
    spec: { nodeName: 'n1', ...extra.spec },
    status: { phase: 'Running', podIP: ip, ...extra.status },
  };
}

function svc(tenant: string | undefined, tenantIP: string | undefined, superIP: string): SuperServiceAddresses {
  return {
    metadata: {
      name: `s-${superIP}`,
      namespace: 'x',
      labels: tenant ? synced(tenant) : {},
      annotations: tenantIP ? { [ANN.tenantClusterIP]: tenantIP } : {},
    },
    spec: { clusterIP: superIP },
  };
}

describe('planClusterIPs', () => {
  it.each<[string, SuperPodAddresses[], SuperServiceAddresses[], TenantTranslation[]]>([
    [
      'one tenant: its Pods and its Services',
      [pod('a', '10.1.0.5'), pod('a', '10.1.0.6')],
      [svc('a', '10.96.0.10', '10.96.7.1')],
      [{ key: 'a', podIPs: ['10.1.0.5', '10.1.0.6'], services: [['10.96.0.10', '10.96.7.1']] }],
    ],
    [
      'overlapping tenant ranges stay apart',
      [pod('a', '10.1.0.5'), pod('b', '10.1.0.9')],
      [svc('a', '10.96.0.10', '10.96.7.1'), svc('b', '10.96.0.10', '10.96.8.1')],
      [
        { key: 'a', podIPs: ['10.1.0.5'], services: [['10.96.0.10', '10.96.7.1']] },
        { key: 'b', podIPs: ['10.1.0.9'], services: [['10.96.0.10', '10.96.8.1']] },
      ],
    ],
    [
      'objects the syncer did not make are ignored',
      [pod(undefined, '10.1.0.7'), pod('a', '10.1.0.5')],
      [svc(undefined, '10.96.0.11', '10.96.7.2'), svc('a', '10.96.0.10', '10.96.7.1')],
      [{ key: 'a', podIPs: ['10.1.0.5'], services: [['10.96.0.10', '10.96.7.1']] }],
    ],
    [
      'host-network and ended Pods are no source',
      [
        pod('a', '10.1.0.1', { spec: { hostNetwork: true } }),
        pod('a', '10.1.0.2', { status: { phase: 'Succeeded' } }),
        pod('a', '10.1.0.3', { status: { phase: 'Failed' } }),
        pod('a', '10.1.0.4', { status: { phase: 'Pending', podIP: '10.1.0.4' } }),
      ],
      [svc('a', '10.96.0.10', '10.96.7.1')],
      [{ key: 'a', podIPs: ['10.1.0.4'], services: [['10.96.0.10', '10.96.7.1']] }],
    ],
    [
      'an address two tenants claim is nobody\u2019s',
      [pod('a', '10.1.0.5'), pod('b', '10.1.0.5'), pod('a', '10.1.0.6')],
      [svc('a', '10.96.0.10', '10.96.7.1'), svc('b', '10.96.0.10', '10.96.8.1')],
      [{ key: 'a', podIPs: ['10.1.0.6'], services: [['10.96.0.10', '10.96.7.1']] }],
    ],
    [
      'headless, unannotated, IPv6 and same-address copies translate nothing',
      [pod('a', '10.1.0.5')],
      [
        svc('a', 'None', 'None'),
        svc('a', undefined, '10.96.7.3'),
        svc('a', 'fd00::1', '10.96.7.4'),
        svc('a', '10.96.7.5', '10.96.7.5'),
        svc('a', '10.96.0.10', '10.96.7.1'),
      ],
      [{ key: 'a', podIPs: ['10.1.0.5'], services: [['10.96.0.10', '10.96.7.1']] }],
    ],
    [
      'a tenant without Services, or without Pods here, is left out',
      [pod('a', '10.1.0.5')],
      [svc('b', '10.96.0.10', '10.96.8.1')],
      [],
    ],
    [
      'two copies of one tenant IP: the lower super address, whatever the order',
      [pod('a', '10.1.0.5')],
      [svc('a', '10.96.0.10', '10.96.9.1'), svc('a', '10.96.0.10', '10.96.10.1'), svc('a', '10.96.0.10', '10.96.7.1')],
      [{ key: 'a', podIPs: ['10.1.0.5'], services: [['10.96.0.10', '10.96.7.1']] }],
    ],
    [
      'podIPs and numeric order',
      [pod('a', '10.1.0.10', { status: { podIPs: [{ ip: '10.1.0.10' }, { ip: 'fd00::5' }] } }), pod('a', '10.1.0.9')],
      [svc('a', '10.96.0.100', '10.96.7.2'), svc('a', '10.96.0.20', '10.96.7.1')],
      [
        {
          key: 'a',
          podIPs: ['10.1.0.9', '10.1.0.10'],
          services: [
            ['10.96.0.20', '10.96.7.1'],
            ['10.96.0.100', '10.96.7.2'],
          ],
        },
      ],
    ],
  ])('%s', (_name, pods, services, want) => {
    expect(planClusterIPs(pods, services)).toEqual(want);
    expect(planClusterIPs([...pods].reverse(), [...services].reverse())).toEqual(want);
  });
});

describe('clusterIPsScript', () => {
  const plan: TenantTranslation[] = [
    { key: 'a', podIPs: ['10.1.0.5'], services: [['10.96.0.10', '10.96.7.1']] },
    {
      key: 'b',
      podIPs: ['10.1.0.9', '10.1.0.10'],
      services: [
        ['10.96.0.10', '10.96.8.1'],
        ['10.96.0.11', '10.96.8.2'],
      ],
    },
  ];

  it('replaces the table in one transaction, a chain per tenant reading its own map only', () => {
    const s = clusterIPsScript('vc-cluster-ips', plan);
    const lines = s.split('\n');
    expect(lines.slice(0, 3)).toEqual([
      'table ip vc-cluster-ips',
      'delete table ip vc-cluster-ips',
      'table ip vc-cluster-ips {',
    ]);
    const [ca, cb] = [tenantChain('a'), tenantChain('b')];
    expect(s).toContain(`elements = { 10.1.0.5 : jump ${ca}, 10.1.0.9 : jump ${cb}, 10.1.0.10 : jump ${cb} }`);
    expect(s).toContain(`chain ${ca} {\n    ip daddr set ip daddr map { 10.96.0.10 : 10.96.7.1 } meta mark`);
    expect(s).toContain(
      `chain ${cb} {\n    ip daddr set ip daddr map { 10.96.0.10 : 10.96.8.1, 10.96.0.11 : 10.96.8.2 }`,
    );
    expect(s).toContain('elements = { 10.96.7.1 : 10.96.0.10, 10.96.8.1 : 10.96.0.10, 10.96.8.2 : 10.96.0.11 }');
    expect(s).toContain('type filter hook prerouting priority raw;');
    expect(s).toContain(`ct direction reply ct mark and 0x0${CLUSTER_IP_MARK.toString(16)} == 0x01000000`);
    expect(s).toContain('meta mark set meta mark and 0xfeffffff');
  });

  it('an empty plan is an empty table, not a syntax error', () => {
    const s = clusterIPsScript('t', []);
    expect(s).not.toContain('elements');
    expect(s).not.toMatch(/chain tenant-/);
  });

  it.each([
    ['a table name that is not one', 'x; flush ruleset', plan],
    ['a Pod address that is not IPv4', 't', [{ key: 'a', podIPs: ['10.1.0.5 } ; flush ruleset'], services: [] }]],
    ['a cluster IP that is not IPv4', 't', [{ key: 'a', podIPs: [], services: [['1.2.3.4', 'x']] }]],
  ] as Array<[string, string, TenantTranslation[]]>)('refuses %s', (_n, table, p) => {
    expect(() => clusterIPsScript(table, p)).toThrow(/cluster IPs: not/);
  });

  it('names tenant chains by a hash of the key (any key is a valid chain name)', () => {
    expect(tenantChain('team-a')).toMatch(/^tenant-[0-9a-f]{16}$/);
    expect(tenantChain('team-a')).not.toBe(tenantChain('team-b'));
  });
});
