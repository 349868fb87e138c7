import { describe, expect, it } from 'vitest';
import type { ApiServerExpose } from '../api/virtualcluster.ts';
import { checkPolicies, type ExposePolicy, type TenantPolicy } from './policy.ts';

const policy = (expose?: ExposePolicy): TenantPolicy => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'TenantPolicy',
  metadata: { name: 'edge' },
  spec: {
    grants: { subjects: [{ kind: 'Namespace', name: 'team-a' }] },
    ...(expose && { controlPlane: { expose } }),
  },
});

/** fields refused for a VirtualCluster asking for `expose` under `expose policy` (undefined: no TenantPolicy at all). */
function refused(expose: ApiServerExpose | undefined, p: ExposePolicy | 'none'): string[] {
  const policies = p === 'none' ? [] : [policy(p)];
  const r = checkPolicies(
    {
      metadata: { namespace: 'team-a', name: 'dev' },
      spec: { ...(p === 'none' ? {} : { policyName: 'edge' }), ...(expose && { apiServer: { expose } }) },
    },
    policies,
  );
  return 'violations' in r ? r.violations.map((v) => `${v.field}: ${v.message}`) : [];
}

describe('spec.apiServer.expose under the TenantPolicy', () => {
  it.each<[string, ApiServerExpose | undefined, ExposePolicy | 'none', string[]]>([
    ['nothing asked, built-in defaults', undefined, 'none', []],
    ['ClusterIP is always allowed', { type: 'ClusterIP' }, { allowedTypes: [] }, []],
    [
      'NodePort under the built-in defaults',
      { type: 'NodePort' },
      'none',
      [
        'spec.apiServer.expose.type: Service type NodePort is not allowed under the (built-in defaults) (controlPlane.expose.allowedTypes: ClusterIP)',
      ],
    ],
    [
      'LoadBalancer where only NodePort is allowed',
      { type: 'LoadBalancer' },
      { allowedTypes: ['NodePort'] },
      [
        'spec.apiServer.expose.type: Service type LoadBalancer is not allowed under policy "edge" (controlPlane.expose.allowedTypes: ClusterIP, NodePort)',
      ],
    ],
    ['NodePort where allowed', { type: 'NodePort' }, { allowedTypes: ['NodePort'] }, []],
    [
      'a chosen node port without fixedNodePort',
      { type: 'NodePort', nodePort: 30443 },
      { allowedTypes: ['NodePort'] },
      [
        'spec.apiServer.expose.nodePort: choosing the node port 30443 is not allowed under policy "edge" (controlPlane.expose.fixedNodePort)',
      ],
    ],
    [
      'a chosen node port with fixedNodePort',
      { type: 'NodePort', nodePort: 30443 },
      { allowedTypes: ['NodePort'], fixedNodePort: true },
      [],
    ],
    [
      'extra names and IPs without extraNames',
      { extraDNSNames: ['api.team-a.example.com'], extraIPs: ['192.0.2.10'] },
      { allowedTypes: ['NodePort'] },
      [
        'spec.apiServer.expose.extraDNSNames: extra serving certificate names are not allowed under policy "edge" (controlPlane.expose.extraNames)',
        'spec.apiServer.expose.extraIPs: extra serving certificate names are not allowed under policy "edge" (controlPlane.expose.extraNames)',
      ],
    ],
    [
      'extra names and IPs with extraNames',
      { extraDNSNames: ['api.team-a.example.com'], extraIPs: ['192.0.2.10', '2001:db8::1'] },
      { extraNames: true },
      [],
    ],
    ['empty lists ask for nothing', { extraDNSNames: [], extraIPs: [] }, {}, []],
  ])('%s', (_name, expose, p, want) => {
    expect(refused(expose, p)).toEqual(want);
  });
});
