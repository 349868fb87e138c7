import { describe, expect, it } from 'vitest';
import { cidrContains, parseCidr } from '../../../plugins/sdk/src/network/cidr.ts';
import { apiserverEgressPolicy, platformAddressesOf } from './egress.ts';

const ROOT = 'team-a-0a1b2c-dev';

describe('apiserverEgressPolicy', () => {
  it('lets the apiserver reach its tenant, the vn-agent port and the outside, nothing else of the super', () => {
    expect(apiserverEgressPolicy(ROOT, ['10.0.0.0/8', '169.254.0.0/16', 'fc00::/7'])).toMatchObject({
      kind: 'NetworkPolicy',
      metadata: { name: 'apiserver-egress', namespace: ROOT },
      spec: {
        podSelector: {
          matchLabels: { 'tenancy.x-k8s.io/cluster': ROOT, 'tenancy.x-k8s.io/component': 'apiserver' },
        },
        policyTypes: ['Egress'],
        egress: [
          { to: [{ namespaceSelector: { matchLabels: { 'tenancy.x-k8s.io/cluster': ROOT } } }] },
          { ports: [{ protocol: 'TCP', port: 10550 }] },
          { to: expect.arrayContaining([{ ipBlock: { cidr: '0.0.0.0/5' } }, { ipBlock: { cidr: '::/1' } }]) },
        ],
      },
    });
  });

  type Peer = { ipBlock?: { cidr: string; except?: string[] } };
  const outside = (policy: ReturnType<typeof apiserverEgressPolicy>): Peer[] =>
    (policy.spec as { egress: Array<{ to?: Peer[] }> }).egress.at(-1)!.to!;
  const allows = (peers: Peer[], addr: string): boolean =>
    peers.some((p) => cidrContains(parseCidr(p.ipBlock!.cidr), parseCidr(addr)));

  // a public node (203.0.113.10) and a public apiserver endpoint (198.51.100.1) are the platform's too
  const peers = outside(
    apiserverEgressPolicy(ROOT, undefined, undefined, ['203.0.113.10', '198.51.100.1', '10.0.0.5']),
  );
  it.each([
    ['10.96.0.1', false],
    ['10.213.7.1', false],
    ['127.0.0.1', false],
    ['169.254.169.254', false],
    ['172.16.0.1', false],
    ['192.168.1.1', false],
    ['100.64.0.1', false],
    ['203.0.113.10', false],
    ['203.0.113.11', true],
    ['198.51.100.1', false],
    ['198.51.100.0', true],
    ['8.8.8.8', true],
    ['fd00::1', false],
    ['fe80::1', false],
    ['2001:db8::1', true],
  ])('the outside rule allows %s: %s', (addr, want) => {
    expect(allows(peers, addr)).toBe(want);
  });

  it('lists the outside as plain blocks: no `except` for an implementation to get wrong', () => {
    expect(peers.length).toBeGreaterThan(2);
    for (const p of peers) expect(p).toEqual({ ipBlock: { cidr: p.ipBlock!.cidr } });
  });

  it('refuses a platform address that is not one', () => {
    expect(() => apiserverEgressPolicy(ROOT, undefined, undefined, ['node-a.example'])).toThrow(/not a CIDR/);
  });

  it('leaves out the metadata address and every private range by default', () => {
    const egress = (apiserverEgressPolicy(ROOT).spec as { egress: unknown[] }).egress;
    const blocks = outside(apiserverEgressPolicy(ROOT));
    for (const a of ['10.0.0.0', '172.16.0.0', '192.168.0.0', '169.254.169.254', '127.0.0.1'])
      expect(allows(blocks, a), a).toBe(false);
    // no rule opens DNS (port 53) on its own: the super's DNS knows other tenants' names
    expect(JSON.stringify(egress)).not.toContain('"port":53');
  });

  it("opens the platform's vn-agents at their own address where it is named, at their port on every address where not", () => {
    const egress = (
      apiserverEgressPolicy(ROOT, undefined, [
        { host: '10.1.0.1', port: 41234 },
        { host: 'fd00::1', port: 41235 },
        { port: 10550 },
      ]).spec as { egress: unknown[] }
    ).egress;
    expect(egress.slice(1, 4)).toEqual([
      { to: [{ ipBlock: { cidr: '10.1.0.1/32' } }], ports: [{ protocol: 'TCP', port: 41234 }] },
      { to: [{ ipBlock: { cidr: 'fd00::1/128' } }], ports: [{ protocol: 'TCP', port: 41235 }] },
      { ports: [{ protocol: 'TCP', port: 10550 }] },
    ]);
    expect(egress).toHaveLength(5);
  });
});

describe('platformAddressesOf', () => {
  it('takes the super apiserver endpoints and every node address, skips names, lists each once', () => {
    expect(
      platformAddressesOf(
        { subsets: [{ addresses: [{ ip: '203.0.113.1' }, { ip: '10.213.7.1' }] }, { addresses: [{}] }] },
        [
          {
            status: {
              addresses: [
                { type: 'InternalIP', address: '10.0.0.5' },
                { type: 'ExternalIP', address: '203.0.113.1' },
                { type: 'Hostname', address: 'node-a' },
                { type: 'InternalIP', address: '2001:db8::5' },
              ],
            },
          },
          { status: {} },
          {},
        ],
      ),
    ).toEqual(['10.0.0.5', '10.213.7.1', '2001:db8::5', '203.0.113.1']);
    expect(platformAddressesOf(null, [])).toEqual([]);
  });

  it('adds the hosts the manager reaches the super apiserver at when they are addresses, not names', () => {
    expect(
      platformAddressesOf(
        { subsets: [{ addresses: [{ ip: '10.0.0.1' }] }] },
        [],
        ['198.51.100.7', '[2001:db8::7]', 'super.example.com', '10.0.0.1'],
      ),
    ).toEqual(['10.0.0.1', '198.51.100.7', '2001:db8::7']);
  });
});
