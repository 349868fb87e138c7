import { describe, expect, it } from 'vitest';
import { apiserverEgressPolicy } from './egress.ts';

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
          {
            to: [
              { ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '169.254.0.0/16'] } },
              { ipBlock: { cidr: '::/0', except: ['fc00::/7'] } },
            ],
          },
        ],
      },
    });
  });

  it('leaves out the metadata address and every private range by default', () => {
    const egress = (
      apiserverEgressPolicy(ROOT).spec as { egress: Array<{ to?: Array<{ ipBlock?: { except?: string[] } }> }> }
    ).egress;
    const except = egress[2]!.to![0]!.ipBlock!.except!;
    for (const c of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '127.0.0.0/8'])
      expect(except).toContain(c);
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
